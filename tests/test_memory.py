"""The cyclic collector paused while a job builds its objects, and restored after."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from monitor.memory import paused_collection


@pytest.fixture(autouse=True)
def _collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_the_collector_is_off_inside_and_on_after() -> None:
    """Inside the block no collector pass starts; after it the collector is back on."""
    with paused_collection():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    """A program that turned the collector off keeps it off after the block."""
    gc.disable()
    with paused_collection():
        pass
    assert not gc.isenabled()


def test_it_resumes_only_when_the_last_of_overlapping_callers_leaves() -> None:
    """Two suites at once: the first to finish does not turn the collector back on under
    the other."""
    inside, leave = threading.Event(), threading.Event()

    def other_suite() -> None:
        with paused_collection():
            inside.set()
            leave.wait(5)

    thread = threading.Thread(target=other_suite)
    thread.start()
    inside.wait(5)
    with paused_collection():
        pass
    still_paused = not gc.isenabled()
    leave.set()
    thread.join(5)
    assert still_paused
    assert gc.isenabled()


def test_an_error_inside_still_restores_the_collector() -> None:
    """A failed run leaves the collector as it found it."""
    with pytest.raises(RuntimeError), paused_collection():
        raise RuntimeError("search failed")
    assert gc.isenabled()
