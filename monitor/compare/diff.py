"""Which queries got worse, and which metadata segment drove a change."""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from itertools import repeat
from operator import is_, methodcaller

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from monitor.compare.matched import Matched
from monitor.compare.records import Change, QueryDiff, SegmentChange
from monitor.evalset.columns import ByQuery
from monitor.metrics.spec import parse_metric
from monitor.records import MetaValue
from monitor.store.records import QueryRecord, RunRecord

_TOLERANCE = 1e-12
#: The segment of the queries that have no value for a key.
NONE = "(none)"


def worse_queries(
    baseline: RunRecord,
    current: RunRecord,
    metric: str,
    *,
    texts: Mapping[str, str] | None = None,
    top: int = 10,
    shown_ids: int = 5,
    matched: Matched | None = None,
) -> tuple[QueryDiff, ...]:
    """Return up to ``top`` queries whose ``metric`` fell, largest loss first (ties by id).

    Only queries answered in both runs are compared: a failed query is no lost hit (the error
    rate counts it), whatever values an older store kept for it. ``matched`` is the two
    runs' queries matched by id, when the caller has it already.
    """
    if top <= 0:
        return ()
    pairs = matched if matched is not None else Matched.of(baseline, current)
    at, before, after = pairs.pairs(metric)
    fell = after < before - _TOLERANCE
    at, loss = at[fell], (before - after)[fell]
    if len(loss) > top:
        # Every query that can be shown loses at least the top-th largest loss.
        least = np.partition(loss, len(loss) - top)[len(loss) - top]
        keep = loss >= least
        at, loss = at[keep], loss[keep]
    ids = pairs.current_ids(at)
    # Only the queries shown are described: ranking by loss needs no diff of the others.
    shown = heapq.nsmallest(
        top, zip((-loss).tolist(), ids, at.tolist(), strict=True), key=lambda w: (w[0], w[1])
    )
    texts = texts or {}
    queries, position = current.queries, pairs.position
    return tuple(
        _diff(baseline.queries[position[i]], queries[i], metric, texts.get(qid, ""), shown_ids)
        for _, qid, i in shown
    )


def _diff(old: QueryRecord, now: QueryRecord, metric: str, text: str, shown: int) -> QueryDiff:
    """Describe how a query got worse, judged within the metric's cutoff.

    ``lost_hit``: a relevant document was in the top k and none is now; ``moved_down``: the
    first relevant document sits lower; ``recall_fell``: fewer relevant documents in the top
    k; ``score_fell``: the same documents, in an order the graded measure likes less.
    """
    expected = now.relevant_ids or old.relevant_ids
    cutoff = parse_metric(metric).k
    first_before = _first_relevant(old.retrieved_ids, expected)
    first_now = _first_relevant(now.retrieved_ids, expected)
    found_before = _found(old.retrieved_ids[:cutoff], expected)
    found_now = _found(now.retrieved_ids[:cutoff], expected)
    change: Change
    if found_before and not found_now:
        change = "lost_hit"
    elif first_before is not None and (first_now is None or first_now > first_before):
        change = "moved_down"
    elif found_now < found_before:
        change = "recall_fell"
    else:
        change = "score_fell"
    return QueryDiff(
        query_id=now.query_id,
        query=text,
        metric=metric,
        baseline=old.values[metric],
        current=now.values[metric],
        change=change,
        expected_ids=tuple(expected),
        baseline_ids=old.retrieved_ids[:shown],
        current_ids=now.retrieved_ids[:shown],
        baseline_first_rank=first_before,
        current_first_rank=first_now,
    )


def _first_relevant(retrieved: Sequence[str], relevant: Sequence[str]) -> int | None:
    wanted = set(relevant)
    return next((rank for rank, doc in enumerate(retrieved, 1) if doc in wanted), None)


def _found(retrieved: Sequence[str], relevant: Sequence[str]) -> int:
    return len(set(retrieved) & set(relevant))


#: Each metadata key's segment of every query: codes, and the segment each code names.
SegmentLabels = Mapping[str, tuple[NDArray[np.intp], Sequence[str]]]


def metadata_rows(
    ids: Sequence[str], metadata: Mapping[str, Mapping[str, MetaValue]]
) -> Sequence[Mapping[str, MetaValue]]:
    """Return the metadata of each query of ``ids`` in order (``{}`` for one without)."""
    empty: Mapping[str, MetaValue] = {}
    if isinstance(metadata, ByQuery):  # an eval set's columns: read in order, no look-up
        return metadata.rows(ids, empty)
    return list(map(metadata.get, ids, repeat(empty)))


def segment_labels(
    ids: Sequence[str], keys: Sequence[str], metadata: Mapping[str, Mapping[str, MetaValue]]
) -> dict[str, tuple[NDArray[np.intp], list[str]]]:
    """Return the segment of each query of ``ids`` by each key, as codes into segment names.

    A value is named by ``str(value)``; a query without the key is in segment ``(none)``.
    """
    out = {}
    rows = metadata_rows(ids, metadata)
    for key in keys:
        found = list(map(methodcaller("get", key), rows))
        labels = np.empty(len(ids), dtype=object)
        labels[:] = list(map(str, found))
        labels[np.fromiter(map(is_, found, repeat(None)), dtype=np.bool_, count=len(ids))] = NONE
        codes, names = pd.factorize(labels, sort=False)
        out[key] = (codes.astype(np.intp), [str(name) for name in names.tolist()])
    return out


def segment_changes(
    ids: Sequence[str],
    before: np.ndarray,
    after: np.ndarray,
    metric: str,
    keys: Sequence[str],
    metadata: Mapping[str, Mapping[str, MetaValue]],
) -> tuple[SegmentChange, ...]:
    """Break the change of ``metric`` down by each metadata key's values.

    Queries without the key are grouped under ``(none)``. Within a key, segments are sorted
    by contribution, most negative (the one that drove a drop) first.
    """
    labels = segment_labels(ids, keys, metadata)
    return labelled_segment_changes(labels, np.arange(len(ids)), before, after, metric)


def labelled_segment_changes(
    labels: SegmentLabels,
    rows: NDArray[np.intp],
    before: np.ndarray,
    after: np.ndarray,
    metric: str,
) -> tuple[SegmentChange, ...]:
    """Return :func:`segment_changes` of the queries at ``rows`` of the ids ``labels`` were
    made for, whose values ``before`` and ``after`` hold in that order.

    The labels of a run's queries are made once (:func:`segment_labels`) and read for the
    queries each metric compares.
    """
    total = len(rows)
    out: list[SegmentChange] = []
    if total == 0:
        return ()
    for key, (all_codes, names) in labels.items():
        codes = all_codes[rows]
        sizes = np.bincount(codes, minlength=len(names))
        # Members of each segment in query order, as the per-query mean and sum read them.
        order = np.argsort(codes, kind="stable")
        groups = np.split(order, np.cumsum(sizes)[:-1])
        segments = []
        for value, members in zip(names, groups, strict=True):
            if not len(members):
                continue
            old = before[members]
            new = after[members]
            segments.append(
                SegmentChange(
                    key=key,
                    value=value,
                    metric=metric,
                    n=len(members),
                    baseline=float(old.mean()),
                    current=float(new.mean()),
                    delta=float(new.mean() - old.mean()),
                    contribution=float((new - old).sum() / total),
                )
            )
        out.extend(sorted(segments, key=lambda s: (s.contribution, s.value)))
    return tuple(out)
