"""The daemon's own counters on /metrics: runs by outcome and config reloads."""

from __future__ import annotations

from datetime import datetime, timezone

from prometheus_client import CollectorRegistry, generate_latest

from monitor.daemon import SchedulerCollector
from monitor.daemon.status import DaemonSnapshot, SuiteStatus

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def exposition(snapshot: DaemonSnapshot) -> str:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SchedulerCollector(lambda: snapshot))
    return generate_latest(registry).decode()


def test_runs_are_counted_by_suite_and_outcome() -> None:
    """Each outcome of each suite is one counter series, read at scrape time."""
    status = SuiteStatus("nightly", runs=5, failures=2, missed=1, skipped=3, job_errors=0)
    text = exposition(DaemonSnapshot(T0, T0, "monitor.yaml", 1, 0, {"nightly": status}))
    for outcome, count in (("ok", 5), ("failed", 2), ("missed", 1), ("skipped", 3)):
        line = f'retrieval_scheduler_runs_total{{outcome="{outcome}",suite="nightly"}} {count}.0'
        assert line in text
    assert "# TYPE retrieval_scheduler_runs_total counter" in text
    assert 'retrieval_scheduler_config_reloads_total{result="ok"} 1.0' in text
