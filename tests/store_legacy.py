"""Write runs the way schema versions 1 to 3 kept them: one JSON row per query.

The migration tests build such a store with the old migrations, write runs with these
statements (the code that wrote them is gone), then open it with the current code.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone

from monitor.store import RunRecord, SqlStore, runs


def _json(value: object) -> str:
    if isinstance(value, dict):
        value = {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in value.items()}
    return json.dumps(value)


def insert_legacy_run(store: SqlStore, run: RunRecord) -> int:
    """Insert ``run`` as a store at schema version 1 to 3 holds it; return its id."""
    with store._db.transaction(write=True, doing="writing a legacy run") as tx:
        d = tx.dialect
        run_id = int(
            tx.scalar(
                "INSERT INTO runs (suite, pipeline, status, started_at, finished_at,"
                " evalset_fingerprint, config_hash, stats, error, saved_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING run_id",
                (
                    run.suite,
                    run.pipeline,
                    run.status,
                    d.timestamp(run.started_at),
                    d.timestamp(run.finished_at),
                    run.evalset_fingerprint,
                    run.config_hash,
                    json.dumps(dict(run.stats)),
                    run.error,
                    d.timestamp(datetime.now(timezone.utc)),
                ),
            )
        )
        tx.executemany(
            "INSERT INTO run_figures (run_id, family, name, position, value)"
            " VALUES (?, ?, ?, ?, ?)",
            (
                (run_id, family, name, position, None if v is None or math.isnan(v) else v)
                for family, values in runs.figure_rows(run).items()
                for position, (name, v) in enumerate(values.items())
            ),
        )
        tx.executemany(
            "INSERT INTO run_queries (run_id, position, query_id, metric_values, retrieved_ids,"
            " relevant_ids, latency_seconds, error_type, error_message)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                (
                    run_id,
                    position,
                    q.query_id,
                    _json(dict(q.values)),
                    json.dumps(list(q.retrieved_ids)),
                    json.dumps(list(q.relevant_ids)),
                    q.latency_seconds,
                    q.error_type,
                    q.error_message,
                )
                for position, q in enumerate(run.queries)
            ),
        )
    return run_id
