"""A run's rankings as arrays: :class:`Rankings`, one tuple of document ids per query.

The rankings are held as the store keeps them (compressed row storage): ``counts`` (int32,
the ids of each query), ``codes`` (int32, an entry per id, into the distinct ids) and the
distinct ids in the store's text layout (:mod:`monitor.texts`: int32 UTF-8 lengths and
one uint8 array of bytes). An id becomes a ``str`` only when a ranking is read.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from monitor import texts
from monitor.errors import UsageError

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from monitor.search.trec_columns import TrecColumns


@dataclass(frozen=True, slots=True, eq=False)
class Rankings(Sequence[tuple[str, ...]]):
    """One ranking of document ids per query, held as arrays.

    ``rankings[i]`` is query i's tuple of ids (decoding only those); ``doc_lengths`` and
    ``doc_bytes`` are the distinct ids ``codes`` point into. Two Rankings are equal when they
    hold the same ids in the same rankings, whatever their codes.
    """

    counts: NDArray[np.int32]
    codes: NDArray[np.int32]
    doc_lengths: NDArray[np.int32]
    doc_bytes: NDArray[np.uint8]
    _starts: NDArray[np.int64] = field(init=False, repr=False)
    _doc_starts: _Starts = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if int(self.counts.sum()) != self.codes.size:
            raise UsageError(
                f"rankings of {int(self.counts.sum())} ids in all (the sum of counts)"
                f" hold {self.codes.size} codes (expected one a ranked id)"
            )
        if int(self.doc_lengths.sum()) != self.doc_bytes.size:
            raise UsageError(
                f"the distinct ids' lengths add up to {int(self.doc_lengths.sum())} bytes,"
                f" but {self.doc_bytes.size} bytes are given"
            )
        if self.codes.size and not 0 <= int(self.codes.min()) <= int(self.codes.max()) < len(
            self.doc_lengths
        ):
            raise UsageError(
                f"a code lies outside the {len(self.doc_lengths)} distinct ids"
                f" (codes {int(self.codes.min())}..{int(self.codes.max())})"
            )
        object.__setattr__(self, "_starts", texts.starts_of(self.counts))
        object.__setattr__(self, "_doc_starts", _Starts(self.doc_lengths, self.doc_bytes.size))

    @classmethod
    def of(cls, rankings: Sequence[Sequence[str]]) -> Rankings:
        """Return ``rankings`` (tuples or lists of ids) as arrays, ids numbered in order of
        first appearance."""
        counts = np.fromiter(map(len, rankings), np.int32, len(rankings))
        every = np.fromiter(chain.from_iterable(rankings), object, int(counts.sum()))
        codes, docs = first_seen_codes(every)
        lengths, data = texts.layout_of(docs)
        return cls(counts, codes, lengths, data)

    @classmethod
    def from_words(
        cls, counts: NDArray[Any], words: NDArray[np.uint64] | Sequence[NDArray[np.uint64]]
    ) -> Rankings:
        """Return the rankings of ``counts`` ids each whose ids are ``words`` (entries x w):
        each id's UTF-8 bytes big-endian, zero padded (an id holds no NUL byte). ``words``
        may be given in parts, one after the other (of any widths): they are read where they
        are, not copied into one array.

        Ids are numbered in order of first appearance by a hash of their words, checked row
        by row against the first row of their code; two ids of one hash fall back to
        numbering the rows exactly.
        """
        counts = np.asarray(counts, dtype=np.int32)
        rows = _Rows([words] if isinstance(words, np.ndarray) else list(words))
        if rows.bad_shape or rows.size != int(counts.sum()):
            shapes = [part.shape for part in rows.parts]
            raise UsageError(
                f"{int(counts.sum())} ranked ids need as many rows of words,"
                f" not arrays of shapes {shapes}"
            )
        codes, first = first_seen(rows.hashes())
        if not _rows_match(rows, first, codes):  # two ids of one hash
            every = rows.take(np.arange(rows.size))
            _, seen_at, inverse = np.unique(every, axis=0, return_index=True, return_inverse=True)
            order = np.argsort(seen_at, kind="stable")
            rank = np.empty(order.size, dtype=np.intp)
            rank[order] = np.arange(order.size)
            codes = rank[inverse.reshape(-1)].astype(np.int32)
            first = seen_at[order]
        lengths, data = _unpad(rows, first)
        return cls(counts, codes, lengths, data)

    @property
    def lengths(self) -> NDArray[np.int32]:
        """Return the number of ids of each ranking."""
        return self.counts

    def __len__(self) -> int:
        return int(self.counts.size)

    @overload
    def __getitem__(self, index: int) -> tuple[str, ...]: ...

    @overload
    def __getitem__(self, index: slice) -> Rankings: ...

    def __getitem__(self, index: int | slice) -> tuple[str, ...] | Rankings:
        if isinstance(index, slice):
            return self.take(np.arange(len(self))[index])
        n = len(self)
        i = index + n if index < 0 else index
        if not 0 <= i < n:
            raise IndexError(f"ranking {index} of {n}")
        start = int(self._starts[i])
        picked = self.codes[start : start + int(self.counts[i])]
        raw = self.doc_bytes
        starts, lengths = self._doc_starts.at(picked), self.doc_lengths[picked].tolist()
        return tuple(
            raw[a : a + size].tobytes().decode("utf-8")
            for a, size in zip(starts, lengths, strict=True)
        )

    def __iter__(self) -> Iterator[tuple[str, ...]]:
        return iter(self.tuples())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Rankings):
            if not np.array_equal(self.counts, other.counts):
                return False
            return bool(
                texts.equal(
                    self.doc_lengths,
                    self.doc_bytes,
                    self.codes,
                    other.doc_lengths,
                    other.doc_bytes,
                    other.codes,
                    starts=(self.doc_starts, other.doc_starts),
                ).all()
            )
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(self) == len(other) and self.tuples() == [tuple(r) for r in other]
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal by content, and holds arrays

    def tuples(self) -> list[tuple[str, ...]]:
        """Return every ranking as a tuple of ids (each distinct id decoded once)."""
        table = np.empty(len(self.doc_lengths), dtype=object)
        table[:] = texts.decode(self.doc_lengths, self.doc_bytes)
        picked = table[self.codes]
        counts = self.counts
        if counts.size and (counts == counts[0]).all():  # rankings of one length: a reshape
            return list(map(tuple, picked.reshape(counts.size, int(counts[0])).tolist()))
        ids = picked.tolist()
        ends = np.cumsum(counts).tolist()
        return [tuple(ids[a:b]) for a, b in zip([0, *ends][:-1], ends, strict=True)]

    def take(self, indices: NDArray[Any]) -> Rankings:
        """Return the rankings at ``indices``, in that order (over the same distinct ids)."""
        indices = np.asarray(indices, dtype=np.intp)
        counts = self.counts[indices]
        starts = self._starts[indices]
        at = np.repeat(starts - texts.starts_of(counts), counts)
        picked = self.codes[at + np.arange(at.size, dtype=np.int64)]
        return self._over_same_ids(counts, picked)

    def split(self, at: int) -> tuple[Rankings, Rankings]:
        """Return the first ``at`` rankings and the others, over the same distinct ids (their
        offsets shared, not summed again)."""
        if not 0 <= at <= len(self):
            raise UsageError(f"rankings split at {at}, outside 0..{len(self)}")
        entries = int(self._starts[at]) if at < len(self) else self.codes.size
        return (
            self._over_same_ids(self.counts[:at], self.codes[:entries]),
            self._over_same_ids(self.counts[at:], self.codes[entries:]),
        )

    def _over_same_ids(self, counts: NDArray[np.int32], codes: NDArray[np.int32]) -> Rankings:
        """Return rankings of ``counts`` and ``codes`` over this one's distinct ids: their
        offsets are shared, not summed again (the codes are this one's, so not checked)."""
        part = object.__new__(Rankings)
        for name, value in (
            ("counts", counts),
            ("codes", codes),
            ("doc_lengths", self.doc_lengths),
            ("doc_bytes", self.doc_bytes),
            ("_starts", texts.starts_of(counts)),
            ("_doc_starts", self._doc_starts),
        ):
            object.__setattr__(part, name, value)
        return part

    @property
    def doc_starts(self) -> NDArray[np.signedinteger[Any]]:
        """Return where each distinct id starts in ``doc_bytes`` (int32 or int64)."""
        return self._doc_starts.of()

    def forget_starts(self) -> None:
        """Let go of the ids' starts a bulk read summed (for every rankings over these ids):
        they are summed again when next needed."""
        self._doc_starts.forget()

    def over_same_ids(self, counts: NDArray[np.int32], codes: NDArray[np.int32]) -> Rankings:
        """Return the rankings of ``counts`` and ``codes`` (checked as the constructor checks
        them) over this one's distinct ids, sharing their starts once summed."""
        other = Rankings(counts, codes, self.doc_lengths, self.doc_bytes)
        object.__setattr__(other, "_doc_starts", self._doc_starts)
        return other

    def words(self) -> NDArray[np.uint64]:
        """Return every ranked id, entry by entry, as a TREC run's columns hold doc ids: its
        UTF-8 bytes big-endian in as many 64-bit words as the longest id needs, zero padded
        (:func:`monitor.texts.pack_ids`); each distinct id is packed once."""
        longest = int(self.doc_lengths.max(initial=1))
        width = max(1, -(-longest // 8))
        packed = texts.packed_words(self.doc_lengths, self.doc_bytes, self.doc_starts, width)
        return packed[self.codes]

    def ranking_columns(self, query_ids: Sequence[str], *, repeats: bool = False) -> TrecColumns:
        """Return the rankings (one a query of ``query_ids``) as a run's columns for the
        metric engine: each ranking's rows in their order (no scores). A run's rankings hold
        each id once (the runner drops repeats); with ``repeats`` a repeated id, which a
        record made by hand may hold, is marked as a later copy (a sort of every entry)."""
        # The engine's column form lives with the TREC reader that also builds it.
        from monitor.search.trec_columns import ranking_columns

        counts = self.counts.astype(np.int64)
        words = self.words()
        columns = ranking_columns(query_ids, counts, words, np.zeros(len(words)))
        return replace(columns, copy=self.repeated()) if repeats else columns

    def repeated(self) -> NDArray[np.bool_]:
        """Return, entry by entry, whether the entry's id is held earlier in its ranking
        (a sort of every entry by ranking and code)."""
        row = np.repeat(np.arange(len(self.counts), dtype=np.int64), self.counts)
        _, first = np.unique(row * max(len(self.doc_lengths), 1) + self.codes, return_index=True)
        copy = np.ones(row.size, dtype=np.bool_)
        copy[first] = False
        return copy

    def doc_hashes(self) -> NDArray[np.uint64]:
        """Return the content hash of each distinct id (:func:`monitor.texts.hashes`)."""
        return texts.hashes(self.doc_lengths, self.doc_bytes)

    def hashes(self) -> NDArray[np.uint64]:
        """Return a 64-bit hash of each ranked id's content, entry by entry: the same id
        hashes alike in any two Rankings."""
        return self.doc_hashes()[self.codes]


#: Bytes of distinct ids below which their starts are int32 (a margin left for the offsets
#: readers add to a start).
_NARROW_STARTS = (1 << 31) - (1 << 20)

#: Distinct ids a block of :meth:`_Starts.at`'s index sums over.
_STARTS_BLOCK = 256
#: Blocks whose bytes are summed at once.
_STARTS_CHUNK_BLOCKS = 4096


class _Starts:
    """Where each distinct id starts in the bytes, shared by all the rankings over the same
    ids. A bulk read sums them all (:meth:`of`, int32 when the bytes are fewer than
    :data:`_NARROW_STARTS`) and keeps them until :meth:`forget`; a read of a few rankings
    (:meth:`at`) needs only a start every :data:`_STARTS_BLOCK` ids. A run saved and never
    read holds neither."""

    __slots__ = ("_blocks", "_lengths", "_size", "_starts")

    def __init__(self, lengths: NDArray[np.int32], size: int) -> None:
        self._lengths = lengths
        self._size = size
        self._starts: NDArray[np.signedinteger[Any]] | None = None
        self._blocks: NDArray[np.int64] | None = None

    def of(self) -> NDArray[np.signedinteger[Any]]:
        """Return every id's start, summed once and kept."""
        if self._starts is None:
            narrow = self._size < _NARROW_STARTS
            self._starts = texts.starts_of(self._lengths, np.int32 if narrow else np.int64)
        return self._starts

    def at(self, codes: NDArray[Any]) -> list[int]:
        """Return the starts of the ids ``codes``: from every id's start when summed, else
        from the start of each one's block and the lengths before it there."""
        if self._starts is not None:
            return self._starts[codes].tolist()  # type: ignore[no-any-return]  # ints
        lengths = self._lengths
        if self._blocks is None:  # each block's bytes, summed as int64 a chunk at a time
            step = _STARTS_BLOCK * _STARTS_CHUNK_BLOCKS
            sums = [np.zeros(0, np.int64)]
            for lo in range(0, lengths.size, step):
                chunk = lengths[lo : lo + step].astype(np.int64)
                sums.append(np.add.reduceat(chunk, np.arange(0, chunk.size, _STARTS_BLOCK)))
            self._blocks = np.concatenate(([0], np.cumsum(np.concatenate(sums))[:-1]))
        blocks = self._blocks
        out = []
        for code in np.asarray(codes).tolist():
            block = code // _STARTS_BLOCK
            before = lengths[block * _STARTS_BLOCK : code].sum(dtype=np.int64)
            out.append(int(blocks[block]) + int(before))
        return out

    def forget(self) -> None:
        """Let go of every id's start (summed again when next asked for)."""
        self._starts = None


def first_seen_codes(every: NDArray[Any]) -> tuple[NDArray[np.int32], list[str]]:
    """Return an int32 code per text, numbered in order of first appearance, and the distinct
    texts in that order.

    Codes in order of first appearance: neighbouring queries share documents, so the codes
    of a ranking are close together and compress better than sorted ones. The texts are
    numbered by their hashes (str caches its hash; an int64 hash table is about twice as fast
    as pandas' one of objects, which compares strings), and every text is then compared with
    the first of its code: two distinct texts of one hash, which no run of 64-bit hashes is
    likely to hold, fall back to numbering the texts themselves.
    """
    import pandas as pd  # imported here: opening a store needs no pandas

    hashed = np.fromiter(map(hash, every), np.int64, every.size)
    codes, first = first_seen(hashed)
    docs = every[first]
    if not (every == docs[codes]).all():  # a collision of hashes
        exact, uniques = pd.factorize(every, sort=False)
        codes, docs = exact.astype(np.int32), np.asarray(uniques, dtype=object)
    result: list[str] = docs.tolist()
    return codes, result


def merged(parts: Sequence[Rankings]) -> tuple[list[NDArray[np.int32]], Rankings]:
    """Return each part's codes into one dictionary of the parts' ids, numbered in order of
    first appearance over the parts' entries in order, and that dictionary (as the rankings
    of all parts end to end).

    The ids are matched by content hash and then checked byte for byte against the first id
    of their code; two ids of one hash fall back to numbering the decoded ids exactly.
    """
    import pandas as pd  # imported here: opening a store needs no pandas

    sizes = [part.codes.size for part in parts]
    base = np.cumsum([0, *(len(part.doc_lengths) for part in parts)])
    lengths = np.concatenate([np.zeros(0, np.int32), *(part.doc_lengths for part in parts)])
    data = np.concatenate([np.zeros(0, np.uint8), *(part.doc_bytes for part in parts)])
    # Each entry as a code into the parts' dictionaries end to end.
    every = np.concatenate(
        [np.zeros(0, np.int64), *(part.codes + base[i] for i, part in enumerate(parts))]
    )
    doc_hash = texts.hashes(lengths, data)
    codes, first = first_seen(doc_hash[every])
    first_doc = every[first]
    # Every id used, against the first id of its code: a check per distinct id, not entry.
    used = np.full(lengths.size, -1, dtype=np.int64)
    used[every] = codes
    held = np.flatnonzero(used >= 0)
    if not texts.equal(lengths, data, held, lengths, data, first_doc[used[held]]).all():
        table = np.asarray(texts.decode(lengths, data), dtype=object)
        codes, uniques = pd.factorize(table[every], sort=False)
        first_doc = every[_first_rows(codes, len(uniques))]
    doc_lengths, doc_bytes = texts.gather(lengths, data, first_doc)
    codes32 = codes.astype(np.int32, copy=False)
    ends = np.cumsum([0, *sizes])
    split = [codes32[ends[i] : ends[i + 1]] for i in range(len(parts))]
    counts = np.concatenate([np.zeros(0, np.int32), *(part.counts for part in parts)])
    return split, Rankings(counts, codes32, doc_lengths, doc_bytes)


#: Rows compared at once when the ids are checked against the first id of their code.
_CHECK_ROWS = 1 << 20


#: Most hashes numbered by one hash table. A hash table holds about 20 bytes a distinct
#: hash, and its int64 codes 8 more a hash: more hashes are numbered a part at a time.
_TABLE_HASHES = 1 << 21


def first_seen(hashes: NDArray[np.integer[Any]]) -> tuple[NDArray[np.int32], NDArray[np.intp]]:
    """Return a code per hash, equal hashes alike, numbered in order of first appearance, and
    the position of each code's first appearance.

    Many hashes are split into parts by their top bits, so that equal hashes share a part,
    and each part is numbered by a table of its own: the tables never hold all the distinct
    hashes at once. The parts' codes are then renumbered by first appearance over the whole.
    """
    import pandas as pd  # imported here: opening a store needs no pandas

    if hashes.size <= _TABLE_HASHES:
        codes, distinct = pd.factorize(hashes, sort=False)
        return codes.astype(np.int32), _first_rows(codes, distinct.size)
    bits = min(8, int(np.ceil(np.log2(hashes.size / _TABLE_HASHES))))
    part = np.empty(hashes.size, dtype=np.uint8)
    unsigned = hashes.view(np.uint64) if hashes.dtype.itemsize == 8 else hashes.astype(np.uint64)
    for start in range(0, hashes.size, _CHECK_ROWS):
        block = unsigned[start : start + _CHECK_ROWS]
        part[start : start + _CHECK_ROWS] = block >> np.uint64(64 - bits)
    local = np.empty(hashes.size, dtype=np.int32)  # codes numbered part by part
    position = np.int32 if hashes.size < 1 << 31 else np.int64
    firsts: list[NDArray[np.signedinteger[Any]]] = [np.zeros(0, position)]
    numbered = 0
    for index in range(1 << bits):
        at = np.flatnonzero(part == index)
        codes, distinct = pd.factorize(hashes[at], sort=False)
        firsts.append(at[_first_rows(codes, distinct.size)].astype(position))
        local[at] = codes + numbered
        numbered += distinct.size
        del at, codes, distinct
    del part
    # A part's code becomes the rank of its first position among all first positions.
    first = np.concatenate(firsts)
    firsts.clear()
    is_first = np.zeros(hashes.size, dtype=bool)
    is_first[first] = True
    rank: NDArray[np.signedinteger[Any]]
    rank = np.cumsum(is_first, dtype=position)
    rank -= 1
    renumbered = rank[first]
    del rank, first
    for start in range(0, local.size, _CHECK_ROWS):
        chunk = local[start : start + _CHECK_ROWS]
        chunk[:] = renumbered[chunk]
    return local, np.flatnonzero(is_first)


class _Rows:
    """Rows of id words given in parts, one after the other, read where they are: each part
    at the widest part's width (a narrower one padded with zero words, as a wider id
    would be)."""

    def __init__(self, parts: list[NDArray[np.uint64]]) -> None:
        self.bad_shape = any(part.ndim != 2 for part in parts)
        width = max((part.shape[1] for part in parts if part.ndim == 2), default=1)
        self.parts = [part if self.bad_shape else texts.widened(part, width) for part in parts]
        self.ends = np.cumsum([0, *(len(part) for part in self.parts)])
        self.size = int(self.ends[-1])

    def hashes(self) -> NDArray[np.uint64]:
        """Return each row's :func:`monitor.texts.word_hashes`."""
        out = np.empty(self.size, dtype=np.uint64)
        for i, part in enumerate(self.parts):
            texts.word_hashes(part, out[self.ends[i] : self.ends[i + 1]])
        return out

    def take(self, rows: NDArray[np.intp], *, ascending: bool = False) -> NDArray[np.uint64]:
        """Return the rows at ``rows`` (positions over all parts), in that order:
        ``ascending`` rows are split between the parts where they cross from one to the
        next; rows of one part are read from it at once."""
        if len(self.parts) == 1:
            return self.parts[0][rows]
        if not rows.size:
            return np.zeros((0, self.parts[0].shape[1]), dtype=np.uint64)
        ends = self.ends
        lowest, highest = int(rows.min()), int(rows.max())
        for i, words in enumerate(self.parts):
            if ends[i] <= lowest and highest < ends[i + 1]:  # all in one part
                picked: NDArray[np.uint64] = words[rows - int(ends[i])]
                return picked
        out = np.empty((rows.size, self.parts[0].shape[1]), dtype=np.uint64)
        if ascending:
            cuts = np.searchsorted(rows, ends)
            for i, words in enumerate(self.parts):
                out[cuts[i] : cuts[i + 1]] = words[rows[cuts[i] : cuts[i + 1]] - ends[i]]
            return out
        part = np.searchsorted(ends, rows, side="right") - 1
        for i, words in enumerate(self.parts):
            mine = part == i
            out[mine] = words[rows[mine] - int(ends[i])]
        return out


def _rows_match(rows: _Rows, first: NDArray[np.intp], codes: NDArray[Any]) -> bool:
    """Return whether every row equals the first row of its code, compared a block of rows
    at a time (no copy of the whole array); a row that is the first of its code is not
    compared with itself."""
    for start in range(0, rows.size, _CHECK_ROWS):
        stop = min(rows.size, start + _CHECK_ROWS)
        own = first[codes[start:stop]]
        later = np.flatnonzero(own != np.arange(start, stop))
        if not (rows.take(later + start, ascending=True) == rows.take(own[later])).all():
            return False
    return True


def _first_rows(codes: NDArray[Any], size: int) -> NDArray[np.intp]:
    """Return the first position of each code 0..size-1 in ``codes``."""
    first = np.empty(size, dtype=np.intp)
    # A block at a time from the end: each block's last write is its first sight, and the
    # blocks before it write over the later ones.
    for stop in range(codes.size, 0, -_CHECK_ROWS):
        start = max(0, stop - _CHECK_ROWS)
        first[codes[start:stop][::-1]] = np.arange(stop - 1, start - 1, -1)
    return first


def _unpad(rows: _Rows, picked: NDArray[np.intp]) -> tuple[NDArray[np.int32], NDArray[np.uint8]]:
    """Return the text layout of the ids at rows ``picked`` (big-endian, zero-padded words), a
    block of rows at a time: the bytes of a million-query dictionary are a few hundred
    megabytes, and each step would otherwise copy all of them.

    The bytes are written into an array of the most they can take (only the pages written
    count in memory), cut to the bytes written at the end (in place, not copied)."""
    width = rows.parts[0].shape[1] if rows.parts else 1
    lengths = np.empty(picked.size, dtype=np.int32)
    data = np.empty(picked.size * 8 * width, dtype=np.uint8)
    written = 0
    for start in range(0, picked.size, _CHECK_ROWS):
        block = rows.take(picked[start : start + _CHECK_ROWS], ascending=True)
        raw = block.astype(">u8").view(np.uint8).reshape(block.shape[0], 8 * block.shape[1])
        filled = raw != 0
        lengths[start : start + block.shape[0]] = filled.sum(axis=1, dtype=np.int32)
        kept = raw[filled]
        data[written : written + kept.size] = kept
        written += kept.size
    data.resize(written, refcheck=False)  # no view of it was kept
    return lengths, data
