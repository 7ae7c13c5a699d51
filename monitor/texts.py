"""Many short texts held as two arrays, and what is done with them in bulk: the layout of the
store's rankings and of an eval set's judged doc ids.

A column of texts is ``lengths`` (int32, the UTF-8 bytes of each text) and ``data`` (uint8,
the texts' bytes end to end). These functions hash, compare, gather and decode texts in that
layout with numpy, never building a Python object per text unless asked for the strings.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray

#: Most bytes one step of a bulk operation expands into index arrays (8 bytes an entry):
#: memory stays bounded whatever the number of texts.
CHUNK_BYTES = 1 << 22

_MULTIPLIER = np.uint64(0x100000001B3)  # FNV-1a's 64-bit prime, odd: a bijection mod 2^64
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)


def starts_of(lengths: NDArray[Any], dtype: type[np.signedinteger[Any]] = np.int64) -> NDArray[Any]:
    """Return where each text of ``lengths`` starts in the data (as ``dtype``, summed in it:
    no copy of ``lengths`` is made to sum them)."""
    starts = np.zeros(lengths.size, dtype=dtype)
    np.cumsum(lengths[:-1], dtype=dtype, out=starts[1:])
    return starts


def layout_of(texts: Sequence[str]) -> tuple[NDArray[np.int32], NDArray[np.uint8]]:
    """Return ``(lengths, data)`` of ``texts``: UTF-8 byte lengths and the bytes end to end."""
    joined = "".join(texts)
    if joined.isascii():  # one character a byte: both run in C
        lengths = np.fromiter(map(len, texts), np.int32, len(texts))
        return lengths, np.frombuffer(joined.encode("ascii"), np.uint8)
    encoded = [text.encode("utf-8") for text in texts]
    lengths = np.fromiter(map(len, encoded), np.int32, len(encoded))
    return lengths, np.frombuffer(b"".join(encoded), np.uint8)


def split(chars: NDArray[np.uint8], sizes: NDArray[Any]) -> list[str | None] | None:
    """Return the UTF-8 texts of ``sizes`` bytes each that ``chars`` holds end to end, or None
    when a text holds a NUL byte.

    A NUL is written after each text and the whole decoded once and split at the NULs (in C):
    no UTF-8 character but NUL itself holds a zero byte, so every NUL is a boundary.
    """
    n = sizes.size
    if n == 0:
        return []
    if chars.size and not chars.all():
        return None
    joined = np.zeros(chars.size + n, dtype=np.uint8)
    ends = np.cumsum(sizes) + np.arange(n)  # where each text's NUL goes
    keep = np.ones(joined.size, dtype=np.bool_)
    keep[ends] = False
    joined[keep] = chars
    texts: list[str | None] = []
    texts += joined[:-1].tobytes().decode("utf-8").split("\x00")
    return texts


def decode(lengths: NDArray[Any], data: NDArray[np.uint8]) -> list[str]:
    """Return the texts of a layout as strings."""
    texts = split(data, lengths)
    if texts is None:  # a text holds a NUL byte: slice them one by one
        raw = data.tobytes()
        ends = np.cumsum(lengths).tolist()
        starts = [0, *ends][:-1]
        return [raw[a:b].decode("utf-8") for a, b in zip(starts, ends, strict=True)]
    return texts  # type: ignore[return-value]  # split gives no None


def _chunks(lengths: NDArray[Any]) -> Iterator[slice]:
    """Yield slices of the texts whose bytes add up to about :data:`CHUNK_BYTES` each."""
    n = lengths.size
    if n == 0:
        return
    ends = np.cumsum(lengths, dtype=np.int64)
    at = 0
    while at < n:
        below = int(ends[at - 1]) if at else 0
        stop = int(np.searchsorted(ends, below + CHUNK_BYTES, side="right"))
        stop = max(stop, at + 1)
        yield slice(at, stop)
        at = stop


def _byte_index(starts: NDArray[np.signedinteger[Any]], lengths: NDArray[Any]) -> NDArray[np.int64]:
    """Return the position in the data of every byte of the texts at ``starts``."""
    total = int(lengths.sum())
    offsets = np.repeat(starts - starts_of(lengths), lengths)
    return offsets + np.arange(total, dtype=np.int64)


def hashes(lengths: NDArray[Any], data: NDArray[np.uint8]) -> NDArray[np.uint64]:
    """Return a 64-bit hash of each text's bytes: equal texts hash alike in any layout.

    The polynomial ``sum((b_i + 1) * M^(L-1-i))`` of a text's ``L`` bytes modulo 2^64, then
    mixed with the length by splitmix64's finaliser. Texts of one length are hashed together
    by Horner's rule, a byte column at a time; when the texts have too many lengths for that,
    the same polynomial is summed per byte, a chunk of texts at a time.
    """
    sizes, groups = np.unique(lengths, return_inverse=True)
    if int(sizes.sum()) <= _HORNER_STEPS:
        out = _hashes_by_length(lengths, data, sizes, groups.reshape(-1))
    else:
        out = _hashes_by_byte(lengths, data)
    return _mix(out ^ (lengths.astype(np.uint64) * _MIX_2))


#: Most byte columns :func:`hashes` steps through by Horner's rule (the sum of the distinct
#: lengths); beyond, one pass over every byte costs less.
_HORNER_STEPS = 4096


def _hashes_by_length(
    lengths: NDArray[Any], data: NDArray[np.uint8], sizes: NDArray[Any], groups: NDArray[Any]
) -> NDArray[np.uint64]:
    out = np.zeros(lengths.size, dtype=np.uint64)
    starts = starts_of(lengths)
    one = np.uint64(1)
    for g, size in enumerate(sizes.tolist()):
        members = np.flatnonzero(groups == g)
        at = starts[members]
        h = np.zeros(members.size, dtype=np.uint64)
        for i in range(size):
            h = h * _MULTIPLIER + (data[at + i].astype(np.uint64) + one)
        out[members] = h
    return out


def _hashes_by_byte(lengths: NDArray[Any], data: NDArray[np.uint8]) -> NDArray[np.uint64]:
    out = np.zeros(lengths.size, dtype=np.uint64)
    longest = int(lengths.max(initial=0))
    powers = np.ones(max(longest, 1), dtype=np.uint64)
    if longest > 1:
        powers[1:] = _MULTIPLIER
        powers = np.multiply.accumulate(powers)  # wraps modulo 2^64, as intended
    starts = starts_of(lengths)
    for part in _chunks(lengths):
        sizes = lengths[part]
        index = _byte_index(starts[part], sizes)
        if index.size == 0:
            continue
        ends = np.repeat(starts_of(sizes) + sizes, sizes)
        from_end = ends - 1 - np.arange(index.size, dtype=np.int64)
        terms = (data[index].astype(np.uint64) + np.uint64(1)) * powers[from_end]
        filled = np.flatnonzero(sizes > 0)
        out[part][filled] = np.add.reduceat(terms, starts_of(sizes)[filled])
    return out


def _mix(x: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """Return splitmix64's finaliser of each value (:func:`_mix_in_place` on a copy)."""
    out = np.array(x, dtype=np.uint64)
    _mix_in_place(out, np.empty_like(out))
    return out


