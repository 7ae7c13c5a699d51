"""Read saved runs, TREC run files and JSON, for ``evaluate`` and the ``replay`` search alike.

Both entry points read a file through this module, so they accept the same files, refuse the
same faults with the same messages, and rank every query the same way.

A TREC run line is ``qid Q0 docno rank score tag`` (whitespace separated, six fields). As in
trec_eval the rank column is ignored: a query's documents are ranked by score descending,
ties broken by doc id descending (byte order).

A JSON run is an object ``{qid: ranking}``. A ranking is either a list of hits best first
(the order given is the ranking), each a doc id string or an object ``{"id", "score",
"text"}`` whose score and text may be left out or null; or an object ``{doc id: score}``,
ranked like a TREC run.

Every score must be a finite number: NaN, ``inf``, ``-inf`` and literals too large for a
double (``1e400``) are refused with an :class:`~monitor.errors.InputError` that names the
file and the line (TREC) or the query and document (JSON). A saved score that is not finite
cannot be ranked the same way by every reader, so no reader is asked to guess.

A repeated doc id in one query is kept here in ranking order; the metric engine counts it
once, at its best position, and reports how many copies it dropped.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from monitor.errors import InputError, SearchOutputError, UsageError
from monitor.io import read_bytes_limited
from monitor.records import Hit
from monitor.search.base import is_valid_id, normalise_hits

#: The ``format`` values the readers take: ``auto`` reads JSON when the file's first
#: non-blank byte is ``{`` or ``[``, and a TREC run otherwise.
FORMATS = ("auto", "trec", "json")

_TREC_COLUMNS = ("qid", "q0", "doc", "rank", "score", "tag")
_SCORE = _TREC_COLUMNS.index("score")
_TREC_LINE = "a TREC run line 'qid Q0 docno rank score tag'"
_FINITE = "a finite score"
# A JSON integer literal of this many digits or more cannot fit a double: it is read as a
# float (inf when too large) instead of an int that float() would refuse with OverflowError.
_LONG_INT_DIGITS = 300


def load_run(path: str | Path, format: str = "auto") -> dict[str, list[str]]:
    """Read a saved run as ``{qid: [doc ids, best first]}``; raise InputError if malformed."""
    read = _read(Path(path), format)
    if isinstance(read, _TrecColumns):
        return {qid: read.docs[lo:hi] for qid, lo, hi in read.slices()}
    return {qid: [hit.id for hit in hits] for qid, hits in read.items()}


def load_hits(path: str | Path, format: str = "auto") -> dict[str, list[Hit]]:
    """Read a saved run as ``{qid: [Hit, ...] best first}``; raise InputError if malformed."""
    read = _read(Path(path), format)
    if isinstance(read, _TrecColumns):
        hits = [Hit(doc, score) for doc, score in zip(read.docs, read.scores, strict=True)]
        return {qid: hits[lo:hi] for qid, lo, hi in read.slices()}
    return read


@dataclass(frozen=True, slots=True)
class _TrecColumns:
    """A TREC run's columns in trec_eval's order (by qid, then score and doc id descending)."""

    qids: np.ndarray
    docs: list[str]
    scores: list[float]

    def slices(self) -> list[tuple[str, int, int]]:
        """Return (qid, start, end) of each query's rows."""
        qids = self.qids
        starts = np.flatnonzero(np.concatenate(([True], qids[1:] != qids[:-1])))
        ends = np.append(starts[1:], len(qids))
        return [
            (str(qids[lo]), lo, hi) for lo, hi in zip(starts.tolist(), ends.tolist(), strict=True)
        ]


def _read(path: Path, format: str) -> _TrecColumns | dict[str, list[Hit]]:
    """Read ``path`` as ``format``; return TREC columns or the JSON run's hits."""
    if format not in FORMATS:
        raise UsageError(f"unknown run format {format!r}; known formats: {', '.join(FORMATS)}")
    try:
        data = read_bytes_limited(path)
    except OSError as exc:
        raise InputError(path, "a readable run file", found=exc.strerror) from None
    head = data.lstrip()
    if not head:
        raise InputError(path, "a run (TREC lines or JSON), not an empty file", line=1)
    if format == "json" or (format == "auto" and head[:1] in (b"{", b"[")):
        return _json_run(path, data)
    return _trec_columns(path)


def _trec_columns(path: Path) -> _TrecColumns:
    """Read a TREC run into columns in trec_eval's order.

    The fast reader (pandas) handles well-formed files; on any fault the file is read again
    line by line to name the first bad line.
    """
    try:
        frame = pd.read_csv(
            path,
            sep=r"\s+",
            header=None,
            dtype={i: ("float64" if i == _SCORE else str) for i in range(len(_TREC_COLUMNS))},
            na_filter=False,
            quoting=csv.QUOTE_NONE,
            encoding="utf-8",
            engine="c",
        )
        bad = frame.shape[1] != len(_TREC_COLUMNS) or frame.empty
        if not bad:
            frame.columns = pd.Index(_TREC_COLUMNS)
            # A short line leaves its last fields empty; whitespace-split fields never are.
            # NaN and the infinities (1e400 parses as inf) are refused by the line reader.
            bad = bool((frame["tag"] == "").any() or not np.isfinite(frame["score"]).all())
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError):
        bad = True
    if bad:
        _raise_first_bad_trec_line(path)
    frame = frame.sort_values(["qid", "score", "doc"], ascending=[True, False, False])
    return _TrecColumns(frame["qid"].to_numpy(), frame["doc"].tolist(), frame["score"].tolist())


