"""Save and load runs: the ``runs``, ``run_figures`` and ``run_blobs`` tables.

A run's per-query outcomes are kept as compressed columns (:mod:`monitor.store.columnar`);
a run whose detail retention dropped (``per_query_pruned_at`` set) keeps its row and figures.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from monitor.errors import StoreError
from monitor.records import LatencySummary
from monitor.run.codec import CODEC
from monitor.store import columnar
from monitor.store.dialect import dump_json, float_or_nan, nan_to_null
from monitor.store.records import (
    ColumnQueries,
    QueryColumns,
    QueryRecord,
    RunFigures,
    RunRecord,
    RunSummary,
    stats_figures,
)
from monitor.store.sql import Transaction

#: The latency figures kept in ``run_figures`` (family ``latency``), in saved order.
_LATENCY = ("p50", "p95", "p99", "max", "mean")
#: The rates and counts kept in ``run_figures`` (family ``rate``): row name -> RunFigures field.
#: Counts are kept as numbers beside the rates; ``queries`` is the number of queries sent.
_RATES = {
    "error_rate": "error_rate",
    "zero_result_rate": "zero_result_rate",
    "mean_top1_score": "mean_top1_score",
    "queries_per_second": "queries_per_second",
    "queries": "sent",
    "failed": "failed",
    "evaluated": "evaluated",
}
_COUNTS = frozenset({"sent", "failed", "evaluated"})

# The columns both a RunRecord and a RunSummary start from, in the order _head reads them.
_HEAD = "run_id, suite, pipeline, status, started_at, finished_at, error, per_query_pruned_at"


def insert_run(tx: Transaction, run: RunRecord, saved_at: datetime) -> int:
    """Insert ``run`` with its figures and queries; return the id the database gave it."""
    d = tx.dialect
    ids = run.columns.query_ids
    if len(set(ids)) != len(ids):
        repeated = next(qid for qid in ids if ids.count(qid) > 1)
        raise StoreError(
            tx.location,
            f"saving a run of {run.suite!r}: query id {repeated!r} appears twice"
            " (expected each query once)",
        )
    run_id = int(
        tx.scalar(
            "INSERT INTO runs (suite, pipeline, status, started_at, finished_at,"
            " evalset_fingerprint, config_hash, stats, error, saved_at, query_count)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING run_id",
            (
                run.suite,
                run.pipeline,
                run.status,
                d.timestamp(run.started_at),
                d.timestamp(run.finished_at),
                run.evalset_fingerprint,
                run.config_hash,
                dump_json(run.stats),
                run.error,
                d.timestamp(saved_at),
                len(run.queries),
            ),
        )
    )
    tx.executemany(
        "INSERT INTO run_figures (run_id, family, name, position, value) VALUES (?, ?, ?, ?, ?)",
        (
            (run_id, family, name, position, nan_to_null(value))
            for family, values in figure_rows(run).items()
            for position, (name, value) in enumerate(values.items())
        ),
    )
    insert_blobs(tx, run_id, run.columns)
    return run_id


def insert_blobs(tx: Transaction, run_id: int, columns: QueryColumns) -> None:
    """Insert the per-query columns of a run (none for a run without queries)."""
    if not len(columns):
        return
    blobs = columnar.encode_columns(columns)
    tx.executemany(
        "INSERT INTO run_blobs (run_id, field, codec, data) VALUES (?, ?, ?, ?)",
        ((run_id, name, CODEC, data) for name, data in blobs.items()),
    )


def read_blobs(
    tx: Transaction, run_id: int, fields: tuple[str, ...] | None = None
) -> dict[str, bytes]:
    """Return the run's stored columns by field (only ``fields`` and metrics, when given)."""
    where = ""
    params: tuple[str, ...] = ()
    if fields is not None:
        marks = ", ".join("?" * len(fields))
        where = f" AND (field IN ({marks}) OR field LIKE ?)"
        params = (*fields, columnar.METRIC_PREFIX + "%")
    blobs: dict[str, bytes] = {}
    for name, codec, data in tx.all(
        f"SELECT field, codec, data FROM run_blobs WHERE run_id = ?{where} ORDER BY field",
        (run_id, *params),
    ):
        _check_codec(tx, run_id, name, codec)
        blobs[name] = bytes(data)
    return blobs


