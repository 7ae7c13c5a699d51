"""Acceptance: scripted timelines of faults against the real command line.

Each test is a timeline (:mod:`tests.timeline`): a real search service and a real webhook
receiver on 127.0.0.1, faults set at moments (the backend down, the receiver down, the wall
clock stepped mid-run), and each step a ``run`` process, as cron starts it. The clock steps
need libfaketime (Debian's ``faketime``, which ``.ci/run`` installs).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.timeline import Timeline, faketime_library, runs, timeline

pytestmark = pytest.mark.slow


@pytest.fixture
def faketime() -> None:
    """Skip without libfaketime, or fail where every tool the tests need must be there."""
    if faketime_library() is not None:
        return
    message = "libfaketime is not installed (apt-get install faketime)"
    if os.environ.get("MONITOR_REQUIRE_SERVICES") == "1":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture
def line(tmp_path: Path) -> Iterator[Timeline]:
    """A timeline whose first run is pinned as the suite's baseline."""
    for running in timeline(tmp_path):
        first = running.run()
        assert 0 == first.code, first.err
        assert 0 == running.run("baseline", "set", "--suite", "nightly").code
        yield running


def test_an_outage_fires_once_waits_out_a_dead_receiver_and_resolves(line: Timeline) -> None:
    """Backend down: not_measured fires once (exit 3); with the receiver down too, the backend
    back resolves it in the outbox (exit 0); the receiver back is told the resolve."""
    line.backend.mode = "down"
    down = line.run()
    again = line.run()
    line.receiver.stop()
    line.backend.mode = "up"
    back = line.run()
    line.receiver.start()
    told = line.run()
    assert (3, [("firing", "not_measured")], "0.0") == (down.code, down.told, down.success)
    assert (3, []) == (again.code, again.told)
    assert (0, [], "1.0") == (back.code, back.told, back.success)
    assert (0, [("resolved", "not_measured")]) == (told.code, told.told)


def test_a_backend_answering_nothing_is_measured_and_alerts_its_rules(line: Timeline) -> None:
    """Every query answered with no hits is measured as a total miss: exit 0, the quality rule
    fires, and the rule resolves when the answers come back."""
    line.backend.mode = "empty"
    empty = line.run()
    line.backend.mode = "up"
    back = line.run()
    assert (0, [("firing", "mrr max_drop")]) == (empty.code, empty.told)
    assert (0, [("resolved", "mrr max_drop")]) == (back.code, back.told)


@pytest.mark.usefixtures("faketime")
def test_a_clock_stepping_back_mid_run_stores_and_exports_the_run(line: Timeline) -> None:
    """The wall clock stepping an hour back at the run's 20th query: the run completes (exit 0)
    and exports its gauges."""
    line.faked = True
    line.backend.on_query = lambda seen: line.step_clock("-1h") if seen == 60 else None
    stepped = line.run()  # the first run sent 40 queries before this one
    assert (0, "1.0") == (stepped.code, stepped.success), stepped.err


@pytest.mark.usefixtures("faketime")
def test_a_run_whose_clock_is_five_minutes_ahead_does_not_take_a_running_holders_lock(
    line: Timeline,
) -> None:
    """A second run starting with its clock 5 minutes ahead, while a run holds the lock
    (its lease of 60 s looks expired to it), is skipped: one run is stored, not two."""
    line.backend.mode = "held"
    first = line.start()
    while line.backend.seen <= 40:  # the first run is under way, holding the lock
        if first.poll() is not None:
            pytest.fail("the first run ended before the second started")
        time.sleep(0.01)
    second = line.run(clock="+5m")
    line.backend.release.set()
    done = line.finish(first)
    assert (0, True) == (second.code, "is locked by pid" in second.err), second.err
    assert 0 == done.code, done.err
    assert [(1, "ok"), (2, "ok")] == list(runs(line.store))


def test_a_full_disk_under_the_store_loses_nothing_and_alerts_until_it_is_freed(
    line: Timeline,
) -> None:
    """The store's files cannot grow (a full disk): the run exits 1 with store_unwritable
    sent outside the store, no run is half written, and the next run, with room again,
    stores its run beside the earlier ones and resolves the alert."""
    before = list(runs(line.store))
    full = line.run(file_limit=4096)
    after_full = list(runs(line.store))
    freed = line.run()
    assert (1, [("firing", "store_unwritable")]) == (full.code, full.told), full.err
    assert before == after_full
    assert (0, [("resolved", "store_unwritable")]) == (freed.code, freed.told), freed.err
    assert [*before, (before[-1][0] + 1, "ok")] == list(runs(line.store))
