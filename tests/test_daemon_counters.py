"""The daemon's own counters on /metrics: runs by outcome and config reloads."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest

from monitor.config import load_config_text
from monitor.daemon import Daemon, SchedulerCollector
from monitor.daemon.status import DaemonSnapshot, SuiteStatus
from monitor.errors import LabelError
from monitor.exporters import validate_labels

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


def test_runs_carry_the_suites_static_labels() -> None:
    """A suite's static config labels are on each of its scheduler series, after its own."""
    status = SuiteStatus("nightly", runs=2, labels={"team": "search", "env": "prod"})
    text = exposition(DaemonSnapshot(T0, T0, "monitor.yaml", 0, 0, {"nightly": status}))
    line = 'retrieval_scheduler_runs_total{env="prod",outcome="ok",suite="nightly",team="search"}'
    assert f"{line} 2.0" in text


def test_daemon_snapshot_takes_the_static_labels_from_the_config(tmp_path: Path) -> None:
    """The daemon's snapshot gives each suite the labels its config declares."""
    suite = {
        "evalset": {"bundled": "larkfield"},
        "search": {"kind": "replay", "bundled": "larkfield/keyword"},
        "schedule": {"interval": "1h"},
        "labels": {"team": "search"},
    }
    config = load_config_text(yaml.safe_dump({"suites": {"nightly": suite}}), "test.yaml")
    daemon = Daemon(config, store_target=lambda _config: str(tmp_path / "monitor.db"))
    assert {"team": "search"} == dict(daemon.snapshot().suites["nightly"].labels)


def test_outcome_cannot_be_a_static_label() -> None:
    """A static label named like the scheduler's own ``outcome`` label is refused."""
    with pytest.raises(LabelError, match="outcome"):
        validate_labels({"outcome": "x"})
