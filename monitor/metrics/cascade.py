"""User-model measures: ``err@k`` (expected reciprocal rank) and ``rbp`` (rank-biased precision).

``err@k`` (Chapelle et al., 2009), as gdeval (the TREC Web track's script, ir_measures'
``ERR@k``) computes it: a user reads down the ranking and stops at rank r with probability
``R_r = (2**g - 1) / 2**4`` (g the grade, on gdeval's 0..4 scale: a grade above 4 counts
as 4, a grade <= 0 or no judgment as 0)::

    ERR@k = sum over r <= k of  (1 / r) * R_r * prod over i < r of (1 - R_i)

``rbp`` (Moffat and Zobel, 2008), as trec_eval's ``rbp`` (its default persistence p = 0.9)::

    RBP = (1 - p) * sum over retrieved documents at rank r of  (g_r / g_max) * p**(r - 1)

g_max being the query's highest grade (so with binary judgments each relevant document
weighs 1); like ndcg, it keeps the grades whatever the relevance level, as trec_eval does.
``rbp_50``, ``rbp_80`` (ir_measures' default persistence), ``rbp_95`` and ``rbp_99`` use
p = 0.5, 0.8, 0.95 and 0.99; with a cutoff only the first k ranks count. Neither is
normalised by the query's judgments, so a query with no relevant document scores 0, and
duplicates (dropped before ranking) never count twice.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from monitor.metrics.ranks import FloatArray, RelevantRanks

#: gdeval's highest grade: a grade g stops the user with probability (2**g - 1) / 2**4.
ERR_MAX_GRADE = 4


def err(ranks: RelevantRanks, k: int | None) -> FloatArray:
    """Return the expected reciprocal rank of the graded ranking (gdeval's ERR@k)."""
    hits = ranks.retrieved_within(k)
    query, rank = ranks.query[hits], ranks.rank[hits].astype(np.float64)
    grade = np.minimum(ranks.grade[hits], ERR_MAX_GRADE).astype(np.float64)
    stop = (np.exp2(grade) - 1.0) / 2.0**ERR_MAX_GRADE
    # Documents without a positive grade have R = 0: their factor (1 - R) is 1, so the
    # product over the ranks above r runs over the graded entries only, in rank order.
    log_go_on = np.log1p(-stop)
    running = np.cumsum(log_go_on) - log_go_on
    counts = np.bincount(query, minlength=ranks.n)
    firsts = np.cumsum(counts) - counts
    before = running - running[firsts[query]]
    weights = stop * np.exp(before) / rank
    return np.bincount(query, weights=weights, minlength=ranks.n).astype(np.float64)


def rbp(ranks: RelevantRanks, k: int | None, persistence: float = 0.9) -> FloatArray:
    """Return rank-biased precision with the given persistence (trec_eval's rbp: p = 0.9)."""
    hits = ranks.retrieved_within(k)
    top = np.zeros(ranks.n, dtype=np.float64)
    has = ranks.n_relevant > 0
    top[has] = ranks.ideal_grade[ranks.starts[has]]
    gain = ranks.grade[hits] / top[ranks.query[hits]]
    weights = gain * (1.0 - persistence) * persistence ** (ranks.rank[hits] - 1.0)
    return np.bincount(ranks.query[hits], weights=weights, minlength=ranks.n).astype(np.float64)


def rbp_with(persistence: float) -> Callable[[RelevantRanks, int | None], FloatArray]:
    """Return rbp at another persistence."""
    return partial(rbp, persistence=persistence)
