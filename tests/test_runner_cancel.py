"""A run asked to stop: no query starts after the request, in every driver, and it says so."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import datetime, timezone
from typing import Any

import pytest

from monitor.alerts import FailureReason
from monitor.alerts.build import failure_alert
from monitor.cli.exits import ExitCode, exit_code
from monitor.errors import RunTerminated, SearchBackendError
from monitor.job.publish import failure_reason
from monitor.records import Query
from monitor.runner import run_queries

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)

QUERIES = [Query(f"q{i}", f"text {i}", {f"d{i}": 1}) for i in range(20)]

#: The drivers of the runner, by the settings that choose them.
DRIVERS = {
    "loop": {"concurrency": 1},
    "threads": {"concurrency": 4},
    "threads with a timeout": {"concurrency": 1, "timeout": 30.0},
}


class StoppingSearch:
    """A sync search that asks the run to stop during its ``stop_at``-th call.

    Each call records whether the stop had been asked for when it started.
    """

    def __init__(self, cancel: threading.Event, stop_at: int) -> None:
        self.cancel = cancel
        self.stop_at = stop_at
        self.started_after_stop = 0
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, query: str, k: int) -> list[str]:
        with self._lock:
            if self.cancel.is_set():
                self.started_after_stop += 1
            self.calls += 1
            if self.calls == self.stop_at:
                self.cancel.set()
        time.sleep(0.01)
        return ["x"]


@pytest.mark.parametrize("settings", DRIVERS.values(), ids=DRIVERS.keys())
def test_no_query_starts_after_the_stop_request(settings: dict[str, Any]) -> None:
    """Once the cancel event is set, the sync drivers start no further query."""
    cancel = threading.Event()
    search = StoppingSearch(cancel, stop_at=3)
    with pytest.raises(RunTerminated):
        run_queries(QUERIES, search, progress=False, cancel=cancel, **settings)
    assert 0 == search.started_after_stop
    assert search.calls < len(QUERIES)


def test_the_error_says_how_far_the_run_got() -> None:
    """RunTerminated counts the queries that had an outcome and says the run was terminated."""
    cancel = threading.Event()
    with pytest.raises(RunTerminated) as raised:
        run_queries(QUERIES, StoppingSearch(cancel, stop_at=3), progress=False, cancel=cancel)
    assert (3, 20) == (raised.value.done, raised.value.total)
    assert "terminated: asked to stop after 3 of 20 queries" == str(raised.value)


@pytest.mark.parametrize("settings", DRIVERS.values(), ids=DRIVERS.keys())
def test_a_run_asked_to_stop_before_it_starts_sends_no_query(settings: dict[str, Any]) -> None:
    """An event already set when the run starts lets no query (not even the warm-up) through."""
    cancel = threading.Event()
    cancel.set()
    search = StoppingSearch(cancel, stop_at=0)
    with pytest.raises(RunTerminated):
        run_queries(QUERIES, search, progress=False, cancel=cancel, warmup=2, **settings)
    assert 0 == search.calls


@pytest.mark.slow
def test_the_thread_pool_abandons_a_hung_call_when_asked_to_stop() -> None:
    """A call that never returns does not hold a stopped run: it ends within a second."""
    cancel = threading.Event()
    never = threading.Event()

    def hung(query: str, k: int) -> list[str]:
        never.wait()
        return []

    threading.Timer(0.2, cancel.set).start()
    started = time.monotonic()
    try:
        with pytest.raises(RunTerminated):
            run_queries(QUERIES, hung, concurrency=2, progress=False, cancel=cancel)
        assert time.monotonic() - started < 1.0
    finally:
        never.set()


class AsyncStoppingSearch:
    """An async search whose ``stop_at``-th call asks the run to stop and then hangs."""

    def __init__(self, cancel: threading.Event, stop_at: int) -> None:
        self.cancel = cancel
        self.stop_at = stop_at
        self.calls = 0
        self.started_after_stop = 0

    async def __call__(self, query: str, k: int) -> list[str]:
        if self.cancel.is_set():
            self.started_after_stop += 1
        self.calls += 1
        if self.calls == self.stop_at:
            self.cancel.set()
            await asyncio.sleep(3600)
        await asyncio.sleep(0.01)
        return ["x"]


@pytest.mark.parametrize("concurrency", [1, 4])
def test_the_async_driver_stops_and_cancels_the_calls_in_flight(concurrency: int) -> None:
    """An async run asked to stop starts no further query and does not wait for a hung call."""
    cancel = threading.Event()
    search = AsyncStoppingSearch(cancel, stop_at=3)
    started = time.monotonic()
    with pytest.raises(RunTerminated):
        run_queries(QUERIES, search, concurrency=concurrency, progress=False, cancel=cancel)
    assert (0, True) == (search.started_after_stop, time.monotonic() - started < 1.0)


def test_a_run_without_a_cancel_event_runs_every_query() -> None:
    """Without ``cancel`` nothing changes: every query runs."""
    calls: list[str] = []

    def search(query: str, k: int) -> list[str]:
        calls.append(query)
        return ["x"]

    result = run_queries(QUERIES, search, concurrency=4, progress=False)
    assert (20, 20) == (len(calls), result.total)


def test_a_terminated_run_is_a_backend_failure_with_exit_code_3() -> None:
    """RunTerminated is an infrastructure failure: a failed run is stored and `run` exits 3."""
    error = RunTerminated(3, 20)
    assert (True, ExitCode.BACKEND) == (isinstance(error, SearchBackendError), exit_code(error))


def test_a_terminated_run_raises_its_own_failure_alert() -> None:
    """A terminated run raises the run_terminated alert, saying the run was terminated."""
    reason = failure_reason(RunTerminated(3, 20))
    assert reason is FailureReason.RUN_TERMINATED
    alert = failure_alert("nightly", reason, str(RunTerminated(3, 20)), at=T0)
    assert ("run_terminated", "nightly: the run was terminated before it finished") == (
        alert.rule,
        alert.summary,
    )