def _check_codec(tx: Transaction, run_id: int, field: str, codec: str) -> None:
    """Raise StoreError unless ``codec`` is the one this version reads."""
    if codec != CODEC:
        raise StoreError(
            tx.location,
            f"run {run_id}, field {field!r}: unknown codec {codec!r}"
            f" (expected {CODEC!r}); upgrade retrieval-monitor",
        )


def load_queries(tx: Transaction, run_id: int) -> ColumnQueries | tuple[()]:
    """Return the run's queries in run order, read from its columns as they are indexed
    (none when it has no stored detail)."""
    blobs = read_blobs(tx, run_id)
    return ColumnQueries(columnar.decode_columns(blobs)) if blobs else ()


def load_query(tx: Transaction, run_id: int, query_id: str) -> QueryRecord | None:
    """Return one query of the run (None when it has no such query stored)."""
    blobs = read_blobs(tx, run_id)
    return columnar.decode_query(blobs, query_id) if blobs else None


def load_arrays(tx: Transaction, run_id: int) -> columnar.QueryArrays:
    """Return the run's query ids and per-query metric values as arrays."""
    blobs = read_blobs(tx, run_id, (columnar.QUERY_IDS, columnar.ERROR_TYPE, columnar.METRIC_NAMES))
    return columnar.decode_arrays(blobs) if blobs else columnar.QueryArrays(())


def convert_run_queries(tx: Transaction) -> None:
    """Rewrite the ``run_queries`` rows of every run as ``run_blobs`` columns, then drop
    that table (the conversion of schema version 5, in its transaction)."""
    d = tx.dialect
    run_ids = [int(row[0]) for row in tx.all("SELECT DISTINCT run_id FROM run_queries")]
    for run_id in sorted(run_ids):
        queries = tuple(
            QueryRecord(
                query_id=query_id,
                values={k: float_or_nan(v) for k, v in d.read_json(values).items()},
                retrieved_ids=tuple(d.read_json(retrieved)),
                relevant_ids=tuple(d.read_json(relevant)),
                latency_seconds=latency,
                error_type=error_type,
                error_message=error_message,
            )
            for query_id, values, retrieved, relevant, latency, error_type, error_message in (
                tx.all(
                    "SELECT query_id, metric_values, retrieved_ids, relevant_ids,"
                    " latency_seconds, error_type, error_message FROM run_queries"
                    " WHERE run_id = ? ORDER BY position",
                    (run_id,),
                )
            )
        )
        insert_blobs(tx, run_id, QueryColumns.of(queries))
        tx.execute("UPDATE runs SET query_count = ? WHERE run_id = ?", (len(queries), run_id))
    tx.execute("DROP TABLE run_queries")


def figure_rows(run: RunRecord) -> dict[str, dict[str, float | None]]:
    """Return the ``run_figures`` rows of a run by family: ``mean``, ``latency``, ``rate``."""
    figures = run.figures
    if not run.ok and figures == RunFigures():
        return {"mean": dict(run.means)}
    latency = figures.latency
    return {
        "mean": dict(run.means),
        "latency": {name: getattr(latency, name) for name in _LATENCY},
        "rate": {row: _number(getattr(figures, field)) for row, field in _RATES.items()},
    }


def figures_of(families: dict[str, dict[str, float]], stats: object) -> RunFigures:
    """Return the RunFigures saved as ``families`` rows; the index size is in ``stats``."""
    latency = {name: _known(families.get("latency", {}).get(name)) for name in _LATENCY}
    rates = {field: families.get("rate", {}).get(row) for row, field in _RATES.items()}
    counts = {field: int(_known(rates.pop(field)) or 0) for field in _COUNTS}
    return RunFigures(
        latency=LatencySummary(count=counts["sent"] - counts["failed"], **latency),
        error_rate=rates["error_rate"],
        zero_result_rate=rates["zero_result_rate"],
        mean_top1_score=rates["mean_top1_score"],
        queries_per_second=rates["queries_per_second"],
        **stats_figures(stats),
        **counts,
    )


