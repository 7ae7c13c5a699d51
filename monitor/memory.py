"""Pause Python's cyclic garbage collector while a job builds many long-lived objects.

A run of 100,000 queries holds millions of objects (queries, hits, per-query records) that
live until the run is stored. Each full pass of the cyclic collector walks every one of
them, and the collector starts a pass each time the survivors grow by a quarter, so the
passes add up to more than the work itself (about 10 s of a 23 s run at 100,000 queries).
Those objects are freed by reference counting, not by the collector: pausing it while the
run is measured leaves the peak memory as it was; any cycles made meanwhile are left to
the collector's next pass.

Several suites can run at once in the daemon; the collector is paused while any of them
is inside :func:`paused_collection` and resumes when the last one leaves.
"""

from __future__ import annotations

import ctypes
import gc
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class _Pauses:
    """How many callers are inside :func:`paused_collection`, and whether the collector
    was on before the first."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.inside = 0
        self.was_enabled = False


_PAUSES = _Pauses()


@contextmanager
def paused_collection() -> Iterator[None]:
    """Pause the cyclic garbage collector inside the block; when the last caller leaves,
    restore the state it had before the first came in."""
    with _PAUSES.lock:
        if _PAUSES.inside == 0:
            _PAUSES.was_enabled = gc.isenabled()
            gc.disable()
        _PAUSES.inside += 1
    try:
        yield
    finally:
        with _PAUSES.lock:
            _PAUSES.inside -= 1
            if _PAUSES.inside == 0 and _PAUSES.was_enabled:
                gc.enable()


#: glibc's ``mallopt`` parameter for the most arenas its threads may allocate from.
_M_ARENA_MAX = -8


def one_malloc_arena(load: Callable[[], object] = lambda: ctypes.CDLL(None)) -> bool:
    """Have every thread allocate from glibc's main arena, as ``MALLOC_ARENA_MAX=1`` does;
    return whether the C library took the setting.

    A run moves its work between threads (the eval set read beside the search, the rankings
    numbered beside the scoring, blobs compressed on two threads). glibc gives each thread
    an arena of its own, and memory freed in one is not reused by the others: at 100,000
    queries that kept about 80 MB more resident for nothing. numpy's large arrays are
    mapped apart from the arenas, so one arena costs no lock on them. A
    ``MALLOC_ARENA_MAX`` already in the environment is the user's choice and is left as
    it is; a C library without ``mallopt`` (not glibc) is left alone. Call it before the
    threads start: ``retrieval-monitor run`` and ``daemon`` do.
    """
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    try:
        mallopt = load().mallopt  # type: ignore[attr-defined]
        return bool(mallopt(_M_ARENA_MAX, 1))
    except (OSError, AttributeError, TypeError):
        return False


__all__ = ["one_malloc_arena", "paused_collection"]
