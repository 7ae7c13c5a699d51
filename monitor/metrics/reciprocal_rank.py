"""Reciprocal rank: ``mrr@k`` and ``mrr``.

``mrr@k`` of one query = 1 / rank of the first relevant document (grade >= 1) if that rank
is <= k, else 0; ``mrr`` has no cutoff (trec_eval's ``recip_rank``). The mean over queries is
the mean reciprocal rank. Duplicates were dropped before ranking, so a repeated non-relevant
id above the first relevant one does not push it down.
"""

from __future__ import annotations

import numpy as np

from monitor.metrics.ranks import FloatArray, RelevantRanks


def mrr(ranks: RelevantRanks, k: int | None) -> FloatArray:
    """Return 1 / rank of the first relevant document within the cutoff, else 0."""
    out = np.zeros(ranks.n, dtype=np.float64)
    has = ranks.n_relevant > 0
    # Entries are sorted by rank within a query, so a query's first entry is its best rank.
    first = ranks.rank[ranks.starts[has]]
    hit = ranks.retrieved_within(k)[ranks.starts[has]]
    out[np.flatnonzero(has)[hit]] = 1.0 / first[hit]
    return out
