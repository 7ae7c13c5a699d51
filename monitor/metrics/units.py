"""Evaluation units: score a passage ranking per section, per document or per any field.

A search returns passages, but the evidence a question needs is often a section or a
document. A unit is a corpus field or a tuple of fields (:mod:`monitor.evalset.corpus`):

- ``passage``: the passage itself (the default; no transform);
- ``section``: ``(doc_id, section)``;
- ``document``: ``doc_id``;
- any other field name, or fields joined by ``+`` (``doc_id+version``).

:func:`to_units` rewrites judgments and run into unit space before the metric engine, so
every measure keeps its trec_eval definition:

- a unit is relevant with the highest grade of its judged passages (relevant when that is
  1 or more); recall divides by the number of relevant units;
- each returned passage maps to its unit, and a unit counts once, at its best rank;
- ``unit_cut="passages"`` (the default): the cutoff counts what the search returned (k
  passages, what a model receives). The unit keeps the rank of its best passage; a later
  passage of the same unit becomes a filler that matches nothing, so the units below keep
  their ranks (precision@k still divides by k passages);
- ``unit_cut="units"``: the ranking is first collapsed to distinct units, ranked 1, 2, 3, ...,
  then cut at k (a document ranking from passage retrieval, as MaxP does).

A returned passage missing from the corpus is a unit of its own (it can never be relevant);
a relevant passage missing from the corpus is an error, since its unit is unknown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from monitor.errors import InputError
from monitor.evalset.corpus import Corpus
from monitor.metrics.ranks import Qrels, Ranking, Run
from monitor.metrics.spec import UNIT_CUTS

#: Unit names that stand for a tuple of corpus fields.
UNIT_FIELDS: dict[str, tuple[str, ...]] = {
    "section": ("doc_id", "section"),
    "document": ("doc_id",),
}
_SEPARATOR = "\x1f"  # the ASCII unit separator: never part of a field value read from a file
_FILLER = "\x00filler:"
_UNKNOWN = "\x00passage:"


def unit_fields(unit: str) -> tuple[str, ...]:
    """Return the corpus fields that make up ``unit`` (``section`` is ``doc_id, section``)."""
    return UNIT_FIELDS.get(unit, tuple(unit.split("+")))


def unit_of(corpus: Corpus, doc_id: str, fields: Sequence[str]) -> str | None:
    """Return the unit id of passage ``doc_id``, or None when the corpus does not hold it."""
    passage = corpus.get(doc_id)
    if passage is None:
        return None
    values = []
    for name in fields:
        value = passage.get(name)
        if value is None:
            raise InputError(
                corpus.source, f"a field {name!r} in every passage (a unit field)", found=doc_id
            )
        values.append(value)
    return _SEPARATOR.join(values)


def unit_label(unit_id: str) -> str:
    """Return a unit id as people read it: its field values joined by `` / ``."""
    return unit_id.replace(_SEPARATOR, " / ")


def to_units(
    qrels: Qrels, run: Run, corpus: Corpus, unit: str, unit_cut: str = "passages"
) -> tuple[dict[str, dict[str, int]], dict[str, list[str]]]:
    """Return ``(qrels, run)`` rewritten so that each unit of ``unit`` is one document."""
    if unit_cut not in UNIT_CUTS:
        raise InputError("<unit_cut>", "one of " + ", ".join(UNIT_CUTS), found=unit_cut)
    fields = unit_fields(unit)
    judged: dict[str, dict[str, int]] = {}
    for qid, grades in qrels.items():
        units: dict[str, int] = {}
        for doc, grade in grades.items():
            unit_id = unit_of(corpus, doc, fields)
            if unit_id is None:
                if grade >= 1:
                    expected = f"every relevant passage in the corpus (query {qid!r})"
                    raise InputError(corpus.source, expected, found=doc)
                continue  # a judged non-relevant passage outside the corpus adds nothing
            units[unit_id] = max(grade, units.get(unit_id, grade))
        judged[qid] = units
    ranked = {
        qid: _unit_ranking(_ordered(ranking), corpus, fields, unit_cut)
        for qid, ranking in run.items()
    }
    return judged, ranked


def _ordered(ranking: Ranking) -> list[str]:
    """Return a ranking's distinct ids best first, by trec_eval's rules (see ranks.py)."""
    if isinstance(ranking, Mapping):
        # score descending, ties by doc id descending in byte order (trec_eval's strcmp)
        items = sorted(ranking.items(), key=lambda kv: (kv[1], kv[0].encode()), reverse=True)
        return [doc for doc, _ in items]
    return list(dict.fromkeys(ranking))  # a repeated id counts once, at its best position


def _unit_ranking(
    passages: Sequence[str], corpus: Corpus, fields: Sequence[str], unit_cut: str
) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for rank, doc in enumerate(passages, start=1):
        unit_id = unit_of(corpus, doc, fields)
        if unit_id is None:
            unit_id = _UNKNOWN + doc
        if unit_id not in seen:
            seen.add(unit_id)
            out.append(unit_id)
        elif unit_cut == "passages":
            out.append(f"{_FILLER}{rank}")
    return out
