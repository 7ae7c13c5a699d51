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

import gc
import threading
from collections.abc import Iterator
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


__all__ = ["paused_collection"]
