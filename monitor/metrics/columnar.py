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

from collections.abc import Sequence
from itertools import chain
from typing import Protocol

import numpy as np

from monitor.metrics.ranks import (
    NOT_RETRIEVED,
    IntArray,
    Qrels,
    RelevantRanks,
    Resolution,
)
from monitor.metrics.ranks import _grades as judged_grades


class ColumnarRun(Protocol):
    """A run that ranks (query id, doc id) pairs in bulk."""

    @property
    def query_ids(self) -> tuple[str, ...]:
        """Return the run's query ids, in the order of the per-query arrays."""
        ...

    @property
    def n_retrieved(self) -> IntArray:
        """Return, per query, the distinct doc ids retrieved."""
        ...

    @property
    def duplicates(self) -> IntArray:
        """Return, per query, the repeated copies dropped."""
        ...

    def ranks(self, query_ids: Sequence[str], docs: Sequence[str]) -> IntArray:
        """Return each pair's 1-based rank (copies dropped), NOT_RETRIEVED when absent."""
        ...


def resolve_columns(
    qrels: Qrels, run: ColumnarRun, *, include_no_relevant: bool = False
) -> Resolution:
    """Rank every relevant judgment of ``qrels`` in ``run``, as ``resolve`` does.

    Fills every field of :class:`RelevantRanks` for the evaluated queries: ``n_relevant``,
    ``n_retrieved``, ``duplicates`` and ``missing`` per query, and per relevant judgment its
    ``query``, ``grade`` and ``rank`` (sorted by rank within each query) and ``ideal_grade``.
    """
    all_ids = list(qrels)
    judgments = [qrels[q] for q in all_ids]
    lengths = np.fromiter(map(len, judgments), dtype=np.int64, count=len(judgments))
    grades = judged_grades(judgments, int(lengths.sum()))
    relevant = grades >= 1
    owner = np.repeat(np.arange(len(all_ids), dtype=np.int64), lengths)
    n_relevant_all = np.bincount(owner[relevant], minlength=len(all_ids))
    keep = np.ones(len(all_ids), dtype=bool) if include_no_relevant else n_relevant_all > 0
    kept = np.flatnonzero(keep)
    query_ids = tuple(all_ids[i] for i in kept)
    n_relevant = n_relevant_all[kept]

    entry_keep = relevant & keep[owner]
    docs = [
        d for d, k in zip(chain.from_iterable(judgments), entry_keep.tolist(), strict=True) if k
    ]
    entry_owner = owner[entry_keep]
    pair_query = [all_ids[i] for i in entry_owner.tolist()]
    rank = run.ranks(pair_query, docs)
    rel_grade = grades[entry_keep]

    position = {qid: i for i, qid in enumerate(run.query_ids)}
    where = np.fromiter((position.get(q, -1) for q in query_ids), np.int64, count=len(query_ids))
    missing = where < 0
    # Index -1 (a query the run lacks) picks the 0 appended to each per-query array.
    n_retrieved = np.append(run.n_retrieved, 0).astype(np.int64)[where]
    duplicates = np.append(run.duplicates, 0).astype(np.int64)[where]

    query = np.repeat(np.arange(len(query_ids), dtype=np.int64), n_relevant)
    order = np.lexsort((rank, query))
    ideal = np.lexsort((-rel_grade, query))
    judged = set(all_ids)
    return Resolution(
        ranks=RelevantRanks(
            query_ids=query_ids,
            n_relevant=n_relevant,
            n_retrieved=n_retrieved,
            duplicates=duplicates,
            missing=missing,
            query=query,
            grade=rel_grade[order],
            rank=rank[order],
            ideal_grade=rel_grade[ideal],
        ),
        skipped_no_relevant=len(all_ids) - len(query_ids),
        not_judged=sum(1 for q in run.query_ids if q not in judged),
    )


__all__ = ["NOT_RETRIEVED", "ColumnarRun", "resolve_columns"]
