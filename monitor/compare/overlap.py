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

Runs read from the store hold their rankings as arrays
(:class:`~monitor.store.rankings.Rankings`): their top k are then cut, hashed (by content)
and matched straight from those arrays, the ids compared byte for byte, with no ``str`` per
id; the floats are the same.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter
from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor import texts
from monitor.compare.matched import Matched
from monitor.store.rankings import Rankings
from monitor.store.records import RunRecord

FloatArray = NDArray[np.float64]

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


def overlap_of(
    baseline: RunRecord,
    current: RunRecord,
    k: int,
    p: float = PERSISTENCE,
    *,
    matched: Matched | None = None,
) -> Overlap:
    """Return the overlap of ``current``'s top ``k`` with ``baseline``'s, query by query,
    over the queries answered in both runs, in ``current``'s order.

    ``matched`` is the two runs' queries matched by id, when the caller has it already. The
    queries are measured all at once (:func:`overlaps`), each to the same float as
    :func:`rank_biased_overlap` and :func:`jaccard` give it.
    """
    pairs = matched if matched is not None else Matched.of(baseline, current)
    both = pairs.both_answered()
    first: Sequence[Sequence[str]]
    second: Sequence[Sequence[str]]
    before = None if baseline.columns is None else baseline.columns.retrieved_ids
    now = None if current.columns is None else current.columns.retrieved_ids
    if isinstance(before, Rankings) and isinstance(now, Rankings):
        first, second = before.take(pairs.position[both]), now.take(both)
    else:
        first = [baseline.queries[i].retrieved_ids for i in pairs.position[both].tolist()]
        second = [current.queries[i].retrieved_ids for i in both.tolist()]
    rbos, jaccards = overlaps(first, second, k, p)
    ids = pairs.current_ids(both)
    rows = tuple(map(QueryOverlap, ids, rbos.tolist(), jaccards.tolist()))
    nan = float("nan")
    # Summed in order, as Python's sum of floats adds them, so the means do not move.
    return Overlap(
        k=k,
        persistence=p,
        rbo=float(np.add.accumulate(rbos)[-1]) / len(rows) if rows else nan,
        jaccard=float(np.add.accumulate(jaccards)[-1]) / len(rows) if rows else nan,
        queries=rows,
    )


#: Most query pairs whose rankings are measured at once by :func:`overlaps`.
CHUNK_QUERIES = 1 << 14


