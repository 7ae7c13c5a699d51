"""A TREC run as flat numpy columns (:class:`TrecColumns`), ranked as trec_eval ranks it.

The ranking is trec_eval's, as in :mod:`monitor.search.saved`: per query by score
descending, ties by doc id descending (byte order); a repeated doc id counts once, at its
best position. Ids are packed into big-endian 64-bit words, so comparing words compares
bytes, as ``strcmp`` does. The columns answer where judged documents sit, all judged pairs
in one vectorised look-up (:meth:`TrecColumns.ranks`), for the metric engine.

The columns are read from a file by :mod:`monitor.search.trec_read` (or pyarrow,
:mod:`monitor.search.trec_arrow`), and built from rankings already in order by
:func:`ranking_columns` (a run's table).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

from monitor import texts as texts_layout
from monitor.evalset.columns import JudgedDocs

#: Rank of a document the run did not retrieve (as monitor.metrics.ranks.NOT_RETRIEVED).
NOT_RETRIEVED = np.iinfo(np.int64).max
_U64 = npt.NDArray[np.uint64]
_I64 = npt.NDArray[np.int64]
_I32 = npt.NDArray[np.int32]
_F64 = npt.NDArray[np.float64]
_U8 = npt.NDArray[np.uint8]
_HASH_Q = np.uint64(0x9E3779B97F4A7C15)
_HASH_W = np.uint64(0xBF58476D1CE4E5B9)
#: Runs of at most this many rows a query are ranked by comparing each judged pair with its
#: query's rows (:meth:`TrecColumns._dense_ranks`), not by a hashed look-up of every row.
DENSE_MAX_ROWS = 128
#: Most (pair x depth) cells :meth:`TrecColumns._dense_ranks` compares at once.
_DENSE_CELLS = 1 << 22


@dataclass(frozen=True, slots=True, eq=False)
class TrecColumns:
    """A TREC run as columns, rows in trec_eval's order with the repeated copies marked.

    ``query_ids[c]`` is query code ``c`` (codes in order of first appearance); rows are
    grouped by code in that order.
    """

    query_ids: tuple[str, ...]
    query: _I32  # (rows,) query code
    doc_words: _U64  # (rows, words) doc id bytes, big-endian, zero padded
    score: _F64  # (rows,)
    copy: npt.NDArray[np.bool_]  # (rows,) a later copy of a doc id the query already has
    row_hash: _U64  # (rows,) hash of (query code, doc words), as ranks looks pairs up
    _codes: dict[str, int] | None

    def __post_init__(self) -> None:
        if self._codes is None:  # built when first asked (ranking_columns)
            return
        if len(self._codes) != len(self.query_ids):
            raise ValueError("one code per query id")

    @property
    def codes(self) -> Mapping[str, int]:
        """Return each query id's code (its index in :attr:`query_ids`), read-only."""
        codes = self._codes
        if codes is None:
            codes = {qid: code for code, qid in enumerate(self.query_ids)}
            object.__setattr__(self, "_codes", codes)
        return MappingProxyType(codes)

    @property
    def n_retrieved(self) -> _I64:
        """Return, per query code, the distinct doc ids retrieved."""
        return self._counts() - self.duplicates

    @property
    def duplicates(self) -> _I64:
        """Return, per query code, the repeated copies dropped."""
        return _count(self.query[self.copy], len(self.query_ids))

    def _counts(self) -> _I64:
        return _count(self.query, len(self.query_ids))

    def as_run(self) -> dict[str, list[str]]:
        """Return the run as ``{qid: [doc, ...]}``, each ranking in its rows' order with the
        repeated copies left out, as the engine on dicts reads a run (metrics with a unit
        rewrite a run held so)."""
        width = self.doc_words.shape[1]
        raw = self.doc_words.astype(">u8").view(f"S{8 * width}").reshape(-1)
        docs = [value.decode("utf-8") for value in raw.tolist()]
        run: dict[str, list[str]] = {qid: [] for qid in self.query_ids}
        for code, doc, copy in zip(self.query.tolist(), docs, self.copy.tolist(), strict=True):
            if not copy:
                run[self.query_ids[code]].append(doc)
        return run

    def ranks(self, codes: _I64, docs: Sequence[str]) -> _I64:
        """Return the 1-based rank of each (query code, doc id) pair, NOT_RETRIEVED if absent
        (a code of -1 is a query the run does not hold).

        The rank counts each doc id once, at its best position (later copies dropped).
        """
        out = np.full(len(docs), NOT_RETRIEVED, dtype=np.int64)
        width = self.doc_words.shape[1]
        if isinstance(docs, JudgedDocs):  # an eval set's columns: packed from their bytes
            lengths, packed = docs.packed(width)
        else:
            lengths, packed = texts_layout.pack_texts(docs, width)
        usable = (codes >= 0) & (lengths <= 8 * width)
        if not usable.any() or not len(self.query):
            return out
        if usable.all():  # the usual case: every pair as it is, no copy
            pairs: _I64 = np.arange(len(docs))
            words, pair_codes = packed, codes
        else:
            pairs = np.flatnonzero(usable)
            words, pair_codes = packed[pairs], codes[pairs]
        counts = self._counts()
        deepest = int(counts.max(initial=0))
        if deepest <= DENSE_MAX_ROWS and deepest * len(pairs) <= 16 * (
            len(self.query) + len(pairs)
        ):
            # A block of pairs at a time: each pair's row range and hash are a few arrays
            # of the pairs' length, which a million queries' judgments make large.
            for lo in range(0, len(pairs), _RANK_PAIRS):
                hi = lo + _RANK_PAIRS
                out[pairs[lo:hi]] = self._dense_ranks(pair_codes[lo:hi], words[lo:hi], counts)
            return out
        wanted = _hash(pair_codes, words)
        order = np.argsort(wanted, kind="stable")
        sorted_wanted = wanted[order]
        if len(wanted) > 1 and bool((sorted_wanted[1:] == sorted_wanted[:-1]).any()):
            # Two judged pairs share a hash: look every candidate row up exactly instead.
            self._exact_ranks(wanted, pair_codes, words, out, pairs)
            return out
        row_hash = self.row_hash
        rows = _maybe_in(row_hash, wanted)
        slot = np.minimum(np.searchsorted(sorted_wanted, row_hash[rows]), len(wanted) - 1)
        hit = (sorted_wanted[slot] == row_hash[rows]) & ~self.copy[rows]
        rows, pair = rows[hit], order[slot[hit]]
        # Each candidate row is checked against the one pair of its hash, word by word.
        exact = (self.query[rows] == pair_codes[pair]) & (self.doc_words[rows] == words[pair]).all(
            axis=1
        )
        rows, pair = rows[exact], pair[exact]
        counts = self._counts()
        first_row = np.cumsum(counts) - counts
        copies = np.flatnonzero(self.copy)  # copies before a row: a search among these
        q = self.query[rows]
        start = first_row[q]
        out[pairs[pair]] = (
            rows - start + 1 - (np.searchsorted(copies, rows) - np.searchsorted(copies, start))
        )
        return out

    def _dense_ranks(self, codes: _I64, words: _U64, counts: _I64) -> _I64:
        """Return each pair's rank by comparing it with every row of its query at once:
        short rankings (a monitored run's) cost a few array passes over a block of pairs at
        a time, with no sort and no table of the rows.

        Row hashes propose the match; the first proposed row's words decide, and the rare
        pair whose first proposal is another id (two ids of one hash) is checked row by row.
        """
        first = np.cumsum(counts) - counts
        copies = np.flatnonzero(self.copy)

        def kept(rows: _I64) -> _I64:
            """Return the non-copy rows up to each of ``rows``, inclusive (copies are rare:
            a search among them, not a count kept for every row)."""
            return rows + 1 - np.searchsorted(copies, rows, side="right")

        start = first[codes]
        size = counts[codes]
        head = np.minimum(start, len(self.copy) - 1)
        # Non-copy rows before the query's first row: a rank counts from there.
        before = np.where(size > 0, kept(head) - (~self.copy[head]).astype(np.int64), 0)
        wanted = _hash(codes, words)
        out = np.full(len(codes), NOT_RETRIEVED, dtype=np.int64)
        deepest = int(size.max(initial=0))
        if deepest == 0:
            return out
        depth = np.arange(deepest)
        row_hash, doc_words, copy = self.row_hash, self.doc_words, self.copy
        last = len(row_hash) - 1
        # Every ranking as deep as the deepest (a monitored run's k): no row past the end to
        # clip or mask; and a run without copies has none to skip.
        uniform = bool((size == deepest).all())
        step = max(1, _DENSE_CELLS // deepest)
        for lo in range(0, len(codes), step):
            hi = min(len(codes), lo + step)
            if uniform:
                rows = start[lo:hi, None] + depth
                hit = row_hash[rows] == wanted[lo:hi, None]
            else:
                rows = np.minimum(start[lo:hi, None] + depth, last)  # in bounds where not valid
                hit = (depth < size[lo:hi, None]) & (row_hash[rows] == wanted[lo:hi, None])
            if copies.size:
                hit &= ~copy[rows]
            first_hit = hit.argmax(axis=1)
            pick = np.flatnonzero(hit[np.arange(hi - lo), first_hit])
            at = rows[pick, first_hit[pick]]
            pair = lo + pick
            exact = (doc_words[at] == words[pair]).all(axis=1)
            out[pair[exact]] = kept(at[exact]) - before[pair[exact]]
            for i in np.flatnonzero(~exact).tolist():  # the first proposal was another id
                for row in rows[pick[i]][hit[pick[i]]].tolist():
                    if (doc_words[row] == words[pair[i]]).all():
                        out[pair[i]] = int(kept(np.array([row]))[0]) - before[pair[i]]
                        break
        return out

    def _exact_ranks(self, wanted: _U64, codes: _I64, words: _U64, out: _I64, pairs: _I64) -> None:
        """Fill ``out[pairs]`` from a dict of the candidate rows' exact keys."""
        row_hash = self.row_hash
        counts = self._counts()
        first_row = np.cumsum(counts) - counts
        copies = np.flatnonzero(self.copy)
        found: dict[tuple[int, ...], int] = {}
        rows = _maybe_in(row_hash, wanted)
        rows = rows[np.isin(row_hash[rows], wanted) & ~self.copy[rows]]
        for row in rows.tolist():
            q = int(self.query[row])
            start = int(first_row[q])
            before = np.searchsorted(copies, [row, start])
            rank = row - start + 1 - int(before[0] - before[1])
            found[(q, *self.doc_words[row].tolist())] = rank
        for i, pair in enumerate(pairs.tolist()):
            out[pair] = found.get((int(codes[i]), *words[i].tolist()), NOT_RETRIEVED)


def assemble(parts: list[tuple[_I32, _U64, _F64]], codes: dict[str, int]) -> TrecColumns:
    """Return the columns of the parts read in file order, put in trec_eval's order.

    ``parts`` is emptied as it is joined: the peak is the run once plus one column.
    """
    width = max((p[1].shape[1] for p in parts), default=1)
    queries, word_parts, scores = (
        (list(column) for column in zip(*parts, strict=True)) if parts else ([], [], [])
    )
    parts.clear()
    query = _concatenate(queries, np.zeros(0, np.int32))
    words = _concatenate([texts_layout.widened(w, width) for w in word_parts], _empty(width))
    word_parts.clear()
    score = _concatenate(scores, np.zeros(0, np.float64))
    return _ranked(codes, query, words, score)


def _ranked(codes: dict[str, int], query: _I32, words: _U64, score: _F64) -> TrecColumns:
    """Return the rows put in trec_eval's order, hashed, with the repeated copies marked."""
    query, words, score = _in_trec_order(query, words, score)
    row_hash = _hash(query, words)
    return TrecColumns(
        query_ids=tuple(codes),
        query=query,
        doc_words=words,
        score=score,
        copy=_later_copies(query, words, row_hash),
        row_hash=row_hash,
        _codes=codes,
    )


def ranking_columns(
    query_ids: Sequence[str], counts: _I64, words: _U64, score: _F64
) -> TrecColumns:
    """Return rankings already in order as columns: query ``query_ids[i]`` (each id once)
    holds the next ``counts[i]`` rows, best first, and no id twice (as a run's recorded
    rankings are).

    The rows keep their order: the ranks are the positions given, whatever the scores.
    """
    query = np.repeat(np.arange(len(query_ids), dtype=np.int32), counts)
    return TrecColumns(
        query_ids=tuple(query_ids),
        query=query,
        doc_words=words,
        score=score,
        copy=np.zeros(len(query), dtype=bool),
        row_hash=_hash(query, words),
        _codes=None,
    )


class ColumnBuilder:
    """Rows appended part by part into arrays sized for the most rows the file can hold.

    The arrays are reserved, not filled: only the pages rows are written to count in RSS,
    and no part is kept beside them, so the peak is the run once plus one part.
    """

    def __init__(self, capacity: int) -> None:
        self._rows = 0
        self._query = np.empty(max(capacity, 1), dtype=np.int32)
        self._words = np.empty((max(capacity, 1), 1), dtype=np.uint64)
        self._score = np.empty(max(capacity, 1), dtype=np.float64)

    def append(self, query: _I32, words: _U64, score: _F64) -> None:
        """Add one part's rows after the rows added so far."""
        start, end = self._rows, self._rows + len(query)
        if end > len(self._query):
            self._reserve(max(end, 2 * len(self._query)), self._words.shape[1])
        if words.shape[1] > self._words.shape[1]:
            self._reserve(len(self._query), words.shape[1])
        self._query[start:end] = query
        self._score[start:end] = score
        self._words[start:end, : words.shape[1]] = words
        self._words[start:end, words.shape[1] :] = 0
        self._rows = end

    def _reserve(self, capacity: int, width: int) -> None:
        rows = self._rows
        query = np.empty(capacity, dtype=np.int32)
        score = np.empty(capacity, dtype=np.float64)
        words = np.empty((capacity, width), dtype=np.uint64)
        query[:rows], score[:rows] = self._query[:rows], self._score[:rows]
        words[:rows, : self._words.shape[1]] = self._words[:rows]
        words[:rows, self._words.shape[1] :] = 0
        self._query, self._words, self._score = query, words, score

    def build(self, codes: dict[str, int]) -> TrecColumns:
        """Return the rows added, put in trec_eval's order, with the repeated copies marked."""
        rows = self._rows
        return _ranked(codes, self._query[:rows], self._words[:rows], self._score[:rows])


def _concatenate(arrays: list[Any], empty: Any) -> Any:
    """Return ``arrays`` joined (``empty`` when there are none), emptying the list."""
    joined = np.concatenate(arrays) if arrays else empty
    arrays.clear()
    return joined


#: Judged pairs ranked at once by :meth:`TrecColumns._dense_ranks`.
_RANK_PAIRS = 1 << 20


def _empty(width: int) -> _U64:
    return np.zeros((0, width), dtype=np.uint64)


def _in_trec_order(query: _I32, words: _U64, score: _F64) -> tuple[_I32, _U64, _F64]:
    """Return the rows by query code, score descending, then doc id descending (bytes).

    Rows already grouped and by score descending are reordered in place (only the tied
    rows out of doc id order move); others are sorted into new arrays.
    """
    same = query[1:] == query[:-1]
    grouped = bool((query[1:] >= query[:-1]).all()) if len(query) else True
    if not (grouped and not ((score[1:] > score[:-1]) & same).any()):
        order = np.lexsort((-score, query))
        query, words, score = query[order], words[order], score[order]
        same = query[1:] == query[:-1]
    tie = np.flatnonzero(same & (score[1:] == score[:-1]))
    if len(tie):
        left, right = words[tie], words[tie + 1]
        differs = left != right
        column = differs.argmax(axis=1)
        rows = np.arange(len(tie))
        wrong = differs.any(axis=1) & (left[rows, column] < right[rows, column])
        if wrong.any():
            # Only the tied rows move, in place: a few ties cost no copy of the run.
            rows, order = _order_ties(tie, words)
            query[rows], words[rows], score[rows] = query[order], words[order], score[order]
    return query, words, score


def _order_ties(tie: _I64, words: _U64) -> tuple[_I64, _I64]:
    """Return the tied rows and the rows to put there, so that each run of tied rows is by
    doc id descending."""
    rows = np.unique(np.concatenate((tie, tie + 1)))
    starts_tie = np.zeros(len(words), dtype=bool)
    starts_tie[tie] = True
    # Row rows[i] continues the run of rows[i - 1] only if the two are a tied pair.
    continues = (np.diff(rows) == 1) & starts_tie[rows[:-1]]
    group = np.cumsum(np.concatenate(([True], ~continues)))
    inverted = ~words[rows]
    keys = [inverted[:, k] for k in reversed(range(words.shape[1]))]
    return rows, rows[np.lexsort((*keys, group))]


#: Rows counted at once by :func:`_count`.
_COUNT_ROWS = 1 << 20


def _count(query: npt.NDArray[np.integer[Any]], size: int) -> _I64:
    """Return how many rows each query code 0..size-1 has, a block of rows at a time
    (``np.bincount`` copies its input as int64 first: 8 bytes a row of a whole run)."""
    counts = np.zeros(size, dtype=np.int64)
    for lo in range(0, len(query), _COUNT_ROWS):
        counts += np.bincount(query[lo : lo + _COUNT_ROWS], minlength=size)
    return counts


def _hash(query: npt.NDArray[np.integer[Any]], words: _U64) -> _U64:
    """Return a 64-bit mix of each (query code, doc words); equal pairs hash alike."""
    out = query.astype(np.uint64)
    spare = np.empty(min(out.size, _HASH_ROWS), dtype=np.uint64)
    with np.errstate(over="ignore"):  # in place, a block at a time: no new array per step
        for lo in range(0, out.size, _HASH_ROWS):
            h, block = out[lo : lo + _HASH_ROWS], words[lo : lo + _HASH_ROWS]
            shifted = spare[: h.size]
            np.multiply(h, _HASH_Q, out=h)
            for k in range(words.shape[1]):
                np.bitwise_xor(h, block[:, k], out=h)
                np.multiply(h, _HASH_W, out=h)
                np.right_shift(h, np.uint64(31), out=shifted)
                np.bitwise_xor(h, shifted, out=h)
    return out


#: Rows hashed at once by :func:`_hash` (its work array stays in cache).
_HASH_ROWS = 1 << 16


def _maybe_in(hashes: _U64, wanted: _U64) -> _I64:
    """Return the rows whose hash may be one of ``wanted`` (every row whose hash is).

    A table of flags indexed by the hash's top bits, 64 to 128 slots per wanted hash (at
    most 16 MB), lets through the rows that are wanted and a few others; only those are
    looked up exactly. This reads each row once instead of a binary search per row.
    """
    bits = min(max(len(wanted) * 64, 1 << 10).bit_length(), 24)
    shift = np.uint64(64 - bits)
    table = np.zeros(1 << bits, dtype=bool)
    table[wanted >> shift] = True
    return np.flatnonzero(table[hashes >> shift])


def _maybe_repeated(hashes: _U64, query: _I32) -> _I64:
    """Return, in row order, the rows whose hash may occur twice in their query (every row
    whose hash does); rows are grouped by query.

    Each query gets a window of a table, four to eight slots per row, and each row writes
    its index into the slot some bits of its hash pick; a row that did not keep its slot
    shares it, and so does the row that kept it. A repeated hash shares its slot in every
    round, so it is never dropped; a round leaves about a sixth of the rest. The windows
    lie in row order, so the table is written almost in sequence, and sorting the few rows
    left finds the repeats without a sort of every row.
    """
    found = [np.zeros(0, dtype=np.int64)]
    for lo, hi in _spans(query, 1 << 18):
        rows = np.arange(lo, hi, dtype=np.int64)
        for shift in (0, 21, 42):
            if len(rows) < 1 << 10:
                break
            rows = rows[_shares_a_slot(hashes[rows], query[rows], shift)]
        picked = hashes[rows]
        ordered = np.sort(picked)
        repeated = ordered[1:][ordered[1:] == ordered[:-1]]
        if len(repeated):
            found.append(rows[np.isin(picked, repeated)])
    return np.concatenate(found)


def _spans(query: _I32, size: int) -> list[tuple[int, int]]:
    """Return row ranges of about ``size`` rows each that never split a query's rows."""
    cuts = np.arange(size, len(query), size)
    cuts = np.searchsorted(query, query[cuts], side="left")  # back to the query's first row
    bounds = np.unique(np.concatenate(([0], cuts, [len(query)]))).tolist()
    return list(itertools.pairwise(bounds))


def _shares_a_slot(hashes: _U64, query: _I32, shift: int) -> npt.NDArray[np.bool_]:
    """Return, per row, whether its slot in its query's window is another row's too."""
    heads = np.concatenate(([0], np.flatnonzero(query[1:] != query[:-1]) + 1))
    counts = np.diff(np.append(heads, len(query)))
    width = np.left_shift(1, np.ceil(np.log2(4 * counts)).astype(np.int64))
    base = np.cumsum(width) - width
    mask = np.repeat((width - 1).astype(np.uint64), counts)
    slot = np.repeat(base, counts) + ((hashes >> np.uint64(shift)) & mask).astype(np.int64)
    table = np.empty(int(width.sum()), dtype=np.int32)
    index = np.arange(len(hashes), dtype=np.int32)
    table[slot] = index
    keeper = table[slot]
    shared: npt.NDArray[np.bool_] = keeper != index
    shared[keeper[shared]] = True
    return shared


def _later_copies(query: _I32, words: _U64, row_hash: _U64) -> npt.NDArray[np.bool_]:
    """Return, per row (in ranking order), whether an earlier row of its query has its id."""
    copy = np.zeros(len(query), dtype=bool)
    seen: set[tuple[int, ...]] = set()
    for row in _maybe_repeated(row_hash, query).tolist():
        key = (int(query[row]), *words[row].tolist())
        if key in seen:
            copy[row] = True
        seen.add(key)
    return copy
