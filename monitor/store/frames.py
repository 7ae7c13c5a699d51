"""pandas views of stored runs: a suite's history and one run's queries."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from monitor.store.dialect import Dialect, float_or_nan
from monitor.store.records import RunRecord

if TYPE_CHECKING:
    import pandas as pd

#: The columns every history frame starts with.
HISTORY_COLUMNS = ("run_id", "started_at", "finished_at", "status")

#: The per-query columns after the metric columns.
QUERY_COLUMNS = (
    "latency_seconds",
    "error_type",
    "error_message",
    "retrieved_ids",
    "relevant_ids",
)


def history_frame(
    rows: Sequence[tuple[Any, ...]], dialect: Dialect, metrics: Iterable[str] | None
) -> pd.DataFrame:
    """Return one row per run: the run's id, times and status, then one column per metric
    mean, ``latency_<figure>`` per latency figure, and one column per rate.

    ``metrics`` picks and orders the metric columns (a metric a run lacks is NaN); by default
    every metric any run has, in order of first appearance.
    """
    import pandas as pd

    runs: dict[int, dict[str, Any]] = {}
    seen: dict[str, dict[str, None]] = {"mean": {}, "latency": {}, "rate": {}}
    for run_id, started, finished, status, family, name, value in rows:
        run = runs.setdefault(
            run_id,
            {
                "run_id": run_id,
                "started_at": dialect.read_timestamp(started),
                "finished_at": dialect.read_timestamp(finished),
                "status": status,
            },
        )
        if family is not None:
            column = _column(family, name)
            seen[family][column] = None
            run[column] = float_or_nan(value)
    means = list(seen["mean"]) if metrics is None else list(dict.fromkeys(metrics))
    columns = [*HISTORY_COLUMNS, *means, *seen["latency"], *seen["rate"]]
    frame = pd.DataFrame(
        [[run.get(column, math.nan) for column in columns] for run in runs.values()],
        columns=pd.Index(columns),
    )
    frame["run_id"] = frame["run_id"].astype("int64")
    for column in ("started_at", "finished_at"):
        frame[column] = pd.to_datetime(frame[column], utc=True)
    for column in columns[len(HISTORY_COLUMNS) :]:
        frame[column] = frame[column].astype("float64")
    return frame


def _column(family: str, name: str) -> str:
    return f"latency_{name}" if family == "latency" else name


def per_query_frame(run: RunRecord) -> pd.DataFrame:
    """Return one row per query of ``run`` (index ``query_id``, in run order): one column per
    metric, then latency, error type and message, and the retrieved and relevant ids."""
    import pandas as pd

    metrics = list(dict.fromkeys(name for query in run.queries for name in query.values))
    columns = [*metrics, *QUERY_COLUMNS]
    frame = pd.DataFrame(
        [
            [
                *(query.values.get(name, math.nan) for name in metrics),
                math.nan if query.latency_seconds is None else query.latency_seconds,
                query.error_type,
                query.error_message,
                query.retrieved_ids,
                query.relevant_ids,
            ]
            for query in run.queries
        ],
        columns=pd.Index(columns),
        index=pd.Index([query.query_id for query in run.queries], name="query_id", dtype=object),
    )
    for column in [*metrics, "latency_seconds"]:
        frame[column] = frame[column].astype("float64")
    return frame
