"""A run's per-query outcomes as a few compressed columns: the ``run_blobs`` table.

Each run keeps one row per field: ``query_ids``, ``latency``, ``error_type``,
``error_message``, ``doc_ids`` (the run's dictionary of document ids), ``retrieved`` and
``relevant`` (rankings as counts per query and int32 codes into ``doc_ids``), and
``metric:<name>`` per metric (which queries have a value, and the float64 values, kept as a
table of distinct values and small codes when that is smaller: most measures take few values).

A blob is zlib over a sequence of numpy arrays, each written as its dtype, its length and
its bytes; multi-byte arrays are byte-shuffled first (all first bytes, then all second
bytes, ...) so that zlib sees the runs of equal high bytes. Values read back bit for bit:
a float is never rounded.
"""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np

from monitor import texts
from monitor.run.rankings import Rankings, merged
from monitor.store.records import (
    ColumnQueries,
    QueryColumns,
    QueryRecord,
    stored_query,
)

if TYPE_CHECKING:
    from numpy.typing import NDArray

#: The codec name written beside every blob; a reader refuses one it does not know.
CODEC = "np-shuffle-zlib"
#: zlib's level: on a 100,000-query run of 20 hits a query, level 4 compresses in a fifth of
#: the time of level 6 (zlib's default) for 3% more bytes (6.5 MB against 6.3 MB); levels
#: 1 to 3 save little more time for up to 16% more bytes.
_LEVEL = 4
#: A metric column is dictionary-coded when it has at most this many distinct values.
_DICTIONARY_LIMIT = 1 << 16

QUERY_IDS = "query_ids"
LATENCY = "latency"
ERROR_TYPE = "error_type"
ERROR_MESSAGE = "error_message"
DOC_IDS = "doc_ids"
RETRIEVED = "retrieved"
RELEVANT = "relevant"
METRIC_NAMES = "metric_names"
METRIC_PREFIX = "metric:"

_HEADER = struct.Struct("<4sQ")
_HEX = re.compile("[0-9a-f]*")


@dataclass(frozen=True, slots=True)
class QueryArrays:
    """A run's per-query metric values as arrays, in run order.

    ``values[metric][i]`` is query ``query_ids[i]``'s value, NaN when the query has none (it
    failed, or was not judged); ``failed[i]`` says whether its search failed.
    """

    query_ids: tuple[str, ...]
    values: Mapping[str, NDArray[np.float64]] = field(default_factory=dict)
    failed: NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=np.bool_))


def encode_queries(queries: Sequence[QueryRecord]) -> dict[str, bytes]:
    """Return the blobs of ``queries`` by field name."""
    return encode_columns(QueryColumns.of(queries))


def encode_columns(columns: QueryColumns) -> dict[str, bytes]:
    """Return the blobs of a run's query columns by field name.

    The blobs are compressed on two threads while the next ones are laid out: zlib lets go
    of the GIL, and a large run's blobs take most of its save.
    """
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="monitor-pack") as pool:
        packed = {name: pool.submit(_pack, arrays) for name, arrays in _layouts(columns)}
        return {name: blob.result() for name, blob in packed.items()}


def _layouts(columns: QueryColumns) -> Iterator[tuple[str, Sequence[NDArray[Any]]]]:
    """Yield each blob's name and the arrays it holds, in the order they are stored."""
    latency = np.array(columns.latency_seconds, dtype=np.float64)  # None becomes NaN
    yield QUERY_IDS, _strings(columns.query_ids)
    yield LATENCY, [latency]
    yield ERROR_TYPE, _strings(columns.error_types)
    yield ERROR_MESSAGE, _strings(columns.error_messages)
    retrieved, relevant = columns.retrieved_ids, columns.relevant_ids
    shared = _one_dictionary(retrieved, relevant)
    if shared is not None:
        for name, part in zip((RETRIEVED, RELEVANT), shared, strict=True):
            yield name, [part.counts, part.codes]
        yield DOC_IDS, _layout(shared[0].doc_lengths, shared[0].doc_bytes)
    else:
        (codes_retrieved, codes_relevant), whole = merged([retrieved, relevant])
        yield RETRIEVED, [whole.counts[: len(retrieved)], codes_retrieved]
        yield RELEVANT, [whole.counts[len(retrieved) :], codes_relevant]
        yield DOC_IDS, _layout(whole.doc_lengths, whole.doc_bytes)
    metrics = list(columns.metrics)
    yield METRIC_NAMES, _strings(metrics)
    present, matrix = columns.present, columns.values
    for j, metric in enumerate(metrics):
        values = matrix[present[:, j], j]
        yield METRIC_PREFIX + metric, [np.packbits(present[:, j]), *_floats(values)]


