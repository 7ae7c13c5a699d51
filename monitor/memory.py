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
import functools
import gc
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import cast


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


def release_freed() -> None:
    """Hand the memory freed so far back to the system, where the C library allows it.

    glibc keeps the pages of freed blocks below its mmap threshold (which it raises as large
    blocks are freed, up to 32 MB): a stage that builds and frees arrays of a few megabytes
    leaves them resident for the next stage to add to. ``malloc_trim(0)`` returns the free
    pages of every arena at once (a few milliseconds); elsewhere this does nothing.
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
        trim = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return cast("Callable[[int], int]", trim)


__all__ = ["paused_collection", "release_freed"]
