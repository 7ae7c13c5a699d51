"""Measure the comparison stage of a run: compare_runs, the power figures and the labels.

Run from the repository root::

    python benchmarks/bench_compare.py                       # 100,000 queries
    python benchmarks/bench_compare.py --queries 1000000
    python benchmarks/bench_compare.py --significance        # the paired tests as well

A fixed seed (``--seed``) generates an eval set in memory (5 relevant documents of grades 1
to 3 per query, one segment key of 4 values) and two runs of 20 documents per query, each
holding a random 0 to 5 of the relevant documents at random ranks, as
``benchmarks/bench_job.py`` writes them; both runs are scored by the engine on ndcg@10,
recall@5, mrr@10 and precision@10 and kept as store records. Nothing of that is timed.

Then it times, in this process, what a run does after storing its record: the eval set's
labels (``labels_of``), ``compare_runs`` with a ``max_drop`` rule per metric, segments and
judgments, and the power figures of ``run`` (``rule_powers``). With ``--significance`` it
also times ``compare_paired`` (10,000 iterations, the paired sign-flip test and the
bootstrap interval) on the per-query values of each metric, which a rule runs only when a
drop passes its threshold. Peak RSS (``ru_maxrss``) is that of the whole process, setup
included.
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from monitor.evalset import EvalSet
    from monitor.store.records import RunRecord

METRICS = ("ndcg@10", "recall@5", "mrr@10", "precision@10")
KINDS = ("howto", "lookup", "policy", "nav")
DOCS_PER_QUERY = 20


def build(count: int, seed: int) -> tuple[EvalSet, RunRecord, RunRecord]:
    """Return the eval set and the baseline and current run records."""
    from monitor.evalset import EvalSet
    from monitor.metrics.evaluation import evaluate
    from monitor.records import Query
    from monitor.store.records import QueryRecord, RunRecord

    rng = random.Random(seed)
    evalset = EvalSet("bench")
    for i in range(count):
        grades = {f"d{i}-{j}": rng.randint(1, 3) for j in range(5)}
        evalset.add(Query(f"q{i}", f"query {i}", grades, {"kind": KINDS[i % len(KINDS)]}))
    qrels = evalset.qrels()
    at = datetime(2030, 1, 1, tzinfo=timezone.utc)

    def one_run(run_id: int) -> RunRecord:
        rankings: dict[str, list[str]] = {}
        for i in range(count):
            ranking = [f"x{i}-{run_id}-{j}" for j in range(DOCS_PER_QUERY)]
            for doc in rng.sample(sorted(qrels[f"q{i}"]), rng.randint(0, 5)):
                ranking[rng.randrange(DOCS_PER_QUERY)] = doc
            rankings[f"q{i}"] = list(dict.fromkeys(ranking))
        result = evaluate(qrels, rankings, list(METRICS))
        columns = {str(m): result.values[m].tolist() for m in result.metrics}
        queries = tuple(
            QueryRecord(
                query_id=qid,
                values={name: values[row] for name, values in columns.items()},
                retrieved_ids=tuple(rankings[qid]),
                relevant_ids=tuple(qrels[qid]),
                latency_seconds=0.001,
            )
            for row, qid in enumerate(result.query_ids)
        )
        return RunRecord(
            suite="bench",
            pipeline="bench",
            started_at=at,
            finished_at=at,
            evalset_fingerprint=evalset.fingerprint,
            means={str(m): v for m, v in result.means.items()},
            queries=queries,
            run_id=run_id,
        )

    return evalset, one_run(1), one_run(2)


def measure(count: int, seed: int, significance: bool) -> None:
    """Build the suite, then time and print each step."""
    from monitor.compare import compare_runs
    from monitor.compare.power import rule_powers
    from monitor.config.model import Check, RuleConfig
    from monitor.judgments import labels_of
    from monitor.metrics.spec import parse_metric

    evalset, baseline, current = build(count, seed)
    rules = [RuleConfig(Check.MAX_DROP, 0.05, parse_metric(name)) for name in METRICS]
    steps = []
    started = time.perf_counter()
    labels_of(evalset)
    steps.append(("labels_of", time.perf_counter() - started))
    started = time.perf_counter()
    metadata = {q.id: q.metadata for q in evalset}
    texts = {q.id: q.text for q in evalset}
    compare_runs(
        current,
        baseline,
        rules,
        segments=["kind"],
        metadata=metadata,
        texts=texts,
        qrels=evalset.qrels(),
    )
    steps.append(("compare_runs", time.perf_counter() - started))
    started = time.perf_counter()
    rule_powers(rules, baseline, current, 0.05)
    steps.append(("rule_powers", time.perf_counter() - started))
    if significance:
        from monitor.compare.matched import Matched
        from monitor.compare.stats import compare_paired

        matched = Matched.of(baseline, current)
        for name in METRICS:
            _, before, after = matched.pairs(name)
            started = time.perf_counter()
            compare_paired(before, after, iterations=10_000)
            steps.append((f"compare_paired {name}", time.perf_counter() - started))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{count:,} queries")
    for name, seconds in steps:
        print(f"  {name:<28} {seconds:7.3f} s")
    total = sum(seconds for name, seconds in steps if not name.startswith("compare_paired"))
    print(f"  {'labels + compare + powers':<28} {total:7.3f} s")
    print(f"  peak RSS (setup included)    {peak:7.0f} MB")


def main(argv: list[str] | None = None) -> int:
    """Parse the options and measure each size."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, nargs="+", default=[100_000])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--significance", action="store_true")
    args = parser.parse_args(argv)
    for count in args.queries:
        measure(count, args.seed, args.significance)
    return 0


if __name__ == "__main__":
    sys.exit(main())
