"""The daemon starts every suite due at the same instant on time."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
import yaml

from monitor.config import MonitorConfig, SuiteConfig, load_config_text
from monitor.daemon import MAX_WORKERS, WORKERS, Daemon, pool_size
from monitor.exporters import SuiteSnapshot
from monitor.job.outcome import SuiteOutcome
from monitor.store import Store

SUITES = 20


def config_of(count: int) -> MonitorConfig:
    """Return a config of ``count`` bundled suites on one 4 s interval."""
    suite = {
        "evalset": {"bundled": "larkfield"},
        "search": {"kind": "replay", "bundled": "larkfield/keyword"},
        "schedule": {"interval": "4s"},  # a misfire grace of 2 s, as in the field report
        "notifiers": [],
    }
    suites = {f"suite{i:02d}": suite for i in range(count)}
    return load_config_text(yaml.safe_dump({"suites": suites}), "test.yaml")


class SlowRun:
    """A run that takes ``seconds``, longer than the misfire grace, and records who ran."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started: list[str] = []
        self._lock = threading.Lock()

    def __call__(
        self,
        suite: SuiteConfig,
        store: Store,
        *,
        config_hash: str = "",
        progress: bool | None = None,
        sinks: Sequence[Callable[[SuiteSnapshot], None]] = (),
    ) -> SuiteOutcome:
        with self._lock:
            self.started.append(suite.name)
        time.sleep(self.seconds)
        raise RuntimeError("not measured")  # the daemon contains it; only the start counts


@pytest.mark.slow
def test_twenty_suites_due_at_once_all_run_and_none_is_missed(tmp_path: Path) -> None:
    """With 20 suites due at the same instant and runs longer than the grace, none is missed."""
    run = SlowRun(seconds=3.0)
    daemon = Daemon(
        config_of(SUITES),
        store_target=lambda _config: str(tmp_path / "monitor.db"),
        run=run,
        shutdown_grace=10.0,
    )
    daemon.start()
    try:
        deadline = time.monotonic() + 8
        while len(set(run.started)) < SUITES and time.monotonic() < deadline:
            time.sleep(0.05)
        missed = sum(status.missed for status in daemon.snapshot().suites.values())
    finally:
        daemon.shutdown()
    assert (SUITES, 0) == (len(set(run.started)), missed)


@pytest.mark.parametrize(
    ("suites", "workers"),
    [(1, WORKERS), (SUITES, SUITES), (MAX_WORKERS + 10, MAX_WORKERS)],
)
def test_the_pool_has_one_worker_per_suite_within_bounds(suites: int, workers: int) -> None:
    """The pool has a worker per suite, at least WORKERS and at most MAX_WORKERS."""
    assert workers == pool_size(suites)