def _one_dictionary(retrieved: Rankings, relevant: Rankings) -> tuple[Rankings, Rankings] | None:
    """Return both as Rankings when they are Rankings over one dictionary whose ids are
    numbered in order of first appearance over the retrieved, then the relevant entries (as
    the store numbers them), every id used: their codes are then stored as they are."""
    if retrieved.doc_lengths is not relevant.doc_lengths or (
        retrieved.doc_bytes is not relevant.doc_bytes
    ):
        return None
    every = np.concatenate((retrieved.codes, relevant.codes))
    size = len(retrieved.doc_lengths)
    seen = np.zeros(size, dtype=bool)
    seen[every] = True
    if not seen.all():
        return None
    first = np.empty(size, dtype=np.intp)
    first[every[::-1]] = np.arange(every.size - 1, -1, -1)
    return (retrieved, relevant) if bool((first[1:] > first[:-1]).all()) else None


def _layout(lengths: NDArray[np.int32], data: NDArray[np.uint8]) -> list[NDArray[Any]]:
    """Return the arrays :func:`_strings` writes for the texts of a layout (no None among
    them): hex digits as the bytes they spell, as there."""
    if data.size and not (lengths % 2).any():
        hex_digit = ((data >= 0x30) & (data <= 0x39)) | ((data >= 0x61) & (data <= 0x66))
        if hex_digit.all():
            nibbles = np.where(data <= 0x39, data - 0x30, data - 0x57).astype(np.uint8)
            spelt = (nibbles[0::2] << 4) | nibbles[1::2]
            return [lengths, spelt.astype(np.uint8), np.ones(1, np.uint8)]
    return [lengths, data]


def columns_read_back_as_given(columns: QueryColumns) -> bool:
    """Return whether the records of :class:`~monitor.store.records.ColumnQueries` over
    ``columns`` equal those read back from their blobs: no latency is NaN (it reads back as
    None); the values, the rankings and the errors read back as they are."""
    return not any(v != v for v in columns.latency_seconds if v is not None)


def reads_back_as_given(queries: Sequence[QueryRecord]) -> bool:
    """Return whether :func:`decode_queries` of ``queries``' blobs gives records equal to
    ``queries``, field by field and in the same order of metrics: no latency is NaN (it reads
    back as None) and every query lists its metrics in the run's order of first appearance."""
    metrics = list(dict.fromkeys(chain.from_iterable(q.values for q in queries)))
    usual = tuple(metrics)
    for query in queries:
        latency = query.latency_seconds
        if latency is not None and latency != latency:
            return False
        names = tuple(query.values)
        if names != usual and names != tuple(n for n in metrics if n in query.values):
            return False
    return True


def decode_queries(blobs: Mapping[str, bytes]) -> tuple[QueryRecord, ...]:
    """Return the queries the blobs of :func:`encode_queries` hold, in their order."""
    return ColumnQueries(decode_columns(blobs)).records()


def decode_columns(blobs: Mapping[str, bytes]) -> QueryColumns:
    """Return the columns the blobs of :func:`encode_queries` hold: the rankings as
    :class:`Rankings` over the stored arrays (no str per document id), the metric values as a
    queries x metrics matrix (NaN where a query has none) and which of them are present."""
    query_ids = _texts(_unpack(blobs[QUERY_IDS]))
    n = len(query_ids)
    (latency,) = _unpack(blobs[LATENCY])
    lengths, data, *hexed = _unpack(blobs[DOC_IDS])
    if hexed:  # ids of hex digits are kept as the bytes they spell
        data = np.frombuffer(data.tobytes().hex().encode("ascii"), np.uint8)
    counts, codes = _unpack(blobs[RETRIEVED])
    retrieved = Rankings(counts, codes, lengths, data)
    counts, codes = _unpack(blobs[RELEVANT])
    rankings = [retrieved, retrieved.over_same_ids(counts, codes)]  # one dictionary's starts
    metrics = tuple(_metric_names(blobs))
    matrix = np.full((n, len(metrics)), np.nan)
    present = np.zeros((n, len(metrics)), dtype=np.bool_)
    for j, metric in enumerate(metrics):
        has, values = _metric(_unpack(blobs[METRIC_PREFIX + metric]), n)
        matrix[has, j] = values
        present[:, j] = has
    return QueryColumns(
        query_ids=query_ids,
        latency_seconds=[None if v != v else v for v in latency.tolist()],
        error_types=_unstrings(_unpack(blobs[ERROR_TYPE])),
        error_messages=_unstrings(_unpack(blobs[ERROR_MESSAGE])),
        retrieved_ids=rankings[0],
        relevant_ids=rankings[1],
        metrics=metrics,
        values=matrix,
        present=present,
    )


