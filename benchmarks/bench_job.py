"""Measure the one-shot job end to end: ``retrieval-monitor run`` on a generated suite.

Run from the repository root::

    python benchmarks/bench_job.py                          # 10,000 and 100,000 queries
    python benchmarks/bench_job.py --queries 1000000        # the million-query suite
    python benchmarks/bench_job.py --queries 2000 --check   # a smoke test with the targets

For each ``--queries`` count a fixed seed (``--seed``, default 0) writes into a scratch folder:

- an eval set (JSONL): one query per line, 5 relevant documents of grades 1 to 3, and one
  segment key (``kind``, 4 values);
- two TREC runs of 20 documents per query, the baseline and the measured one, each holding a
  random 0 to 5 of the relevant documents at random ranks;
- a config: replay search of the run file, SQLite store, 4 metrics (ndcg@10, recall@5,
  mrr@10, precision@10) with a ``max_drop`` rule each, ``segments: [kind]`` and the default
  10,000 significance iterations.

The baseline run is stored and pinned first (not timed): as every first run of a frozen eval
set, it keeps the set's digests in the store and its parsed columns in the eval-set cache
(``MONITOR_CACHE_DIR``, a folder of the scratch folder here). Then ``python -m monitor run``
of the measured run is timed in a fresh process, as a scheduled run of that set runs: its
wall time and its peak RSS (``ru_maxrss`` of the child) are reported, the whole job as a
user sees it (start-up, reading the files, search, metrics, store, comparison with paired
tests and bootstrap, alerts). With
``--repeat N`` the measured run is timed N times on the same store (copied back before
each), and the best and median times and the largest peak are reported. The measured run is
then timed once more with an empty eval-set cache (the first run after the set's file
changed, which parses it again): reported beside, as "cold". ``--check`` exits 1 when a
size misses its target (100,000: 4 s, 600 MB; 1,000,000: 40 s, 2 GB) in the scheduled run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: Targets by size: (seconds, peak RSS in MB).
TARGETS = {100_000: (4.0, 600.0), 1_000_000: (40.0, 2048.0)}

METRICS = ("ndcg@10", "recall@5", "mrr@10", "precision@10")
KINDS = ("howto", "lookup", "policy", "nav")
DOCS_PER_QUERY = 20


def write_suite(folder: Path, count: int, seed: int) -> Path:
    """Write the eval set, both runs and the two configs into ``folder``; return it."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    relevant: list[list[tuple[str, int]]] = []
    with (folder / "evalset.jsonl").open("w", encoding="utf-8") as out:
        for i in range(count):
            docs = [(f"d{i}-{j}", rng.randint(1, 3)) for j in range(5)]
            relevant.append(docs)
            row = {
                "id": f"q{i}",
                "query": f"query {i}",
                "relevant": dict(docs),
                "metadata": {"kind": KINDS[i % len(KINDS)]},
            }
            out.write(json.dumps(row, separators=(",", ":")) + "\n")
    for name in ("baseline", "current"):
        with (folder / f"{name}.run").open("w", encoding="ascii") as out:
            for i in range(count):
                hits = [f"x{i}-{j}" for j in range(DOCS_PER_QUERY)]
                found = rng.randint(0, 5)
                for doc, _ in rng.sample(relevant[i], found):
                    hits[rng.randrange(DOCS_PER_QUERY)] = doc
                seen: set[str] = set()
                rank = 0
                for doc in hits:
                    if doc in seen:
                        continue
                    seen.add(doc)
                    rank += 1
                    out.write(f"q{i} Q0 {doc} {rank} {DOCS_PER_QUERY - rank + 1} bench\n")
    for name in ("baseline", "current"):
        (folder / f"{name}.yaml").write_text(_config(folder, name), encoding="utf-8")
    return folder


def _config(folder: Path, run: str) -> str:
    rules = "\n".join(f"      - {{metric: {m}, max_drop: 0.05}}" for m in METRICS)
    return f"""version: 1
store:
  path: {folder / "monitor.db"}
suites:
  bench:
    evalset:
      path: {folder / "evalset.jsonl"}
    search:
      kind: replay
      path: {folder / f"{run}.run"}
      format: trec
    k: {DOCS_PER_QUERY}
    metrics: [{", ".join(METRICS)}]
    runner:
      concurrency: 1
      retries: 0
    rules:
{rules}
    segments: [kind]
    exporters: []
    notifiers: []
"""