def overlaps(
    first: Sequence[Sequence[str]],
    second: Sequence[Sequence[str]],
    k: int,
    p: float = PERSISTENCE,
) -> tuple[FloatArray, FloatArray]:
    """Return the RBO and Jaccard@k of each pair of rankings ``first[i]``, ``second[i]``.

    Each value is the float :func:`rank_biased_overlap` and :func:`jaccard` return: the
    shared-prefix counts are found with numpy, and RBO's sum is taken over the depths in
    the same order with the same operations, a vector of queries at a time. Queries are
    measured in chunks of :data:`CHUNK_QUERIES`, so memory stays bounded. A pair whose
    top ``k`` repeats an id, or whose ids' hashes collide, is measured by the scalar
    functions themselves. When both are :class:`~monitor.store.rankings.Rankings`, the
    ids are hashed by content and compared as bytes from their arrays.
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"persistence must lie strictly between 0 and 1, not {p!r}")
    if len(first) != len(second):
        raise ValueError(f"{len(first)} rankings against {len(second)}: pairs needed")
    rbos = np.empty(len(first))
    jaccards = np.empty(len(first))
    # Each side's ids hashed once, not once a chunk, and only those of a top k.
    doc_hashes = None
    if isinstance(first, Rankings) and isinstance(second, Rankings):
        doc_hashes = (_top_hashes(first, k), _top_hashes(second, k))
    for start in range(0, len(first), CHUNK_QUERIES):
        part = slice(start, start + CHUNK_QUERIES)
        rbos[part], jaccards[part] = _overlap_chunk(first[part], second[part], k, p, doc_hashes)
    return rbos, jaccards


#: Whether the ids at flat positions ``a_at`` of one side equal those at ``b_at`` of the other.
_Same = Callable[[NDArray[np.int64], NDArray[np.int64]], NDArray[np.bool_]]


def _overlap_chunk(
    first: Sequence[Sequence[str]],
    second: Sequence[Sequence[str]],
    k: int,
    p: float,
    doc_hashes: tuple[NDArray[np.uint64], NDArray[np.uint64]] | None = None,
) -> tuple[FloatArray, FloatArray]:
    n = len(first)
    if n == 0 or k <= 0:
        ones = np.ones(n)
        return ones, ones.copy()
    same_ids: _Same
    if isinstance(first, Rankings) and isinstance(second, Rankings) and doc_hashes is not None:
        a_codes, a_hash, a_len, a_flat = _cut_rankings(first, k, doc_hashes[0])
        b_codes, b_hash, b_len, b_flat = _cut_rankings(second, k, doc_hashes[1])

        def same_ids(a_at: NDArray[np.int64], b_at: NDArray[np.int64]) -> NDArray[np.bool_]:
            return texts.equal(
                first.doc_lengths,
                first.doc_bytes,
                a_codes[a_at],
                second.doc_lengths,
                second.doc_bytes,
                b_codes[b_at],
                starts=(first.doc_starts, second.doc_starts),
            )
    else:
        a_ids, a_hash, a_len, a_flat = _cut(first, k)
        b_ids, b_hash, b_len, b_flat = _cut(second, k)

        def same_ids(a_at: NDArray[np.int64], b_at: NDArray[np.int64]) -> NDArray[np.bool_]:
            return np.asarray(a_ids[a_at] == b_ids[b_at], dtype=np.bool_)

    # Side by side in one row, each row sorted: an id both lists hold sits next to itself.
    both = np.concatenate((a_hash, b_hash), axis=1)
    order = np.argsort(both, axis=1, kind="stable")
    ranked = np.take_along_axis(both, order, axis=1)
    valid_a, valid_b = np.arange(k) < a_len[:, None], np.arange(k) < b_len[:, None]
    valid = np.take_along_axis(np.concatenate((valid_a, valid_b), axis=1), order, axis=1)
    same = (ranked[:, 1:] == ranked[:, :-1]) & valid[:, 1:] & valid[:, :-1]
    row, col = np.nonzero(same)
    left, right = order[row, col], order[row, col + 1]
    # A pair from one side is a repeated id (or two ids' hashes colliding) within one list.
    odd = (left >= k) | (right < k)
    i, j = left, right - k
    matched = ~odd
    # Hashes only propose matches: the ids themselves decide.
    a_at = a_flat[row[matched]] + i[matched]
    b_at = b_flat[row[matched]] + j[matched]
    equal = same_ids(a_at, b_at)
    # An id hashed to the padding's 0 may sort apart from its match among the padding.
    scalar = ((a_hash == 0) & valid_a).any(axis=1) | ((b_hash == 0) & valid_b).any(axis=1)
    scalar[row[odd]] = True
    scalar[row[matched][~equal]] = True
    keep = matched.copy()
    keep[matched] = equal
    # shared[q, d - 1]: the ids both top-d prefixes of query q hold.
    deepest = np.maximum(i[keep], j[keep])
    shared = np.zeros((n, k), dtype=np.int64)
    np.add.at(shared, (row[keep], deepest), 1)
    shared = np.cumsum(shared, axis=1)
    rbos = _rbo_from_shared(shared, np.minimum(a_len, b_len), np.maximum(a_len, b_len), k, p)
    total = a_len + b_len
    common = shared[:, k - 1]
    union = total - common
    jaccards = np.ones(n)
    np.divide(common, union, out=jaccards, where=union > 0)
    for q in np.flatnonzero(scalar).tolist():
        rbos[q] = rank_biased_overlap(first[q], second[q], k, p)
        jaccards[q] = jaccard(first[q], second[q], k)
    return rbos, jaccards


def _cut(
    rankings: Sequence[Sequence[str]], k: int
) -> tuple[NDArray[np.object_], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """Return the first ``k`` ids of each ranking flat, their hashes in rows of ``k``, each
    row's length and where each row starts in the flat ids."""
    lengths = np.fromiter(map(len, rankings), dtype=np.int64, count=len(rankings))
    cut = rankings if int(lengths.max(initial=0)) <= k else map(itemgetter(slice(k)), rankings)
    lengths = np.minimum(lengths, k)
    flat = list(chain.from_iterable(cut))
    ids = np.empty(len(flat), dtype=object)
    ids[:] = flat
    hashes = np.fromiter(map(hash, flat), dtype=np.int64, count=len(flat))
    rows = np.zeros((len(rankings), k), dtype=np.int64)
    rows[np.arange(k) < lengths[:, None]] = hashes
    starts = np.zeros(len(rankings), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    return ids, rows, lengths, starts


def _top_hashes(rankings: Rankings, k: int) -> NDArray[np.uint64]:
    """Return the content hash of each distinct id of ``rankings`` that some top ``k`` holds
    (0, or its hash, for the others, which no top k reads)."""
    lengths = np.minimum(rankings.counts.astype(np.int64), max(k, 0))
    within = np.arange(max(k, 0)) < lengths[:, None]
    at = texts.starts_of(rankings.counts)[:, None] + np.arange(max(k, 0))
    held = np.zeros(len(rankings.doc_lengths), dtype=np.bool_)
    held[rankings.codes[at[within]]] = True
    used = np.flatnonzero(held)
    if 2 * used.size >= held.size:  # most ids are read: hashing them all costs less
        return rankings.doc_hashes()
    out = np.zeros(held.size, dtype=np.uint64)
    picked = texts.gather(rankings.doc_lengths, rankings.doc_bytes, used, rankings.doc_starts)
    out[used] = texts.hashes(*picked)
    return out


def _cut_rankings(
    rankings: Rankings, k: int, doc_hashes: NDArray[np.uint64]
) -> tuple[NDArray[np.int32], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """Return :func:`_cut` of Rankings from their arrays: the codes of the first ``k`` ids
    of each ranking flat (in place of the ids), their content hashes in rows of ``k``, each
    row's length and where each row starts in the flat codes."""
    lengths = np.minimum(rankings.counts.astype(np.int64), k)
    within = np.arange(k) < lengths[:, None]
    at = texts.starts_of(rankings.counts)[:, None] + np.arange(k)
    codes = rankings.codes[at[within]]
    rows = np.zeros((len(rankings), k), dtype=np.int64)
    rows[within] = doc_hashes[codes].view(np.int64)
    starts = np.zeros(len(rankings), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    return codes, rows, lengths, starts


def _rbo_from_shared(
    shared: NDArray[np.int64],
    short: NDArray[np.int64],
    long: NDArray[np.int64],
    k: int,
    p: float,
) -> FloatArray:
    """Return extrapolated RBO of each query from its shared-prefix counts, with the float
    operations of :func:`rank_biased_overlap` in its order (depth by depth)."""
    n = len(short)
    rows = np.arange(n)
    powers = [p**d for d in range(k + 1)]
    at_s = np.where(short > 0, shared[rows, np.maximum(short, 1) - 1], 0)
    total = np.zeros(n)
    safe_short = np.maximum(short, 1)
    for d in range(1, k + 1):
        deep = long >= d
        if not deep.any():
            break
        total = np.where(deep, total + shared[:, d - 1] / d * powers[d], total)
        beyond = deep & (d > short)
        step = at_s * (d - short) / (safe_short * d) * powers[d]
        total = np.where(beyond, total + step, total)
    at_l = shared[rows, np.maximum(long, 1) - 1]
    tail = ((at_l - at_s) / np.maximum(long, 1) + at_s / safe_short) * np.take(powers, long)
    out: FloatArray = np.minimum(1.0, np.maximum(0.0, (1 - p) / p * total + tail))
    out[short == 0] = 0.0
    out[long == 0] = 1.0
    return out
