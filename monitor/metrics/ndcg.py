"""Discounted cumulative gain: ``ndcg@k``, ``ndcg``, ``ndcg_burges@k``, ``dcg@k``, ``dcg_burges@k``.

For a query with graded judgments::

    DCG@k  = sum over retrieved ranks r <= k of  gain(grade_r) / log2(r + 1)
    IDCG@k = the same sum over the ideal ranking: every judged document with grade > 0,
             sorted by grade descending, cut at k
    nDCG@k = DCG@k / IDCG@k   (0 when IDCG@k is 0)

``ndcg`` gains are the grades themselves (trec_eval's ``ndcg_cut_k``; ``ndcg`` without a
cutoff is trec_eval's ``ndcg``); ``ndcg_burges`` uses ``2**grade - 1`` (Burges et al., 2005).
``dcg`` and ``dcg_burges`` are DCG@k itself, not normalised (ranx's ``dcg`` and
``dcg_burges``). The gains are the grades whatever the relevance level (as trec_eval's ndcg).
Documents with grade <= 0 and unjudged documents gain nothing. The ideal ranking comes from
all judgments, not from the retrieved list only, as in trec_eval.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

import numpy as np

from monitor.metrics.ranks import FloatArray, IntArray, RelevantRanks

_Gain: TypeAlias = Callable[[IntArray], FloatArray]


def ndcg(ranks: RelevantRanks, k: int | None) -> FloatArray:
    """Return nDCG with the grade as gain (trec_eval's ndcg_cut)."""
    return _ndcg(ranks, k, lambda grade: grade.astype(np.float64))


def ndcg_burges(ranks: RelevantRanks, k: int | None) -> FloatArray:
    """Return nDCG with 2**grade - 1 as gain."""
    return _ndcg(ranks, k, lambda grade: np.exp2(grade.astype(np.float64)) - 1.0)


def dcg(ranks: RelevantRanks, k: int | None) -> FloatArray:
    """Return DCG with the grade as gain (ranx's dcg)."""
    return _dcg(ranks, k, lambda grade: grade.astype(np.float64))


def dcg_burges(ranks: RelevantRanks, k: int | None) -> FloatArray:
    """Return DCG with 2**grade - 1 as gain (ranx's dcg_burges)."""
    return _dcg(ranks, k, lambda grade: np.exp2(grade.astype(np.float64)) - 1.0)


def _dcg(ranks: RelevantRanks, k: int | None, gain: _Gain) -> FloatArray:
    hits = ranks.retrieved_within(k)
    return np.bincount(
        ranks.query[hits],
        weights=gain(ranks.grade[hits]) / np.log2(ranks.rank[hits] + 1.0),
        minlength=ranks.n,
    ).astype(np.float64)


def _ndcg(ranks: RelevantRanks, k: int | None, gain: _Gain) -> FloatArray:
    dcg = _dcg(ranks, k, gain)
    ideal_rank = ranks.position + 1
    best = np.ones(len(ideal_rank), dtype=bool) if k is None else ideal_rank <= k
    idcg = np.bincount(
        ranks.query[best],
        weights=gain(ranks.ideal_grade[best]) / np.log2(ideal_rank[best] + 1.0),
        minlength=ranks.n,
    )
    out = np.zeros(ranks.n, dtype=np.float64)
    np.divide(dcg, idcg, out=out, where=idcg > 0)
    return out
