"""Set measures at a cutoff: hit_rate, precision, recall, f1 and r_precision.

With ``rel_k`` the number of relevant documents (grade >= 1) retrieved at rank <= k and
``R`` the number of relevant judgments of the query (trec_eval's ``num_rel``):

- ``hit_rate@k``  = 1 if rel_k > 0 else 0 (trec_eval's ``success_k``)
- ``precision@k`` = rel_k / k, dividing by k even when fewer than k were returned
  (trec_eval's ``P_k``)
- ``recall@k``    = rel_k / R (trec_eval's ``recall_k``)
- ``f1@k``        = 2 P R / (P + R) = 2 rel_k / (k + R), 0 when nothing relevant is retrieved
- ``r_precision`` = rel_R / R, the precision at rank R (trec_eval's ``Rprec``)

Duplicates never count twice (the ranking is deduplicated before); a query with R = 0
scores 0 on every measure.
"""

from __future__ import annotations

import numpy as np

from monitor.metrics.ranks import NOT_RETRIEVED, FloatArray, RelevantRanks


def hit_rate(ranks: RelevantRanks, k: int | None) -> FloatArray:
    """Return 1 per query with a relevant document in the top k, else 0."""
    return (ranks.relevant_within(k) > 0).astype(np.float64)


def precision(ranks: RelevantRanks, k: int | None) -> FloatArray:
    """Return the share of the k first positions that hold a relevant document."""
    if k is None:
        raise ValueError("precision needs a cutoff")
    return ranks.relevant_within(k) / k


def recall(ranks: RelevantRanks, k: int | None) -> FloatArray:
    """Return the share of the relevant documents retrieved in the top k."""
    return ranks.per_relevant(ranks.relevant_within(k))


def f1(ranks: RelevantRanks, k: int | None) -> FloatArray:
    """Return the harmonic mean of precision@k and recall@k."""
    if k is None:
        raise ValueError("f1 needs a cutoff")
    return 2.0 * ranks.relevant_within(k) / (k + ranks.n_relevant)


def r_precision(ranks: RelevantRanks, k: int | None = None) -> FloatArray:
    """Return the precision at rank R, R being the query's number of relevant documents."""
    cutoff = np.repeat(ranks.n_relevant, ranks.n_relevant)
    within = (ranks.rank <= cutoff) & (ranks.rank < NOT_RETRIEVED)
    counts = np.bincount(ranks.query[within], minlength=ranks.n).astype(np.float64)
    return ranks.per_relevant(counts)
