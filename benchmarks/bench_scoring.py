"""Time evaluate() with the measures and options that rank every judgment, not only relevant.

    python benchmarks/bench_scoring.py [--queries 100000] [--repeat 3]

A fixed seed builds ``{qid: {doc: score}}`` (100 distinct string doc ids per query, float
scores) and ``{qid: {doc: grade}}`` (20 judgments per query out of 200 ids, grades 0, 0, 1
and 2 equally likely, so half the judgments are non-relevant). Each line is the best of
``--repeat`` calls of ``evaluate()``: ndcg@10 and map@100 alone (relevant judgments only),
with bpref, judged@10 and infap added (every judgment ranked), with ``judged_only`` and
with ``relevance_level=2``.
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

from monitor.metrics.evaluation import evaluate

CASES: tuple[tuple[tuple[str, ...], dict[str, Any]], ...] = (
    (("ndcg@10", "map@100"), {}),
    (("ndcg@10", "map@100", "bpref", "judged@10", "infap"), {}),
    (("ndcg@10", "map@100"), {"judged_only": True}),
    (("ndcg@10", "map@100"), {"relevance_level": 2}),
)


def main() -> None:
    """Build the data, time each case and print one line per case."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(0)
    run = {f"q{i}": {f"d{j}": rng.random() for j in range(100)} for i in range(args.queries)}
    qrels = {
        f"q{i}": {f"d{j}": rng.choice([0, 0, 1, 2]) for j in rng.sample(range(200), 20)}
        for i in range(args.queries)
    }
    print(f"{args.queries:,} queries, best of {args.repeat}, seconds")
    for metrics, options in CASES:
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            evaluate(qrels, run, list(metrics), **options)
            times.append(time.perf_counter() - start)
        print(f"{min(times):8.3f}  {', '.join(metrics)} {options or ''}")


if __name__ == "__main__":
    main()
