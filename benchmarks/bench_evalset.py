"""Measure loading a big JSONL eval set: ``EvalSet.load`` and its fingerprint.

Run from the repository root::

    python benchmarks/bench_evalset.py                        # 100,000 queries
    python benchmarks/bench_evalset.py --queries 100000 1000000

For each ``--queries`` count the eval set of ``benchmarks/bench_job.py`` (same seed, same
shape: 5 graded judgments and one metadata key per query) is written to a scratch folder,
then a fresh process per size loads it ``--repeat`` times (default 3) and reports the best
and median wall time of ``EvalSet.load`` and of the first ``fingerprint``, with the cyclic
collector paused by the caller (as the job does) and with it on, and the process's peak
RSS (``VmHWM``: the interpreter, the file's text and the set; one set held at a time), and
the bytes the loaded set holds per query (allocations traced by ``tracemalloc`` and still
live once the load has returned, in one more load).
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_job import write_suite  # the job benchmark's own generator


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic collector in this process (the benchmark's own edge)."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def measure(path: Path, repeat: int) -> dict[str, object]:
    """Return the timings and peak RSS of loading ``path`` in this process."""
    from monitor.evalset import EvalSet

    figures: dict[str, object] = {}
    for paused in (True, False):
        loads, fingerprints = [], []
        for _ in range(repeat):
            gc.collect()
            with _collector_paused() if paused else nullcontext():
                started = time.perf_counter()
                evalset = EvalSet.load(path)
                loaded = time.perf_counter()
                fingerprint = evalset.fingerprint
                done = time.perf_counter()
            loads.append(loaded - started)
            fingerprints.append(done - loaded)
            figures["queries"], figures["fingerprint"] = len(evalset), fingerprint
            del evalset
        key = "paused" if paused else "collector_on"
        figures[key] = {"load": _best_median(loads), "fingerprint": _best_median(fingerprints)}
    figures["peak_rss_mb"] = _peak_rss_mb()
    figures["held_bytes_per_query"] = _held_bytes_per_query(path)
    return figures


def _held_bytes_per_query(path: Path) -> int:
    """Return the bytes a loaded eval set holds per query (traced allocations still live)."""
    import tracemalloc

    from monitor.evalset import EvalSet

    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        evalset = EvalSet.load(path)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    return round(held / len(evalset))


def _best_median(values: list[float]) -> list[float]:
    """Return the best and the median of ``values``, in seconds to the millisecond."""
    ordered = sorted(values)
    return [round(ordered[0], 3), round(ordered[len(ordered) // 2], 3)]


def _peak_rss_mb() -> int:
    """Return this process's peak resident memory in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    return -1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, nargs="+", default=[100_000])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one is not None:
        print(json.dumps(measure(args.one, args.repeat)))
        return 0
    with tempfile.TemporaryDirectory() as scratch:
        for count in args.queries:
            folder = write_suite(Path(scratch) / str(count), count, args.seed)
            command = [sys.executable, __file__, "--one", str(folder / "evalset.jsonl")]
            child = subprocess.run(
                [*command, "--repeat", str(args.repeat)],
                check=True,
                capture_output=True,
                text=True,
            )
            figures = json.loads(child.stdout)
            paused, on = figures["paused"], figures["collector_on"]
            print(
                f"{count:>9,} queries: load {paused['load'][0]:.3f} s best, "
                f"{paused['load'][1]:.3f} s median, fingerprint {paused['fingerprint'][0]:.3f} s "
                f"(collector paused); load {on['load'][0]:.3f} s, fingerprint "
                f"{on['fingerprint'][0]:.3f} s (collector on); peak RSS "
                f"{figures['peak_rss_mb']:,} MB; {figures['held_bytes_per_query']:,} bytes held "
                "a query"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
