"""A run's per-query outcomes as a few compressed columns: the ``run_blobs`` table.

Each run keeps one row per field: ``query_ids``, ``latency``, ``error_type``,
``error_message``, ``doc_ids`` (the run's dictionary of document ids), ``retrieved`` and
``relevant`` (rankings as counts per query and int32 codes into ``doc_ids``), and
``metric:<name>`` per metric (which queries have a value, and the float64 values, kept as a
table of distinct values and small codes when that is smaller: most measures take few values).

Each blob is written by the run's one codec (:mod:`monitor.run.codec`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from monitor.run.codec import pack, strings, texts_of, unpack, unstrings
from monitor.run.rankings import Rankings, merged
from monitor.store.records import (
    ColumnQueries,
    QueryColumns,
    QueryRecord,
    stored_query,
)

if TYPE_CHECKING:
    from numpy.typing import NDArray

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
        packed = {name: pool.submit(pack, arrays) for name, arrays in _layouts(columns)}
        return {name: blob.result() for name, blob in packed.items()}


def _layouts(columns: QueryColumns) -> Iterator[tuple[str, Sequence[NDArray[Any]]]]:
    """Yield each blob's name and the arrays it holds, in the order they are stored."""
    latency = np.array(columns.latency_seconds, dtype=np.float64)  # None becomes NaN
    yield QUERY_IDS, strings(columns.query_ids)
    yield LATENCY, [latency]
    yield ERROR_TYPE, strings(columns.error_types)
    yield ERROR_MESSAGE, strings(columns.error_messages)
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
    yield METRIC_NAMES, strings(metrics)
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


def decode_queries(blobs: Mapping[str, bytes]) -> tuple[QueryRecord, ...]:
    """Return the queries the blobs of :func:`encode_queries` hold, in their order."""
    return ColumnQueries(decode_columns(blobs)).records()


def decode_columns(blobs: Mapping[str, bytes]) -> QueryColumns:
    """Return the columns the blobs of :func:`encode_queries` hold: the rankings as
    :class:`Rankings` over the stored arrays (no str per document id), the metric values as a
    queries x metrics matrix (NaN where a query has none) and which of them are present."""
    query_ids = texts_of(unpack(blobs[QUERY_IDS]))
    n = len(query_ids)
    (latency,) = unpack(blobs[LATENCY])
    lengths, data, *hexed = unpack(blobs[DOC_IDS])
    if hexed:  # ids of hex digits are kept as the bytes they spell
        data = np.frombuffer(data.tobytes().hex().encode("ascii"), np.uint8)
    counts, codes = unpack(blobs[RETRIEVED])
    retrieved = Rankings(counts, codes, lengths, data)
    counts, codes = unpack(blobs[RELEVANT])
    rankings = [retrieved, retrieved.over_same_ids(counts, codes)]  # one dictionary's starts
    metrics = tuple(_metric_names(blobs))
    matrix = np.full((n, len(metrics)), np.nan)
    present = np.zeros((n, len(metrics)), dtype=np.bool_)
    for j, metric in enumerate(metrics):
        has, values = _metric(unpack(blobs[METRIC_PREFIX + metric]), n)
        matrix[has, j] = values
        present[:, j] = has
    return QueryColumns(
        query_ids=query_ids,
        latency_seconds=[None if v != v else v for v in latency.tolist()],
        error_types=unstrings(unpack(blobs[ERROR_TYPE])),
        error_messages=unstrings(unpack(blobs[ERROR_MESSAGE])),
        retrieved_ids=rankings[0],
        relevant_ids=rankings[1],
        metrics=metrics,
        values=matrix,
        present=present,
    )


def decode_query(blobs: Mapping[str, bytes], query_id: str) -> QueryRecord | None:
    """Return the one query ``query_id`` of :func:`encode_queries`'s blobs (None when the run
    has no such query), building no record for the others."""
    query_ids = texts_of(unpack(blobs[QUERY_IDS]))
    try:
        i = query_ids.index(query_id)
    except ValueError:
        return None
    n = len(query_ids)
    (latency,) = unpack(blobs[LATENCY])
    docs = texts_of(unpack(blobs[DOC_IDS]))
    rankings = [_ranking(unpack(blobs[name]), docs, i) for name in (RETRIEVED, RELEVANT)]
    values = {}
    for metric in _metric_names(blobs):
        present, column = _metric(unpack(blobs[METRIC_PREFIX + metric]), n)
        if present[i]:
            values[metric] = float(column[int(np.count_nonzero(present[:i]))])
    seconds = float(latency[i])
    return stored_query(
        query_id,
        values,
        rankings[0],
        rankings[1],
        None if seconds != seconds else seconds,
        unstrings(unpack(blobs[ERROR_TYPE]))[i],
        unstrings(unpack(blobs[ERROR_MESSAGE]))[i],
    )


def _ranking(arrays: list[NDArray[Any]], docs: list[str], i: int) -> tuple[str, ...]:
    """Return ranking ``i`` of a rankings column."""
    counts, codes = arrays
    start = int(counts[:i].sum())
    return tuple(docs[c] for c in codes[start : start + int(counts[i])].tolist())


def decode_arrays(blobs: Mapping[str, bytes]) -> QueryArrays:
    """Return the query ids and metric columns of :func:`encode_queries`'s blobs as arrays
    (rankings and messages are not read)."""
    query_ids = tuple(texts_of(unpack(blobs[QUERY_IDS])))
    n = len(query_ids)
    values: dict[str, NDArray[np.float64]] = {}
    for metric in _metric_names(blobs):
        present, column = _metric(unpack(blobs[METRIC_PREFIX + metric]), n)
        full = np.full(n, np.nan)
        full[present] = column
        values[metric] = full
    lengths = unpack(blobs[ERROR_TYPE])[0] if ERROR_TYPE in blobs else np.full(n, -1)
    return QueryArrays(query_ids, values, np.asarray(lengths >= 0))


def _metric_names(blobs: Mapping[str, bytes]) -> list[str]:
    """Return the run's metric names in the order they first appeared."""
    return texts_of(unpack(blobs[METRIC_NAMES]))


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
