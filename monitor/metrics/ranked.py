"""A run as the resolver reads it (:class:`RankedRun`), and :func:`resolve`, its one reader.

Every measure needs one thing of a run: where each judged document sits in its query's
ranking. :func:`resolve` asks a :class:`RankedRun` for that and fills a
:class:`~monitor.metrics.ranks.Resolution` with every option applied by the same code,
whatever holds the run:

- :class:`RankedColumns`: the run's columns (a TREC file read by the column readers, a
  monitored run's table; :mod:`monitor.search.trec_columns`), all judged pairs looked up in
  one vectorised pass;
- :class:`RankedMapping`: ``{qid: [doc, ...]}`` or ``{qid: {doc: score}}`` as the library's
  callers give a run, each query's judged documents looked up in its ranking.

Ranks are trec_eval's either way (score descending, ties by doc id descending in byte order;
a repeated id counts once at its best position, its copies counted in ``duplicates``), so
both give the same record. :func:`monitor.metrics.evaluation.ranked_run` turns each form the
library takes into one of these, once, at its edge.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from monitor.metrics.ranks import (
    BoolArray,
    EntryRanker,
    IntArray,
    Judgments,
    Qrels,
    Resolution,
    Run,
    judgments_of,
    rank_in_mapping,
    resolve_with,
)
from monitor.search.trec_columns import TrecColumns


@runtime_checkable
class RankedRun(Protocol):
    """A run the resolver ranks judged documents in."""

    def ranker(self, judged_ids: Sequence[str]) -> tuple[Collection[str], EntryRanker]:
        """Return the run's query ids and the function that ranks judged documents in it,
        for judgments of the queries ``judged_ids`` (in their order)."""
        ...

    def as_run(self) -> Run:
        """Return the run as ``{qid: ranking}`` (metrics with a unit rewrite a run so)."""
        ...

    def longest(self) -> int | None:
        """Return the most distinct ids one ranking holds (None for a run of no query)."""
        ...


@dataclass(frozen=True, slots=True)
class RankedColumns:
    """A run held as columns: judged pairs ranked in one look-up of all of them."""

    columns: TrecColumns

    def ranker(self, judged_ids: Sequence[str]) -> tuple[Collection[str], EntryRanker]:
        run = self.columns
        # A run of the judged queries in the judgments' order (a monitored run of its eval
        # set) needs no look-up: each query's index in the judgments is its index in the run.
        ids = tuple(judged_ids)
        same_order = len(run.query_ids) == len(ids) and run.query_ids == ids
        run_ids: Collection[str] = frozenset(ids) if same_order else run.codes.keys()
        # Index -1 (a query the run lacks) picks the 0 appended to each per-query array.
        retrieved = np.append(run.n_retrieved, 0).astype(np.int64)
        copies = np.append(run.duplicates, 0).astype(np.int64)

        def rank(
            query_ids: Sequence[str], n_wanted: IntArray, docs: Sequence[str], kept: IntArray
        ) -> tuple[IntArray, IntArray, IntArray, BoolArray]:
            if same_order:
                where = np.asarray(kept, dtype=np.int64)
            else:
                codes = run.codes
                where = np.fromiter(
                    (codes.get(q, -1) for q in query_ids), np.int64, count=len(query_ids)
                )
            ranks = np.asarray(run.ranks(np.repeat(where, n_wanted), docs), dtype=np.int64)
            return ranks, retrieved[where], copies[where], where < 0

        return run_ids, rank

    def as_run(self) -> Run:
        return self.columns.as_run()

    def longest(self) -> int | None:
        return int(self.columns.n_retrieved.max()) if self.columns.query_ids else None


@dataclass(frozen=True, slots=True)
class RankedMapping:
    """A run held as ``{qid: [doc, ...]}`` or ``{qid: {doc: score}}``."""

    run: Run

    def ranker(self, judged_ids: Sequence[str]) -> tuple[Collection[str], EntryRanker]:
        run = self.run

        def rank(
            query_ids: Sequence[str], n_wanted: IntArray, docs: Sequence[str], kept: IntArray
        ) -> tuple[IntArray, IntArray, IntArray, BoolArray]:
            return rank_in_mapping(query_ids, n_wanted, docs, run)

        return run.keys(), rank

    def as_run(self) -> Run:
        return self.run

    def longest(self) -> int | None:
        lengths = [
            len(ranking) if isinstance(ranking, Mapping) else len(dict.fromkeys(ranking))
            for ranking in self.run.values()
        ]
        return max(lengths, default=None)


def resolve(
    qrels: Qrels | Judgments,
    run: RankedRun,
    *,
    include_no_relevant: bool = False,
    relevance_level: int = 1,
    judged_only: bool = False,
    max_docs: int | None = None,
    with_judged: bool = False,
    only_in_run: bool = False,
) -> Resolution:
    """Rank every relevant judgment of ``qrels`` in ``run``.

    Queries with no relevant judgment (grade >= ``relevance_level``) are left out (and
    counted) unless ``include_no_relevant``; judged queries missing from the run are kept
    with nothing retrieved, unless ``only_in_run`` (trec_eval's default average) leaves them
    out too (counted in ``not_in_run``); run queries absent from ``qrels`` are ignored and
    counted. ``max_docs`` cuts each ranking to its first N (trec_eval's ``-M``), then
    ``judged_only`` removes the documents without a judgment of grade >= 0 (trec_eval's
    ``-J``). ``with_judged`` also ranks every non-relevant judgment (bpref, judged@k).
    """
    judgments = judgments_of(qrels)
    run_ids, rank = run.ranker(judgments.ids)
    return resolve_with(
        judgments,
        run_ids,
        rank,
        include_no_relevant=include_no_relevant,
        relevance_level=relevance_level,
        judged_only=judged_only,
        max_docs=max_docs,
        with_judged=with_judged,
        only_in_run=only_in_run,
    )


__all__ = ["RankedColumns", "RankedMapping", "RankedRun", "resolve"]
