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

import struct
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from monitor.store.records import QueryRecord

if TYPE_CHECKING:
    from numpy.typing import NDArray

#: The codec name written beside every blob; a reader refuses one it does not know.
CODEC = "np-shuffle-zlib"
#: zlib's level: 6 is its default; higher levels gain ~1% here for twice the time.
_LEVEL = 6
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
    blobs = {
        QUERY_IDS: _pack(_strings([q.query_id for q in queries])),
        LATENCY: _pack([np.array([_nan(q.latency_seconds) for q in queries], dtype=np.float64)]),
        ERROR_TYPE: _pack(_strings([q.error_type for q in queries])),
        ERROR_MESSAGE: _pack(_strings([q.error_message for q in queries])),
    }
    codes: dict[str, int] = {}
    for name, ids_of in ((RETRIEVED, _retrieved), (RELEVANT, _relevant)):
        counts = np.fromiter((len(ids_of(q)) for q in queries), np.int32, len(queries))
        flat = [codes.setdefault(doc, len(codes)) for q in queries for doc in ids_of(q)]
        blobs[name] = _pack([counts, np.array(flat, dtype=np.int32)])
    blobs[DOC_IDS] = _pack(_strings(list(codes)))
    metrics = dict.fromkeys(name for q in queries for name in q.values)
    blobs[METRIC_NAMES] = _pack(_strings(list(metrics)))
    for metric in metrics:
        present = np.fromiter((metric in q.values for q in queries), np.bool_, len(queries))
        values = np.fromiter((q.values[metric] for q in queries if metric in q.values), np.float64)
        blobs[METRIC_PREFIX + metric] = _pack([np.packbits(present), *_floats(values)])
    return blobs


def decode_queries(blobs: Mapping[str, bytes]) -> tuple[QueryRecord, ...]:
    """Return the queries the blobs of :func:`encode_queries` hold, in their order."""
    query_ids = _texts(_unpack(blobs[QUERY_IDS]))
    n = len(query_ids)
    (latency,) = _unpack(blobs[LATENCY])
    error_types = _unstrings(_unpack(blobs[ERROR_TYPE]))
    error_messages = _unstrings(_unpack(blobs[ERROR_MESSAGE]))
    docs = _texts(_unpack(blobs[DOC_IDS]))
    rankings = [_rankings(_unpack(blobs[name]), docs) for name in (RETRIEVED, RELEVANT)]
    columns = {
        metric: _metric(_unpack(blobs[METRIC_PREFIX + metric]), n)
        for metric in _metric_names(blobs)
    }
    per_query: list[dict[str, float]] = [{} for _ in range(n)]
    for metric, (present, values) in columns.items():
        for i, value in zip(np.flatnonzero(present).tolist(), values.tolist(), strict=True):
            per_query[i][metric] = value
    latencies = [None if v != v else v for v in latency.tolist()]
    return tuple(
        QueryRecord(
            query_id=query_ids[i],
            values=per_query[i],
            retrieved_ids=rankings[0][i],
            relevant_ids=rankings[1][i],
            latency_seconds=latencies[i],
            error_type=error_types[i],
            error_message=error_messages[i],
        )
        for i in range(n)
    )


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


def _retrieved(query: QueryRecord) -> tuple[str, ...]:
    return query.retrieved_ids


def _relevant(query: QueryRecord) -> tuple[str, ...]:
    return query.relevant_ids


def _nan(value: float | None) -> float:
    return np.nan if value is None else value


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


def _rankings(arrays: list[NDArray[Any]], docs: list[str]) -> list[tuple[str, ...]]:
    counts, codes = arrays
    ids = [docs[c] for c in codes.tolist()]
    ends = np.cumsum(counts).tolist()
    starts = [0, *ends][:-1]
    return [tuple(ids[a:b]) for a, b in zip(starts, ends, strict=True)]


def _strings(texts: Sequence[str | None]) -> list[NDArray[Any]]:
    """Return ``[lengths, utf-8 bytes]``; a None has length -1."""
    encoded = [None if t is None else t.encode("utf-8") for t in texts]
    lengths = np.fromiter((-1 if b is None else len(b) for b in encoded), np.int32, len(texts))
    joined = b"".join(b for b in encoded if b is not None)
    return [lengths, np.frombuffer(joined, dtype=np.uint8)]


def _texts(arrays: list[NDArray[Any]]) -> list[str]:
    """Return the strings of a column that holds no None."""
    texts = _unstrings(arrays)
    if any(text is None for text in texts):
        raise ValueError("a column of ids holds a missing id")
    return texts  # type: ignore[return-value]  # checked just above


def _unstrings(arrays: list[NDArray[Any]]) -> list[str | None]:
    lengths, data = arrays
    raw = data.tobytes()
    ends = np.cumsum(np.maximum(lengths, 0)).tolist()
    starts = [0, *ends][:-1]
    if raw.isascii():  # byte offsets are character offsets: slice one decoded text
        text = raw.decode("ascii")
        out: list[str | None] = [text[a:b] for a, b in zip(starts, ends, strict=True)]
    else:
        out = [raw[a:b].decode("utf-8") for a, b in zip(starts, ends, strict=True)]
    for i in np.flatnonzero(lengths < 0).tolist():
        out[i] = None
    return out


def _pack(arrays: Sequence[NDArray[Any]]) -> bytes:
    parts: list[bytes] = []
    for array in arrays:
        array = np.ascontiguousarray(array)
        dtype = array.dtype.newbyteorder("<") if array.dtype.itemsize > 1 else array.dtype
        array = array.astype(dtype, copy=False)
        parts.append(_HEADER.pack(dtype.str.encode("ascii").ljust(4), array.size))
        parts.append(_shuffle(array))
    return zlib.compress(b"".join(parts), _LEVEL)


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


def _shuffle(array: NDArray[Any]) -> bytes:
    width = array.dtype.itemsize
    if width == 1:
        return array.tobytes()
    return array.view(np.uint8).reshape(-1, width).T.tobytes()


def _unshuffle(raw: memoryview, dtype: np.dtype[Any], size: int) -> NDArray[Any]:
    width = dtype.itemsize
    planes = np.frombuffer(raw, dtype=np.uint8)
    if width == 1:
        return planes.view(dtype).copy()
    return np.ascontiguousarray(planes.reshape(width, size).T).view(dtype).reshape(size)
