"""Read saved runs, TREC run files and JSON, for ``evaluate`` and the ``replay`` search alike.

Both entry points read a file through this module, so they accept the same files, refuse the
same faults with the same messages, and rank every query the same way.

A TREC run line is ``qid Q0 docno rank score tag``: six fields, split where trec_eval splits
them (ASCII space, tab, CR, VT and FF; a Unicode space or another control character is part
of an id), and the score read as C's ``atof`` reads it, its longest numeric prefix (``1_0``
is 1): see :mod:`monitor.evalset.trec_fields`. A NUL byte is refused; a leading byte order
mark is dropped. As in trec_eval the rank column is ignored: a query's documents are ranked
by score descending, ties broken by doc id descending (byte order); fields after the sixth
are ignored, and blank lines and comment lines (first field starting with ``#``) are
skipped. A run file with no line (empty, blank or only comments) is an empty run, as the
JSON run ``{}``: every judged query scores 0. A compressed file (``run.trec.gz``, see
:mod:`monitor.io`) is decompressed.

``evaluate`` reads large TREC runs through :mod:`monitor.search.trec_columns`, which gives
the same ranking without a Python object per line.

A JSON run is an object ``{qid: ranking}``. A ranking is either a list of hits best first
(the order given is the ranking), each a doc id string or an object ``{"id", "score",
"text"}`` whose score and text may be left out or null; or an object ``{doc id: score}``,
ranked like a TREC run. One ranking holds doc id strings or hit objects, never both.

Every score must be a finite number: NaN, ``inf``, ``-inf`` and literals too large for a
double (``1e400``) are refused with an :class:`~monitor.errors.InputError` that names the
file and the line (TREC) or the query and document (JSON). A saved score that is not finite
cannot be ranked the same way by every reader, so no reader is asked to guess.

A repeated doc id in one query is kept here in ranking order; the metric engine counts it
once, at its best position, and reports how many copies it dropped.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path

from monitor.errors import InputError, SearchOutputError, UsageError
from monitor.evalset.trec_fields import BOM, c_double, nul_line, splitter
from monitor.io import open_input, read_bytes_limited
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
    return {qid: [hit.id for hit in hits] for qid, hits in _read(Path(path), format).items()}


def load_hits(path: str | Path, format: str = "auto") -> dict[str, list[Hit]]:
    """Read a saved run as ``{qid: [Hit, ...] best first}``; raise InputError if malformed."""
    return _read(Path(path), format)


def _read(path: Path, format: str) -> dict[str, list[Hit]]:
    """Read ``path`` as ``format``; return each query's hits best first."""
    if format not in FORMATS:
        raise UsageError(f"unknown run format {format!r}; known formats: {', '.join(FORMATS)}")
    try:
        data = read_bytes_limited(path)
    except OSError as exc:
        raise InputError(path, "a readable run file", found=exc.strerror) from None
    head = data.lstrip()
    if not head:
        return {}  # an empty run retrieves nothing: every judged query scores 0
    if format == "json" or (format == "auto" and head[:1] in (b"{", b"[")):
        return _json_run(path, data)
    return _trec_run(path, data)


def is_trec_run(path: str | Path, format: str = "auto") -> bool:
    """Tell whether ``path`` is read as a TREC run: ``format`` says so, or it is ``auto`` and
    the file's first non-blank byte is neither ``{`` nor ``[``. OSError passes through."""
    if format != "auto":
        return format == "trec"
    with open_input(path) as handle:
        head = handle.read(4096)
        while head and not head.strip():
            head = handle.read(4096)
    return head.lstrip()[:1] not in (b"{", b"[")


def _trec_run(path: Path, data: bytes) -> dict[str, list[Hit]]:
    """Read a TREC run line by line: each query's hits in trec_eval's order."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        number = data[: exc.start].count(b"\n") + 1
        bad = data[exc.start : exc.start + 40]
        raise InputError(path, "UTF-8 text", line=number, found=bad) from None
    text = text.removeprefix(BOM)  # as every eval set file, and as pyarrow reads a run
    nul = nul_line(text)
    if nul is not None:
        raise InputError(path, "text without NUL bytes", line=nul)
    split = splitter(text)
    rows: dict[str, list[tuple[float, bytes, str]]] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        fields = split(line)
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) < len(_TREC_COLUMNS):
            raise InputError(path, _TREC_LINE, line=number, found=line.rstrip("\r"))
        qid, doc, literal = fields[0], fields[2], fields[_SCORE]
        score = c_double(literal)
        if score is None:
            raise InputError(path, "a numeric score in field 5", line=number, found=literal)
        if not math.isfinite(score):
            raise InputError(path, f"{_FINITE} in field 5", line=number, found=literal)
        rows.setdefault(qid, []).append((score, doc.encode("utf-8", "surrogatepass"), doc))
    run = {}
    for qid, scored in rows.items():
        scored.sort(reverse=True)
        run[qid] = [Hit(doc, score) for score, _, doc in scored]
    return run


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
    kinds = {str if isinstance(item, str) else type(item) for item in ranking}
    if str in kinds and dict in kinds:
        raise InputError(
            path,
            f"a ranking for query {qid!r} of doc id strings or of hit objects, not both",
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
