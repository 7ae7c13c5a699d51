"""A run's outcomes as columns: what a search answering in bulk leaves (:class:`OutcomeTable`).

A run answered query by query keeps one :class:`~monitor.records.QueryOutcome` per query,
each with a tuple of :class:`~monitor.records.Hit`. A run answered in bulk
(:mod:`monitor.search.answers`) keeps its answers as they came, arrays over every hit, and is
a sequence of outcomes all the same: an outcome is built when it is read, and the stages that
read every query (the metrics, the store, the run's figures) read the arrays instead.

Every query of a bulk answer was answered: a bulk search either answers the whole eval set or
raises, which fails the run. Its queries share the call's latency: each is given the call's
time divided by the number of queries.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, overload

import numpy as np

from monitor.evalset.columns import ids_of
from monitor.records import BuiltWhenRead, Hit, Query, QueryOutcome

if TYPE_CHECKING:
    import numpy.typing as npt

    from monitor.search.answers import Answers
    from monitor.search.trec_columns import TrecColumns


#: Outcomes built at a time when the table is iterated.
_BLOCK = 4096


@dataclass(frozen=True, eq=False)
class OutcomeTable(BuiltWhenRead[QueryOutcome]):
    """The outcomes of ``queries`` answered in one call, in their order.

    ``answers`` holds every query's hits (:class:`~monitor.search.answers.Answers`) and
    ``latency_seconds`` each query's share of the call's time.
    """

    queries: Sequence[Query]
    answers: Answers
    latency_seconds: float

    def __post_init__(self) -> None:
        if len(self.answers) != len(self.queries):
            raise ValueError(
                f"{len(self.answers)} answers for {len(self.queries)} queries: one a query"
            )

    def __len__(self) -> int:
        return len(self.queries)

    @overload
    def __getitem__(self, index: int) -> QueryOutcome: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[QueryOutcome, ...]: ...

    def __getitem__(self, index: int | slice) -> QueryOutcome | tuple[QueryOutcome, ...]:
        if isinstance(index, slice):
            return tuple(self._outcome(i) for i in range(*index.indices(len(self))))
        size = len(self)
        if not -size <= index < size:
            raise IndexError("outcome index out of range")
        return self._outcome(index % size)

    def __iter__(self) -> Iterator[QueryOutcome]:
        # A block of queries' records at a time: an eval set held as columns builds them
        # together, where one by one each would decode its judgments alone.
        for lo in range(0, len(self), _BLOCK):
            queries = self.queries[lo : lo + _BLOCK]
            yield from map(self._outcome, range(lo, lo + len(queries)), queries)

    def _outcome(self, i: int, query: Query | None = None) -> QueryOutcome:
        query = self.queries[i] if query is None else query
        answers = self.answers
        start = int(self._starts[i])
        end = start + int(answers.counts[i])
        scores = [None if s != s else s for s in answers.scores[start:end].tolist()]
        hits = tuple(map(Hit, answers.doc_ids(start, end), scores))
        return QueryOutcome(
            query.id,
            query.text,
            hits,
            query.relevant_ids,
            self.latency_seconds,
            None,
            None,
            int(answers.duplicates[i]),
        )

    @cached_property
    def _starts(self) -> npt.NDArray[np.int64]:
        return self.answers.starts

    @property
    def query_ids(self) -> list[str]:
        """Return the queries' ids, in order."""
        return list(ids_of(self.queries))

    @property
    def empty(self) -> int:
        """Return how many queries were answered with no hits."""
        return int(np.count_nonzero(self.answers.counts == 0))

    @property
    def duplicates(self) -> int:
        """Return how many repeated ids were dropped over all queries."""
        return int(self.answers.duplicates.sum())

    def _first_scores(self) -> npt.NDArray[np.float64]:
        """Return the score of each ranking's first hit, for the rankings that have one."""
        answers = self.answers
        heads = answers.scores[self._starts[answers.counts > 0]]
        return heads[~np.isnan(heads)]

    def mean_top1_score(self) -> float | None:
        """Return :attr:`monitor.runner.RunResult.mean_top1_score` of these outcomes."""
        scores = self._first_scores()
        if not scores.size or not np.isfinite(scores).all():
            return None
        # The shares, summed exactly, as the outcomes' own figure sums them.
        return math.fsum((scores / scores.size).tolist())

    def columns(self) -> TrecColumns:
        """Return the rankings as a TREC run's columns, rows in ranking order (no copies),
        for the metric engine's bulk look-up."""
        from monitor.search.trec_columns import ranking_columns

        answers = self.answers
        return ranking_columns(self.query_ids, answers.counts, answers.doc_words, answers.scores)

    def retrieved_words(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]]:
        """Return each query's hit count and every hit's doc id words, in order."""
        return self.answers.counts, self.answers.doc_words
