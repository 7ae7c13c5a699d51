"""Time the metric engine against pytrec_eval and ranx on the same synthetic Python dicts.

    python benchmarks/bench_metrics.py [--queries 10000 100000] [--docs 100] [--repeat 3]

For each query count it builds, with a fixed seed, ``{qid: {doc: score}}`` (``--docs``
distinct string doc ids per query, float scores) and ``{qid: {doc: grade}}`` (10 relevant
documents per query, grades 1 to 3, some retrieved and some not). Each engine is timed from
those dicts (best of ``--repeat``): ours is ``evaluate()``; pytrec_eval is
``RelevanceEvaluator`` construction plus ``evaluate``; ranx is ``Qrels``/``Run``
construction plus ``evaluate``, after one warm-up call that compiles its numba functions.
It then checks that our means equal pytrec_eval's to 1e-9 on the measures both define the
same way (exit status 1 if not), reports how far ranx's means are from ours, and measures
the extra memory our evaluate() needs: the tracemalloc peak and the growth of the process's
peak RSS during the call.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import os
import platform
import resource
import sys
import time
import tracemalloc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from monitor.metrics.evaluation import evaluate

METRICS = (
    "precision@5",
    "precision@10",
    "recall@5",
    "recall@10",
    "recall@100",
    "ndcg@10",
    "map@100",
    "mrr@10",
    "hit_rate@10",
)
# trec_eval has no reciprocal rank with a cutoff: recip_rank is timed in place of mrr@10 and
# left out of the agreement check. The other measures are defined as ours.
TREC_EVAL = {
    "precision@5": "P_5",
    "precision@10": "P_10",
    "recall@5": "recall_5",
    "recall@10": "recall_10",
    "recall@100": "recall_100",
    "ndcg@10": "ndcg_cut_10",
    "map@100": "map_cut_100",
    "mrr@10": "recip_rank",
    "hit_rate@10": "success_10",
}
SAME_AS_TREC_EVAL = tuple(name for name in METRICS if name != "mrr@10")
RELEVANT_PER_QUERY = 10
CORPUS_SIZE = 1_000_000
SPEED_TARGET = 5.0  # pytrec_eval time / ours at 100,000 queries
MEMORY_TARGET_MB = 600.0
AGREEMENT = 1e-9
MB = 1024 * 1024

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]


@dataclass(frozen=True)
class Row:
    """The timings and checks of one query count."""

    queries: int
    ours: float
    pytrec_eval: float | None
    ranx: float | None
    max_difference: float | None
    ranx_difference: float | None
    tracemalloc_mb: float
    rss_mb: float | None


def make_data(n_queries: int, n_docs: int, seed: int) -> tuple[Qrels, Run]:
    """Return seeded judgments and a scored run as plain Python dicts."""
    if not RELEVANT_PER_QUERY <= n_docs <= CORPUS_SIZE // 4:
        raise SystemExit(f"--docs must be between {RELEVANT_PER_QUERY} and {CORPUS_SIZE // 4}")
    rng = np.random.default_rng(seed)
    corpus = [f"doc{i:07d}" for i in range(CORPUS_SIZE)]
    stride = CORPUS_SIZE // (2 * n_docs)
    # Distinct ids per query: a random start, then every `stride`-th corpus document.
    start = rng.integers(CORPUS_SIZE, size=(n_queries, 1))
    retrieved = (start + np.arange(n_docs) * stride) % CORPUS_SIZE
    scores = rng.random((n_queries, n_docs))
    # Each query has 10 relevant documents; the first `found` of them are retrieved at random
    # ranks, the others sit between the retrieved ids (half a stride away), never retrieved.
    found = rng.integers(0, RELEVANT_PER_QUERY + 1, size=(n_queries, 1))
    positions = np.argsort(rng.random((n_queries, n_docs)), axis=1)[:, :RELEVANT_PER_QUERY]
    unretrieved = (start + stride // 2 + np.arange(RELEVANT_PER_QUERY) * stride) % CORPUS_SIZE
    picked = np.take_along_axis(retrieved, positions, axis=1)
    relevant = np.where(np.arange(RELEVANT_PER_QUERY) < found, picked, unretrieved)
    grades = rng.integers(1, 4, size=(n_queries, RELEVANT_PER_QUERY))

    doc = corpus.__getitem__
    qids = [f"q{i}" for i in range(n_queries)]
    run = {
        qid: dict(zip(map(doc, ids), row, strict=True))
        for qid, ids, row in zip(qids, retrieved.tolist(), scores.tolist(), strict=True)
    }
    qrels = {
        qid: dict(zip(map(doc, ids), row, strict=True))
        for qid, ids, row in zip(qids, relevant.tolist(), grades.tolist(), strict=True)
    }
    return qrels, run


def best_time(
    function: Callable[[Qrels, Run], dict[str, float]], qrels: Qrels, run: Run, repeat: int
) -> tuple[float, dict[str, float]]:
    """Return the best wall time of ``repeat`` calls and the last call's means."""
    best = float("inf")
    means: dict[str, float] = {}
    for _ in range(repeat):
        means = {}
        gc.collect()
        started = time.perf_counter()
        means = function(qrels, run)
        best = min(best, time.perf_counter() - started)
    return best, means


