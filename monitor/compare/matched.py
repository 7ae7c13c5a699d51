"""A run's queries matched with its baseline's once, as arrays, for one comparison.

A comparison reads the same pairs of queries many times: every rule, every metric change,
every per-query diff and segment breakdown, the overlap of the rankings. :class:`Matched`
finds each current query's baseline query once, and reads each metric's per-query values
once per run, into numpy arrays in the current run's order; the readers then select with
masks instead of building a dict per question.

A run carries its queries as columns (``RunRecord.columns``): the ids, values, errors and
judged counts are read from those arrays (ids matched through a pandas Index, values from
the queries x metrics matrix), building no query record.

Query ids are unique within a run (they are the eval set's). Should a hand-made record repeat
one, the baseline's last query of that id is the one matched, as a dict keyed by id keeps it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import eq

import numpy as np
from numpy.typing import NDArray

from monitor.store.records import QueryColumns, RunRecord

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]
BoolArray = NDArray[np.bool_]


@dataclass(frozen=True, slots=True, eq=False)
class Matched:
    """The queries of ``current`` matched with those of ``baseline`` by id.

    ``position[i]`` is the index in ``baseline.queries`` of ``current.queries[i]``'s id, -1
    when the baseline has no such query. The ``answered_*`` masks say which queries the
    search answered (``error_type`` is None) in each run, over that run's own queries.
    """

    baseline: RunRecord
    current: RunRecord
    position: IndexArray
    answered_before: BoolArray
    answered_now: BoolArray
    # Each metric's column of each run, read on first use: (values, present) by (side, name).
    _columns: dict[tuple[bool, str], tuple[FloatArray, BoolArray]] = field(
        default_factory=dict, repr=False
    )

    @classmethod
    def of(cls, baseline: RunRecord, current: RunRecord) -> Matched:
        """Match ``current``'s queries with ``baseline``'s by id."""
        before, now = _ids(baseline), _ids(current)
        if len(before) == len(now) and all(map(eq, before, now)) and len(set(now)) == len(now):
            # The usual pair: runs of one eval set, in its order, each id once (a repeated
            # baseline id matches its last query). No index of the ids is built.
            position = np.arange(len(now), dtype=np.intp)
            return cls(baseline, current, position, _answered(baseline), _answered(current))
        import pandas as pd  # imported here: a comparison of one eval set's runs needs none

        index = pd.Index(before)
        if index.is_unique:
            position = index.get_indexer(pd.Index(now)).astype(np.intp)
            return cls(baseline, current, position, _answered(baseline), _answered(current))
        found = {qid: i for i, qid in enumerate(before)}
        position = np.fromiter((found.get(qid, -1) for qid in now), dtype=np.intp, count=len(now))
        return cls(baseline, current, position, _answered(baseline), _answered(current))

    def column(self, metric: str, *, baseline: bool) -> tuple[FloatArray, BoolArray]:
        """Return one run's values of ``metric`` over its own queries (NaN where a query has
        none) and whether each query has one."""
        key = (baseline, metric)
        found = self._columns.get(key)
        if found is None:
            run = self.baseline if baseline else self.current
            found = self._columns[key] = stored_column(run.columns, metric)
        return found

    def both_answered(self) -> IndexArray:
        """Return the indices (in ``current.queries``) of the queries both runs answered."""
        at = self.position
        safe = np.where(at >= 0, at, 0)
        both = self.answered_now & (at >= 0) & self.answered_before[safe]
        return np.flatnonzero(both)

    def pairs(self, metric: str) -> tuple[IndexArray, FloatArray, FloatArray]:
        """Return the current indices of the queries both runs answered and evaluated on
        ``metric``, and their (baseline, current) values, in the current run's order."""
        now, has_now = self.column(metric, baseline=False)
        before, has_before = self.column(metric, baseline=True)
        both = self.both_answered()
        at = self.position[both]
        keep = both[has_now[both] & has_before[at]]
        return keep, before[self.position[keep]], now[keep]

    def aligned(self, metric: str) -> tuple[list[str], FloatArray, FloatArray]:
        """Return :func:`monitor.compare.rules.aligned`'s ids and values of ``metric``."""
        keep, before, after = self.pairs(metric)
        return self.current_ids(keep), before, after

    def current_ids(self, indices: IndexArray) -> list[str]:
        """Return the ids of ``current.queries`` at ``indices``."""
        ids = self.current.columns.query_ids
        return [ids[i] for i in indices.tolist()]

    def left_out(self, *, paired: bool = True) -> int:
        """Return how many judged queries a quality rule leaves out because the search
        failed for them (:func:`monitor.compare.rules.left_out`): of the queries both runs
        hold, those either run failed for; with ``paired=False``, those the current run
        failed for."""
        judged_now = _judged(self.current)
        if not paired:
            return int(np.count_nonzero(judged_now & ~self.answered_now))
        at = self.position
        held = at >= 0
        safe = np.where(held, at, 0)
        judged = judged_now | _judged(self.baseline)[safe]
        both = self.answered_now & self.answered_before[safe]
        return int(np.count_nonzero(held & judged & ~both))


def _ids(run: RunRecord) -> Sequence[str]:
    """Return the query ids of ``run`` in its order."""
    return run.columns.query_ids


def metric_values(run: RunRecord, metric: str) -> FloatArray:
    """Return the values of ``metric`` of the queries of ``run`` that have one, in order."""
    values, present = stored_column(run.columns, metric)
    return values[present]


def judged_not_answered(run: RunRecord) -> int:
    """Return how many queries of ``run`` have a relevant judgment but no answer."""
    return int(np.count_nonzero(_judged(run) & ~_answered(run)))


def stored_column(columns: QueryColumns, metric: str) -> tuple[FloatArray, BoolArray]:
    """Return :meth:`Matched.column` of a run from its columns' matrix."""
    n = len(columns)
    if metric not in columns.metrics:
        return np.full(n, math.nan), np.zeros(n, dtype=np.bool_)
    j = columns.metrics.index(metric)
    present = np.array(columns.present[:, j], dtype=np.bool_)
    values = np.where(present, columns.values[:, j], math.nan)
    return values, present


def _answered(run: RunRecord) -> BoolArray:
    """Return whether the search answered each query of ``run`` (no error)."""
    return run.columns.answered()


def _judged(run: RunRecord) -> BoolArray:
    """Return whether each query of ``run`` has a relevant judgment."""
    return np.asarray(run.columns.relevant_ids.lengths > 0, dtype=np.bool_)
