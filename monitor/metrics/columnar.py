"""Build :class:`~monitor.metrics.ranks.RelevantRanks` from a run held as columns.

:func:`monitor.metrics.ranks.resolve` takes a run as Python mappings; a run read from a
large file is held as numpy columns instead (:mod:`monitor.search.trec_columns`), which
answer "where does this judged document sit" for all judged pairs in one vectorised lookup
(:class:`ColumnarRun`). :func:`resolve_columns` asks that lookup for the relevant judgments
and fills the same record, so every measure gives the same values either way: ranks are
trec_eval's (score descending, ties by doc id descending in byte order), a repeated doc id
counts once at its best position and its copies are counted in ``duplicates``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Protocol

import numpy as np

from monitor.metrics.ranks import (
    NOT_RETRIEVED,
    BoolArray,
    IntArray,
    Judgments,
    Qrels,
    Resolution,
    judgments_of,
    resolve_with,
)


class ColumnarRun(Protocol):
    """A run that ranks (query id, doc id) pairs in bulk."""

    @property
    def query_ids(self) -> tuple[str, ...]:
        """Return the run's query ids, in the order of the per-query arrays."""
        ...

    @property
    def codes(self) -> Mapping[str, int]:
        """Return each query id's index in :attr:`query_ids`."""
        ...

    @property
    def n_retrieved(self) -> IntArray:
        """Return, per query, the distinct doc ids retrieved."""
        ...

    @property
    def duplicates(self) -> IntArray:
        """Return, per query, the repeated copies dropped."""
        ...

    def ranks(self, codes: IntArray, docs: Sequence[str]) -> IntArray:
        """Return each pair's 1-based rank (copies dropped), NOT_RETRIEVED when absent; a
        pair's code is its query's index in :attr:`query_ids`, -1 for a query not there."""
        ...


def resolve_columns(
    qrels: Qrels | Judgments,
    run: ColumnarRun,
    *,
    include_no_relevant: bool = False,
    relevance_level: int = 1,
    judged_only: bool = False,
    max_docs: int | None = None,
    with_judged: bool = False,
    only_in_run: bool = False,
) -> Resolution:
    """Rank the judgments of ``qrels`` in ``run``, as :func:`resolve` does with every option.

    Only the ranking step differs: one vectorised lookup of all judged pairs in the columns;
    the options (relevance level, max docs, judged only, averages) are applied by the same
    code as for a run held as mappings, so both give the same record.
    """
    # A run of the judged queries in the judgments' order (a monitored run of its eval set)
    # needs no look-up: each query's index in the judgments is its index in the run.
    judgments = judgments_of(qrels)
    ids = tuple(judgments.ids)
    same_order = len(run.query_ids) == len(ids) and run.query_ids == ids
    run_ids: Collection[str] = frozenset(ids) if same_order else run.codes.keys()
    # Index -1 (a query the run lacks) picks the 0 appended to each per-query array.
    retrieved = np.append(run.n_retrieved, 0).astype(np.int64)
    copies = np.append(run.duplicates, 0).astype(np.int64)

    def rank_entries(
        query_ids: Sequence[str], n_wanted: IntArray, docs: Sequence[str], kept: IntArray
    ) -> tuple[IntArray, IntArray, IntArray, BoolArray]:
        if same_order:
            where = np.asarray(kept, dtype=np.int64)
        else:
            codes = run.codes
            where = np.fromiter(
                (codes.get(q, -1) for q in query_ids), np.int64, count=len(query_ids)
            )
        rank = np.asarray(run.ranks(np.repeat(where, n_wanted), docs), dtype=np.int64)
        return rank, retrieved[where], copies[where], where < 0

    return resolve_with(
        judgments,
        run_ids,
        rank_entries,
        include_no_relevant=include_no_relevant,
        relevance_level=relevance_level,
        judged_only=judged_only,
        max_docs=max_docs,
        with_judged=with_judged,
        only_in_run=only_in_run,
    )


__all__ = ["NOT_RETRIEVED", "ColumnarRun", "resolve_columns"]
