"""Label-free change: how much of the baseline's top k the current run still returns.

Two measures of one query's rankings, both in [0, 1] and needing no judgments:

- **Rank-biased overlap** (RBO), the *extrapolated* form of Webber, Moffat and Zobel, "A
  similarity measure for indefinite rankings" (TOIS 2010), eq. 32, evaluated at depth k with
  persistence ``p`` (:data:`PERSISTENCE`, 0.9: the top 10 ranks carry about 86% of the
  weight). With ``X_d`` the number of documents the two top-d prefixes share, for lists of
  equal length k it is ``X_k / k * p^k + (1 - p) / p * sum_{d=1..k} X_d / d * p^d``; for
  lists of lengths s < l the paper's uneven-list form is used. Identical lists score 1,
  disjoint ones 0.
- **Jaccard@k**: ``|A & B| / |A | B|`` of the two top-k sets, order ignored.

Both lists are cut at k and a repeated id counts once, at its first position (as the
metrics rank). Two empty lists are identical (1); one empty list against another shares
nothing (0). Only queries the search answered in both runs are compared: a failed query has
no ranking.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from monitor.store.records import RunRecord

#: The persistence of rank-biased overlap: the chance that a reader goes on to the next rank.
PERSISTENCE = 0.9


@dataclass(frozen=True, slots=True)
class QueryOverlap:
    """One query's overlap of the current top k with the baseline's."""

    query_id: str
    rbo: float
    jaccard: float

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready form."""
        return {"query_id": self.query_id, "rbo": self.rbo, "jaccard": self.jaccard}


@dataclass(frozen=True, slots=True)
class Overlap:
    """The overlap of a run's top ``k`` with its baseline's, per query and in the mean.

    ``rbo`` and ``jaccard`` are means over ``queries`` (NaN when no query was answered in
    both runs); ``persistence`` is RBO's ``p``.
    """

    k: int
    persistence: float
    rbo: float
    jaccard: float
    queries: tuple[QueryOverlap, ...] = ()

    @property
    def n(self) -> int:
        """Return the number of queries compared."""
        return len(self.queries)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready form (NaN means as None)."""
        return {
            "k": self.k,
            "persistence": self.persistence,
            "rbo": None if self.rbo != self.rbo else self.rbo,
            "jaccard": None if self.jaccard != self.jaccard else self.jaccard,
            "n": self.n,
            "queries": [query.to_dict() for query in self.queries],
        }


def _top(ranking: Sequence[str], k: int) -> list[str]:
    """Return the first ``k`` distinct ids of ``ranking``."""
    return list(dict.fromkeys(ranking))[:k] if k > 0 else []


def rank_biased_overlap(
    first: Sequence[str], second: Sequence[str], k: int, p: float = PERSISTENCE
) -> float:
    """Return the extrapolated RBO of the two rankings cut at ``k``, with persistence ``p``."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"persistence must lie strictly between 0 and 1, not {p!r}")
    a, b = _top(first, k), _top(second, k)
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    s, length = len(short), len(long)
    if length == 0:
        return 1.0
    if s == 0:
        return 0.0
    seen_short: set[str] = set()
    seen_long: set[str] = set()
    shared = 0
    total = 0.0
    shared_at_s = 0
    for d in range(1, length + 1):
        item = long[d - 1]
        if d <= s:
            other = short[d - 1]
            if item == other:
                shared += 1
            else:
                shared += (item in seen_short) + (other in seen_long)
            seen_short.add(other)
            seen_long.add(item)
            if d == s:
                shared_at_s = shared
        elif item in seen_short:
            shared += 1
        total += shared / d * p**d
        if d > s:
            total += shared_at_s * (d - s) / (s * d) * p**d
    tail = ((shared - shared_at_s) / length + shared_at_s / s) * p**length
    return min(1.0, max(0.0, (1 - p) / p * total + tail))


def jaccard(first: Sequence[str], second: Sequence[str], k: int) -> float:
    """Return the Jaccard similarity of the two top-``k`` sets (1 when both are empty)."""
    a, b = set(_top(first, k)), set(_top(second, k))
    union = a | b
    return len(a & b) / len(union) if union else 1.0


def overlap_of(baseline: RunRecord, current: RunRecord, k: int, p: float = PERSISTENCE) -> Overlap:
    """Return the overlap of ``current``'s top ``k`` with ``baseline``'s, query by query,
    over the queries answered in both runs, in ``current``'s order."""
    before = {q.query_id: q.retrieved_ids for q in baseline.queries if q.error_type is None}
    rows = tuple(
        QueryOverlap(
            q.query_id,
            rank_biased_overlap(before[q.query_id], q.retrieved_ids, k, p),
            jaccard(before[q.query_id], q.retrieved_ids, k),
        )
        for q in current.queries
        if q.error_type is None and q.query_id in before
    )
    nan = float("nan")
    return Overlap(
        k=k,
        persistence=p,
        rbo=sum(r.rbo for r in rows) / len(rows) if rows else nan,
        jaccard=sum(r.jaccard for r in rows) / len(rows) if rows else nan,
        queries=rows,
    )
