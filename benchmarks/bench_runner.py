"""Measure what the runner costs on top of the search it drives.

Run from the repository root::

    python benchmarks/bench_runner.py            # both benchmarks
    python benchmarks/bench_runner.py --quick    # smaller sizes, for a smoke test

(a) Overhead: a search that does nothing, over 100,000 queries at concurrency 1 without a
    timeout (the plain loop). Overhead per query is the run's wall time less the time the
    same calls take in a bare loop, divided by the number of queries. Target: <= 20 us.
(b) Throughput: a search that sleeps 10 ms, 2,000 queries at concurrency 16. Efficiency is
    the ideal wall time (2,000 x 10 ms / 16 = 1.25 s) over the measured one. Target: >= 90%.
    The same run with a per-query timeout shows the cost of the timeout watcher.

Each figure is the best of ``--repeat`` runs (default 3), as timeit reports.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

from monitor.records import Query
from monitor.runner import run_queries


def _queries(count: int) -> list[Query]:
    return [Query(f"q{i}", f"query text {i}", {f"d{i}": 1}) for i in range(count)]


def noop(query: str, k: int) -> list[str]:
    """Answer nothing, at once."""
    return []


def sleeper(seconds: float) -> Callable[[str, int], list[str]]:
    """Return a search that sleeps ``seconds`` and answers one id."""

    def search(query: str, k: int) -> list[str]:
        time.sleep(seconds)
        return ["d0"]

    return search


def bench_overhead(count: int, repeat: int) -> float:
    """Return the runner's overhead per query in microseconds (best of ``repeat``)."""
    queries = _queries(count)
    texts = [query.text for query in queries]
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for text in texts:
            noop(text, 10)
        bare = time.perf_counter() - start
        start = time.perf_counter()
        result = run_queries(queries, noop, k=10, progress=False)
        run = time.perf_counter() - start
        if result.total != count:
            raise RuntimeError(f"expected {count} outcomes, found {result.total}")
        best = min(best, (run - bare) / count * 1e6)
    return best


def bench_throughput(
    count: int, concurrency: int, sleep: float, repeat: int, timeout: float | None = None
) -> tuple[float, float]:
    """Return (best wall seconds, efficiency against the ideal) for the sleeping search."""
    queries = _queries(count)
    search = sleeper(sleep)
    ideal = count * sleep / concurrency
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        result = run_queries(
            queries, search, k=10, concurrency=concurrency, timeout=timeout, progress=False
        )
        wall = time.perf_counter() - start
        if result.failed:
            raise RuntimeError(f"expected no failures, found {result.error_counts}")
        best = min(best, wall)
    return best, ideal / best


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks and print their figures; return 1 if a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke test)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (best kept)")
    args = parser.parse_args(argv)
    count_a, count_b = (10_000, 400) if args.quick else (100_000, 2_000)
    concurrency, sleep = 16, 0.010

    overhead = bench_overhead(count_a, args.repeat)
    print(f"(a) no-op search, {count_a:,} queries, concurrency 1:")
    print(f"    runner overhead per query: {overhead:.2f} us (target <= 20 us)")

    ideal = count_b * sleep / concurrency
    wall, efficiency = bench_throughput(count_b, concurrency, sleep, args.repeat)
    print(f"(b) 10 ms search, {count_b:,} queries, concurrency {concurrency}:")
    print(
        f"    wall {wall:.3f} s vs ideal {ideal:.3f} s: {efficiency:.1%} of ideal throughput"
        " (target >= 90%)"
    )
    wall_t, efficiency_t = bench_throughput(count_b, concurrency, sleep, args.repeat, timeout=1.0)
    print(f"    with timeout=1 s: wall {wall_t:.3f} s, {efficiency_t:.1%} of ideal throughput")
    missed = overhead > 20 or efficiency < 0.9
    print("targets: " + ("MISSED" if missed else "met"))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
