"""The one codec of a run's arrays: the store's blobs and the shards' parts are written by it.

A blob is zlib over a sequence of numpy arrays, each written as its dtype, its length and
its bytes; multi-byte arrays are byte-shuffled first (all first bytes, then all second
bytes, ...) so that zlib sees the runs of equal high bytes. Values read back bit for bit:
a float is never rounded. A column of texts is two arrays (:func:`strings`): their lengths
and their UTF-8 bytes, or, for ids of lower-case hex digits, the bytes they spell.

:func:`encode_table` and :func:`decode_table` write a run's table
(:class:`~monitor.run.table.RunTable`) this way, as a shard stores its part of a run.
"""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from monitor import texts
from monitor.evalset.columns import EvalColumns
from monitor.records import MetaValue
from monitor.run.answers import Answers

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from monitor.run.table import RunTable

#: The codec name written beside every blob; a reader refuses one it does not know.
CODEC = "np-shuffle-zlib"
#: zlib's level of a stored blob: on a 100,000-query run of 20 hits a query, level 4
#: compresses in a fifth of the time of level 6 (zlib's default) for 3% more bytes (6.5 MB
#: against 6.3 MB); levels 1 to 3 save little more time for up to 16% more bytes.
LEVEL = 4
#: zlib's level of what lives only until a run is made of it (a shard's part): on a shard of
#: 50,000 queries of 20 hits, level 1 encodes its table in 60% of level 4's time for 30%
#: more bytes (1.0 MB against 0.77 MB).
TRANSIENT_LEVEL = 1

_HEADER = struct.Struct("<4sQ")
_HEX = re.compile("[0-9a-f]*")


def pack(arrays: Sequence[NDArray[Any]], level: int = LEVEL) -> bytes:
    """Return ``arrays`` as one compressed blob (zlib at ``level``): each array's dtype and
    size, then its bytes a byte plane at a time (the first byte of every value, then the
    second, ...), which compress better than values. The planes reach the compressor a block
    at a time, so a large array is never copied whole."""
    packer = zlib.compressobj(level)
    out: list[bytes] = []
    for array in arrays:
        array = np.ascontiguousarray(array)
        dtype = array.dtype.newbyteorder("<") if array.dtype.itemsize > 1 else array.dtype
        array = array.astype(dtype, copy=False)
        out.append(packer.compress(_HEADER.pack(dtype.str.encode("ascii").ljust(4), array.size)))
        out.extend(packer.compress(block) for block in _planes(array))
    out.append(packer.flush())
    return b"".join(out)


#: Bytes of one byte plane handed to the compressor at a time.
_PLANE_BYTES = 1 << 22


def _planes(array: NDArray[Any]) -> Iterator[bytes | memoryview]:
    """Yield the bytes of ``array``'s byte planes, in order, a block at a time."""
    grid = array.reshape(-1).view(np.uint8).reshape(array.size, array.dtype.itemsize)
    if grid.shape[1] == 1:
        flat = grid.reshape(-1).data
        for start in range(0, len(flat), _PLANE_BYTES):
            yield flat[start : start + _PLANE_BYTES]
        return
    for plane in grid.T:
        for start in range(0, plane.size, _PLANE_BYTES):
            yield plane[start : start + _PLANE_BYTES].tobytes()


def unpack(blob: bytes) -> list[NDArray[Any]]:
    """Return the arrays :func:`pack` wrote. Each byte plane is decompressed straight into
    its array, a block at a time, so the blob's whole decompressed bytes are never held
    beside the arrays they become."""
    stream = _Inflater(blob)
    arrays: list[NDArray[Any]] = []
    while not stream.done():
        code, size = _HEADER.unpack(stream.read(_HEADER.size))
        dtype = np.dtype(code.rstrip(b" ").decode("ascii"))
        out = np.empty(size, dtype=dtype)
        grid = out.view(np.uint8).reshape(size, dtype.itemsize)
        for plane in range(dtype.itemsize):
            for start in range(0, size, _PLANE_BYTES):
                stop = min(size, start + _PLANE_BYTES)
                grid[start:stop, plane] = np.frombuffer(stream.read(stop - start), np.uint8)
        arrays.append(out)
    return arrays


#: Compressed bytes handed to the decompressor at a time.
_INPUT_BYTES = 1 << 18


class _Inflater:
    """A zlib stream read a given number of bytes at a time."""

    def __init__(self, blob: bytes) -> None:
        self._inflater = zlib.decompressobj()
        self._pending = memoryview(blob)
        self._buffer = b""

    def read(self, count: int) -> bytes:
        """Return the next ``count`` decompressed bytes; raise ValueError past the end."""
        parts, need = [self._buffer[:count]], count - min(count, len(self._buffer))
        self._buffer = self._buffer[count:]
        while need:
            source = self._inflater.unconsumed_tail or self._take_input()
            if not source and self._inflater.eof:
                raise ValueError("a blob ends inside an array")
            chunk = self._inflater.decompress(source, need)
            if not chunk and not source:
                raise ValueError("a blob ends inside an array")
            parts.append(chunk)
            need -= len(chunk)
        return b"".join(parts)

    def done(self) -> bool:
        """Return whether every decompressed byte has been read."""
        if self._buffer:
            return False
        while not self._inflater.eof:
            source = self._inflater.unconsumed_tail or self._take_input()
            if not source:
                return True
            self._buffer = self._inflater.decompress(source, _HEADER.size)
            if self._buffer:
                return False
        return True

    def _take_input(self) -> bytes | memoryview:
        # A block of the input at a time: zlib copies whatever input it leaves unconsumed.
        source = self._pending[:_INPUT_BYTES]
        self._pending = self._pending[_INPUT_BYTES:]
        return source


