"""The check that fails a test leaving a thread running (``conftest.lingering``)."""

from __future__ import annotations

import threading
import time

from conftest import lingering


def test_a_thread_still_running_after_the_grace_is_reported() -> None:
    """A thread blocked past the grace period is returned as left running."""
    before = set(threading.enumerate())
    release = threading.Event()
    thread = threading.Thread(target=release.wait, name="blocked", daemon=True)
    thread.start()
    try:
        left = lingering(before, grace=0.05)
    finally:
        release.set()
        thread.join()
    assert [thread] == left


def test_a_thread_that_ends_within_the_grace_is_waited_for() -> None:
    """A thread that finishes during the grace period is joined, not reported."""
    before = set(threading.enumerate())
    release = threading.Event()
    thread = threading.Thread(target=release.wait, name="ending", daemon=True)
    thread.start()
    threading.Timer(0.05, release.set).start()
    assert [] == lingering(before, grace=2.0)


def test_threads_running_before_are_not_counted() -> None:
    """A thread started before the snapshot is not the test's to stop."""
    release = threading.Event()
    thread = threading.Thread(target=release.wait, name="older", daemon=True)
    thread.start()
    try:
        left = lingering(set(threading.enumerate()), grace=0.05)
    finally:
        release.set()
        thread.join()
    assert [] == left


def test_a_kept_pool_thread_is_neither_reported_nor_waited_for() -> None:
    """A thread named as a shared server's pool is left out at once, without the grace."""
    before = set(threading.enumerate())
    release = threading.Event()
    thread = threading.Thread(target=release.wait, name="pool worker", daemon=True)
    thread.start()
    started = time.monotonic()
    try:
        left = lingering(before, grace=5.0, kept={"pool worker"})
    finally:
        release.set()
        thread.join()
    assert ([], True) == (left, time.monotonic() - started < 1.0)
