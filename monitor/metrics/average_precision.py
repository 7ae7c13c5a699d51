"""Average precision: ``map@k`` and ``map``.

For one query with R relevant judgments (grade >= 1)::

    AP@k = (1 / R) * sum over relevant documents retrieved at rank r <= k of precision@r

where precision@r counts the relevant documents at ranks 1..r. The sum is divided by R, the
number of relevant *judged* documents (trec_eval's ``map_cut_k``; ``map`` without a cutoff is
trec_eval's ``map``), not by the number of relevant documents retrieved as some tutorials
do: a relevant document never retrieved lowers AP. The mean over queries is MAP.
"""

from __future__ import annotations

import numpy as np

from monitor.metrics.ranks import FloatArray, RelevantRanks


def average_precision(ranks: RelevantRanks, k: int | None) -> FloatArray:
    """Return AP over the relevant documents retrieved within the cutoff, divided by R."""
    hits = ranks.retrieved_within(k)
    # Entries are in rank order within a query: position + 1 relevant docs sit at ranks <= r.
    precision_at_r = (ranks.position[hits] + 1.0) / ranks.rank[hits]
    totals = np.bincount(ranks.query[hits], weights=precision_at_r, minlength=ranks.n)
    return ranks.per_relevant(totals.astype(np.float64))
