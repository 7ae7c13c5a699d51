"""Shared inputs for the metric tests: a worked example, seeded collections, trec_eval's order.

The generated cases deliberately contain what trips metric code: graded labels including 0
and negative ones, scores drawn from a small set (so ties are common), doc ids of mixed
length and case plus non-ASCII ones (so the doc id tie-break is exercised in byte order),
runs shorter than every cutoff, empty runs, judged queries missing from the run, judged
queries without a relevant document and run queries without judgments.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass

from monitor.metrics.evaluation import evaluate
from monitor.metrics.ranks import Qrels as QrelsLike
from monitor.metrics.ranks import Run as RunLike

Qrels = dict[str, dict[str, int]]
ScoreRun = dict[str, dict[str, float]]
ListRun = dict[str, list[str]]

#: Mixed lengths, cases and non-ASCII ids: "d10" < "d9" and "Z" < "a" < "é" in byte order.
DOC_POOL: tuple[str, ...] = (
    *(f"d{i}" for i in range(40)),
    "D7",
    "a",
    "Z",
    "doc-é",
    "doc-e",
    "文書",
)
GRADES: tuple[int, ...] = (-2, -1, 0, 0, 0, 1, 1, 1, 2, 3, 4)
TIED_SCORES: tuple[float, ...] = (-1.0, 0.0, 0.25, 0.5, 1.0, 2.0)

# The worked example of test_metrics_golden.py. Five questions, five documents retrieved
# each ("r*" relevant, "n*" not):
#   A: one relevant, found at rank 1
#   B: one relevant, found at rank 3
#   C: two relevant, found at ranks 2 and 4
#   D: one relevant, not found
#   E: two relevant, one found at rank 1
FIVE_QUESTIONS_QRELS: Qrels = {
    "A": {"rA": 1},
    "B": {"rB": 1},
    "C": {"rC1": 1, "rC2": 1},
    "D": {"rD": 1},
    "E": {"rE1": 1, "rE2": 1},
}
FIVE_QUESTIONS_RUN: ListRun = {
    "A": ["rA", "n1", "n2", "n3", "n4"],
    "B": ["n1", "n2", "rB", "n3", "n4"],
    "C": ["n1", "rC1", "n2", "rC2", "n3"],
    "D": ["n1", "n2", "n3", "n4", "n5"],
    "E": ["rE1", "n1", "n2", "n3", "n4"],
}


@dataclass(frozen=True)
class Case:
    """Judgments and a scored run for one generated test collection."""

    qrels: Qrels
    run: ScoreRun


def random_case(seed: int, n_queries: int = 40) -> Case:
    """Return a seeded collection mixing every awkward kind of query."""
    rng = random.Random(seed)
    qrels: Qrels = {}
    run: ScoreRun = {}
    for i in range(n_queries):
        qid = f"q{i}"
        judged = rng.sample(DOC_POOL, rng.randint(1, 12))
        qrels[qid] = {doc: rng.choice(GRADES) for doc in judged}
        kind = rng.random()
        if kind < 0.1:
            continue  # judged query missing from the run
        if kind < 0.15:
            run[qid] = {}  # empty run
            continue
        size = rng.randint(1, 4) if kind < 0.35 else rng.randint(5, len(DOC_POOL))
        retrieved = rng.sample(DOC_POOL, size)
        if rng.random() < 0.7:
            run[qid] = {doc: rng.choice(TIED_SCORES) for doc in retrieved}
        else:
            run[qid] = {doc: round(rng.uniform(-5, 5), 3) for doc in retrieved}
    for j in range(3):
        run[f"unjudged{j}"] = {doc: rng.random() for doc in rng.sample(DOC_POOL, 5)}
    return Case(qrels, run)


def long_case(seed: int, n_queries: int = 4, length: int = 1200) -> Case:
    """Return a collection whose runs are longer than trec_eval's largest cutoff (1000)."""
    rng = random.Random(seed)
    docs = [f"doc{i}" for i in range(length + 300)]
    qrels: Qrels = {}
    run: ScoreRun = {}
    for i in range(n_queries):
        qid = f"q{i}"
        qrels[qid] = {doc: rng.choice(GRADES) for doc in rng.sample(docs, 400)}
        run[qid] = {doc: float(rng.randint(0, 50)) for doc in rng.sample(docs, length)}
    return Case(qrels, run)


def trec_order(ranking: Mapping[str, float]) -> list[str]:
    """Return doc ids in trec_eval's order: score descending, then doc id descending (bytes)."""
    items = sorted(
        ranking.items(), key=lambda item: (item[1], item[0].encode("utf-8")), reverse=True
    )
    return [doc for doc, _ in items]


def as_list_run(run: Mapping[str, Mapping[str, float]]) -> ListRun:
    """Return the same run as ranked lists of doc ids, best first."""
    return {qid: trec_order(ranking) for qid, ranking in run.items()}


def mean(qrels: QrelsLike, run: RunLike, metric: str) -> float:
    """Return the mean of one metric over the queries with a relevant judgment."""
    return evaluate(qrels, run, [metric]).means[metric]
