"""The runner: queries through a search function, into a :class:`RunResult`."""

from __future__ import annotations

from monitor.records import LatencySummary
from monitor.runner.calls import RetryPolicy, is_retryable
from monitor.runner.reference import reference_qrels
from monitor.runner.result import RunResult
from monitor.runner.run import run_pipelines, run_queries

__all__ = [
    "LatencySummary",
    "RetryPolicy",
    "RunResult",
    "is_retryable",
    "reference_qrels",
    "run_pipelines",
    "run_queries",
]
