"""The frozen records the store saves and returns.

They are the store's own, independent of the runner's types: whoever composes a run turns
its result into a :class:`RunRecord`, and readers (comparison, reports, the CLI) get the same
records back. Timestamps are timezone-aware and returned in UTC.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from itertools import chain, repeat
from operator import is_
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal, TypedDict, cast, overload

import numpy as np

from monitor.errors import UsageError
from monitor.records import LatencySummary
from monitor.run.rankings import Rankings

if TYPE_CHECKING:
    from numpy.typing import NDArray

#: The status of a saved run: ``"ok"`` when it produced metrics, ``"failed"`` otherwise.
RunStatus = Literal["ok", "failed"]

RUN_STATUSES: tuple[RunStatus, ...] = ("ok", "failed")


@dataclass(frozen=True, slots=True)
class QueryRecord:
    """One query of a saved run: its metric values, rankings, latency and error.

    ``values`` maps canonical metric names (``ndcg@10``) to this query's value.
    """

    query_id: str
    values: Mapping[str, float] = field(default_factory=dict)
    retrieved_ids: tuple[str, ...] = ()
    relevant_ids: tuple[str, ...] = ()
    latency_seconds: float | None = None
    error_type: str | None = None
    error_message: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", _frozen_floats(self.values))
        object.__setattr__(self, "retrieved_ids", tuple(self.retrieved_ids))
        object.__setattr__(self, "relevant_ids", tuple(self.relevant_ids))


def stored_query(
    query_id: str,
    values: dict[str, float],
    retrieved_ids: tuple[str, ...],
    relevant_ids: tuple[str, ...],
    latency_seconds: float | None,
    error_type: str | None,
    error_message: str | None,
) -> QueryRecord:
    """Return a QueryRecord of fields the store read back, already of the right types.

    It skips the conversions of ``__post_init__`` (a float per metric per query), which
    cost more than reading a 100,000-query run; the store only passes values it wrote from
    checked records: str keys, float values, tuples of str.
    """
    record = object.__new__(QueryRecord)
    setattr_ = object.__setattr__
    setattr_(record, "query_id", query_id)
    setattr_(record, "values", MappingProxyType(values))
    setattr_(record, "retrieved_ids", retrieved_ids)
    setattr_(record, "relevant_ids", relevant_ids)
    setattr_(record, "latency_seconds", latency_seconds)
    setattr_(record, "error_type", error_type)
    setattr_(record, "error_message", error_message)
    return record


@dataclass(frozen=True, slots=True)
class QueryColumns:
    """A run's queries as the columns the store saves: the one form of a stored run's detail.

    Row ``i`` is query ``query_ids[i]``: its latency (None when unknown), error, rankings
    (:class:`~monitor.run.rankings.Rankings`, ids coded into a dictionary of ids), and in
    ``values[i]`` its value of each of ``metrics``, where ``present[i]`` says which of them
    it has (``values`` and ``present`` are queries x metrics, ``values`` NaN where a value is
    not present). The store encodes it as is and reads it back the same.
    """

    query_ids: Sequence[str]
    latency_seconds: Sequence[float | None]
    error_types: Sequence[str | None]
    error_messages: Sequence[str | None]
    retrieved_ids: Rankings
    relevant_ids: Rankings
    metrics: tuple[str, ...]
    values: NDArray[np.float64]
    present: NDArray[np.bool_]
    # answered(), read by several stages of one comparison: found once.
    _answered: list[NDArray[np.bool_]] = field(
        default_factory=list, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        n = len(self.query_ids)
        shape = (n, len(self.metrics))
        fields = (
            self.latency_seconds,
            self.error_types,
            self.error_messages,
            self.retrieved_ids,
            self.relevant_ids,
        )
        if any(len(column) != n for column in fields):
            raise UsageError(f"every column of a run's queries must have {n} rows, one a query")
        if self.values.shape != shape or self.present.shape != shape:
            raise UsageError(
                f"a run's metric values must be {shape[0]} queries x {shape[1]} metrics,"
                f" not {self.values.shape} (present: {self.present.shape})"
            )

    @classmethod
    def of(cls, queries: Sequence[QueryRecord]) -> QueryColumns:
        """Return ``queries`` as columns: metrics in the order they first appear, the ids of
        both rankings numbered in order of first appearance over the retrieved ids, then the
        relevant ones (as the store numbers them)."""
        metrics = list(dict.fromkeys(chain.from_iterable(q.values for q in queries)))
        usual = tuple(metrics)
        present = np.ones((len(queries), len(metrics)), dtype=np.bool_)
        rows: list[list[float]] = []
        for i, query in enumerate(queries):
            values = query.values
            if tuple(values) == usual:  # the common case: every metric, in the usual order
                rows.append(list(values.values()))
                continue
            rows.append([values.get(name, math.nan) for name in metrics])
            present[i] = [name in values for name in metrics]
        matrix = np.array(rows, dtype=np.float64).reshape(len(queries), len(metrics))
        rankings = [q.retrieved_ids for q in queries] + [q.relevant_ids for q in queries]
        retrieved, relevant = Rankings.of(rankings).split(len(queries))
        return cls(
            query_ids=[q.query_id for q in queries],
            latency_seconds=[q.latency_seconds for q in queries],
            error_types=[q.error_type for q in queries],
            error_messages=[q.error_message for q in queries],
            retrieved_ids=retrieved,
            relevant_ids=relevant,
            metrics=tuple(metrics),
            values=matrix,
            present=present,
        )

    def __len__(self) -> int:
        return len(self.query_ids)

    def answered(self) -> NDArray[np.bool_]:
        """Return whether the search answered each query (its error type is None); the
        array is shared: read it, do not write it."""
        if not self._answered:
            types = self.error_types
            mask = np.fromiter(map(is_, types, repeat(None)), np.bool_, len(types))
            mask.flags.writeable = False
            self._answered.append(mask)
        return self._answered[0]


class ColumnQueries(Sequence[QueryRecord]):
    """A run's queries read from its columns, a :class:`QueryRecord` built only for a query
    indexed (or all of them, once, when iterated).

    ``columns`` are the arrays they are read from.
    """

    __slots__ = ("_built", "columns")

    def __init__(self, columns: QueryColumns):
        self.columns = columns
        self._built: tuple[QueryRecord, ...] | None = None

    def __len__(self) -> int:
        return len(self.columns)

    @overload
    def __getitem__(self, index: int) -> QueryRecord: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[QueryRecord, ...]: ...

    def __getitem__(self, index: int | slice) -> QueryRecord | tuple[QueryRecord, ...]:
        if self._built is not None or isinstance(index, slice):
            return self.records()[index]
        n = len(self)
        i = index + n if index < 0 else index
        if not 0 <= i < n:
            raise IndexError(f"query {index} of {n}")
        c = self.columns
        marks = cast("list[bool]", c.present[i].tolist())
        row = cast("list[float]", c.values[i].tolist())
        return stored_query(
            c.query_ids[i],
            {m: v for m, v, ok in zip(c.metrics, row, marks, strict=True) if ok},
            c.retrieved_ids[i],
            c.relevant_ids[i],
            c.latency_seconds[i],
            c.error_types[i],
            c.error_messages[i],
        )

    def __iter__(self) -> Iterator[QueryRecord]:
        return iter(self.records())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(self) == len(other) and self.records() == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal by content, as a tuple is

    def __repr__(self) -> str:
        return repr(self.records())  # as the tuple of records earlier versions returned

    def records(self) -> tuple[QueryRecord, ...]:
        """Return every query as a record, built once."""
        if self._built is None:
            c = self.columns
            self._built = tuple(
                map(
                    stored_query,
                    c.query_ids,
                    _value_dicts(c.metrics, c.values, c.present),
                    list(c.retrieved_ids),
                    list(c.relevant_ids),
                    c.latency_seconds,
                    c.error_types,
                    c.error_messages,
                )
            )
        return self._built


def _value_dicts(
    metrics: tuple[str, ...], matrix: NDArray[np.float64], present: NDArray[np.bool_]
) -> list[dict[str, float]]:
    """Return each query's ``{metric: value}`` of a queries x metrics matrix, in order."""
    n = len(matrix)
    if not metrics:
        return [{} for _ in range(n)]
    full = cast("list[bool]", present.all(axis=1).tolist())
    rows: list[list[float]] = matrix.tolist()
    marks: list[list[bool]] = present.tolist()
    return [
        dict(zip(metrics, row, strict=True))
        if whole
        else {name: v for name, v, ok in zip(metrics, row, mark, strict=True) if ok}
        for row, mark, whole in zip(rows, marks, full, strict=True)
    ]