#: Texts packed into words at once by :func:`packed_words`.
_PACK_ROWS = 1 << 18


def packed_words(
    lengths: NDArray[Any],
    data: NDArray[np.uint8],
    starts: NDArray[np.signedinteger[Any]],
    width: int,
) -> NDArray[np.uint64]:
    """Return the first ``8 * width`` bytes of each text (at ``starts`` in ``data``, of
    ``lengths`` bytes) as big-endian 64-bit words, zero padded past its end (a longer
    text's words are cut: its length tells).

    A block of texts at a time: each one's bytes gathered at once, the bytes past its end
    zeroed, and the rows read as big-endian words.
    """
    n = lengths.size
    size = 8 * width
    padded = np.concatenate((data, np.zeros(size, dtype=np.uint8)))
    words = np.zeros((n, width), dtype=np.uint64)
    columns = np.arange(size)
    for lo in range(0, n, _PACK_ROWS):
        hi = min(n, lo + _PACK_ROWS)
        block = padded[starts[lo:hi, None] + columns]
        block[columns >= lengths[lo:hi, None]] = 0
        words[lo:hi] = block.view(">u8").reshape(hi - lo, width)
    return words


def widened(words: NDArray[np.uint64], width: int) -> NDArray[np.uint64]:
    """Return ``words`` (entries x w) padded with zero words to ``width`` words a row."""
    if words.shape[1] == width:
        return words
    out = np.zeros((words.shape[0], width), dtype=np.uint64)
    out[:, : words.shape[1]] = words
    return out


#: Rows hashed at once by :func:`word_hashes` (its two work arrays stay in cache).
_HASH_ROWS = 1 << 16


