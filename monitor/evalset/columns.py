"""An eval set held as columns: one array per field for all queries, no object per query.

A reader that reads a file whole (JSONL with orjson) hands its queries over as
:class:`EvalColumns`: the ids, texts and metadata as tuples, and every judgment end to end
in three arrays (the doc ids' UTF-8 bytes, their lengths, the grades), with a count per
query. A million queries of five judgments each take about 200 MB so, where a
:class:`~monitor.records.Query` per query, with its dicts and strings, takes about 1 GB.

The columns are a ``Sequence[Query]``: indexing one builds that query's record, so code that
reads queries one by one sees an eval set as before. The job's stages that read every query
(the runner, the metric engine, the stored rankings, the comparison) read the arrays
instead.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from functools import cached_property
from itertools import chain, islice
from typing import Any, TypeVar, overload

import numpy as np
from numpy.typing import NDArray

from monitor import texts as layouts
from monitor.records import MetaValue, Query, owned_queries, owned_query

V = TypeVar("V")


class EvalColumns(Sequence[Query]):
    """The queries of an eval set as columns, in order; ``columns[i]`` is query ``i``.

    ``counts[i]`` judgments belong to query ``i``, after those of the queries before it:
    judgment ``j`` is the doc whose UTF-8 bytes are ``doc_bytes[doc_starts[j]:][:doc_lengths
    [j]]``, graded ``grades[j]``. ``metadata`` dicts may be shared by queries whose metadata
    is equal; none is ever changed (each query sees its own through a read-only view).
    """

    def __init__(
        self,
        ids: tuple[str, ...],
        texts: tuple[str, ...],
        metadata: tuple[Mapping[str, MetaValue], ...],
        counts: NDArray[np.int64],
        doc_lengths: NDArray[np.int64],
        doc_bytes: NDArray[np.uint8],
        grades: NDArray[np.int64],
    ) -> None:
        n = len(ids)
        if not n == len(texts) == len(metadata) == counts.size:
            raise ValueError("EvalColumns takes one id, text, metadata and count a query")
        if int(counts.sum()) != doc_lengths.size or doc_lengths.size != grades.size:
            raise ValueError("EvalColumns takes one doc and one grade a judgment")
        if int(doc_lengths.sum()) != doc_bytes.size:
            raise ValueError("EvalColumns' doc lengths must add up to its bytes")
        self.ids = ids
        self.texts = texts
        self.metadata = metadata
        self.counts = counts
        self.doc_lengths = doc_lengths
        self.doc_bytes = doc_bytes
        self.grades = grades

    @classmethod
    def of(cls, queries: Sequence[Query]) -> EvalColumns:
        """Return the columns of the records ``queries`` (checked, unique ids)."""
        judgments = [query.judgments for query in queries]
        counts = np.fromiter(map(len, judgments), dtype=np.int64, count=len(judgments))
        docs = list(chain.from_iterable(judgments))
        lengths, data = layouts.layout_of(docs)
        grades = np.fromiter(
            chain.from_iterable(j.values() for j in judgments), dtype=np.int64, count=len(docs)
        )
        return cls(
            tuple(query.id for query in queries),
            tuple(query.text for query in queries),
            tuple(query.metadata for query in queries),
            counts,
            lengths.astype(np.int64),
            data,
            grades,
        )

    @classmethod
    def concatenate(cls, parts: Sequence[EvalColumns]) -> EvalColumns:
        """Return the queries of ``parts`` one after the other."""
        if len(parts) == 1:
            return parts[0]
        return cls(
            tuple(chain.from_iterable(part.ids for part in parts)),
            tuple(chain.from_iterable(part.texts for part in parts)),
            tuple(chain.from_iterable(part.metadata for part in parts)),
            _joined([part.counts for part in parts], np.int64),
            _joined([part.doc_lengths for part in parts], np.int64),
            _joined([part.doc_bytes for part in parts], np.uint8),
            _joined([part.grades for part in parts], np.int64),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EvalColumns):
            return NotImplemented
        return (
            self.ids == other.ids
            and self.texts == other.texts
            and self.metadata == other.metadata
            and np.array_equal(self.counts, other.counts)
            and np.array_equal(self.doc_lengths, other.doc_lengths)
            and np.array_equal(self.doc_bytes, other.doc_bytes)
            and np.array_equal(self.grades, other.grades)
        )

    __hash__ = None  # type: ignore[assignment]  # arrays: compared by value

    def __repr__(self) -> str:
        return f"<EvalColumns: {len(self)} queries, {self.grades.size} judgments>"

    # --- Sequence[Query] ---------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, index: int) -> Query: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Query, ...]: ...

    def __getitem__(self, index: int | slice) -> Query | tuple[Query, ...]:
        if isinstance(index, slice):
            picked = range(len(self))[index]
            if picked.step == 1:
                return tuple(self.records(picked.start, picked.stop))
            return tuple(map(self.__getitem__, picked))
        i = range(len(self))[index]  # an int out of range raises IndexError here
        return owned_query(self.ids[i], self.texts[i], self.judgments(i), dict(self.metadata[i]))

    def __contains__(self, item: object) -> bool:
        at = self.position(item.id) if isinstance(item, Query) else None
        return at is not None and self[at] == item

    def __iter__(self) -> Iterator[Query]:
        for lo in range(0, len(self), _RECORD_BLOCK):
            yield from self.records(lo, min(len(self), lo + _RECORD_BLOCK))

    def records(self, lo: int = 0, hi: int | None = None) -> list[Query]:
        """Return the records of queries ``lo`` to ``hi`` (all by default), their doc ids
        decoded at once."""
        hi = len(self) if hi is None else hi
        if hi <= lo:
            return []
        judgments = self.judgment_dicts(lo, hi)
        # Each metadata dict is frozen behind every record's read-only view: shared dicts
        # (equal metadata) are never changed by anyone, so no copy is needed.
        metadata = [dict(m) if type(m) is not dict else m for m in self.metadata[lo:hi]]
        return owned_queries(self.ids[lo:hi], self.texts[lo:hi], judgments, metadata)

    # --- judgments ----------------------------------------------------------------------

    @cached_property
    def firsts(self) -> NDArray[np.int64]:
        """Return where each query's judgments start among all of them."""
        return layouts.starts_of(self.counts)

    @cached_property
    def doc_starts(self) -> NDArray[np.int64]:
        """Return where each judged doc id starts in :attr:`doc_bytes`."""
        return layouts.starts_of(self.doc_lengths)

    def judgment_dicts(self, lo: int = 0, hi: int | None = None) -> list[dict[str, int]]:
        """Return the judgments of queries ``lo`` to ``hi`` as dicts, doc id -> grade."""
        hi = len(self) if hi is None else hi
        if hi <= lo:
            return []
        first = int(self.firsts[lo])
        last = int(self.firsts[hi - 1] + self.counts[hi - 1])
        begin = int(self.doc_starts[first]) if first < last else 0
        end = begin + int(self.doc_lengths[first:last].sum())
        docs = iter(layouts.decode(self.doc_lengths[first:last], self.doc_bytes[begin:end]))
        grades = iter(self.grades[first:last].tolist())
        counts = self.counts[lo:hi].tolist()
        return [dict(zip(islice(docs, c), islice(grades, c), strict=True)) for c in counts]

    def judgments(self, i: int) -> dict[str, int]:
        """Return query ``i``'s judgments, doc id -> grade, in file order."""
        first = int(self.firsts[i])
        last = first + int(self.counts[i])
        if first == last:
            return {}
        begin = int(self.doc_starts[first])
        end = begin + int(self.doc_lengths[first:last].sum())
        docs = layouts.decode(self.doc_lengths[first:last], self.doc_bytes[begin:end])
        return dict(zip(docs, self.grades[first:last].tolist(), strict=True))

    def docs(self, selected: NDArray[np.bool_] | None = None) -> JudgedDocs:
        """Return the judged doc ids end to end (those ``selected``, when given)."""
        picked = None if selected is None or selected.all() else np.flatnonzero(selected)
        return JudgedDocs(self, picked)

    def canonical_blocks(self, size: int) -> Iterator[list[tuple[str, str, list[tuple[str, int]]]]]:
        """Yield ``(id, text, judgments)`` of every query in id order (code point order), a
        block of ``size`` queries at a time, each query's judgments as (doc, grade) pairs
        sorted by doc id: the rows the set's digests are written from, built from the
        columns without a record per query."""
        order = sorted(range(len(self)), key=self.ids.__getitem__)
        docs = layouts.decode(self.doc_lengths, self.doc_bytes)
        grades = self.grades.tolist()
        firsts, counts = self.firsts.tolist(), self.counts.tolist()
        ids, texts = self.ids, self.texts
        for lo in range(0, len(order), size):
            block = []
            for i in order[lo : lo + size]:
                a = firsts[i]
                b = a + counts[i]
                block.append((ids[i], texts[i], sorted(zip(docs[a:b], grades[a:b], strict=True))))
            yield block

    def take(self, picked: Sequence[int] | NDArray[np.integer[Any]]) -> EvalColumns:
        """Return the queries at positions ``picked``, in that order."""
        at = np.asarray(picked, dtype=np.int64)
        rows = at.tolist()
        counts = self.counts[at]
        # Each picked query's judgments: its range of them, the ranges end to end.
        starts = np.repeat(self.firsts[at] - layouts.starts_of(counts), counts)
        judged = starts + np.arange(int(counts.sum()), dtype=np.int64)
        lengths, data = layouts.gather(self.doc_lengths, self.doc_bytes, judged, self.doc_starts)
        return EvalColumns(
            tuple(map(self.ids.__getitem__, rows)),
            tuple(map(self.texts.__getitem__, rows)),
            tuple(map(self.metadata.__getitem__, rows)),
            counts,
            lengths.astype(np.int64),
            data,
            self.grades[judged],
        )

    def relevant_words(self) -> tuple[NDArray[np.int64], NDArray[np.uint64]]:
        """Return how many docs each query judges relevant (grade >= 1), and those docs'
        ids end to end as big-endian 64-bit words, as many a row as the longest needs."""
        relevant = self.grades >= 1
        owner = np.repeat(np.arange(len(self), dtype=np.int64), self.counts)
        counts = np.bincount(owner[relevant], minlength=len(self)).astype(np.int64)
        docs = self.docs(relevant)
        longest = int(docs.layout()[0].max(initial=1))
        return counts, docs.packed(max(1, -(-longest // 8)))[1]

    def qrels(self) -> ColumnQrels:
        """Return query id -> doc id -> grade, each query's dict built when it is read."""
        return ColumnQrels(self)

    def by_id(self, values: Sequence[V]) -> ByQuery[V]:
        """Return query id -> ``values[i]`` for the query at position ``i``."""
        return ByQuery(self, values)

    # --- look-up by id ------------------------------------------------------------------

    @cached_property
    def _index(self) -> tuple[NDArray[np.int64], NDArray[np.intp]]:
        """Return the ids' hashes sorted, and the position of each (16 bytes a query, where
        a dict of the ids would take about 100)."""
        hashes = np.fromiter(map(hash, self.ids), dtype=np.int64, count=len(self.ids))
        order = np.argsort(hashes, kind="stable")
        return hashes[order], order

    def position(self, query_id: object) -> int | None:
        """Return the position of the query with id ``query_id``, or None."""
        if not isinstance(query_id, str):
            return None
        hashes, order = self._index
        h = hash(query_id)
        at = int(np.searchsorted(hashes, h))
        while at < hashes.size and int(hashes[at]) == h:
            i = int(order[at])
            if self.ids[i] == query_id:
                return i
            at += 1
        return None

    def same_ids(self, ids: Sequence[str]) -> bool:
        """Return whether ``ids`` are these queries' ids, in this order."""
        if len(ids) != len(self.ids):
            return False
        return (ids if isinstance(ids, tuple) else tuple(ids)) == self.ids


class JudgedDocs(Sequence[str]):
    """Judged doc ids end to end (all of an eval set's, or those picked), read as strings
    only when asked: the metric engine packs them into words from the bytes instead."""

    __slots__ = ("_columns", "_picked")

    def __init__(self, columns: EvalColumns, picked: NDArray[np.intp] | None) -> None:
        self._columns = columns
        self._picked = picked

    def __len__(self) -> int:
        return self._columns.doc_lengths.size if self._picked is None else self._picked.size

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return self.strings()[index]
        i = range(len(self))[index]
        j = i if self._picked is None else int(self._picked[i])
        start = int(self._columns.doc_starts[j])
        raw = self._columns.doc_bytes[start : start + int(self._columns.doc_lengths[j])]
        return raw.tobytes().decode("utf-8")

    def __iter__(self) -> Iterator[str]:
        return iter(self.strings())

    def layout(self) -> tuple[NDArray[np.int64], NDArray[np.uint8], NDArray[np.int64]]:
        """Return the docs' byte lengths, the bytes they are in, and where each starts."""
        columns = self._columns
        if self._picked is None:
            return columns.doc_lengths, columns.doc_bytes, columns.doc_starts
        picked = self._picked
        return columns.doc_lengths[picked], columns.doc_bytes, columns.doc_starts[picked]

    def strings(self) -> list[str]:
        """Return the docs as strings, in order."""
        columns = self._columns
        if self._picked is None:
            return layouts.decode(columns.doc_lengths, columns.doc_bytes)
        picked = layouts.gather(
            columns.doc_lengths, columns.doc_bytes, self._picked, columns.doc_starts
        )
        return layouts.decode(*picked)

    def packed(self, width: int) -> tuple[NDArray[np.int64], NDArray[np.uint64]]:
        """Return each doc's length in bytes and its first ``8 * width`` bytes as big-endian
        64-bit words, zero padded (a longer doc's words are cut: its length tells)."""
        lengths, data, starts = self.layout()
        words = layouts.packed_words(lengths, data, starts, width)
        return lengths.astype(np.int64, copy=False), words


#: Queries built at a time when the columns are iterated.
_RECORD_BLOCK = 4096


class ColumnQrels(Mapping[str, Mapping[str, int]]):
    """Query id -> doc id -> grade over :class:`EvalColumns`, in query order; a query's
    judgments are built as a dict each time they are read."""

    __slots__ = ("columns",)

    def __init__(self, columns: EvalColumns) -> None:
        self.columns = columns

    def __len__(self) -> int:
        return len(self.columns)

    def __iter__(self) -> Iterator[str]:
        return iter(self.columns.ids)

    def __contains__(self, key: object) -> bool:
        return self.columns.position(key) is not None

    def __getitem__(self, key: str) -> Mapping[str, int]:
        i = self.columns.position(key)
        if i is None:
            raise KeyError(key)
        return self.columns.judgments(i)

    def pooled_ids(self) -> list[str]:
        """Return the ids of the queries judging some doc not relevant (grade <= 0)."""
        columns = self.columns
        owner = np.repeat(np.arange(len(columns), dtype=np.int64), columns.counts)
        pooled = np.unique(owner[columns.grades <= 0])
        return [columns.ids[i] for i in pooled.tolist()]


class ByQuery(Mapping[str, V]):
    """Query id -> one value per query of :class:`EvalColumns`, looked up without a dict."""

    __slots__ = ("_columns", "_values")

    def __init__(self, columns: EvalColumns, values: Sequence[V]) -> None:
        if len(values) != len(columns):
            raise ValueError("ByQuery takes one value a query")
        self._columns = columns
        self._values = values

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns.ids)

    def __getitem__(self, key: str) -> V:
        i = self._columns.position(key)
        if i is None:
            raise KeyError(key)
        return self._values[i]

    def rows(self, ids: Sequence[str], default: Any) -> Sequence[Any]:
        """Return the value of each query of ``ids`` (``default`` for one not here): the
        values themselves when ``ids`` are all the queries in order."""
        if self._columns.same_ids(ids):
            return self._values
        return [self.get(query_id, default) for query_id in ids]


def _joined(arrays: list[NDArray[Any]], dtype: Any) -> NDArray[Any]:
    return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(0, dtype)
