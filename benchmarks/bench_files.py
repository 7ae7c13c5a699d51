"""Time ``retrieval-monitor evaluate`` on TREC files against pytrec_eval and trec_eval.

    python benchmarks/bench_files.py [--lines 2000000 10000000] [--docs 100] [--workdir DIR]
                                     [--repeat N]

For each ``--lines`` count it writes, with a fixed seed, a TREC run (``--docs`` distinct
string doc ids per query, lines/docs queries, scores with six decimals, best first) and its
qrels (per query two judged documents of the run, grade 0 to 2, and one relevant document
the run missed), then times each tool end to end in its own process, from process start to
the figures printed, and reads that process's peak RSS (``wait4``):

- ours: ``python -m monitor evaluate --qrels Q --run R --format json``;
- pytrec_eval: ``parse_qrel`` + ``parse_run`` + ``RelevanceEvaluator`` + ``evaluate``;
- trec_eval: ``trec_eval -m ... Q R`` when a ``trec_eval`` binary is on PATH (said otherwise).

It checks that our means equal pytrec_eval's to 1e-9 on ndcg@10, recall@5, map and mrr
(exit status 1 if not). Files are kept in ``--workdir`` and reused when present. With
``--repeat N`` each tool runs N times, in turn (ours, the peers, ours again, ...), and the
best and the median wall time are printed with the highest peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OURS = {"ndcg@10": "ndcg_cut_10", "recall@5": "recall_5", "map": "map", "mrr": "recip_rank"}
PYTREC = """
import json, sys
import pytrec_eval
with open(sys.argv[1]) as f:
    qrels = pytrec_eval.parse_qrel(f)
with open(sys.argv[2]) as f:
    run = pytrec_eval.parse_run(f)
measures = set(sys.argv[3].split(","))
values = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
names = sorted({m for v in values.values() for m in v})
means = {m: sum(v.get(m, 0.0) for v in values.values()) / len(values) for m in names}
json.dump(means, sys.stdout)
"""


@dataclass(frozen=True)
class Timing:
    """One tool's wall time, peak RSS and printed output."""

    seconds: float
    peak_mb: float
    stdout: str


def write_files(lines: int, docs: int, workdir: Path, seed: int = 0) -> tuple[Path, Path]:
    """Write (or reuse) the run and qrels of ``lines`` lines; return their paths."""
    run_path = workdir / f"run-{lines}x{docs}.trec"
    qrels_path = workdir / f"qrels-{lines}x{docs}.txt"
    if run_path.exists() and qrels_path.exists():
        return qrels_path, run_path
    workdir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    queries = lines // docs
    corpus = 5_000_000
    with run_path.open("w") as run, qrels_path.open("w") as qrels:
        for first in range(0, queries, 10_000):
            block = range(first, min(first + 10_000, queries))
            offsets = rng.integers(0, corpus, size=len(block))
            scores = np.sort(rng.random((len(block), docs)) * 20, axis=1)[:, ::-1]
            out = []
            judged = []
            for row, qi in enumerate(block):
                # 104729 is prime to the corpus size: a query's doc ids are distinct.
                ids = (offsets[row] + 104729 * np.arange(docs)) % corpus
                qid = f"q{qi}"
                out.extend(
                    f"{qid} Q0 doc{d:07d} {r} {s:.6f} bench\n"
                    for r, (d, s) in enumerate(
                        zip(ids.tolist(), scores[row].tolist(), strict=True), 1
                    )
                )
                for j in rng.choice(docs, 2, replace=False).tolist():
                    judged.append(f"{qid} 0 doc{int(ids[j]):07d} {int(rng.integers(0, 3))}\n")
                judged.append(f"{qid} 0 missing{qi} 1\n")
            run.write("".join(out))
            qrels.write("".join(judged))
    return qrels_path, run_path


def run_isolated(command: list[str]) -> Timing:
    """Time ``command`` in a fresh Python process, so each peak RSS is the tool's own."""
    wrapper = (
        "import json, os, resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True)\n"
        "s = time.perf_counter() - t\n"
        "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
        "sys.stderr.write(p.stderr.decode())\n"
        "print(json.dumps({'s': s, 'mb': peak, 'rc': p.returncode, 'out': p.stdout.decode()}))\n"
    )
    done = subprocess.run([sys.executable, "-c", wrapper, *command], capture_output=True)
    report = json.loads(done.stdout)
    if report["rc"] != 0:
        raise SystemExit(f"{command[0]} failed ({report['rc']}): {done.stderr.decode()[-500:]}")
    return Timing(report["s"], report["mb"], report["out"])


def main(argv: list[str] | None = None) -> int:
    """Write the files, time the tools side by side, check agreement; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, nargs="+", default=[2_000_000, 10_000_000])
    parser.add_argument("--docs", type=int, default=100)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/retrieval-monitor-bench"))
    parser.add_argument("--repeat", type=int, default=1, help="runs of each tool (default 1)")
    args = parser.parse_args(argv)
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = f"{ROOT}{os.pathsep}{env_path}" if env_path else str(ROOT)
    trec_eval = shutil.which("trec_eval")
    if trec_eval is None:
        print("trec_eval: no binary on PATH, not timed")
    failed = False
    print(
        f"{'lines':>10}  {'tool':<12} {'best s':>8} {'median s':>8} {'peak MB':>8}"
        f"  {'vs ours (best, median)':>22}"
    )
    for lines in args.lines:
        qrels, run = write_files(lines, args.docs, args.workdir)
        metrics = ",".join(OURS)
        commands = {
            "ours": [sys.executable, "-m", "monitor", "evaluate", "--qrels", str(qrels), "--run",
                     str(run), "--metrics", metrics, "--format", "json"],
            "pytrec_eval": [sys.executable, "-c", PYTREC, str(qrels), str(run),
                            ",".join(OURS.values())],
        }  # fmt: skip
        if trec_eval is not None:
            measures = [arg for m in OURS.values() for arg in ("-m", m.split("_cut_")[0])]
            commands["trec_eval"] = [trec_eval, *measures, str(qrels), str(run)]
        timings: dict[str, list[Timing]] = {name: [] for name in commands}
        for _ in range(max(args.repeat, 1)):
            for name, command in commands.items():
                timings[name].append(run_isolated(command))
        best = {name: min(t.seconds for t in runs) for name, runs in timings.items()}
        median = {
            name: statistics.median(t.seconds for t in runs) for name, runs in timings.items()
        }
        for name, runs in timings.items():
            print(
                f"{lines:>10}  {name:<12} {best[name]:>8.2f} {median[name]:>8.2f}"
                f" {max(t.peak_mb for t in runs):>8.0f}"
                f"  {best[name] / best['ours']:>10.2f}x {median[name] / median['ours']:>9.2f}x"
            )
        ours, peer = timings["ours"][0], timings["pytrec_eval"][0]
        our_means = json.loads(ours.stdout)["metrics"]
        peer_means = json.loads(peer.stdout)
        for name, measure in OURS.items():
            if abs(our_means[name] - peer_means[measure]) > 1e-9:
                print(f"  MISMATCH {name}: ours {our_means[name]!r}, pytrec_eval "
                      f"{peer_means[measure]!r}")  # fmt: skip
                failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
