"""A run as one table: :class:`RunTable`, every query's hits, latency and error as columns.

Whatever way a search answered, one query at a time or every query in one call
(:mod:`monitor.search.answers`), the runner leaves a RunTable: per query its latency (NaN
where unknown), its error (type and message, for the queries that failed) and the repeated
ids dropped from its ranking; per hit its doc id, score (NaN where the search gave none) and,
when the search gave any, its text. The stages that read every query (the metrics, the
store, the run's figures) read the columns; a reader that wants one query gets a read-only
:class:`~monitor.records.QueryOutcome` built when it is read.

Doc ids are held as the bulk answers hold them: each id's UTF-8 bytes big-endian in 64-bit
words, zero padded (:class:`~monitor.run.answers.Answers`), so a million rankings cost a
few arrays and no Python object per hit. An id therefore holds no NUL character (the search
output check refuses one).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain
from types import MappingProxyType
from typing import TYPE_CHECKING, overload

import numpy as np

from monitor.errors import UsageError
from monitor.evalset.columns import EvalColumns
from monitor.records import (
    BuiltWhenRead,
    Hit,
    LatencySummary,
    Query,
    QueryOutcome,
)
from monitor.run.answers import Answers
from monitor.run.rankings import Rankings
from monitor.texts import pack_ids, widened

if TYPE_CHECKING:
    import numpy.typing as npt

    from monitor.search.trec_columns import TrecColumns


#: Outcomes built at a time when the table is iterated.
_BLOCK = 4096

#: What a failed query's row holds: its error type and message.
Failure = tuple[str, str | None]


@dataclass(frozen=True, eq=False)
class RunTable(BuiltWhenRead[QueryOutcome]):
    """The outcomes of ``queries`` run through one search, in their order.

    ``hits`` holds every query's ranking (:class:`~monitor.run.answers.Answers`: best
    first, repeated ids already dropped and counted), ``latency_seconds`` each query's
    latency (NaN where unknown), ``errors`` the failed queries' rows with their error type
    and message (a failed query has no hits), and ``hit_texts``, when the search gave any
    text, one text or None per hit.
    """

    queries: EvalColumns
    hits: Answers
    latency_seconds: npt.NDArray[np.float64]
    errors: Mapping[int, Failure] = field(default_factory=dict)
    hit_texts: Sequence[str | None] | None = None

    def __post_init__(self) -> None:
        n = len(self.queries)
        if len(self.hits) != n or len(self.latency_seconds) != n:
            raise UsageError(
                f"a run table of {n} queries needs as many rankings and latencies, not"
                f" {len(self.hits)} and {len(self.latency_seconds)}"
            )
        if any(not 0 <= row < n for row in self.errors):
            raise UsageError(f"a run table's failed rows must lie in 0..{n - 1}")
        if self.hit_texts is not None and len(self.hit_texts) != len(self.hits.scores):
            raise UsageError("a run table's hit texts need one text (or None) a hit")
        object.__setattr__(self, "errors", MappingProxyType(dict(self.errors)))

    # --- building ---------------------------------------------------------------------------

    @classmethod
    def answered(cls, queries: EvalColumns, answers: Answers, latency: float) -> RunTable:
        """Return the table of a bulk answer: every query answered, each given ``latency``."""
        return cls(queries, answers, np.full(len(queries), latency, dtype=np.float64))

    @classmethod
    def of(cls, outcomes: Sequence[QueryOutcome], queries: EvalColumns | None = None) -> RunTable:
        """Return the table of ``outcomes`` (one a query, in order).

        ``queries`` are the queries they answered, in the same order; without them each
        query is read back from its outcome (its id, text and relevant ids).
        """
        if isinstance(outcomes, RunTable):
            return outcomes
        if queries is None:
            queries = EvalColumns.of(
                [Query(o.query_id, o.query, dict.fromkeys(o.relevant_ids, 1)) for o in outcomes]
            )
        elif len(queries) != len(outcomes):
            raise UsageError(f"{len(outcomes)} outcomes for {len(queries)} queries: one a query")
        columns = queries
        every = list(chain.from_iterable(o.hits for o in outcomes))
        counts = np.fromiter((len(o.hits) for o in outcomes), np.int64, len(outcomes))
        ids = [hit.id for hit in every]
        try:
            words = pack_ids(ids) if ids else np.zeros((0, 1), dtype=np.uint64)
        except ValueError as error:  # a doc id holding a NUL
            raise UsageError(f"a run's doc ids: {error}") from None
        scores = np.fromiter(
            (math.nan if hit.score is None else hit.score for hit in every), np.float64, len(every)
        )
        answers = Answers(
            counts,
            words,
            scores,
            np.fromiter((o.duplicates for o in outcomes), np.int64, len(outcomes)),
        )
        latency = np.fromiter(
            (math.nan if o.latency_seconds is None else o.latency_seconds for o in outcomes),
            np.float64,
            len(outcomes),
        )
        errors = {
            i: (o.error_type, o.error_message)
            for i, o in enumerate(outcomes)
            if o.error_type is not None
        }
        texts = [hit.text for hit in every]
        given = any(text is not None for text in texts)
        return cls(columns, answers, latency, errors, texts if given else None)

    @classmethod
    def concatenate(cls, parts: Sequence[RunTable]) -> RunTable:
        """Return the tables ``parts`` (one or more) one after the other (shards' parts, say)."""
        if not parts:
            raise UsageError("a run table joins one part or more")
        if len(parts) == 1:
            return parts[0]
        errors: dict[int, Failure] = {}
        at = 0
        for part in parts:
            errors.update((at + row, failure) for row, failure in part.errors.items())
            at += len(part)
        queries = EvalColumns.concatenate([part.queries for part in parts])
        width = max(part.hits.doc_words.shape[1] for part in parts)
        answers = Answers(
            np.concatenate([part.hits.counts for part in parts]),
            np.concatenate([widened(part.hits.doc_words, width) for part in parts]),
            np.concatenate([part.hits.scores for part in parts]),
            np.concatenate([part.hits.duplicates for part in parts]),
        )
        latency = np.concatenate([part.latency_seconds for part in parts])
        texts: list[str | None] | None = None
        if any(part.hit_texts is not None for part in parts):
            texts = []
            for part in parts:
                texts.extend(part.hit_texts or [None] * len(part.hits.scores))
        return cls(queries, answers, latency, errors, texts)

    def take(
        self, rows: Sequence[int] | npt.NDArray[np.int64], queries: EvalColumns | None = None
    ) -> RunTable:
        """Return the queries at ``rows``, in that order; ``queries``, when given, stand in
        for theirs (the same ids: an eval set's records, where a part held only ids)."""
        at = np.asarray(rows, dtype=np.int64)
        hits = self.hits
        counts = hits.counts[at]
        starts = np.repeat(self._starts[at] - (np.cumsum(counts) - counts), counts)
        picked = starts + np.arange(int(counts.sum()), dtype=np.int64)
        # Each old row's new position (-1: not taken; a row taken twice, its last).
        where = np.full(len(self), -1, dtype=np.int64)
        where[at] = np.arange(at.size)
        moved = {row: int(where[row]) for row in self.errors}
        texts = None if self.hit_texts is None else [self.hit_texts[i] for i in picked.tolist()]
        return RunTable(
            self.queries.take(at.tolist()) if queries is None else queries,
            Answers(counts, hits.doc_words[picked], hits.scores[picked], hits.duplicates[at]),
            self.latency_seconds[at],
            {moved[row]: failure for row, failure in self.errors.items() if moved[row] >= 0},
            texts,
        )

    # --- one query, read-only ---------------------------------------------------------------

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
        hits = self.hits
        start = int(self._starts[i])
        end = start + int(hits.counts[i])
        scores = [None if s != s else s for s in hits.scores[start:end].tolist()]
        texts = self.hit_texts[start:end] if self.hit_texts is not None else [None] * len(scores)
        latency = float(self.latency_seconds[i])
        error_type, message = self.errors.get(i, (None, None))
        return QueryOutcome(
            query.id,
            query.text,
            tuple(map(Hit, hits.doc_ids(start, end), scores, texts)),
            query.relevant_ids,
            None if latency != latency else latency,
            error_type,
            message,
            int(hits.duplicates[i]),
        )

    @cached_property
    def _starts(self) -> npt.NDArray[np.int64]:
        return self.hits.starts

    # --- the figures of the whole run -------------------------------------------------------

    @property
    def query_ids(self) -> Sequence[str]:
        """Return the queries' ids, in order."""
        return self.queries.ids

    @property
    def failed(self) -> int:
        """Return how many queries failed."""
        return len(self.errors)

    @property
    def empty(self) -> int:
        """Return how many queries were answered with no hits (a failure is not empty)."""
        return int(np.count_nonzero(self.hits.counts == 0)) - self.failed

    @property
    def duplicates(self) -> int:
        """Return how many repeated ids were dropped over all queries."""
        return int(self.hits.duplicates.sum())

    @property
    def hit_count(self) -> int:
        """Return how many hits the rankings hold in all."""
        return int(self.hits.counts.sum())

    def failed_rows(self) -> npt.NDArray[np.bool_]:
        """Return, per query, whether it failed."""
        marks = np.zeros(len(self), dtype=bool)
        marks[list(self.errors)] = True
        return marks

    def error_counts(self) -> dict[str, int]:
        """Return the number of failed queries by error type, most frequent first."""
        return dict(Counter(kind for kind, _ in self.errors.values()).most_common())

    def failures(self) -> tuple[QueryOutcome, ...]:
        """Return the failed queries' outcomes, in query order."""
        return tuple(self._outcome(row) for row in sorted(self.errors))

    def latency(self) -> LatencySummary:
        """Return the latency summary of the answered queries whose latency is known."""
        known = self.latency_seconds[~self.failed_rows() & ~np.isnan(self.latency_seconds)]
        return LatencySummary.of(known.tolist())

    def ran(self) -> int:
        """Return how many queries were run (those cut by the deadline were not)."""
        return len(self) - sum(1 for kind, _ in self.errors.values() if kind == "deadline")

    def mean_top1_score(self) -> float | None:
        """Return the mean score of the first hit over the answers whose first hit has one;
        None when none has, or when one is not finite (the mean is not a number then)."""
        hits = self.hits
        heads = hits.scores[self._starts[hits.counts > 0]]
        scores = heads[~np.isnan(heads)]
        if not scores.size or not np.isfinite(scores).all():
            return None
        # Sum the shares, exactly: a sum of finite scores near 1e308 overflows.
        return math.fsum((scores / scores.size).tolist())

    def error_columns(self) -> tuple[list[str | None], list[str | None]]:
        """Return each query's error type and message (None for an answered query)."""
        types: list[str | None] = [None] * len(self)
        messages: list[str | None] = [None] * len(self)
        for row, (kind, message) in self.errors.items():
            types[row], messages[row] = kind, message
        return types, messages

    def latency_list(self) -> list[float | None]:
        """Return each query's latency, None where unknown."""
        return [None if s != s else s for s in self.latency_seconds.tolist()]

    def hit_text_by_id(self) -> dict[str, str]:
        """Return the texts the search gave, by doc id (the last given for an id)."""
        if self.hit_texts is None:
            return {}
        ids = self.hits.doc_ids(0, len(self.hit_texts))
        return {doc: text for doc, text in zip(ids, self.hit_texts, strict=True) if text}

    # --- for the metrics and the store ------------------------------------------------------

    def ranking_columns(self, *, answered_only: bool = False) -> TrecColumns:
        """Return the rankings as a TREC run's columns for the metric engine, rows in ranking
        order; with ``answered_only`` the failed queries are left out (they rank nothing)."""
        # The metric engine's column form lives with the TREC reader that also builds it: it
        # is imported when a run is scored, not by every reader of a run (a config check).
        from monitor.search.trec_columns import ranking_columns

        hits, ids = self.hits, self.query_ids
        if answered_only and self.errors:
            kept = ~self.failed_rows()
            ids = [query_id for query_id, keep in zip(ids, kept.tolist(), strict=True) if keep]
            return ranking_columns(ids, hits.counts[kept], hits.doc_words, hits.scores)
        return ranking_columns(ids, hits.counts, hits.doc_words, hits.scores)

    def rankings(self) -> tuple[Rankings, Rankings]:
        """Return the retrieved and the relevant ids of every query, in order, as the store
        saves them: over one dictionary of ids numbered in order of first appearance over
        both, built from the hits' words without a Python object per hit."""
        hits, queries = self.hits, self.queries
        if not queries.doc_bytes.all():  # a judged id holding a NUL, which words cannot hold
            return Rankings.from_words(hits.counts, hits.doc_words), Rankings.of(
                [query.relevant_ids for query in queries]
            )
        relevant_counts, relevant_words = queries.relevant_words()
        # The two parts are read where they are: a million queries' words are not copied.
        whole = Rankings.from_words(
            np.concatenate((hits.counts, relevant_counts)), [hits.doc_words, relevant_words]
        )
        return whole.split(len(hits.counts))