def word_hashes(
    words: NDArray[np.uint64], out: NDArray[np.uint64] | None = None
) -> NDArray[np.uint64]:
    """Return a 64-bit hash of each row of ``words`` (entries x w), written into ``out`` when
    given (as many entries as rows). A block of rows at a time, in place: no temporary as
    large as the rows."""
    rows = words.shape[0]
    out = np.empty(rows, dtype=np.uint64) if out is None else out
    shifted = np.empty(min(rows, _HASH_ROWS), dtype=np.uint64)
    for lo in range(0, rows, _HASH_ROWS):
        hi = min(rows, lo + _HASH_ROWS)
        h, spare = out[lo:hi], shifted[: hi - lo]
        h[:] = 0
        for j in range(words.shape[1]):
            h *= _MULTIPLIER
            h ^= words[lo:hi, j]
            _mix_in_place(h, spare)
    return out


def _mix_in_place(x: NDArray[np.uint64], spare: NDArray[np.uint64]) -> None:
    """Apply :func:`_mix` to ``x`` in place (``spare``: a work array of its size)."""
    for shift, multiplier in ((30, _MIX_1), (27, _MIX_2)):
        np.right_shift(x, np.uint64(shift), out=spare)
        x ^= spare
        x *= multiplier
    np.right_shift(x, np.uint64(31), out=spare)
    x ^= spare


def equal(
    lengths: NDArray[Any],
    data: NDArray[np.uint8],
    first: NDArray[Any],
    other_lengths: NDArray[Any],
    other_data: NDArray[np.uint8],
    second: NDArray[Any],
    *,
    starts: tuple[NDArray[np.signedinteger[Any]], NDArray[np.signedinteger[Any]]] | None = None,
) -> NDArray[np.bool_]:
    """Return whether text ``first[i]`` of one layout has the bytes of text ``second[i]`` of
    another (or the same) layout, for each ``i``; ``starts`` are the two layouts' offsets
    (:func:`starts_of`) when the caller has them."""
    a_len, b_len = lengths[first], other_lengths[second]
    same = np.asarray(a_len == b_len, dtype=np.bool_)
    if starts is None:
        starts = (starts_of(lengths), starts_of(other_lengths))
    a_start, b_start = starts[0][first], starts[1][second]
    check = np.flatnonzero(same & (a_len > 0))
    sizes_all = a_len[check]
    for part in _chunks(sizes_all):
        rows = check[part]
        sizes = sizes_all[part]
        left = data[_byte_index(a_start[rows], sizes)]
        right = other_data[_byte_index(b_start[rows], sizes)]
        differ = np.repeat(np.arange(rows.size), sizes)[left != right]
        same[rows[np.unique(differ)]] = False
    return same


def gather(
    lengths: NDArray[Any],
    data: NDArray[np.uint8],
    picked: NDArray[Any],
    starts: NDArray[np.signedinteger[Any]] | None = None,
) -> tuple[NDArray[np.int32], NDArray[np.uint8]]:
    """Return the layout of texts ``picked`` (indices) of a layout, in that order;
    ``starts`` are the layout's offsets when the caller has them."""
    sizes = lengths[picked].astype(np.int32)
    starts = (starts_of(lengths) if starts is None else starts)[picked]
    parts = [data[_byte_index(starts[part], sizes[part])] for part in _chunks(sizes)]
    out = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint8)
    return sizes, out


def pack_texts(texts: Sequence[str], width: int) -> tuple[NDArray[np.int64], NDArray[np.uint64]]:
    """Return each text's length in UTF-8 bytes and its first ``8 * width`` bytes packed as
    the TREC column reader packs doc ids (:func:`packed_words`: UTF-8 bytes big-endian, zero
    padded; a longer text's words are cut: its length tells)."""
    n = len(texts)
    joined = "\0".join(texts)
    if joined.isascii():
        data = joined.encode("ascii")
        lengths = np.fromiter(map(len, texts), dtype=np.int64, count=n)
    else:
        encoded = [text.encode("utf-8", "surrogatepass") for text in texts]
        data = b"\0".join(encoded)
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=n)
    starts = np.cumsum(lengths + 1) - (lengths + 1)  # each text and its NUL separator
    return lengths, packed_words(lengths, np.frombuffer(data, dtype=np.uint8), starts, width)


def pack_ids(ids: Sequence[str]) -> NDArray[np.uint64]:
    """Return ``ids`` as a TREC run's columns hold doc ids (``TrecColumns.doc_words``): UTF-8
    bytes big-endian in as many 64-bit words as the longest needs, zero padded (an id holding
    a NUL byte is refused: it would read back cut)."""
    joined = "".join(ids)
    if "\0" in joined:
        raise ValueError("a doc id holds a NUL character")
    if joined.isascii():
        longest = max(map(len, ids), default=1)
    else:
        longest = max((len(doc.encode("utf-8", "surrogatepass")) for doc in ids), default=1)
    return pack_texts(ids, max(1, -(-longest // 8)))[1]
