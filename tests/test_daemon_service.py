"""The daemon in-process: what it counts, how it contains failing runs, reloads and exports,
and how shutdown treats a run that will not finish."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml
from apscheduler.events import (
    EVENT_JOB_ERROR,
    EVENT_JOB_MAX_INSTANCES,
    EVENT_JOB_MISSED,
    JobExecutionEvent,
    JobSubmissionEvent,
)

from monitor.config import MonitorConfig, SuiteConfig, load_config_text
from monitor.daemon import Daemon
from monitor.errors import ConfigError, SearchBackendError, UsageError
from monitor.exporters import SuiteSnapshot, start_http_exporter
from monitor.job import run_suite
from monitor.job.outcome import SuiteOutcome
from monitor.store import Store, open_store

BUNDLED = {
    "evalset": {"bundled": "larkfield"},
    "search": {"kind": "replay", "bundled": "larkfield/keyword"},
    "rules": [],
    "notifiers": [],
}


def config_of(**schedules: str) -> MonitorConfig:
    """Return a config with one bundled suite per name, each on its interval."""
    suites = {
        name: {**BUNDLED, "schedule": {"interval": every}} for name, every in schedules.items()
    }
    return load_config_text(yaml.safe_dump({"suites": suites}), "test.yaml")


def until(condition: Callable[[], bool], seconds: float = 20.0) -> None:
    """Wait until ``condition()`` holds, failing after ``seconds`` (a ceiling for a loaded
    machine: the wait ends as soon as the condition holds)."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.fixture
def make(tmp_path: Path) -> Iterator[Callable[..., Daemon]]:
    """Build daemons on a tmp store; shut down those left running at the end."""
    made: list[Daemon] = []

    def build(config: MonitorConfig, **options: Any) -> Daemon:
        options.setdefault("store_target", lambda _config: str(tmp_path / "monitor.db"))
        options.setdefault("shutdown_grace", 5.0)
        daemon = Daemon(config, **options)
        made.append(daemon)
        return daemon

    yield build
    for daemon in made:
        daemon.shutdown()
    # A run that shutdown abandoned goes on in the scheduler's pool: wait it out here, so
    # that it cannot run on into the next test.
    for daemon in made:
        until(lambda d=daemon: not any(s.running for s in d.snapshot().suites.values()), 15.0)


class Recorder:
    """A search run stand-in that records its calls and fails, blocks or runs for real."""

    def __init__(self, *, error: Exception | None = None, block: bool = False) -> None:
        self.calls: list[str] = []
        self.error = error
        self.release = threading.Event()
        self.block = block

    def abandon(self) -> None:
        """Release a blocked run that shutdown abandoned: it fails instead of running on."""
        self.error = SearchBackendError("abandoned at shutdown")
        self.release.set()

    def __call__(
        self,
        suite: SuiteConfig,
        store: Store,
        *,
        config_hash: str = "",
        progress: bool | None = None,
        sinks: Sequence[Callable[[SuiteSnapshot], None]] = (),
    ) -> SuiteOutcome:
        self.calls.append(suite.name)
        if self.block:
            self.release.wait(10)
        if self.error is not None:
            raise self.error
        return run_suite(suite, store, config_hash=config_hash, progress=progress, sinks=sinks)


@pytest.mark.slow
def test_a_failing_run_is_counted_and_the_next_run_still_comes(make: Callable[..., Daemon]) -> None:
    """A run that raises is logged and counted as a failure; the suite runs again on time."""
    run = Recorder(error=SearchBackendError("backend down"))
    daemon = make(config_of(demo="1s"), run=run)
    daemon.start()
    until(lambda: len(run.calls) >= 2)
    until(lambda: daemon.snapshot().suites["demo"].failures >= 2)
    status = daemon.snapshot().suites["demo"]
    assert (0, "SearchBackendError: backend down") == (status.runs, status.last_error)
    assert status.last_failure_at is not None


