"""The job: one run of a suite composed from its stages, scheduled or sharded.

:func:`run_suite` is the scheduled run both ``run`` and ``daemon`` take
(:mod:`monitor.job.suite`); :func:`run_shard` runs one shard of a sharded attempt
(:mod:`monitor.job.shard`). Both, and the gate, take the one run path of
:mod:`monitor.job.path`.
"""

from __future__ import annotations

from monitor.job.path import recorded_metrics, score_run, search_suite
from monitor.job.shard import run_shard
from monitor.job.suite import run_suite

__all__ = ["recorded_metrics", "run_shard", "run_suite", "score_run", "search_suite"]
