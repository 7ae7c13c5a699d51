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
(:class:`~monitor.run.rankings.Rankings`): a chunk of queries at a time, their top k ids
are read from those arrays as 64-bit words, hashed, every id of one top k compared with
every id of the other by hash and each proposed match confirmed by its words (its bytes,
for an id longer than the words read), with no ``str`` per id and no hash of the runs'
whole dictionaries; the floats are the same.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Sized
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np
from numpy.typing import NDArray

from monitor import texts
from monitor.compare.matched import Matched
from monitor.records import BuiltWhenRead, DictRows
from monitor.run.rankings import Rankings
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


class OverlapRows(BuiltWhenRead[QueryOverlap]):
    """Per-query overlaps held as columns (ids, RBO, Jaccard), in order: a QueryOverlap is
    built only when read, so a million compared queries hold three arrays, not a million
    records."""

    __slots__ = ("ids", "jaccards", "rbos")

    def __init__(self, ids: Sequence[str], rbos: FloatArray, jaccards: FloatArray) -> None:
        if not len(ids) == len(rbos) == len(jaccards):
            raise ValueError("OverlapRows takes one id, RBO and Jaccard a query")
        self.ids = ids
        self.rbos = rbos
        self.jaccards = jaccards

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, index: int) -> QueryOverlap: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[QueryOverlap, ...]: ...

    def __getitem__(self, index: int | slice) -> QueryOverlap | tuple[QueryOverlap, ...]:
        if isinstance(index, slice):
            return tuple(self)[index]
        i = range(len(self))[index]
        return QueryOverlap(self.ids[i], float(self.rbos[i]), float(self.jaccards[i]))

    def __iter__(self) -> Iterator[QueryOverlap]:
        return map(QueryOverlap, self.ids, self.rbos.tolist(), self.jaccards.tolist())

    @classmethod
    def of(cls, queries: Iterable[QueryOverlap]) -> OverlapRows:
        """Return the columns of per-query overlap records."""
        records = list(queries)
        return cls(
            [query.query_id for query in records],
            np.array([query.rbo for query in records], dtype=np.float64),
            np.array([query.jaccard for query in records], dtype=np.float64),
        )

    def dict_rows(self) -> DictRows:
        """Return each query's :meth:`QueryOverlap.to_dict`, each built when read."""
        return DictRows(_ROW_KEYS, (self.ids, self.rbos, self.jaccards))

    def dicts(self) -> list[dict[str, Any]]:
        """Return each query's :meth:`QueryOverlap.to_dict`, built from the columns."""
        return self.dict_rows()[:]


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
    queries: OverlapRows = field(default_factory=lambda: OverlapRows.of(()))

    @property
    def n(self) -> int:
        """Return the number of queries compared."""
        return len(self.queries)

    def moved_most(self, count: int) -> tuple[QueryOverlap, ...]:
        """Return the ``count`` queries of lowest RBO below 1 (those whose top k changed),
        lowest first, ties in query order."""
        queries = self.queries
        moved = np.flatnonzero(queries.rbos < 1.0)
        picked = moved[np.argsort(queries.rbos[moved], kind="stable")[: max(count, 0)]]
        return tuple(queries[i] for i in picked.tolist())

    def to_dict(self, *, lazy_rows: bool = False) -> dict[str, Any]:
        """Return a JSON-ready form (NaN means as None). With ``lazy_rows``, per-query rows
        are given as :class:`~monitor.records.DictRows`, each row built when read, instead
        of a list."""
        queries = self.queries
        rows = queries.dict_rows() if lazy_rows else queries.dicts()
        return {
            "k": self.k,
            "persistence": self.persistence,
            "rbo": None if self.rbo != self.rbo else self.rbo,
            "jaccard": None if self.jaccard != self.jaccard else self.jaccard,
            "n": self.n,
            "queries": rows,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Overlap:
        """Return the overlap :meth:`to_dict` wrote (None means as NaN)."""
        rbo, jaccard = data["rbo"], data["jaccard"]
        return cls(
            k=data["k"],
            persistence=data["persistence"],
            rbo=math.nan if rbo is None else rbo,
            jaccard=math.nan if jaccard is None else jaccard,
            queries=OverlapRows.of(QueryOverlap(**query) for query in data["queries"]),
        )


#: The keys of a query's overlap row, in order (:meth:`QueryOverlap.to_dict`'s).
_ROW_KEYS = ("query_id", "rbo", "jaccard")


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
    before, now = baseline.columns.retrieved_ids, current.columns.retrieved_ids
    rbos, jaccards = _overlaps_of_rankings(before, pairs.position[both], now, both, k, p)
    ids = pairs.current_ids(both)
    rows = OverlapRows(ids, rbos, jaccards)
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
    functions themselves. The rankings (lists or tuples of ids) are read into
    :class:`~monitor.run.rankings.Rankings` once, as a comparison reads a stored run's: each
    chunk's top-k ids are read from their arrays as 64-bit words and compared as words.
    """
    _check(first, second, p)
    every = np.arange(len(first))
    return _overlaps_of_rankings(Rankings.of(first), every, Rankings.of(second), every, k, p)


def _check(first: Sized, second: Sized, p: float) -> None:
    """Raise ValueError unless ``p`` is a persistence and the rankings come in pairs."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"persistence must lie strictly between 0 and 1, not {p!r}")
    if len(first) != len(second):
        raise ValueError(f"{len(first)} rankings against {len(second)}: pairs needed")


def _overlaps_of_rankings(
    first: Rankings,
    first_at: NDArray[np.intp],
    second: Rankings,
    second_at: NDArray[np.intp],
    k: int,
    p: float,
) -> tuple[FloatArray, FloatArray]:
    """Return :func:`overlaps` of rankings ``first_at`` of ``first`` and ``second_at`` of
    ``second``, taken a chunk at a time (the whole never copied)."""
    _check(first_at, second_at, p)
    rbos = np.empty(len(first_at))
    jaccards = np.empty(len(first_at))
    try:
        for start in range(0, len(first_at), CHUNK_QUERIES):
            part = slice(start, start + CHUNK_QUERIES)
            a, b = first.take(first_at[part]), second.take(second_at[part])
            rbos[part], jaccards[part] = _overlap_chunk(a, b, k, p)
    finally:  # the starts of a million runs' ids, 4 bytes each, not kept past the overlap
        first.forget_starts()
        second.forget_starts()
    return rbos, jaccards


#: Whether id ``i`` of query ``row``'s first top k equals id ``j`` of its second.
_Same = Callable[[NDArray[np.intp], NDArray[np.intp], NDArray[np.intp]], NDArray[np.bool_]]

#: Deepest cutoff whose matches are found by comparing every pair of a query's two top k
#: (k x k cells); deeper, sorting each query's 2k hashes costs less.
DENSE_MAX_K = 32


def _overlap_chunk(
    first: Rankings, second: Rankings, k: int, p: float
) -> tuple[FloatArray, FloatArray]:
    n = len(first)
    if n == 0 or k <= 0:
        ones = np.ones(n)
        return ones, ones.copy()
    a_hash, a_len, b_hash, b_len, same_ids = _cut_rankings(first, second, k)
    valid_a, valid_b = np.arange(k) < a_len[:, None], np.arange(k) < b_len[:, None]
    if k <= DENSE_MAX_K:
        row, i, j, scalar = _dense_matches(a_hash, valid_a, b_hash, valid_b)
    else:
        row, i, j, scalar = _sorted_matches(a_hash, valid_a, b_hash, valid_b)
    # Hashes only propose matches: the ids themselves decide.
    equal = same_ids(row, i, j)
    scalar[row[~equal]] = True
    # shared[q, d - 1]: the ids both top-d prefixes of query q hold.
    deepest = np.maximum(i[equal], j[equal])
    shared = np.bincount(row[equal] * k + deepest, minlength=n * k).reshape(n, k)
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


_Matches = tuple[NDArray[np.intp], NDArray[np.intp], NDArray[np.intp], NDArray[np.bool_]]


def _dense_matches(
    a_hash: NDArray[np.int64],
    valid_a: NDArray[np.bool_],
    b_hash: NDArray[np.int64],
    valid_b: NDArray[np.bool_],
) -> _Matches:
    """Return the (query, i, j) whose ids ``a[i]`` and ``b[j]`` hash alike, by comparing all
    k x k pairs of each query, and which queries the scalar functions must measure: those
    with a repeated hash within one list, or an id hashed to a padding value."""
    n, k = a_hash.shape
    # Padding hashes to its place: 0..k-1 in a, k..2k-1 in b, so no two paddings are alike.
    places = np.arange(2 * k, dtype=np.int64)
    a_hash = np.where(valid_a, a_hash, places[:k])
    b_hash = np.where(valid_b, b_hash, places[k:])
    scalar = np.zeros(n, dtype=np.bool_)
    for hashes, valid in ((a_hash, valid_a), (b_hash, valid_b)):
        padding_like = (hashes.view(np.uint64) < 2 * k) & valid
        scalar[np.flatnonzero(padding_like) // k] = True
        if k > 1:
            ranked = np.sort(hashes, axis=1)
            scalar[np.flatnonzero(ranked[:, 1:] == ranked[:, :-1]) // (k - 1)] = True
    # One flat search of the cells (several times faster than np.nonzero's three axes).
    cell = np.flatnonzero(a_hash[:, :, None] == b_hash[:, None, :])
    row, at = np.divmod(cell, k * k)
    i, j = np.divmod(at, k)
    # Only the others' pairs are two ids: a scalar query may pair an id with padding.
    keep = ~scalar[row]
    return row[keep], i[keep], j[keep], scalar


def _sorted_matches(
    a_hash: NDArray[np.int64],
    valid_a: NDArray[np.bool_],
    b_hash: NDArray[np.int64],
    valid_b: NDArray[np.bool_],
) -> _Matches:
    """Return :func:`_dense_matches`' answer by sorting each query's 2k hashes."""
    k = a_hash.shape[1]
    # Side by side in one row, each row sorted: an id both lists hold sits next to itself.
    both = np.concatenate((a_hash, b_hash), axis=1)
    order = np.argsort(both, axis=1, kind="stable")
    ranked = np.take_along_axis(both, order, axis=1)
    valid = np.take_along_axis(np.concatenate((valid_a, valid_b), axis=1), order, axis=1)
    same = (ranked[:, 1:] == ranked[:, :-1]) & valid[:, 1:] & valid[:, :-1]
    row, col = np.nonzero(same)
    left, right = order[row, col], order[row, col + 1]
    # A pair from one side is a repeated id (or two ids' hashes colliding) within one list.
    odd = (left >= k) | (right < k)
    # An id hashed to the padding's 0 may sort apart from its match among the padding.
    scalar = ((a_hash == 0) & valid_a).any(axis=1) | ((b_hash == 0) & valid_b).any(axis=1)
    scalar[row[odd]] = True
    matched = ~odd
    return row[matched], left[matched], right[matched] - k, scalar


#: Most 64-bit words of an id read into its hash and compared as words; the rare longer
#: id's other bytes are compared from the arrays, and only where its hash matched.
WORDS_MAX = 8


def _cut_rankings(
    first: Rankings, second: Rankings, k: int
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], _Same]:
    """Return each side's hashes of its first ``k`` ids in rows of ``k`` (0 past a row's
    end), each row's length, and how to tell two ids equal.

    The ids are read as their first words (UTF-8 bytes, zero padded, as many
    words as the longest id of either side needs, at most :data:`WORDS_MAX`) and hashed
    from those and their length; nothing of the dictionaries but these ids is read."""
    a_codes, a_len, a_sizes = _top_codes(first, k)
    b_codes, b_len, b_sizes = _top_codes(second, k)
    longest = max(int(a_sizes.max(initial=0)), int(b_sizes.max(initial=0)))
    width = min(max(-(-longest // 8), 1), WORDS_MAX)
    a_words = _words(first, a_codes, a_sizes, width)
    b_words = _words(second, b_codes, b_sizes, width)
    shape = a_len.size, k
    a_hash = texts.word_hashes(a_words.T).view(np.int64).reshape(shape)
    b_hash = texts.word_hashes(b_words.T).view(np.int64).reshape(shape)
    # Padding hashes 0: the matchers tell it from a real id hashed to 0.
    a_hash[np.arange(k) >= a_len[:, None]] = 0
    b_hash[np.arange(k) >= b_len[:, None]] = 0

    def same_ids(
        row: NDArray[np.intp], i: NDArray[np.intp], j: NDArray[np.intp]
    ) -> NDArray[np.bool_]:
        a_at, b_at = row * k + i, row * k + j
        same = np.ones(row.size, dtype=np.bool_)
        for a_word, b_word in zip(a_words, b_words, strict=True):  # the length, then words
            same &= a_word[a_at] == b_word[b_at]
        longer = np.flatnonzero(same & (a_words[0][a_at] > 8 * width))
        if longer.size:  # beyond the words read: the bytes decide
            same[longer] = texts.equal(
                first.doc_lengths,
                first.doc_bytes,
                a_codes.reshape(-1)[a_at[longer]],
                second.doc_lengths,
                second.doc_bytes,
                b_codes.reshape(-1)[b_at[longer]],
                starts=(first.doc_starts, second.doc_starts),
            )
        return same

    return a_hash, a_len, b_hash, b_len, same_ids


def _top_codes(
    rankings: Rankings, k: int
) -> tuple[NDArray[np.int32], NDArray[np.int64], NDArray[np.int64]]:
    """Return the codes of each ranking's first ``k`` ids in rows of ``k`` (0 beyond its
    length), each row's length, and the byte length of each id (0 beyond the row)."""
    lengths = np.minimum(rankings.counts.astype(np.int64), k)
    within = np.arange(k) < lengths[:, None]
    codes = np.zeros((len(rankings), k), dtype=np.int32)
    if not rankings.codes.size:  # no ranking holds an id
        return codes, lengths, np.zeros(codes.shape, dtype=np.int64)
    at = texts.starts_of(rankings.counts)[:, None] + np.arange(k)
    if int(lengths.min()) == k:  # every ranking fills its top k: no place to mask
        codes = rankings.codes[at]
        return codes, lengths, rankings.doc_lengths[codes].astype(np.int64)
    codes[within] = rankings.codes[at[within]]
    sizes = np.where(within, rankings.doc_lengths[codes], 0).astype(np.int64)
    return codes, lengths, sizes


def _words(
    rankings: Rankings, codes: NDArray[np.int32], sizes: NDArray[np.int64], width: int
) -> NDArray[np.uint64]:
    """Return each id of ``codes`` as its byte length (``sizes``) and first ``width`` words,
    zero past its length: ``1 + width`` rows of one entry a code (in the codes' flat order),
    each row contiguous.

    Each word is one unaligned little-endian 8-byte load at its offset in ``doc_bytes`` (a
    view of the bytes as words at every offset; any byte order serves, both runs read
    alike), its bytes past the id masked off: no index per byte is built."""
    data = np.ascontiguousarray(rankings.doc_bytes)
    size = data.size
    sizes = sizes.reshape(-1)
    words = np.zeros((1 + width, sizes.size), dtype=np.uint64)
    words[0] = sizes
    if not size:  # every id is empty
        return words
    # The last bytes again, zero padded, for the loads that would run past the end.
    tail = min(size, 8 * WORDS_MAX)
    padded = np.zeros(tail + 8, dtype=np.uint8)
    padded[:tail] = data[size - tail :]
    inner, outer = _loads(data), _loads(padded)
    starts = rankings.doc_starts[codes.reshape(-1)]
    for w in range(width):
        at = starts + 8 * w
        late = np.flatnonzero(at >= inner.size)
        word = inner[np.minimum(at, max(inner.size - 1, 0))] if inner.size else words[1 + w]
        word = word.astype(np.uint64, copy=False)
        # Past the end only bytes of no id are read, and masked off: offset size will do.
        word[late] = outer[np.minimum(at[late], size) - (size - tail)]
        words[1 + w] = word & _MASKS[np.clip(sizes - 8 * w, 0, 8)]
    return words


#: The mask of a word's first ``n`` bytes (little-endian: its low bytes), for ``n`` in 0..8.
_MASKS = np.array([(1 << 8 * n) - 1 for n in range(9)], dtype=np.uint64)


def _loads(data: NDArray[np.uint8]) -> NDArray[np.uint64]:
    """Return the little-endian 8-byte word at each offset of ``data`` that has 8 bytes after
    it (a view: element ``i`` is bytes ``i..i+8``)."""
    count = max(data.size - 7, 0)
    return np.ndarray((count,), dtype="<u8", buffer=data, offset=0, strides=(1,))


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