@dataclass(frozen=True, slots=True)
class RunFigures:
    """The figures of a whole run, beside its metric means.

    ``latency`` covers the answered queries. ``sent`` is how many queries were sent, ``failed``
    how many of them failed, and ``evaluated`` how many the metric means are over (the
    judged queries: a query without a relevant judgment is sent but not evaluated). Rates are
    shares in 0..1; a figure that could not be computed, or is not a finite number, is None.
    """

    latency: LatencySummary = field(default_factory=LatencySummary)
    error_rate: float | None = None
    zero_result_rate: float | None = None
    mean_top1_score: float | None = None
    queries_per_second: float | None = None
    index_size: int | None = None
    sent: int = 0
    failed: int = 0
    evaluated: int = 0
    ann_recall: float | None = None
    ann_recall_k: int | None = None

    def __post_init__(self) -> None:
        for name in ("error_rate", "zero_result_rate"):
            value = _known(getattr(self, name), name)
            if value is not None and not 0.0 <= value <= 1.0:
                raise UsageError(f"{name} must be a share in 0..1, not {value!r}")
            object.__setattr__(self, name, value)
        for name in ("mean_top1_score", "queries_per_second"):
            object.__setattr__(self, name, _known(getattr(self, name), name))
        recall = _known(self.ann_recall, "ann_recall")
        if recall is not None and not 0.0 <= recall <= 1.0:
            raise UsageError(f"ann_recall must be a share in 0..1, not {recall!r}")
        object.__setattr__(self, "ann_recall", recall)
        for name in ("sent", "failed", "evaluated", "index_size", "ann_recall_k"):
            value = getattr(self, name)
            if value is None and name in ("index_size", "ann_recall_k"):
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise UsageError(f"{name} must be a count (an integer >= 0), not {value!r}")
        if self.failed > self.sent:
            raise UsageError(f"failed ({self.failed}) exceeds the queries sent ({self.sent})")


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One run of a suite as the store keeps it.

    ``run_id`` is assigned by the store (``None`` until saved). ``means`` maps canonical metric
    names to their means (NaN when a mean could not be computed); ``figures`` holds the run's
    latency, rates and counts. ``stats`` is what the search plug-in reported (index size,
    versions); it must be JSON-serialisable and reads back as JSON types (a tuple as a list).
    ``config_hash`` digests the suite's configuration, ``evalset_fingerprint`` the eval set.
    ``pruned_at`` says when retention dropped the run's per-query detail: then ``queries`` is
    empty and only the means and figures remain.

    The queries are held as columns (:class:`QueryColumns`), the form the store saves and
    every reader of the whole run takes; ``queries`` reads them as records, each built when
    read (:class:`ColumnQueries`). Records given as ``queries`` are read into columns once.
    """

    suite: str
    pipeline: str
    started_at: datetime
    finished_at: datetime
    status: RunStatus = "ok"
    evalset_fingerprint: str = ""
    config_hash: str = ""
    means: Mapping[str, float] = field(default_factory=dict)
    figures: RunFigures = field(default_factory=RunFigures)
    stats: Mapping[str, object] = field(default_factory=dict)
    error: str | None = None
    queries: Sequence[QueryRecord] = ()
    run_id: int | None = None
    pruned_at: datetime | None = None
    columns: QueryColumns = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.status not in RUN_STATUSES:
            raise UsageError(f"run status must be 'ok' or 'failed', not {self.status!r}")
        if not self.suite:
            raise UsageError("a run needs a suite name")
        object.__setattr__(self, "started_at", utc(self.started_at, "started_at"))
        object.__setattr__(self, "finished_at", utc(self.finished_at, "finished_at"))
        object.__setattr__(self, "means", _frozen_floats(self.means))
        object.__setattr__(self, "stats", MappingProxyType(dict(self.stats)))
        queries = self.queries
        if not isinstance(queries, ColumnQueries):  # records: read into columns once
            queries = ColumnQueries(QueryColumns.of(tuple(queries)))
            object.__setattr__(self, "queries", queries)
        object.__setattr__(self, "columns", queries.columns)
        if self.pruned_at is not None:
            object.__setattr__(self, "pruned_at", utc(self.pruned_at, "pruned_at"))

    def query(self, query_id: str) -> QueryRecord | None:
        """Return the query ``query_id`` (None when the run has none), building its record
        alone."""
        try:
            return self.queries[self.columns.query_ids.index(query_id)]
        except ValueError:
            return None

    def failed_queries(self) -> tuple[QueryRecord, ...]:
        """Return the queries whose search failed, in order, building a record for those
        alone."""
        rows = np.flatnonzero(~self.columns.answered()).tolist()
        return tuple(map(self.queries.__getitem__, rows))

    @property
    def ok(self) -> bool:
        """Return whether the run finished with metrics."""
        return self.status == "ok"

    @property
    def duration_seconds(self) -> float:
        """Return the wall time of the run."""
        return (self.finished_at - self.started_at).total_seconds()


@dataclass(frozen=True, slots=True)
class RunSummary:
    """A saved run without its per-query records, as :meth:`Store.list_runs` lists it."""

    run_id: int
    suite: str
    pipeline: str
    status: RunStatus
    started_at: datetime
    finished_at: datetime
    query_count: int
    means: Mapping[str, float] = field(default_factory=dict)
    error: str | None = None
    #: When retention dropped the run's per-query detail (``query_count`` still counts them).
    pruned_at: datetime | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "means", _frozen_floats(self.means))


@dataclass(frozen=True, slots=True)
class Baseline:
    """The run pinned as a suite's baseline, and when it was pinned."""

    suite: str
    run_id: int
    pinned_at: datetime


