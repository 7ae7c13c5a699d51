"""Compute many metrics at many cutoffs from one resolution of the run's ranks."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeAlias

from monitor.metrics import average_precision, hits, ndcg, reciprocal_rank
from monitor.metrics.ranks import FloatArray, RelevantRanks
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
}

if FUNCTIONS.keys() != MEASURES.keys():  # pragma: no cover - guards the two tables
    raise RuntimeError("metric functions and metric names disagree")


def compute(metrics: Iterable[Metric], ranks: RelevantRanks) -> dict[Metric, FloatArray]:
    """Return per-query values, one array per metric, in the order of ``ranks.query_ids``."""
    return {metric: FUNCTIONS[metric.measure](ranks, metric.k) for metric in metrics}
