"""The effective judgments of a suite: its frozen eval set with its layers on top.

Two digests tell what a run was measured with. The **queries fingerprint** covers the query
ids and texts: when it changes, the questions changed and comparison ends. The **judgments
version** covers the effective grades: when it changes, stored rankings are re-scored under
the new grades and comparison goes on. The eval set's own ``fingerprint`` (ids, texts and
grades) of the effective set is what every run stores, so a suite without layers keeps the
fingerprint it always had.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from monitor.evalset import EvalSet
from monitor.evalset.model import canonical_json
from monitor.records import Query
from monitor.store.layers import Grades, JudgmentLayer, RunLabels


@dataclass(frozen=True, slots=True)
class Conflict:
    """One (query, doc) graded differently by two sources."""

    query_id: str
    doc_id: str
    grade: int
    source: str
    other_grade: int
    other_source: str

    def describe(self) -> str:
        """Return ``query Q doc D: 1 in SOURCE, 0 in OTHER``."""
        return (
            f"query {self.query_id!r} doc {self.doc_id!r}: {self.grade} in {self.source}, "
            f"{self.other_grade} in {self.other_source}"
        )


#: How many queries' canonical rows a digest writes and hashes at once.
_DIGEST_BLOCK = 4096


class _RowsDigest:
    """``sha256:<hex>`` of ``json.dumps(rows, ensure_ascii=False, separators=(",", ":"))``
    in UTF-8, the rows given a block at a time."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256(b"[")
        self._opening = b""

    def add(self, block: list[object]) -> None:
        if block:
            self._hash.update(self._opening)
            self._hash.update(canonical_json(block)[1:-1])  # the rows without [ and ]
            self._opening = b","

    def value(self) -> str:
        digest = self._hash.copy()
        digest.update(b"]")
        return "sha256:" + digest.hexdigest()


def queries_fingerprint(evalset: EvalSet) -> str:
    """Return ``sha256:<hex>`` of the query ids and texts (sorted by id), grades left out."""
    (texts,) = _digests(evalset, _texts)
    return texts


def judgments_version(evalset: EvalSet) -> str:
    """Return ``sha256:<hex>`` of the grades only: ``[[qid, [[doc, grade], ...]], ...]``,
    queries and docs sorted, so the same labels from any source give the same version."""
    (grades,) = _digests(evalset, _grades)
    return grades


def labels_of(evalset: EvalSet) -> RunLabels:
    """Return the queries fingerprint and judgments version of an (effective) eval set.

    Both digests are written in one reading of the set. A caller that needs the labels more
    than once in a run computes them once and passes them on (``align_baseline``'s
    ``current``): each call reads the whole eval set.
    """
    texts, grades = _digests(evalset, _texts, _grades)
    return RunLabels(texts, grades)


Row = tuple[str, str, list[tuple[str, int]]]


def _texts(block: list[Row]) -> list[object]:
    return [(query_id, text) for query_id, text, _ in block]


def _grades(block: list[Row]) -> list[object]:
    return [(query_id, judged) for query_id, _, judged in block]


def _digests(evalset: EvalSet, *rows: Callable[[list[Row]], list[object]]) -> list[str]:
    """Return the digest of each projection ``rows`` of the set's canonical rows
    (:meth:`EvalSet.canonical_blocks`), written in one pass, a block of queries at a time,
    with no record per query."""
    digests = [_RowsDigest() for _ in rows]
    for block in evalset.canonical_blocks(_DIGEST_BLOCK):
        for digest, row in zip(digests, rows, strict=True):
            digest.add(row(block))
    return [digest.value() for digest in digests]


def merged(frozen: EvalSet, layers: Sequence[JudgmentLayer]) -> EvalSet:
    """Return ``frozen`` with ``layers`` applied in order, metadata and order kept.

    A human layer's grade replaces the frozen one for its (query, doc): layers are only
    stored once checked for conflicts, or added with ``override``. A judge layer fills holes
    only: it never replaces a grade that a person or the frozen file gave. Grades for
    queries the set does not hold are ignored (the queries decide what is measured). With no
    layer, ``frozen`` itself is returned: nothing to apply, nothing to copy.
    """
    if not layers:
        return frozen
    grades: dict[str, dict[str, int]] = {query.id: dict(query.judgments) for query in frozen}
    human = {qid: set(docs) for qid, docs in grades.items()}
    for layer in layers:
        for qid, docs in layer.grades.items():
            if qid not in grades:
                continue
            for doc, grade in docs.items():
                if layer.kind == "judge":
                    if doc in human[qid] or doc in grades[qid]:
                        continue
                else:
                    human[qid].add(doc)
                grades[qid][doc] = grade
    out = EvalSet(frozen.name)
    for query in frozen:
        out.add(Query(query.id, query.text, grades[query.id], query.metadata))
    return out


def conflicts(
    effective: EvalSet,
    sources: Mapping[tuple[str, str], str],
    grades: Grades,
    source: str,
) -> list[Conflict]:
    """Return every (query, doc) of ``grades`` that ``effective`` grades differently.

    ``sources`` names where each effective grade came from (a layer's source), defaulting to
    the frozen eval set.
    """
    found = []
    for qid, docs in grades.items():
        query = effective.get(qid)
        if query is None:
            continue
        for doc, grade in docs.items():
            old = query.judgments.get(doc)
            if old is not None and old != grade:
                where = sources.get((qid, doc), "the frozen eval set")
                found.append(Conflict(qid, doc, grade, source, old, where))
    return found


def grade_sources(layers: Iterable[JudgmentLayer]) -> dict[tuple[str, str], str]:
    """Return (query, doc) -> the source of the human layer that last graded it."""
    out: dict[tuple[str, str], str] = {}
    for layer in layers:
        if layer.kind != "human":
            continue
        for qid, docs in layer.grades.items():
            for doc in docs:
                out[(qid, doc)] = f"layer {layer.layer_id} ({layer.source})"
    return out