def strings(texts: Sequence[str | None]) -> list[NDArray[Any]]:
    """Return ``[lengths, utf-8 bytes]`` (a None has length -1), or ``[lengths in hex digits,
    the bytes they spell, [1]]`` when every text is lower-case hex digits of even length, as
    content-hash ids are: half the bytes of the text, which zlib does not halve itself."""
    if None in texts:
        lengths = np.fromiter((-1 if t is None else len(t) for t in texts), np.int32, len(texts))
        joined = "".join(t for t in texts if t is not None)
    else:  # ids: no None, so both run in C
        lengths = np.fromiter(map(len, texts), np.int32, len(texts))  # type: ignore[arg-type]
        joined = "".join(texts)  # type: ignore[arg-type]
    if joined and not (lengths % 2).any() and _HEX.fullmatch(joined):
        return [lengths, np.frombuffer(bytes.fromhex(joined), np.uint8), np.ones(1, np.uint8)]
    if not joined.isascii():
        encoded = [None if t is None else t.encode("utf-8") for t in texts]
        lengths = np.fromiter((-1 if b is None else len(b) for b in encoded), np.int32, len(texts))
        joined_bytes = b"".join(b for b in encoded if b is not None)
        return [lengths, np.frombuffer(joined_bytes, np.uint8)]
    return [lengths, np.frombuffer(joined.encode("ascii"), np.uint8)]


def texts_of(arrays: list[NDArray[Any]]) -> list[str]:
    """Return the strings of a column that holds no None."""
    texts = unstrings(arrays)
    if None in texts:
        raise ValueError("a column of ids holds a missing id")
    return texts  # type: ignore[return-value]  # checked just above


def unstrings(arrays: list[NDArray[Any]]) -> list[str | None]:
    lengths, data, *hexed = arrays
    sizes = np.maximum(lengths, 0)
    chars = np.frombuffer(data.tobytes().hex().encode("ascii"), np.uint8) if hexed else data
    out = texts.split(chars, sizes)
    if out is None:  # a text holds a NUL byte: slice them one by one
        raw = data.tobytes()
        ends = np.cumsum(sizes).tolist()
        starts = [0, *ends][:-1]
        if hexed or raw.isascii():  # offsets count characters: slice one decoded text
            text = raw.hex() if hexed else raw.decode("ascii")
            out = [text[a:b] for a, b in zip(starts, ends, strict=True)]
        else:
            out = [raw[a:b].decode("utf-8") for a, b in zip(starts, ends, strict=True)]
    for i in np.flatnonzero(lengths < 0).tolist():
        out[i] = None
    return out


def encode_table(table: RunTable, level: int = LEVEL) -> bytes:
    """Return ``table`` as one blob (zlib at ``level``): its query ids, every hit's id
    words, score and text, each query's latency and dropped repeats, and the failed queries'
    errors. The queries' texts and judgments are not written: they are the eval set's
    (:func:`decode_table`)."""
    hits = table.hits
    rows = sorted(table.errors)
    kinds = [table.errors[row][0] for row in rows]
    messages = [table.errors[row][1] for row in rows]
    columns = [
        strings(list(table.query_ids)),
        strings(kinds),
        strings(messages),
        strings(list(table.hit_texts) if table.hit_texts is not None else []),
    ]
    ids, kind_texts, message_texts, hit_texts = columns
    # A text column is two arrays, or three for hex digits: each one's count is written first.
    arities = np.array([len(column) for column in columns], dtype=np.int64)
    return pack(
        [
            arities,
            *ids,
            hits.counts.astype(np.int64),
            np.array([hits.doc_words.shape[1]], dtype=np.int64),
            hits.doc_words.reshape(-1),
            hits.scores,
            hits.duplicates.astype(np.int64),
            table.latency_seconds,
            np.array(rows, dtype=np.int64),
            *kind_texts,
            *message_texts,
            np.array([table.hit_texts is not None], dtype=np.bool_),
            *hit_texts,
        ],
        level,
    )


def decode_table(blob: bytes) -> RunTable:
    """Return the table :func:`encode_table` wrote; each query is read back with its id only
    (no text, no judgments): the reader gives it the eval set's queries
    (:meth:`~monitor.run.table.RunTable.take`)."""
    from monitor.run.table import RunTable

    arities, *arrays = unpack(blob)
    ids_n, kinds_n, messages_n, texts_n = (int(a) for a in arities.tolist())
    at = 0

    def take(count: int) -> list[NDArray[Any]]:
        nonlocal at
        part = arrays[at : at + count]
        at += count
        return part

    ids = texts_of(take(ids_n))
    counts, (width,), words, scores, duplicates, latency, rows = take(7)
    kinds = texts_of(take(kinds_n))
    messages = unstrings(take(messages_n))
    (given,) = take(1)
    hit_texts = unstrings(take(texts_n)) if bool(given[0]) else None
    answers = Answers(counts, words.reshape(-1, int(width)), scores, duplicates)
    # The queries as columns of their ids alone: no record is built for a query not read.
    empty = np.zeros(0, dtype=np.int64)
    no_metadata: dict[str, MetaValue] = {}
    queries = EvalColumns(
        tuple(ids),
        ("",) * len(ids),
        (no_metadata,) * len(ids),
        np.zeros(len(ids), dtype=np.int64),
        empty,
        np.zeros(0, dtype=np.uint8),
        empty,
    )
    errors = dict(zip(rows.tolist(), zip(kinds, messages, strict=True), strict=True))
    return RunTable(queries, answers, latency, errors, hit_texts)
