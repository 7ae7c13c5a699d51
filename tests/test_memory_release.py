"""Freed memory goes back to the system at a stage's end, not kept resident for the next."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from monitor.memory import release_freed

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not Path("/proc/self/statm").exists(),
    reason="glibc's malloc_trim and /proc are Linux's",
)


def _resident_mb() -> float:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * 4096 / 1e6


def test_freed_blocks_between_live_ones_leave_the_resident_set() -> None:
    """200 MB of small blocks freed around a few kept ones stay resident until released."""
    blocks = [bytearray(100_000) for _ in range(2_000)]  # below the mmap threshold: heap
    for block in blocks:
        block[::4096] = b"x" * len(block[::4096])  # touched: resident
    kept = blocks[::50]
    del blocks
    before = _resident_mb()
    release_freed()
    after = _resident_mb()
    assert len(kept) == 40
    assert before - after > 100
