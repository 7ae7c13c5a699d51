"""Small frozen records passed between the stages of a run.

A stage takes and returns these, never raw dicts: the eval set yields :class:`Query`, a
search function yields :class:`Hit`, and the runner records one :class:`QueryOutcome` per
query. numpy and pandas stay inside the stages.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, chain, compress, repeat
from operator import attrgetter, methodcaller
from types import MappingProxyType
from typing import Any, TypeVar, overload

#: Reads a hit's id in C: a ranking's ids are read once per query per stage.
_ID = attrgetter("id")
_JUDGMENTS = attrgetter("judgments")

R = TypeVar("R")

#: Scalar metadata values a query may carry (category, difficulty, language, ...).
MetaValue = str | int | float | bool | None


@dataclass(frozen=True, slots=True)
class Query:
    """One query of an eval set with its relevance judgments.

    ``judgments`` maps a doc id to an integer grade: a grade of 1 or more is relevant, 0 and
    negative grades are judged not relevant. Binary labels are grade 1.
    """

    id: str
    text: str
    judgments: Mapping[str, int] = field(default_factory=dict, hash=False)
    metadata: Mapping[str, MetaValue] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        # Freeze the mappings so that a Query handed to a plug-in cannot change the eval set.
        object.__setattr__(self, "judgments", MappingProxyType(dict(self.judgments)))
        object.__setattr__(self, "metadata", MappingProxyType(dict(self.metadata)))

    @property
    def relevant_ids(self) -> tuple[str, ...]:
        """Return the ids judged relevant (grade >= 1), in judgment order."""
        return tuple([doc for doc, grade in self.judgments.items() if grade >= 1])

    @property
    def answerable(self) -> bool:
        """Return whether at least one document is judged relevant."""
        return any(grade >= 1 for grade in self.judgments.values())


def relevant_columns(queries: Sequence[Query]) -> tuple[list[int], list[str]]:
    """Return, for ``queries`` in order, how many ids each judges relevant and those ids end
    to end: each query's :attr:`Query.relevant_ids`, read for all of them in C."""
    judgments = list(map(_JUDGMENTS, queries))
    grades = list(chain.from_iterable(map(methodcaller("values"), judgments)))
    relevant = [grade >= 1 for grade in grades]
    ids = list(compress(chain.from_iterable(judgments), relevant))
    if all(relevant):
        return list(map(len, judgments)), ids
    ends = list(accumulate(map(len, judgments)))
    marks = list(accumulate(relevant, initial=0))
    counts = [marks[end] - marks[start] for start, end in zip([0, *ends[:-1]], ends, strict=True)]
    return counts, ids


def owned_query(
    query_id: str, text: str, judgments: dict[str, int], metadata: dict[str, MetaValue]
) -> Query:
    """Return a Query of checked parts whose dicts no one else holds: they are frozen as
    they are, without the copies ``Query(...)`` makes."""
    return owned_queries([query_id], [text], [judgments], [metadata])[0]


def owned_queries(
    ids: Sequence[str],
    texts: Sequence[str],
    judgments: Sequence[dict[str, int]],
    metadata: Sequence[dict[str, MetaValue]],
) -> list[Query]:
    """Return the Queries of checked parts given column by column, as :func:`owned_query`
    builds one: a reader builds a million of them, each field set for all of them in C.

    Each dict is frozen as it is, so none may be held by anyone else (one empty dict may
    serve several queries: nothing can change it through their read-only views).
    """
    count = len(ids)
    if not count == len(texts) == len(judgments) == len(metadata):
        raise ValueError("owned_queries takes columns of one length")
    queries = list(map(_NEW, repeat(Query, count)))
    deque(map(_SET_ID, queries, ids), 0)
    deque(map(_SET_TEXT, queries, texts), 0)
    deque(map(_SET_JUDGMENTS, queries, map(MappingProxyType, judgments)), 0)
    deque(map(_SET_METADATA, queries, map(MappingProxyType, metadata)), 0)
    return queries


# The slots' own setters: a frozen dataclass refuses setattr, and these skip its check.
_NEW = object.__new__
_SET_ID = Query.__dict__["id"].__set__
_SET_TEXT = Query.__dict__["text"].__set__
_SET_JUDGMENTS = Query.__dict__["judgments"].__set__
_SET_METADATA = Query.__dict__["metadata"].__set__


