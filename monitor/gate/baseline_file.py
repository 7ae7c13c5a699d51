"""The baseline file: a suite's pinned baseline run as one versioned JSON file.

A CI job gates a pull request against this file instead of a store, so it needs no
database. ``baseline export`` writes it (:func:`write_baseline`) and ``gate --baseline-file``
reads it back into the store's own :class:`~monitor.store.records.RunRecord`
(:func:`read_baseline`). The shape, version 1::

    {"format": "retrieval-monitor-baseline", "version": 1,
     "suite": "nightly", "run_id": 12, "pinned_at": "2024-05-01T02:00:00+00:00",
     "pipeline": "rerank", "started_at": "...", "finished_at": "...",
     "evalset_fingerprint": "sha256:...", "config_hash": "...",
     "metrics": ["recall@5", "ndcg@10"], "means": {"recall@5": 0.71, ...},
     "figures": {"latency": {"count": 67, "mean": 0.01, ...}, "error_rate": 0.0, ...},
     "stats": {...},
     "queries": [{"query_id": "Q01", "values": {"recall@5": 1.0}, "retrieved_ids": [...],
                  "relevant_ids": [...], "latency_seconds": 0.01,
                  "error_type": null, "error_message": null}, ...]}

A value that is not a finite number (a mean that could not be computed) is written as
``null``. A file of another format or version, or one that does not hold these keys with
these types, is refused with an :class:`~monitor.errors.InputError` naming the file, the key
and what was expected.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from monitor.errors import InputError, MetricError, UsageError
from monitor.io import read_bytes_limited, write_text_atomic
from monitor.metrics.spec import UNBOUNDED, parse_metric
from monitor.records import LatencySummary
from monitor.store.records import QueryRecord, RunFigures, RunRecord

#: The ``format`` value of a baseline file.
FORMAT: Final = "retrieval-monitor-baseline"
#: The version of the file format this module writes and reads.
VERSION: Final = 1

_LATENCY: Final = ("count", "mean", "p50", "p95", "p99", "max")
_RATES: Final = ("error_rate", "zero_result_rate", "mean_top1_score", "queries_per_second")
_COUNTS: Final = ("sent", "failed", "evaluated")


@dataclass(frozen=True, slots=True)
class BaselineFile:
    """A baseline read from a file: the run, and what the file says about it.

    ``pinned_at`` is when the run was pinned in the store it was exported from (None when not
    known); ``metrics`` the metric names the suite measured.
    """

    path: str
    run: RunRecord
    metrics: tuple[str, ...]
    pinned_at: datetime | None = None


def baseline_document(
    run: RunRecord, *, metrics: Sequence[str], pinned_at: datetime | None = None
) -> dict[str, Any]:
    """Return the JSON-ready document of ``run`` as a baseline file."""
    figures = run.figures
    return {
        "format": FORMAT,
        "version": VERSION,
        "suite": run.suite,
        "run_id": run.run_id,
        "pinned_at": None if pinned_at is None else pinned_at.isoformat(),
        "pipeline": run.pipeline,
        "started_at": run.started_at.isoformat(),
        "finished_at": run.finished_at.isoformat(),
        "evalset_fingerprint": run.evalset_fingerprint,
        "config_hash": run.config_hash,
        "metrics": list(metrics),
        "means": {name: _finite(value) for name, value in run.means.items()},
        "figures": {
            "latency": {name: getattr(figures.latency, name) for name in _LATENCY},
            **{name: getattr(figures, name) for name in _RATES},
            "index_size": figures.index_size,
            **{name: getattr(figures, name) for name in _COUNTS},
        },
        "stats": dict(run.stats),
        "queries": [
            {
                "query_id": query.query_id,
                "values": {name: _finite(value) for name, value in query.values.items()},
                "retrieved_ids": list(query.retrieved_ids),
                "relevant_ids": list(query.relevant_ids),
                "latency_seconds": query.latency_seconds,
                "error_type": query.error_type,
                "error_message": query.error_message,
            }
            for query in run.queries
        ],
    }


def write_baseline(
    path: str | Path,
    run: RunRecord,
    *,
    metrics: Sequence[str],
    pinned_at: datetime | None = None,
) -> None:
    """Write ``run`` to ``path`` as a baseline file, atomically."""
    if not run.ok:
        raise UsageError(f"run {run.run_id} of suite {run.suite!r} failed: it is no baseline")
    document = baseline_document(run, metrics=metrics, pinned_at=pinned_at)
    text = json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False)
    write_text_atomic(path, text + "\n")


def read_baseline(path: str | Path) -> BaselineFile:
    """Read a baseline file; raise InputError naming the file and key when it is malformed."""
    source = str(path)
    try:
        data = read_bytes_limited(path)
    except OSError as exc:
        raise InputError(source, "a readable baseline file", found=exc.strerror) from None
    try:
        document = json.loads(
            data.decode("utf-8"), parse_int=_json_int, parse_constant=_no_constant
        )
    except UnicodeDecodeError:
        raise InputError(source, "UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise InputError(source, f"valid JSON ({exc.msg})", line=exc.lineno) from None
    except RecursionError:
        raise InputError(source, "JSON nested a few levels deep") from None
    except ValueError as exc:  # a number _json_int or _no_constant refused
        raise InputError(source, str(exc)) from None
    reader = _Reader(source)
    top = reader.mapping(document, "the document", f"a JSON object with format {FORMAT!r}")
    if top.get("format") != FORMAT:
        raise InputError(
            source, f"format {FORMAT!r} (a file from `baseline export`)", found=top.get("format")
        )
    # true == 1 in Python, but a JSON boolean is no version number.
    version = top.get("version")
    if type(version) is not int or version != VERSION:
        raise InputError(source, f"version {VERSION} of {FORMAT}", found=version)
    try:
        run = RunRecord(
            suite=reader.text(top, "suite"),
            pipeline=reader.text(top, "pipeline"),
            started_at=reader.moment(top, "started_at"),
            finished_at=reader.moment(top, "finished_at"),
            evalset_fingerprint=reader.text(top, "evalset_fingerprint"),
            config_hash=reader.text(top, "config_hash"),
            means=reader.numbers(top.get("means"), "means"),
            figures=reader.figures(top),
            stats=reader.mapping(top.get("stats", {}), "stats", "a JSON object"),
            queries=reader.queries(top),
            run_id=reader.count(top, "run_id", optional=True),
        )
    except UsageError as exc:
        raise InputError(source, f"a consistent baseline run ({exc})") from None
    metrics = tuple(
        reader.string(name, f"metrics[{i}]") for i, name in enumerate(reader.items(top, "metrics"))
    )
    pinned = top.get("pinned_at")
    return BaselineFile(
        source, run, metrics, None if pinned is None else reader.moment(top, "pinned_at")
    )


class _Reader:
    """Checks of one file's values, each naming the file and the key at fault."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, key: str, expected: str, found: object) -> InputError:
        return InputError(self.source, f"{expected} at {key}", found=found)

    def mapping(self, value: object, key: str, expected: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(key, expected, type(value).__name__)
        return value

    def items(self, top: Mapping[str, Any], key: str) -> list[Any]:
        value = top.get(key)
        if not isinstance(value, list):
            raise self.fail(key, "a JSON list", value)
        return value

    def text(self, top: Mapping[str, Any], key: str) -> str:
        return self.string(top.get(key), key)

    def string(self, value: object, key: str) -> str:
        if not isinstance(value, str):
            raise self.fail(key, "a string", value)
        return value

    def optional_text(self, top: Mapping[str, Any], key: str, where: str) -> str | None:
        value = top.get(key)
        if value is not None and not isinstance(value, str):
            raise self.fail(f"{where}.{key}", "a string or null", value)
        return value

    def moment(self, top: Mapping[str, Any], key: str) -> datetime:
        text = self.text(top, key)
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            raise self.fail(key, "an ISO 8601 time with its zone", text) from None
        if moment.tzinfo is None:
            raise self.fail(key, "an ISO 8601 time with its zone", text)
        return moment

    def number(
        self, value: object, key: str, low: float | None = None, high: float | None = None
    ) -> float | None:
        """Return a finite number within ``[low, high]``, or None for null."""
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(key, "a number or null", value)
        number = float(value)
        if not math.isfinite(number):
            raise self.fail(key, "a finite number or null", value)
        if low is not None and number < low:
            raise self.fail(key, _range(low, high), value)
        if high is not None and number > high:
            raise self.fail(key, _range(low, high), value)
        return number

    def measure(self, value: object, key: str, name: str) -> float:
        """Return a value of metric ``name``; null (not computable) reads as NaN, as the store
        keeps it. Every measure is at least 0, and one that is a share at most 1."""
        number = self.number(value, key, 0.0, _highest(name))
        return math.nan if number is None else number

    def numbers(self, values: object, key: str) -> dict[str, float]:
        found = self.mapping(values, key, "a JSON object {metric: number}")
        return {name: self.measure(value, f"{key}.{name}", name) for name, value in found.items()}

    def count(
        self, top: Mapping[str, Any], key: str, *, optional: bool = False, where: str = ""
    ) -> int | None:
        value = top.get(key)
        if value is None and optional:
            return None
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or not 0 <= value <= _LARGEST_COUNT
        ):
            raise self.fail(
                f"{where}{key}", f"a count (an integer from 0 to {_LARGEST_COUNT})", value
            )
        return value

    def queries(self, top: Mapping[str, Any]) -> tuple[QueryRecord, ...]:
        """Return the run's queries: at least one, each query id once."""
        items = self.items(top, "queries")
        if not items:
            raise self.fail("queries", "at least one query", "[]")
        seen: set[str] = set()
        out = []
        for i, item in enumerate(items):
            query = self.query(item, f"queries[{i}]")
            if query.query_id in seen:
                raise self.fail(f"queries[{i}].query_id", "each query once", query.query_id)
            seen.add(query.query_id)
            out.append(query)
        return tuple(out)

    def figures(self, top: Mapping[str, Any]) -> RunFigures:
        figures = self.mapping(top.get("figures"), "figures", "a JSON object of run figures")
        latency = self.mapping(figures.get("latency"), "figures.latency", "a JSON object")
        seconds = {
            n: self.number(latency.get(n), f"figures.latency.{n}", 0.0) for n in _LATENCY[1:]
        }
        rates = {
            n: self.number(figures.get(n), f"figures.{n}", *_RATE_BOUNDS.get(n, (None, None)))
            for n in _RATES
        }
        counts = {n: self.count(figures, n, where="figures.") or 0 for n in _COUNTS}
        return RunFigures(
            latency=LatencySummary(
                count=self.count(latency, "count", where="figures.latency.") or 0, **seconds
            ),
            error_rate=rates["error_rate"],
            zero_result_rate=rates["zero_result_rate"],
            mean_top1_score=rates["mean_top1_score"],
            queries_per_second=rates["queries_per_second"],
            index_size=self.count(figures, "index_size", optional=True, where="figures."),
            sent=counts["sent"],
            failed=counts["failed"],
            evaluated=counts["evaluated"],
        )

    def query(self, item: object, where: str) -> QueryRecord:
        query = self.mapping(item, where, "a JSON object of one query")
        return QueryRecord(
            query_id=self.query_id(query.get("query_id"), f"{where}.query_id"),
            values=self.numbers(query.get("values"), f"{where}.values"),
            retrieved_ids=self.ids(query, "retrieved_ids", where),
            relevant_ids=self.ids(query, "relevant_ids", where),
            latency_seconds=self.number(
                query.get("latency_seconds"), f"{where}.latency_seconds", 0.0
            ),
            error_type=self.optional_text(query, "error_type", where),
            error_message=self.optional_text(query, "error_message", where),
        )

    def query_id(self, value: object, key: str) -> str:
        text = self.string(value, key)
        if not text or _CONTROL.search(text):
            raise self.fail(key, "a non-empty query id without control characters", text)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise self.fail(key, "a query id of valid Unicode (no lone surrogate)", None) from None
        return text

    def ids(self, query: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
        value = query.get(key)
        if not isinstance(value, list) or not all(isinstance(i, str) for i in value):
            raise self.fail(f"{where}.{key}", "a list of doc id strings", value)
        return tuple(value)


#: The largest count (run id, queries sent) a store keeps: a 64-bit signed integer.
_LARGEST_COUNT: Final = 2**63 - 1
#: The most digits of a JSON integer read; a longer one is refused before it is converted.
_MAX_DIGITS: Final = 30
#: The shares among the run figures, in [0, 1]; the speed is at least 0.
_RATE_BOUNDS: Final[dict[str, tuple[float | None, float | None]]] = {
    "error_rate": (0.0, 1.0),
    "zero_result_rate": (0.0, 1.0),
    "queries_per_second": (0.0, None),
}
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f]")
#: How far past 1 a share may be read, for the rounding of a mean of floats.
_ROUNDING: Final = 1e-9


def _range(low: float | None, high: float | None) -> str:
    if high is None:
        return f"a number of at least {low:g} or null"
    return f"a number from {low or 0:g} to {round(high):g} or null"


def _highest(name: str) -> float | None:
    """Return the highest value metric ``name`` takes: 1 for a share, None for a count or
    sum (the metric spec says which), None for a name that does not parse."""
    try:
        metric = parse_metric(name)
    except MetricError:
        return None
    return None if metric.measure in UNBOUNDED else 1.0 + _ROUNDING


def _json_int(literal: str) -> int:
    if len(literal.lstrip("-")) > _MAX_DIGITS:
        raise ValueError(f"integers of at most {_MAX_DIGITS} digits, found one of {len(literal)}")
    return int(literal)


def _no_constant(name: str) -> float:
    raise ValueError(f"finite numbers (JSON has no {name}), found {name}")


def _finite(value: float) -> float | None:
    """Return ``value``, or None when it is not a finite number (JSON has no NaN)."""
    return value if math.isfinite(value) else None