def ours(qrels: Qrels, run: Run) -> dict[str, float]:
    """Return our means."""
    return evaluate(qrels, run, METRICS).means


def pytrec_eval_means(qrels: Qrels, run: Run) -> dict[str, float]:
    """Return pytrec_eval's means under our metric names, building the evaluator each time."""
    import pytrec_eval

    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(TREC_EVAL.values()))
    per_query = evaluator.evaluate(run)
    return {
        name: float(np.mean([values[measure] for values in per_query.values()]))
        for name, measure in TREC_EVAL.items()
    }


def ranx_means(qrels: Qrels, run: Run) -> dict[str, float]:
    """Return ranx's means, building its Qrels and Run each time."""
    import ranx

    means = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), list(METRICS))
    return {name: float(value) for name, value in means.items()}


def memory_of_ours(qrels: Qrels, run: Run) -> tuple[float, float | None]:
    """Return the tracemalloc peak and the peak-RSS growth (MB) of one evaluate() call."""
    gc.collect()
    _release_free_memory()
    baseline = _reset_peak_rss()
    evaluate(qrels, run, METRICS)
    peak = _peak_rss()
    rss = None if baseline is None or peak is None else max(peak - baseline, 0) / MB

    gc.collect()
    tracemalloc.start()
    try:
        evaluate(qrels, run, METRICS)
        _, traced = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return traced / MB, rss


def _release_free_memory() -> None:
    """Hand memory the process freed (building the data) back to the system, where glibc can.

    Otherwise evaluate() reuses those freed pages and the RSS growth reads near 0.
    """
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _reset_peak_rss() -> int | None:
    """Reset the kernel's peak RSS of this process to the current RSS; return it in bytes.

    Linux only (``/proc/self/clear_refs``); elsewhere return None and use getrusage growth.
    """
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return _status_bytes("VmRSS")
    except OSError:
        return _maxrss_bytes()


def _peak_rss() -> int | None:
    """Return the peak RSS since the last reset (Linux) or since the process began."""
    peak = _status_bytes("VmHWM")
    return peak if peak is not None else _maxrss_bytes()