class DictRows(Sequence[dict[str, object]]):
    """Rows of flat dicts, ``keys`` in that order, read from ``columns`` (a sequence a key,
    all of one length; numpy arrays give Python numbers): each dict is built when read. A
    report's per-query rows are written a block at a time from these (``run --format
    json``) where a list of a million dicts would be held at once."""

    __slots__ = ("columns", "keys")

    def __init__(self, keys: Sequence[str], columns: Sequence[Any]) -> None:
        if len(keys) != len(columns) or len({len(column) for column in columns}) > 1:
            raise ValueError("DictRows takes one column a key, all of one length")
        self.keys = tuple(keys)
        self.columns = tuple(columns)

    def __len__(self) -> int:
        return len(self.columns[0]) if self.columns else 0

    @overload
    def __getitem__(self, index: int) -> dict[str, object]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, object]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, object] | list[dict[str, object]]:
        if isinstance(index, slice):
            parts = [_listed(column[index]) for column in self.columns]
            return [dict(zip(self.keys, row, strict=True)) for row in zip(*parts, strict=True)]
        i = range(len(self))[index]
        row = [_listed(column[i : i + 1])[0] for column in self.columns]
        return dict(zip(self.keys, row, strict=True))


def _listed(values: Sequence[Any]) -> list[object]:
    """Return ``values`` as a list of Python objects (numpy's numbers as Python's)."""
    tolist = getattr(values, "tolist", None)
    return list(tolist()) if tolist is not None else list(values)


class BuiltWhenRead(Sequence[R]):
    """A sequence of records each built when it is read (from arrays): equal to any
    sequence, a tuple among them, of equal records in the same order."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to tuples, so never hashed


@dataclass(frozen=True, slots=True)
class Hit:
    """One retrieved document: its id, and the score and text when the search gives them."""

    id: str
    score: float | None = None
    text: str | None = None


@dataclass(frozen=True, slots=True)
class QueryOutcome:
    """What happened to one query of a run.

    ``hits`` is the ranking best first, already free of repeated ids (``duplicates`` counts
    the later copies that were dropped). A failed query has ``error_type`` set and no hits;
    a monitored run leaves it out of the quality metrics (the error rate counts it).
    """

    query_id: str
    query: str
    hits: tuple[Hit, ...] = ()
    relevant_ids: tuple[str, ...] = ()
    latency_seconds: float | None = None
    error_type: str | None = None
    error_message: str | None = None
    duplicates: int = 0

    @property
    def retrieved_ids(self) -> tuple[str, ...]:
        """Return the retrieved doc ids, best first."""
        return tuple(map(_ID, self.hits))

    @property
    def scores(self) -> tuple[float | None, ...]:
        """Return the retrieved documents' scores, best first (``None`` where not given)."""
        return tuple(hit.score for hit in self.hits)

    @property
    def contents(self) -> tuple[str | None, ...]:
        """Return the retrieved documents' texts, best first (``None`` where not given)."""
        return tuple(hit.text for hit in self.hits)

    @property
    def failed(self) -> bool:
        """Return whether the search raised or timed out for this query."""
        return self.error_type is not None

    @property
    def empty(self) -> bool:
        """Return whether the search answered with no hits (a failure is not empty)."""
        return not self.failed and not self.hits


@dataclass(frozen=True, slots=True)
class LatencySummary:
    """Latency of the answered queries, in seconds (None when no query was answered).

    Percentiles interpolate linearly between the two nearest latencies (numpy's default).
    """

    count: int = 0
    mean: float | None = None
    p50: float | None = None
    p95: float | None = None
    p99: float | None = None
    max: float | None = None

    @classmethod
    def of(cls, latencies: Iterable[float]) -> LatencySummary:
        """Summarise ``latencies``."""
        ordered = sorted(latencies)
        if not ordered:
            return cls()
        return cls(
            count=len(ordered),
            mean=math.fsum(ordered) / len(ordered),
            p50=_percentile(ordered, 50),
            p95=_percentile(ordered, 95),
            p99=_percentile(ordered, 99),
            max=ordered[-1],
        )


def _percentile(ordered: Sequence[float], q: float) -> float:
    """Return the q-th percentile of sorted values by linear interpolation."""
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
