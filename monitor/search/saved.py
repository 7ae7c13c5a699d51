"""Read saved runs: TREC run files and JSON.

A TREC run line is ``qid Q0 docno rank score tag`` (whitespace separated, six fields). As in
trec_eval the rank column is ignored: a query's documents are ranked by score descending,
ties broken by doc id descending (byte order). JSON runs are ``{qid: [doc ids best first]}``
(the order given is the ranking) or ``{qid: {doc id: score}}`` (ranked like a TREC run).

A repeated doc id in one query is kept here in ranking order; the metric engine counts it
once, at its best position, and reports how many copies it dropped.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from monitor.errors import InputError
from monitor.metrics.ranks import Ranking

_TREC_COLUMNS = ("qid", "q0", "doc", "rank", "score", "tag")
_SCORE = _TREC_COLUMNS.index("score")
# Scores must parse to the same doubles as trec_eval's strtod. pandas 3 parses round-trip
# exactly by default (and deprecates the option); pandas 2 needs to be asked.
_PANDAS_MAJOR = int(pd.__version__.split(".")[0])
_EXACT_FLOATS: dict[str, Any] = {"float_precision": "round_trip"} if _PANDAS_MAJOR < 3 else {}


def load_run(path: str | Path) -> dict[str, Ranking]:
    """Load a TREC run file or a JSON run from ``path``; raise InputError if malformed."""
    path = Path(path)
    try:
        head = path.read_bytes()[:4096].lstrip()
    except OSError as exc:
        raise InputError(path, "a readable run file", found=exc.strerror) from None
    if not head:
        raise InputError(path, "a run (TREC lines or JSON), not an empty file", line=1)
    if head[:1] in (b"{", b"["):
        return _load_json_run(path)
    return load_trec_run(path)


def load_trec_run(path: str | Path) -> dict[str, Ranking]:
    """Load a TREC run file as ``{qid: [doc ids, best first]}`` (trec_eval's order)."""
    qids, docs, _ = _ranked_trec_columns(Path(path))
    return {qid: docs[lo:hi] for qid, lo, hi in _query_slices(qids)}


def load_scored_trec_run(path: str | Path) -> dict[str, list[tuple[str, float]]]:
    """Load a TREC run file as ``{qid: [(doc id, score), ...] best first}``."""
    qids, docs, scores = _ranked_trec_columns(Path(path))
    pairs = list(zip(docs, scores, strict=True))
    return {qid: pairs[lo:hi] for qid, lo, hi in _query_slices(qids)}


def _ranked_trec_columns(path: Path) -> tuple[np.ndarray, list[str], list[float]]:
    """Read a TREC run; return its qid array, doc ids and scores in trec_eval's order.

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
            **_EXACT_FLOATS,
        )
        bad = frame.shape[1] != len(_TREC_COLUMNS) or frame.empty
        if not bad:
            frame.columns = pd.Index(_TREC_COLUMNS)
            # A short line leaves its last fields empty; whitespace-split fields never are.
            bad = bool((frame["tag"] == "").any() or frame["score"].isna().any())
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError):
        bad = True
    if bad:
        _raise_first_bad_trec_line(path)
    frame = frame.sort_values(["qid", "score", "doc"], ascending=[True, False, False])
    return frame["qid"].to_numpy(), frame["doc"].tolist(), frame["score"].tolist()


def _query_slices(qids: np.ndarray) -> list[tuple[str, int, int]]:
    """Return (qid, start, end) of each run of equal qids in a sorted qid array."""
    starts = np.flatnonzero(np.concatenate(([True], qids[1:] != qids[:-1])))
    ends = np.append(starts[1:], len(qids))
    return [(str(qids[lo]), lo, hi) for lo, hi in zip(starts.tolist(), ends.tolist(), strict=True)]


def _raise_first_bad_trec_line(path: Path) -> None:
    """Find the first malformed line of a TREC run and raise an InputError naming it."""
    expected = "a TREC run line 'qid Q0 docno rank score tag'"
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
                raise InputError(path, expected, line=number, found=line.rstrip("\n"))
            try:
                score = float(fields[4])
            except ValueError:
                score = math.nan
            if math.isnan(score):
                raise InputError(path, "a numeric score in field 5", line=number, found=fields[4])
    if seen == 0:
        raise InputError(path, "at least one TREC run line, not an empty file", line=1)
    raise InputError(path, expected)  # pragma: no cover - the fast reader found a fault


def _load_json_run(path: Path) -> dict[str, Ranking]:
    """Load ``{qid: [ids]}`` or ``{qid: {id: score}}`` from a JSON file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise InputError(path, "UTF-8 text", line=line, found=f"byte {exc.start}") from None
    except json.JSONDecodeError as exc:
        raise InputError(path, f"valid JSON ({exc.msg})", line=exc.lineno) from None
    if not isinstance(data, dict):
        raise InputError(path, "a JSON object {query id: ranking}", found=type(data).__name__)
    run: dict[str, Ranking] = {}
    for qid, ranking in data.items():
        if isinstance(ranking, list):
            if not all(isinstance(doc, str) for doc in ranking):
                raise InputError(path, f"string doc ids for query {qid!r}", found=ranking[:5])
            run[qid] = ranking
        elif isinstance(ranking, dict):
            if not all(_is_number(score) for score in ranking.values()):
                raise InputError(path, f"numeric scores for query {qid!r}", found=ranking)
            run[qid] = {doc: float(score) for doc, score in ranking.items()}
        else:
            raise InputError(
                path,
                f"a list of doc ids or a {{doc: score}} object for query {qid!r}",
                found=ranking,
            )
    return run


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == value
