"""Measures of the judged documents in a ranking: ``bpref``, ``infap`` and ``judged@k``.

``bpref`` (Buckley and Voorhees, 2004), exactly as trec_eval's ``bpref``: for a query with R
relevant judgments (grade >= the relevance level) and N judged non-relevant ones
(0 <= grade < the level), each relevant document retrieved at rank r adds
``1 - min(n_r, R) / min(N, R)``, n_r being the judged non-relevant documents retrieved above
it (1 when n_r is 0); the sum is divided by R. Unjudged documents and judgments with a
negative grade (trec_eval: "in the pool, not judged") are skipped. R = 0 scores 0.

``infap`` (Yilmaz and Aslam, 2006), exactly as trec_eval's ``infAP``: judgments with a
negative grade are pool documents left unjudged (sampled out). Each relevant document
retrieved at rank k > 1 adds its expected precision::

    1/k + ((k - 1)/k) * (pooled above / (k - 1)) * ((rel above + e) / (judged above + 2e))

(1 at rank 1), "pooled" counting every judgment of any grade, "judged" those of grade >= 0,
e = 0.00001; the sum is divided by R. With no negative grades it is AP, up to the e terms.

``judged@k``, exactly as ir_measures' ``Judged@k``: the share of the top k that has a
judgment of any grade (0 and negative included), ``judged_k / min(k, retrieved)``; a query
that retrieved nothing scores 0. It says how far the other figures can be trusted: a low
judged@10 means the top 10 is mostly unknown to the judgments.

Duplicates were dropped before ranking, so a repeated id counts once.
"""

from __future__ import annotations

import numpy as np

from monitor.metrics.ranks import NOT_RETRIEVED, BoolArray, FloatArray, RelevantRanks


def bpref(ranks: RelevantRanks, k: int | None = None) -> FloatArray:
    """Return trec_eval's bpref: relevant documents, each penalised by judged non-relevant above."""
    query, grade, rank = ranks.judgments()
    level = ranks.relevance_level
    retrieved = rank < NOT_RETRIEVED
    nonrel = (grade >= 0) & (grade < level)
    n_nonrel = np.bincount(query[nonrel], minlength=ranks.n)
    # Judged non-relevant retrieved strictly above each entry: entries are in rank order
    # within a query and retrieved ranks are distinct, so an exclusive running count works.
    counted = (nonrel & retrieved).astype(np.int64)
    running = np.cumsum(counted) - counted
    per_query = np.bincount(query, minlength=ranks.n)
    first = np.cumsum(per_query) - per_query
    above = running - running[first[query]]
    hit = (grade >= level) & retrieved
    r = ranks.n_relevant[query[hit]].astype(np.float64)
    denominator = np.minimum(n_nonrel[query[hit]], ranks.n_relevant[query[hit]])
    above_hit = above[hit].astype(np.float64)
    penalty = np.zeros(len(r), dtype=np.float64)
    np.divide(np.minimum(above_hit, r), denominator, out=penalty, where=above_hit > 0)
    totals = np.bincount(query[hit], weights=1.0 - penalty, minlength=ranks.n)
    return ranks.per_relevant(totals.astype(np.float64))


#: trec_eval's INFAP_EPSILON, which keeps the estimate defined with nothing judged above.
_INFAP_EPSILON = 0.00001


def infap(ranks: RelevantRanks, k: int | None = None) -> FloatArray:
    """Return trec_eval's inferred AP, negative grades being unjudged pool documents."""
    query, grade, rank = ranks.judgments()
    level = ranks.relevance_level
    retrieved = rank < NOT_RETRIEVED
    q, g, r = query[retrieved], grade[retrieved], rank[retrieved].astype(np.float64)
    per_query = np.bincount(q, minlength=ranks.n)
    first = (np.cumsum(per_query) - per_query)[q]

    def above(mask: BoolArray) -> FloatArray:
        counted = mask.astype(np.float64)
        running = np.cumsum(counted) - counted
        return running - running[first] if len(running) else running

    rel_above = above(g >= level)
    judged_above = above(g >= 0)
    pooled_above = above(np.ones(len(g), dtype=bool))
    hit = g >= level
    j = r[hit] - 1.0
    ratio = (rel_above[hit] + _INFAP_EPSILON) / (judged_above[hit] + 2 * _INFAP_EPSILON)
    spread = np.divide(pooled_above[hit], j, out=np.zeros(len(j)), where=j > 0)
    precision = np.where(j == 0, 1.0, 1.0 / (j + 1.0) + (j / (j + 1.0)) * spread * ratio)
    totals = np.bincount(q[hit], weights=precision, minlength=ranks.n)
    return ranks.per_relevant(totals.astype(np.float64))


def judged(ranks: RelevantRanks, k: int | None) -> FloatArray:
    """Return the share of the top k (or of a shorter ranking) that has a judgment."""
    if k is None:
        raise ValueError("judged needs a cutoff")
    query, _, rank = ranks.judgments()
    counts = np.bincount(query[rank <= k], minlength=ranks.n).astype(np.float64)
    shown = np.minimum(ranks.n_retrieved, k).astype(np.float64)
    out = np.zeros(ranks.n, dtype=np.float64)
    np.divide(counts, shown, out=out, where=shown > 0)
    return out