def test_a_suite_locked_by_another_process_is_skipped_not_failed(
    make: Callable[..., Daemon], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A run whose suite lock is held elsewhere is a skip: no error logged, nothing exported."""
    endpoint = FakeEndpoint()
    daemon = make(config_of(demo="1h"), metrics=endpoint)
    with open_store(tmp_path / "monitor.db") as store, store.lock("demo", ttl_seconds=60):
        daemon.start()
        until(lambda: daemon.snapshot().suites["demo"].skipped == 1)
        until(lambda: not daemon.snapshot().suites["demo"].running)
    status = daemon.snapshot().suites["demo"]
    assert (0, 0, 1) == (status.runs, status.failures, status.skipped)
    assert [] == endpoint.updates
    daemon_records = [r for r in caplog.records if r.name == "monitor.daemon"]
    assert [] == [r.msg for r in daemon_records if r.levelno >= logging.ERROR]
    assert [("run_skipped", logging.WARNING)] == [
        (r.msg["event"], r.levelno)  # type: ignore[index]
        for r in daemon_records
        if r.msg["event"] == "run_skipped"  # type: ignore[index]
    ]


def test_an_unexpected_exception_in_a_run_is_contained(make: Callable[..., Daemon]) -> None:
    """Even an error that is not a MonitorError is counted, not raised into the scheduler."""
    run = Recorder(error=RuntimeError("a bug"))
    daemon = make(config_of(demo="1h"), run=run)
    daemon.start()
    until(lambda: daemon.snapshot().suites["demo"].failures == 1)
    assert 0 == daemon.snapshot().suites["demo"].job_errors


def test_initial_run_runs_each_suite_now(make: Callable[..., Daemon]) -> None:
    """With the initial run, an hourly suite runs at once and is stored."""
    daemon = make(config_of(demo="1h"))
    daemon.start()
    until(lambda: daemon.snapshot().suites["demo"].runs == 1)
    assert daemon.snapshot().suites["demo"].last_outcome is not None


def test_without_initial_run_the_first_run_waits_for_the_schedule(
    make: Callable[..., Daemon],
) -> None:
    """Without the initial run, an hourly suite's first run is an hour away."""
    run = Recorder()
    daemon = make(config_of(demo="1h"), run=run, initial_run=False)
    daemon.start()
    next_run = daemon.next_run_times()["demo"]
    assert next_run is not None
    assert next_run > datetime.now(timezone.utc) + timedelta(minutes=59)
    assert [] == run.calls


@pytest.mark.parametrize(
    ("event", "counter"),
    [
        (
            JobExecutionEvent(EVENT_JOB_MISSED, "demo", "default", datetime.now(timezone.utc)),
            "missed",
        ),
        (
            JobSubmissionEvent(
                EVENT_JOB_MAX_INSTANCES, "demo", "default", [datetime.now(timezone.utc)]
            ),
            "skipped",
        ),
        (
            JobExecutionEvent(
                EVENT_JOB_ERROR,
                "demo",
                "default",
                datetime.now(timezone.utc),
                exception=RuntimeError("job fault"),
                traceback="Traceback ...",
            ),
            "job_errors",
        ),
    ],
    ids=["missed", "max_instances", "job_error"],
)
def test_scheduler_event_is_counted_for_its_suite(
    make: Callable[..., Daemon],
    event: Any,
    counter: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Missed runs, runs skipped while one is going, and job faults are counted and logged."""
    daemon = make(config_of(demo="1h"), initial_run=False)
    daemon.on_event(event)
    assert 1 == getattr(daemon.snapshot().suites["demo"], counter)
    assert ["demo"] == [
        record.msg["suite"]  # type: ignore[index]
        for record in caplog.records
        if record.name == "monitor.daemon"
    ]


def test_reload_with_a_bad_config_keeps_the_running_one(make: Callable[..., Daemon]) -> None:
    """A reload whose config fails is refused and counted; the suites stay scheduled."""

    def broken() -> MonitorConfig:
        raise ConfigError("test.yaml", "suites", "a mapping of suites")

    daemon = make(config_of(demo="1h"), reload_config=broken, initial_run=False)
    daemon.start()
    assert daemon.reload() is False
    snapshot = daemon.snapshot()
    assert (0, 1) == (snapshot.reloads, snapshot.reload_failures)
    assert ["demo"] == list(daemon.next_run_times())


def test_reload_adds_removes_and_reschedules_suites(make: Callable[..., Daemon]) -> None:
    """A reload schedules new suites, unschedules removed ones and takes new intervals."""
    configs = iter([config_of(kept="2h", added="1h")])
    daemon = make(
        config_of(kept="1h", removed="1h"),
        reload_config=lambda: next(configs),
        initial_run=False,
    )
    daemon.start()
    before = daemon.next_run_times()["kept"]
    assert daemon.reload() is True
    after = daemon.next_run_times()
    assert {"kept", "added"} == set(after)
    assert before is not None
    assert after["kept"] is not None
    assert after["kept"] > before
    assert {"kept", "added"} == set(daemon.snapshot().suites)


def test_each_run_is_exported_to_the_endpoint(make: Callable[..., Daemon]) -> None:
    """After a run the endpoint gets the run's snapshot; a removed suite is forgotten."""
    endpoint = FakeEndpoint()
    configs = iter([config_of(other="1h")])
    daemon = make(config_of(demo="1h"), metrics=endpoint, reload_config=lambda: next(configs))
    daemon.start()
    until(lambda: len(endpoint.updates) == 1)
    assert [("demo", True)] == [(u.suite, u.success) for u in endpoint.updates]
    daemon.reload()
    assert ["demo"] == endpoint.forgotten


def test_a_failing_export_does_not_fail_the_run(make: Callable[..., Daemon]) -> None:
    """An endpoint that refuses the snapshot is logged; the run still counts as a success."""
    endpoint = FakeEndpoint(error=UsageError("label 'suite': bad"))
    daemon = make(config_of(demo="1h"), metrics=endpoint)
    daemon.start()
    until(lambda: daemon.snapshot().suites["demo"].runs == 1)
    assert 0 == daemon.snapshot().suites["demo"].failures


def test_after_a_restart_a_failed_run_exports_the_stored_last_success(
    make: Callable[..., Daemon], tmp_path: Path
) -> None:
    """A new daemon on the same store whose first run fails serves the store's last success."""
    first = make(config_of(demo="1h"))
    first.start()
    until(lambda: first.snapshot().suites["demo"].runs == 1)
    first.shutdown()
    (tmp_path / "down.py").write_text("def search(query, k):\n    raise ConnectionError('down')\n")
    down = {
        "evalset": {"bundled": "larkfield"},
        "search": {"kind": "python", "target": "down:search", "path": str(tmp_path)},
        "runner": {"retries": 0},
        "schedule": {"interval": "1h"},
        "notifiers": [],
    }
    endpoint = start_http_exporter("127.0.0.1", 0)
    try:
        second = make(
            load_config_text(yaml.safe_dump({"suites": {"demo": down}}), "test.yaml"),
            metrics=endpoint,
        )
        second.start()
        until(lambda: second.snapshot().suites["demo"].failures == 1)
        served = {
            family.name: [sample.value for sample in family.samples]
            for family in endpoint.collect()
        }
    finally:
        endpoint.close()
    with open_store(tmp_path / "monitor.db") as store:
        last_ok = store.latest_run("demo")
    assert last_ok is not None
    assert [0.0] == served["retrieval_run_success"]
    assert [last_ok.finished_at.timestamp()] == served["retrieval_last_success_timestamp_seconds"]


class FakeEndpoint:
    """A /metrics endpoint that records what it is given, or refuses it with ``error``."""

    def __init__(self, error: Exception | None = None) -> None:
        self.updates: list[SuiteSnapshot] = []
        self.forgotten: list[str] = []
        self.error = error

    def update(self, snapshot: SuiteSnapshot) -> None:
        if self.error is not None:
            raise self.error
        self.updates.append(snapshot)

    def forget(self, suite: str) -> None:
        self.forgotten.append(suite)


@pytest.mark.slow
def test_shutdown_waits_for_a_run_that_finishes_within_the_grace(
    make: Callable[..., Daemon],
) -> None:
    """A run finishing during the grace period is waited for; nothing is abandoned."""
    run = Recorder(block=True)
    daemon = make(config_of(demo="1h"), run=run, shutdown_grace=5.0)
    daemon.start()
    until(lambda: daemon.snapshot().suites["demo"].running)
    threading.Timer(0.2, run.release.set).start()
    assert () == daemon.shutdown()
    assert 1 == daemon.snapshot().suites["demo"].runs


def abandoned_events(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    """Return the shutdown_abandoned events logged so far."""
    return [
        r.msg
        for r in caplog.records
        if isinstance(r.msg, dict) and r.msg["event"] == "shutdown_abandoned"
    ]


def test_shutdown_abandons_a_run_that_outlasts_the_grace(
    make: Callable[..., Daemon], caplog: pytest.LogCaptureFixture
) -> None:
    """A run still going when the grace runs out is abandoned, the grace named as the reason."""
    run = Recorder(block=True)
    daemon = make(config_of(demo="1h"), run=run, shutdown_grace=0.1)
    daemon.start()
    until(lambda: daemon.snapshot().suites["demo"].running)
    try:
        assert ("demo",) == daemon.shutdown()
    finally:
        run.abandon()
    assert ["the grace period of 0.1 s ran out"] == [e["reason"] for e in abandoned_events(caplog)]


@pytest.mark.slow
def test_a_second_stop_request_abandons_the_run_and_says_so(
    make: Callable[..., Daemon], caplog: pytest.LogCaptureFixture
) -> None:
    """A second stop during a long grace abandons the run at once, naming the second request."""
    run = Recorder(block=True)
    daemon = make(config_of(demo="1h"), run=run, shutdown_grace=30.0)
    daemon.start()
    until(lambda: daemon.snapshot().suites["demo"].running)
    threading.Timer(0.2, daemon.request_stop).start()
    started = time.monotonic()
    try:
        assert ("demo",) == daemon.shutdown()
    finally:
        run.abandon()
    assert time.monotonic() - started < 5.0
    assert ["a second stop request came"] == [e["reason"] for e in abandoned_events(caplog)]


def test_an_abandoned_runs_lock_is_said_to_be_taken_over_on_this_host(
    make: Callable[..., Daemon], caplog: pytest.LogCaptureFixture
) -> None:
    """The abandoned event names this host and process, whose lock a run here takes over."""
    run = Recorder(block=True)
    daemon = make(config_of(demo="1h"), run=run, shutdown_grace=0.0)
    daemon.start()
    until(lambda: daemon.snapshot().suites["demo"].running)
    try:
        daemon.shutdown()
    finally:
        run.abandon()
    (event,) = abandoned_events(caplog)
    assert (socket.gethostname(), os.getpid()) == (event["host"], event["pid"])
    assert event["lock"].startswith("taken over at once by the suite's next run on this host")


def test_shutdown_grace_below_zero_is_refused(tmp_path: Path) -> None:
    """A negative grace period raises UsageError."""
    with pytest.raises(UsageError, match="grace"):
        Daemon(config_of(demo="1h"), store_target=lambda _c: str(tmp_path), shutdown_grace=-1)