def _monitor(*args: str) -> tuple[float, float, str]:
    """Run ``python -m monitor ARGS`` in a fresh process; return (seconds, peak MB, stdout).

    The peak is that child's own ``ru_maxrss`` (from ``os.wait4``), not the largest of all
    children so far: the baseline's run before it may hold more.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-m", "monitor", *args], stdout=out, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode("utf-8"), err.read().decode("utf-8", "replace")
    if child.returncode not in (0, 4):
        sys.stderr.write(stderr[-4000:])
        raise SystemExit(f"retrieval-monitor {' '.join(args)} exited {child.returncode}")
    return seconds, usage.ru_maxrss / 1024, stdout


def measure(count: int, seed: int, folder: Path, repeat: int = 1) -> dict[str, float]:
    """Generate a suite of ``count`` queries, store its baseline, time the measured run
    ``repeat`` times (each on the store as it was before the first); return the best and
    median time and the largest peak."""
    start = time.perf_counter()
    write_suite(folder, count, seed)
    generated = time.perf_counter() - start
    os.environ["MONITOR_CACHE_DIR"] = str(folder / "cache")  # the children's eval-set cache
    _monitor("run", "--config", str(folder / "baseline.yaml"), "--no-progress", "--format", "json")
    _monitor(
        "baseline", "set", "--suite", "bench", "--latest", "--config", str(folder / "baseline.yaml")
    )
    store = folder / "monitor.db"
    pinned = folder / "pinned.db"
    shutil.copyfile(store, pinned)
    times, peaks = [], []
    for _ in range(repeat):
        shutil.copyfile(pinned, store)
        seconds, peak, out = _monitor(
            "run", "--config", str(folder / "current.yaml"), "--no-progress", "--format", "json"
        )
        report = json.loads(out)["suites"][0]
        if "run_id" not in report:
            raise SystemExit(f"the measured run did not complete: {report}")
        times.append(seconds)
        peaks.append(peak)
    shutil.copyfile(pinned, store)
    os.environ["MONITOR_CACHE_DIR"] = str(folder / "cold-cache")
    cold, cold_peak, _ = _monitor(
        "run", "--config", str(folder / "current.yaml"), "--no-progress", "--format", "json"
    )
    return {
        "cold_s": cold,
        "cold_peak_mb": cold_peak,
        "queries": count,
        "generate_s": generated,
        "seconds": min(times),
        "median_s": statistics.median(times),
        "peak_mb": max(peaks),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument(
        "--repeat", type=int, default=1, help="measured runs per size (best and median)"
    )
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not args.one:
        # One process per size, each measured in a fresh process of its own.
        failed = 0
        for count in args.queries:
            cmd = [
                sys.executable,
                __file__,
                "--one",
                "--queries",
                str(count),
                "--seed",
                str(args.seed),
                "--repeat",
                str(args.repeat),
            ]
            failed |= subprocess.run(
                [*cmd, *(["--check"] if args.check else [])], check=False
            ).returncode
        return 1 if failed else 0
    count = args.queries[0]
    with tempfile.TemporaryDirectory(prefix="bench-job-") as tmp:
        row = measure(count, args.seed, Path(tmp), max(1, args.repeat))
    target = TARGETS.get(count)
    verdict = ""
    missed = False
    if target is not None:
        missed = row["seconds"] > target[0] or row["peak_mb"] > target[1]
        verdict = (
            f"  target <= {target[0]:g} s, <= {target[1]:g} MB: {'MISSED' if missed else 'met'}"
        )
    median = f" (median {row['median_s']:.2f} s)" if args.repeat > 1 else ""
    print(
        f"{count:>9,} queries: {row['seconds']:7.2f} s{median}  peak RSS {row['peak_mb']:7.0f} MB"
        f"  (suite generated in {row['generate_s']:.1f} s){verdict}; cold eval-set cache:"
        f" {row['cold_s']:.2f} s, {row['cold_peak_mb']:.0f} MB",
        flush=True,
    )
    return 1 if (missed and args.check) else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