def _status_bytes(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _maxrss_bytes() -> int:
    # ru_maxrss is in kilobytes on Linux and in bytes on macOS.
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


def available(distribution: str) -> str | None:
    """Return the installed version of ``distribution``, or None."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def warm_up_ranx() -> float:
    """Call ranx once on a small collection so numba compiles; return how long it took."""
    qrels, run = make_data(100, 20, seed=1)
    started = time.perf_counter()
    ranx_means(qrels, run)
    return time.perf_counter() - started


def measure(n_queries: int, args: argparse.Namespace, engines: Mapping[str, bool]) -> Row:
    """Build the data for one query count, time each engine and run the checks."""
    qrels, run = make_data(n_queries, args.docs, args.seed)
    traced_mb, rss_mb = memory_of_ours(qrels, run)
    ours_time, our_means = best_time(ours, qrels, run, args.repeat)
    pytrec_time = ranx_time = difference = ranx_difference = None
    if engines["pytrec_eval"]:
        pytrec_time, reference = best_time(pytrec_eval_means, qrels, run, args.repeat)
        difference = max(abs(our_means[name] - reference[name]) for name in SAME_AS_TREC_EVAL)
    if engines["ranx"]:
        ranx_time, ranx_result = best_time(ranx_means, qrels, run, args.repeat)
        ranx_difference = max(abs(our_means[name] - ranx_result[name]) for name in METRICS)
    return Row(
        n_queries,
        ours_time,
        pytrec_time,
        ranx_time,
        difference,
        ranx_difference,
        traced_mb,
        rss_mb,
    )


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _ratio(other: float | None, ours_time: float) -> str:
    return "-" if other is None else f"{other / ours_time:.1f}x"


def report(rows: Sequence[Row], engines: Mapping[str, bool]) -> bool:
    """Print the table and the targets; return whether our means agreed with pytrec_eval."""
    header = (
        f"{'queries':>9}  {'ours s':>8}  {'pytrec_eval s':>13}  {'ranx s':>8}  "
        f"{'pytrec_eval/ours':>16}  {'ranx/ours':>9}  {'max |diff|':>10}  "
        f"{'tracemalloc MB':>14}  {'peak RSS +MB':>12}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        diff = "-" if row.max_difference is None else f"{row.max_difference:.1e}"
        rss = "-" if row.rss_mb is None else f"{row.rss_mb:.0f}"
        print(
            f"{row.queries:>9,}  {_seconds(row.ours):>8}  {_seconds(row.pytrec_eval):>13}  "
            f"{_seconds(row.ranx):>8}  {_ratio(row.pytrec_eval, row.ours):>16}  "
            f"{_ratio(row.ranx, row.ours):>9}  {diff:>10}  {row.tracemalloc_mb:>14.0f}  {rss:>12}"
        )
    print()

    agreed = all(r.max_difference is None or r.max_difference <= AGREEMENT for r in rows)
    if engines["pytrec_eval"]:
        print(
            f"agreement with pytrec_eval on {', '.join(SAME_AS_TREC_EVAL)}: "
            f"{'ok' if agreed else 'FAILED'} (max |difference of means| <= {AGREEMENT:g})"
        )
    if engines["ranx"]:
        worst_ranx = max(r.ranx_difference or 0.0 for r in rows)
        print(
            f"agreement with ranx on all {len(METRICS)} metrics (defined as ours; the scores "
            f"have no ties, which ranx orders arbitrarily): max |difference of means| "
            f"{worst_ranx:.1e} (for information)"
        )
    target_row = next((r for r in rows if r.queries == 100_000), None)
    if target_row is None or target_row.pytrec_eval is None:
        print(
            f"speed target (>= {SPEED_TARGET:g}x faster than pytrec_eval at 100,000 queries): "
            "not measured"
        )
    else:
        ratio = target_row.pytrec_eval / target_row.ours
        verdict = "met" if ratio >= SPEED_TARGET else "MISSED"
        print(
            f"speed target (>= {SPEED_TARGET:g}x faster than pytrec_eval at 100,000 queries): "
            f"{ratio:.1f}x, {verdict}"
        )
    worst = max(max(r.tracemalloc_mb, r.rss_mb or 0.0) for r in rows)
    verdict = "met" if worst <= MEMORY_TARGET_MB else "MISSED"
    print(
        f"memory target (<= {MEMORY_TARGET_MB:.0f} MB extra for evaluate()): "
        f"{worst:.0f} MB at most, {verdict}"
    )
    return agreed


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; exit 1 if our means disagree with pytrec_eval."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--docs", type=int, default=100, help="documents per query")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per engine (best)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-ranx", action="store_true", help="skip ranx")
    parser.add_argument("--no-pytrec-eval", action="store_true", help="skip pytrec_eval")
    args = parser.parse_args(argv)

    versions: dict[str, Any] = {
        name: available(name)
        for name in ("retrieval-monitor", "numpy", "pandas", "pytrec-eval-terrier", "ranx")
    }
    engines = {
        "pytrec_eval": not args.no_pytrec_eval and versions["pytrec-eval-terrier"] is not None,
        "ranx": not args.no_ranx and versions["ranx"] is not None,
    }
    print(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs; "
        + ", ".join(f"{name} {version or 'not installed'}" for name, version in versions.items())
    )
    print(
        f"data: seed {args.seed}, {args.docs} docs per query with float scores, "
        f"{RELEVANT_PER_QUERY} relevant per query (grades 1-3, 0 to 10 of them retrieved), "
        "string doc ids, plain Python dicts"
    )
    print(f"metrics: {', '.join(METRICS)}")
    print(
        "pytrec_eval: "
        + ", ".join(TREC_EVAL.values())
        + "; recip_rank has no cutoff, so it stands in for mrr@10 and is not compared; "
        "timed from the dicts, RelevanceEvaluator construction included"
    )
    if engines["ranx"]:
        compile_time = warm_up_ranx()
        print(
            f"ranx: its own names for the same metrics; Qrels/Run construction included; a first "
            f"call ({compile_time:.1f} s, numba compilation) is excluded; it runs on all CPUs"
        )
    print(f"times: best of {args.repeat} runs, each from the same Python dicts; seconds")
    print()
    rows = [measure(n, args, engines) for n in args.queries]
    return 0 if report(rows, engines) else 1


if __name__ == "__main__":
    sys.exit(main())
