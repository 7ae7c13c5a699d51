"""Compute many metrics at many cutoffs from one resolution of the run's ranks."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeAlias

from monitor.metrics import average_precision, cascade, hits, judgments, ndcg, reciprocal_rank, sets
from monitor.metrics.ranks import FloatArray, RelevantRanks, Resolution
from monitor.metrics.spec import MEASURES, Metric

#: A measure: per-query values from the ranks, at cutoff k (None: no cutoff).
Measure: TypeAlias = Callable[[RelevantRanks, "int | None"], FloatArray]

FUNCTIONS: dict[str, Measure] = {
    "hit_rate": hits.hit_rate,
    "precision": hits.precision,
    "recall": hits.recall,
    "f1": hits.f1,
    "r_precision": hits.r_precision,
    "mrr": reciprocal_rank.mrr,
    "ndcg": ndcg.ndcg,
    "ndcg_burges": ndcg.ndcg_burges,
    "map": average_precision.average_precision,
    "bpref": judgments.bpref,
    "infap": judgments.infap,
    "judged": judgments.judged,
    "num_ret": sets.num_ret,
    "num_rel": sets.num_rel,
    "num_rel_ret": sets.num_rel_ret,
    "set_precision": sets.set_precision,
    "set_recall": sets.set_recall,
    "set_f1": sets.set_f1,
    "dcg": ndcg.dcg,
    "dcg_burges": ndcg.dcg_burges,
    "err": cascade.err,
    "rbp": cascade.rbp,
    "rbp_50": cascade.rbp_with(0.5),
    "rbp_80": cascade.rbp_with(0.8),
    "rbp_95": cascade.rbp_with(0.95),
    "rbp_99": cascade.rbp_with(0.99),
}

#: Measures whose gains are the grades: they read the ranks of every grade >= 1 whatever the
#: relevance level (trec_eval's ndcg and rbp ignore -l).
GRADED: frozenset[str] = frozenset(
    {
        "ndcg",
        "ndcg_burges",
        "dcg",
        "dcg_burges",
        "err",
        "rbp",
        "rbp_50",
        "rbp_80",
        "rbp_95",
        "rbp_99",
    }
)
#: Measures that read the non-relevant judgments too.
JUDGED: frozenset[str] = frozenset({"bpref", "infap", "judged"})

if FUNCTIONS.keys() != MEASURES.keys():  # pragma: no cover - guards the two tables
    raise RuntimeError("metric functions and metric names disagree")


def needs_judgments(metrics: Iterable[Metric]) -> bool:
    """Return whether any of ``metrics`` reads the non-relevant judgments' ranks."""
    return any(metric.measure in JUDGED for metric in metrics)


def compute(metrics: Iterable[Metric], resolution: Resolution) -> dict[Metric, FloatArray]:
    """Return per-query values, one array per metric, in the order of the evaluated queries."""
    return {
        metric: FUNCTIONS[metric.measure](_ranks_for(metric, resolution), metric.k)
        for metric in metrics
    }


def _ranks_for(metric: Metric, resolution: Resolution) -> RelevantRanks:
    return resolution.graded if metric.measure in GRADED else resolution.ranks
