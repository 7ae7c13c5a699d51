"""Measure the label-free overlap of two stored runs: ``overlap_of`` on their Rankings.

Run from the repository root::

    python benchmarks/bench_overlap.py                        # 100,000 queries
    python benchmarks/bench_overlap.py --queries 1000000

A fixed seed (``--seed``) builds, with numpy and ``Rankings.from_words``, a baseline of
``--docs`` (default 20) ids per query, ids like ``x123456-7`` (query and slot numbers, of
varied lengths), and a current run that keeps about 80% of each baseline ranking's ids,
swaps some of the kept ones' places and puts new ids in the others' (so the two runs'
dictionaries differ and share most ids). Both are held as the columns a store reads back.
Nothing of that is timed.

Then it times ``overlap_of(baseline, current, k)`` (``--k``, default 20; best of
``--repeat``) and reports the rise of the process's resident set over its size before the
call: the peak is reset (``/proc/self/clear_refs``) before each call and read back
(``VmHWM``) after it, so the figure is that of ``overlap_of`` alone, not of the setup;
the resident set still held after the call (``VmRSS``: the result's records, one a query,
and memory the allocator keeps rather than returns) is printed beside it.
"""

from __future__ import annotations

import argparse
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from monitor.store.records import RunRecord


def _digits(values: NDArray[np.int64]) -> NDArray[np.int64]:
    """Return the number of decimal digits of each value (>= 0)."""
    out = np.ones(values.size, dtype=np.int64)
    bound = 10
    while bool((values >= bound).any()):
        out += values >= bound
        bound *= 10
    return out


def id_words(query: NDArray[np.int64], slot: NDArray[np.int64]) -> NDArray[np.uint64]:
    """Return the words of ids ``x{query}-{slot}`` (UTF-8, big-endian, zero padded)."""
    n = query.size
    width = 16
    chars = np.zeros((n, width), dtype=np.uint8)
    rows = np.arange(n)
    chars[:, 0] = ord("x")
    at = np.ones(n, dtype=np.int64)
    for values in (query, slot):
        count = _digits(values)
        for place in range(int(count.max(initial=1))):
            live = place < count
            digit = (values // 10 ** np.maximum(count - 1 - place, 0)) % 10
            chars[rows[live], (at + place)[live]] = (ord("0") + digit[live]).astype(np.uint8)
        at = at + count
        if values is query:
            chars[rows, at] = ord("-")
            at = at + 1
    return chars.view(">u8").astype(np.uint64)


def build(queries: int, docs: int, seed: int) -> tuple[RunRecord, RunRecord]:
    """Return the baseline and current runs, their rankings as stored Rankings."""
    from monitor.run.rankings import Rankings

    rng = np.random.default_rng(seed)
    counts = np.full(queries, docs, dtype=np.int32)
    query = np.repeat(np.arange(queries, dtype=np.int64), docs)
    slot = np.tile(np.arange(docs, dtype=np.int64), queries)
    before = Rankings.from_words(counts, id_words(query, slot))
    # The current run: 80% of the slots kept, a fifth of those moved, the rest new ids.
    now_slot = slot.copy().reshape(queries, docs)
    replaced = rng.random((queries, docs)) >= 0.8
    now_slot[replaced] += docs  # a new id, distinct from the others of its ranking
    moved = rng.random(queries) < 0.2
    now_slot[moved] = np.roll(now_slot[moved], 1, axis=1)
    now = Rankings.from_words(counts, id_words(query, now_slot.reshape(-1)))
    ids = [f"q{i}" for i in range(queries)]
    return _record(ids, before, 1), _record(ids, now, 2)


def _record(ids: list[str], rankings: object, run_id: int) -> RunRecord:
    """Return a run record over columns holding ``rankings``, as the store reads it."""
    from monitor.run.rankings import Rankings
    from monitor.store.records import ColumnQueries, QueryColumns, RunRecord

    n = len(ids)
    at = datetime(2030, 1, 1, tzinfo=timezone.utc)
    columns = QueryColumns(
        query_ids=ids,
        latency_seconds=[None] * n,
        error_types=[None] * n,
        error_messages=[None] * n,
        retrieved_ids=rankings,  # type: ignore[arg-type]
        relevant_ids=Rankings.of([()] * n),
        metrics=(),
        values=np.zeros((n, 0)),
        present=np.zeros((n, 0), dtype=np.bool_),
    )
    return RunRecord("s", "p", at, at, queries=ColumnQueries(columns), run_id=run_id)


def _rss_kb(field: str) -> int:
    """Return a VmRSS/VmHWM figure of this process, in KB."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def _reset_peak() -> None:
    """Reset the process's peak resident set to its current size."""
    with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
        refs.write("5")


def main() -> None:
    """Build the runs, time overlap_of and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, nargs="+", default=[100_000])
    parser.add_argument("--docs", type=int, default=20)
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    from monitor.compare.overlap import overlap_of

    for queries in args.queries:
        baseline, current = build(queries, args.docs, args.seed)
        best, rise, kept = float("inf"), 0, 0
        result = None
        for _ in range(args.repeat):
            result = None
            _reset_peak()
            rss = _rss_kb("VmRSS")
            t0 = time.perf_counter()
            result = overlap_of(baseline, current, args.k)
            best = min(best, time.perf_counter() - t0)
            rise = max(rise, _rss_kb("VmHWM") - rss)
            kept = max(kept, _rss_kb("VmRSS") - rss)
        if result is None:
            raise SystemExit("--repeat must be at least 1")
        print(
            f"{queries:>9,} queries x {args.docs} ids, k={args.k}: overlap_of {best:.3f} s,"
            f" peak RSS +{rise / 1024:.0f} MB, still held after it +{kept / 1024:.0f} MB"
            f" (rbo {result.rbo:.6f}, jaccard {result.jaccard:.6f}, n {result.n})"
        )


if __name__ == "__main__":
    main()