def _known(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value


def _number(value: float | int | None) -> float | None:
    return None if value is None else float(value)


def load_run(tx: Transaction, run_id: int, known: ColumnQueries | None = None) -> RunRecord | None:
    """Return the run with this id, its figures and its queries; None when there is none.

    The queries are read from the run's columns as they are indexed (the record carries
    the columns). ``known`` are the queries this process saved the run with, when they read
    back as they are (:func:`~monitor.store.columnar.columns_read_back_as_given`): they are returned
    instead of being read again from the columns, unless retention has dropped the run's
    detail since.
    """
    row = tx.one(
        f"SELECT {_HEAD}, query_count, evalset_fingerprint, config_hash, stats FROM runs"
        " WHERE run_id = ?",
        (run_id,),
    )
    if row is None:
        return None
    figures = load_figures(tx, [run_id]).get(run_id, {})
    count, fingerprint, config_hash, raw_stats = row[-4:]
    stats = tx.dialect.read_json(raw_stats)
    head = _head(tx, row)
    blobs = read_blobs(tx, run_id)
    queries: Sequence[QueryRecord] = ()
    if blobs and known is not None and len(known) == int(count):
        queries = known
    elif blobs:
        queries = ColumnQueries(columnar.decode_columns(blobs))
    return RunRecord(
        **head,
        evalset_fingerprint=fingerprint,
        config_hash=config_hash,
        stats=stats,
        queries=queries,
        means=figures.get("mean", {}),
        figures=figures_of(figures, stats),
    )


def load_figures(tx: Transaction, run_ids: Iterable[int]) -> dict[int, dict[str, dict[str, float]]]:
    """Return ``{run_id: {family: {name: value}}}`` for the given runs, names in saved order."""
    ids = list(run_ids)
    figures: dict[int, dict[str, dict[str, float]]] = {}
    if not ids:
        return figures
    marks = ", ".join("?" * len(ids))
    rows = tx.all(
        f"SELECT run_id, family, name, value FROM run_figures WHERE run_id IN ({marks})"
        " ORDER BY run_id, family, position",
        ids,
    )
    for run_id, family, name, value in rows:
        figures.setdefault(run_id, {}).setdefault(family, {})[name] = float_or_nan(value)
    return figures


def latest_run_id(tx: Transaction, suite: str, status: str | None) -> int | None:
    """Return the id of the suite's latest run (of ``status`` unless it is None)."""
    where, params = _where(suite, status)
    found = tx.scalar(
        f"SELECT run_id FROM runs {where} ORDER BY started_at DESC, run_id DESC LIMIT 1",
        params,
    )
    return None if found is None else int(found)


def list_runs(tx: Transaction, suite: str | None, limit: int) -> list[RunSummary]:
    """Return up to ``limit`` runs, newest first, with their means and query counts."""
    where, params = _where(suite, None)
    rows = tx.all(
        f"SELECT {_HEAD}, query_count FROM runs {where}"
        " ORDER BY started_at DESC, run_id DESC LIMIT ?",
        (*params, limit),
    )
    figures = load_figures(tx, (row[0] for row in rows))
    return [
        RunSummary(
            **_head(tx, row),
            query_count=int(row[-1]),
            means=figures.get(row[0], {}).get("mean", {}),
        )
        for row in rows
    ]


def _head(tx: Transaction, row: tuple[Any, ...]) -> dict[str, Any]:
    """Return the fields read from the ``_HEAD`` columns at the start of ``row``."""
    run_id, suite, pipeline, status, started, finished, error, pruned = row[:8]
    return {
        "run_id": int(run_id),
        "suite": suite,
        "pipeline": pipeline,
        "status": status,
        "started_at": tx.dialect.read_timestamp(started),
        "finished_at": tx.dialect.read_timestamp(finished),
        "error": error,
        "pruned_at": tx.dialect.read_optional_timestamp(pruned),
    }


def history_rows(tx: Transaction, suite: str) -> list[tuple[Any, ...]]:
    """Return ``(run_id, started_at, finished_at, status, family, name, value)`` rows of a
    suite's runs in time order (a run without figures has one row of NULL family)."""
    return tx.all(
        "SELECT r.run_id, r.started_at, r.finished_at, r.status, f.family, f.name, f.value"
        " FROM runs r LEFT JOIN run_figures f ON f.run_id = r.run_id"
        " WHERE r.suite = ? ORDER BY r.started_at, r.run_id, f.family, f.position",
        (suite,),
    )


def _where(suite: str | None, status: str | None) -> tuple[str, tuple[object, ...]]:
    clauses: list[str] = []
    params: list[object] = []
    for column, value in (("suite", suite), ("status", status)):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    return ("WHERE " + " AND ".join(clauses) if clauses else ""), tuple(params)