@dataclass(frozen=True, slots=True)
class OutboxMessage:
    """A notification waiting in the outbox until a notifier delivers it.

    ``key`` identifies what the message is about (an alert's identity): enqueueing a message
    whose kind and key match an undelivered one replaces that one's payload.
    """

    id: int
    kind: str
    key: str
    payload: Mapping[str, object]
    created_at: datetime
    attempts: int = 0
    last_error: str | None = None
    last_attempt_at: datetime | None = None
    delivered_at: datetime | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "payload", MappingProxyType(dict(self.payload)))

    @property
    def delivered(self) -> bool:
        """Return whether a notifier has delivered the message."""
        return self.delivered_at is not None


@dataclass(frozen=True, slots=True)
class LockHolder:
    """Who holds a suite's run lock: host, process id, since when and until when."""

    suite: str
    host: str
    pid: int
    since: datetime
    expires_at: datetime
    token: str = field(repr=False, default="")


def utc(moment: datetime, name: str = "timestamp") -> datetime:
    """Return ``moment`` in UTC; refuse a naive datetime, whose zone nobody knows."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise UsageError(f"{name} must be a timezone-aware datetime, got {moment!r}")
    return moment.astimezone(timezone.utc)


def _frozen_floats(values: Mapping[str, float | None]) -> Mapping[str, float]:
    return MappingProxyType(
        {str(name): math.nan if value is None else float(value) for name, value in values.items()}
    )


class StatsFigures(TypedDict):
    """The RunFigures a run keeps in its search stats."""

    index_size: int | None
    ann_recall: float | None
    ann_recall_k: int | None


def stats_figures(stats: object) -> StatsFigures:
    """Return the figures a run keeps in its search stats (``index_size``, and the ANN
    recall of :mod:`monitor.search.health`) as RunFigures' keyword arguments."""
    known = stats if isinstance(stats, Mapping) else {}
    size, k = known.get("index_size"), known.get("ann_recall_k")
    recall = known.get(f"ann_recall@{k}") if type(k) is int else None
    numeric = isinstance(recall, int | float) and not isinstance(recall, bool)
    return {
        "index_size": size if type(size) is int and size >= 0 else None,
        "ann_recall": float(cast("float", recall)) if numeric else None,
        "ann_recall_k": k if type(k) is int and numeric else None,
    }


def _known(value: float | None, name: str) -> float | None:
    """Return ``value`` as a float, or None when it is not a finite number (not computable)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"{name} must be a number, not {value!r}")
    number = float(value)
    return number if math.isfinite(number) else None
