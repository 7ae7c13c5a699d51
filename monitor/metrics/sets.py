"""Set measures over the whole ranking, and counts (trec_eval's definitions).

With ``ret`` the documents retrieved (trec_eval's ``num_ret``, after ``--max-docs`` and
``--judged-only``), ``R`` the relevant judgments (``num_rel``) and ``rel_ret`` the relevant
documents retrieved (``num_rel_ret``; ``num_rel_ret@k`` counts those at rank <= k, ranx's
``hits@k``):

- ``set_precision`` = rel_ret / ret (trec_eval's ``set_P``; 0 when nothing was retrieved)
- ``set_recall``    = rel_ret / R (``set_recall``)
- ``set_f1``        = 2 rel_ret / (ret + R) (``set_F`` with beta 1)

The counts are per query; their mean is the mean count, while trec_eval's summary line sums
them (``--format trec_eval`` prints the sum, as trec_eval does). Duplicates never count twice.
A query with R = 0 scores 0 on recall and f1, and its precision counts what it retrieved.
"""

from __future__ import annotations

import numpy as np

from monitor.metrics.ranks import FloatArray, RelevantRanks


def num_ret(ranks: RelevantRanks, k: int | None = None) -> FloatArray:
    """Return the number of distinct documents retrieved."""
    return ranks.n_retrieved.astype(np.float64)


def num_rel(ranks: RelevantRanks, k: int | None = None) -> FloatArray:
    """Return the number of relevant judgments."""
    return ranks.n_relevant.astype(np.float64)


def num_rel_ret(ranks: RelevantRanks, k: int | None) -> FloatArray:
    """Return the number of relevant documents retrieved (at rank <= k with a cutoff)."""
    return ranks.relevant_within(k).copy()


def set_precision(ranks: RelevantRanks, k: int | None = None) -> FloatArray:
    """Return the share of the retrieved documents that are relevant."""
    out = np.zeros(ranks.n, dtype=np.float64)
    np.divide(ranks.relevant_within(None), ranks.n_retrieved, out=out, where=ranks.n_retrieved > 0)
    return out


def set_recall(ranks: RelevantRanks, k: int | None = None) -> FloatArray:
    """Return the share of the relevant documents that were retrieved."""
    return ranks.per_relevant(ranks.relevant_within(None))


def set_f1(ranks: RelevantRanks, k: int | None = None) -> FloatArray:
    """Return the harmonic mean of set_precision and set_recall."""
    total = (ranks.n_retrieved + ranks.n_relevant).astype(np.float64)
    out = np.zeros(ranks.n, dtype=np.float64)
    np.divide(2.0 * ranks.relevant_within(None), total, out=out, where=total > 0)
    return out
