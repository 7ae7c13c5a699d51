"""The store's record of a run: :func:`run_record` of a measured run, :func:`failed_run`
of an attempt that measured nothing.

A run's record holds its queries as the columns the store saves, one row per eval-set
query, built from the run's table and its evaluation without a Python object per hit.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from monitor.errors import MonitorError, SearchBackendError
from monitor.logs import get_logger
from monitor.secrets import suite_scrubber
from monitor.store.records import (
    ColumnQueries,
    QueryColumns,
    RunFigures,
    RunRecord,
    stats_figures,
)

if TYPE_CHECKING:
    from monitor.config.model import SuiteConfig
    from monitor.evalset import EvalSet
    from monitor.metrics.evaluation import EvaluationResult
    from monitor.run.rankings import Rankings
    from monitor.runner import RunResult

log = get_logger(__name__)


def run_record(
    suite: SuiteConfig,
    evalset: EvalSet,
    config_hash: str,
    result: RunResult,
    evaluation: EvaluationResult,
    *,
    pipeline: str | None = None,
    rankings: tuple[Rankings, Rankings] | None = None,
) -> RunRecord:
    """Turn a finished run into the store's record: its queries as the columns the store
    saves, one row per eval-set query, and records of them built only when read.

    Queries left out of the metrics (no relevant judgment, or the search failed for them) keep
    their rankings, latency and error but carry no metric values. The run's table hands its
    hits over as arrays: no Python object is made per hit. ``rankings`` are
    :func:`run_rankings` of the run, when the caller has them already.
    """
    frame = evaluation.per_query
    table = result.outcomes
    ids = table.query_ids
    # Each query's row of the evaluation's float array, found for all queries at once.
    position = (
        frame.index.get_indexer(pd.Index(ids)) if len(frame.columns) else np.full(len(ids), -1)
    )
    present = position >= 0
    metrics = tuple(str(name) for name in frame.columns) if present.any() else ()
    matrix = np.full((len(ids), len(metrics)), np.nan)
    matrix[present] = frame.to_numpy(dtype=float)[position[present]] if metrics else 0.0
    marks = np.repeat(present[:, None], len(metrics), axis=1)
    retrieved, relevant = rankings if rankings is not None else run_rankings(result)
    errors, messages = table.error_columns()
    columns = QueryColumns(
        query_ids=ids,
        latency_seconds=table.latency_list(),
        error_types=errors,
        error_messages=messages,
        retrieved_ids=retrieved,
        relevant_ids=relevant,
        metrics=metrics,
        values=matrix,
        present=marks,
    )
    return RunRecord(
        suite=suite.name,
        pipeline=pipeline or suite.pipeline,
        started_at=result.started_at,
        finished_at=result.finished_at,
        status="ok",
        evalset_fingerprint=evalset.fingerprint,
        config_hash=config_hash,
        means=evaluation.means,
        figures=RunFigures(
            latency=result.latency,
            error_rate=result.error_rate,
            zero_result_rate=result.zero_result_rate,
            mean_top1_score=result.mean_top1_score,
            queries_per_second=result.queries_per_second,
            **stats_figures(result.search_stats),
            sent=result.total,
            failed=result.failed,
            evaluated=evaluation.counts.evaluated,
        ),
        stats=dict(result.search_stats),
        queries=ColumnQueries(columns),
    )


def run_rankings(result: RunResult) -> tuple[Rankings, Rankings]:
    """Return the retrieved and the relevant ids of every query of ``result``, in order, as
    the store saves them."""
    return result.outcomes.rankings()


def failed_run(
    suite: SuiteConfig,
    evalset: EvalSet,
    config_hash: str,
    started: datetime,
    finished: datetime,
    reason: str,
    error: MonitorError | None,
) -> RunRecord:
    """Return the record of an attempt that measured nothing: why it failed (``reason``,
    secrets masked), and what was sent when ``error`` knows it."""
    return RunRecord(
        suite=suite.name,
        pipeline=suite.pipeline,
        started_at=started,
        finished_at=max(finished, started),
        status="failed",
        evalset_fingerprint=evalset.fingerprint,
        config_hash=config_hash,
        figures=RunFigures() if error is None else failure_figures(error),
        error=suite_scrubber(suite)(reason),
    )


def failed_search(
    suite: SuiteConfig,
    evalset: EvalSet,
    config_hash: str,
    started: datetime,
    finished: datetime,
    error: MonitorError,
) -> RunRecord:
    """Return :func:`failed_run` of an attempt that ``error`` stopped, which names it."""
    reason = f"{type(error).__name__}: {error}"
    return failed_run(suite, evalset, config_hash, started, finished, reason, error)


def failure_figures(error: BaseException) -> RunFigures:
    """Return what a failed attempt measured: the queries sent and failed, and their ratio.

    A backend error knows them when the runner stopped the run (the error budget); any other
    failure leaves them unknown (zero counts, no error rate).
    """
    if not isinstance(error, SearchBackendError) or error.sent is None or error.failed is None:
        return RunFigures()
    sent, failed = error.sent, error.failed
    if not 0 <= failed <= sent:
        log.warning("failure_counts_inconsistent", sent=sent, failed=failed)
        return RunFigures()
    return RunFigures(error_rate=failed / sent if sent else None, sent=sent, failed=failed)