def _raise_first_bad_trec_line(path: Path) -> None:
    """Find the first malformed line of a TREC run and raise an InputError naming it."""
    with path.open("rb") as handle:
        seen = 0
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise InputError(path, "UTF-8 text", line=number, found=raw[:40]) from None
            fields = line.split()
            if not fields:  # blank lines are skipped, as the fast reader does
                continue
            seen += 1
            if len(fields) != len(_TREC_COLUMNS):
                raise InputError(path, _TREC_LINE, line=number, found=line.rstrip("\n"))
            try:
                score = float(fields[_SCORE])
            except ValueError:
                raise InputError(
                    path, "a numeric score in field 5", line=number, found=fields[_SCORE]
                ) from None
            if not math.isfinite(score):
                raise InputError(path, f"{_FINITE} in field 5", line=number, found=fields[_SCORE])
    if seen == 0:
        raise InputError(path, "at least one TREC run line, not an empty file", line=1)
    raise InputError(path, _TREC_LINE)  # pragma: no cover - the fast reader found a fault


def _json_run(path: Path, data: bytes) -> dict[str, list[Hit]]:
    """Read a JSON run: ``{qid: [hits best first]}`` or ``{qid: {doc id: score}}``."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(path, "UTF-8 text", line=line, found=f"byte {exc.start}") from None
    try:
        run = json.loads(text, parse_int=_json_int)
    except json.JSONDecodeError as exc:
        raise InputError(path, f"valid JSON ({exc.msg})", line=exc.lineno) from None
    except RecursionError:
        raise InputError(path, "JSON nested a few levels deep (a run is {qid: ranking})") from None
    if not isinstance(run, dict):
        raise InputError(path, "a JSON object {query id: ranking}", found=type(run).__name__)
    for qid in run:
        if not is_valid_id(qid):
            raise InputError(
                path, "a non-empty query id of valid Unicode (no lone surrogate)", found=qid
            )
    return {qid: _json_ranking(path, qid, ranking) for qid, ranking in run.items()}


def _json_int(literal: str) -> int | float:
    """Return a JSON integer literal as an int, or as a float when no double can hold it."""
    return float(literal) if len(literal.lstrip("-")) >= _LONG_INT_DIGITS else int(literal)


def _json_ranking(path: Path, qid: str, ranking: object) -> list[Hit]:
    """Return one query's hits best first; raise InputError naming the query if malformed."""
    if isinstance(ranking, dict):
        return _scored_hits(path, qid, ranking)
    if not isinstance(ranking, list):
        raise InputError(
            path,
            f"a list of hits or a {{doc id: score}} object for query {qid!r}",
            found=ranking,
        )
    for item in ranking:
        # Checked before normalise_hits, which reads a NaN score as "no score".
        if isinstance(item, Mapping) and _is_number(score := item.get("score")):
            _check_finite(path, qid, item.get("id"), score)
    try:
        return list(normalise_hits(ranking))
    except SearchOutputError as exc:
        raise InputError(path, f"a ranking for query {qid!r}: {exc.message}") from None


def _scored_hits(path: Path, qid: str, scores: dict[str, object]) -> list[Hit]:
    """Return the hits of ``{doc id: score}`` ranked like a TREC run."""
    hits = []
    for doc, score in scores.items():
        if not doc:
            raise InputError(path, f"a non-empty doc id for query {qid!r}", found=doc)
        if not is_valid_id(doc):
            raise InputError(
                path, f"a doc id of valid Unicode (no lone surrogate) for query {qid!r}", found=doc
            )
        if not _is_number(score):
            raise InputError(
                path, f"a numeric score for query {qid!r}, document {doc!r}", found=score
            )
        hits.append(Hit(doc, _check_finite(path, qid, doc, score)))
    hits.sort(key=_trec_order, reverse=True)
    return hits


def _trec_order(hit: Hit) -> tuple[float | None, bytes]:
    """Return the sort key of trec_eval's order: score, then doc id bytes (both descending)."""
    return hit.score, hit.id.encode("utf-8", "surrogatepass")


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_finite(path: Path, qid: str, doc: object, score: object) -> float:
    """Return ``score`` as a float; raise InputError naming the query and doc if not finite."""
    value = float(score)  # type: ignore[arg-type]  # a number: checked by the callers
    if not math.isfinite(value):
        raise InputError(path, f"{_FINITE} for query {qid!r}, document {doc!r}", found=score)
    return value