def decode_query(blobs: Mapping[str, bytes], query_id: str) -> QueryRecord | None:
    """Return the one query ``query_id`` of :func:`encode_queries`'s blobs (None when the run
    has no such query), building no record for the others."""
    query_ids = _texts(_unpack(blobs[QUERY_IDS]))
    try:
        i = query_ids.index(query_id)
    except ValueError:
        return None
    n = len(query_ids)
    (latency,) = _unpack(blobs[LATENCY])
    docs = _texts(_unpack(blobs[DOC_IDS]))
    rankings = [_ranking(_unpack(blobs[name]), docs, i) for name in (RETRIEVED, RELEVANT)]
    values = {}
    for metric in _metric_names(blobs):
        present, column = _metric(_unpack(blobs[METRIC_PREFIX + metric]), n)
        if present[i]:
            values[metric] = float(column[int(np.count_nonzero(present[:i]))])
    seconds = float(latency[i])
    return stored_query(
        query_id,
        values,
        rankings[0],
        rankings[1],
        None if seconds != seconds else seconds,
        _unstrings(_unpack(blobs[ERROR_TYPE]))[i],
        _unstrings(_unpack(blobs[ERROR_MESSAGE]))[i],
    )


def _ranking(arrays: list[NDArray[Any]], docs: list[str], i: int) -> tuple[str, ...]:
    """Return ranking ``i`` of a rankings column."""
    counts, codes = arrays
    start = int(counts[:i].sum())
    return tuple(docs[c] for c in codes[start : start + int(counts[i])].tolist())


def decode_arrays(blobs: Mapping[str, bytes]) -> QueryArrays:
    """Return the query ids and metric columns of :func:`encode_queries`'s blobs as arrays
    (rankings and messages are not read)."""
    query_ids = tuple(_texts(_unpack(blobs[QUERY_IDS])))
    n = len(query_ids)
    values: dict[str, NDArray[np.float64]] = {}
    for metric in _metric_names(blobs):
        present, column = _metric(_unpack(blobs[METRIC_PREFIX + metric]), n)
        full = np.full(n, np.nan)
        full[present] = column
        values[metric] = full
    lengths = _unpack(blobs[ERROR_TYPE])[0] if ERROR_TYPE in blobs else np.full(n, -1)
    return QueryArrays(query_ids, values, np.asarray(lengths >= 0))


def _metric_names(blobs: Mapping[str, bytes]) -> list[str]:
    """Return the run's metric names in the order they first appeared."""
    return _texts(_unpack(blobs[METRIC_NAMES]))


def _floats(values: NDArray[np.float64]) -> list[NDArray[Any]]:
    """Return ``[values]``, or ``[distinct, codes]`` when that is smaller."""
    if values.size < 64:
        return [values]
    # View as integers so NaN and -0.0 keep their exact bits through the dictionary.
    bits = values.view(np.uint64)
    distinct, codes = np.unique(bits, return_inverse=True)
    if distinct.size > _DICTIONARY_LIMIT:
        return [values]
    code_type = np.uint8 if distinct.size <= 256 else np.uint16
    return [distinct.view(np.float64), codes.astype(code_type)]


def _metric(arrays: list[NDArray[Any]], n: int) -> tuple[NDArray[np.bool_], NDArray[np.float64]]:
    packed, *rest = arrays
    present = np.unpackbits(packed, count=n).astype(np.bool_)
    values = rest[0] if len(rest) == 1 else rest[0][rest[1]]
    return present, values


def _strings(texts: Sequence[str | None]) -> list[NDArray[Any]]:
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


def _texts(arrays: list[NDArray[Any]]) -> list[str]:
    """Return the strings of a column that holds no None."""
    texts = _unstrings(arrays)
    if None in texts:
        raise ValueError("a column of ids holds a missing id")
    return texts  # type: ignore[return-value]  # checked just above


def _unstrings(arrays: list[NDArray[Any]]) -> list[str | None]:
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


def _pack(arrays: Sequence[NDArray[Any]]) -> bytes:
    """Return ``arrays`` as one compressed blob: each array's dtype and size, then its bytes
    a byte plane at a time (the first byte of every value, then the second, ...), which
    compress better than values. The planes reach the compressor a block at a time, so a
    large array is never copied whole."""
    packer = zlib.compressobj(_LEVEL)
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


def _unpack(blob: bytes) -> list[NDArray[Any]]:
    raw = memoryview(zlib.decompress(blob))
    arrays: list[NDArray[Any]] = []
    at = 0
    while at < len(raw):
        code, size = _HEADER.unpack_from(raw, at)
        at += _HEADER.size
        dtype = np.dtype(code.rstrip(b" ").decode("ascii"))
        end = at + size * dtype.itemsize
        arrays.append(_unshuffle(raw[at:end], dtype, size))
        at = end
    return arrays


def _unshuffle(raw: memoryview, dtype: np.dtype[Any], size: int) -> NDArray[Any]:
    width = dtype.itemsize
    planes = np.frombuffer(raw, dtype=np.uint8)
    if width == 1:
        return planes.view(dtype).copy()
    return np.ascontiguousarray(planes.reshape(width, size).T).view(dtype).reshape(size)
