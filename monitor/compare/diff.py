"""Which queries got worse, and which metadata segment drove a change."""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Mapping, Sequence

import numpy as np

from monitor.compare.records import Change, QueryDiff, SegmentChange
from monitor.compare.rules import answered
from monitor.metrics.spec import parse_metric
from monitor.records import MetaValue
from monitor.store.records import QueryRecord, RunRecord

_TOLERANCE = 1e-12


def worse_queries(
    baseline: RunRecord,
    current: RunRecord,
    metric: str,
    *,
    texts: Mapping[str, str] | None = None,
    top: int = 10,
    shown_ids: int = 5,
) -> tuple[QueryDiff, ...]:
    """Return up to ``top`` queries whose ``metric`` fell, largest loss first.

    Only queries answered in both runs are compared: a failed query is no lost hit (the error
    rate counts it), whatever values an older store kept for it.
    """
    before = {q.query_id: q for q in baseline.queries if metric in q.values and answered(q)}
    worse: list[tuple[float, str, QueryRecord, QueryRecord]] = []
    for now in current.queries:
        old = before.get(now.query_id)
        if old is None or metric not in now.values or not answered(now):
            continue
        if now.values[metric] < old.values[metric] - _TOLERANCE:
            loss = old.values[metric] - now.values[metric]
            worse.append((-loss, now.query_id, old, now))
    # Only the queries shown are described: ranking by loss needs no diff of the others.
    shown = heapq.nsmallest(top, worse, key=lambda w: (w[0], w[1])) if top > 0 else []
    texts = texts or {}
    return tuple(
        _diff(old, now, metric, texts.get(qid, ""), shown_ids) for _, qid, old, now in shown
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
    total = len(ids)
    out: list[SegmentChange] = []
    for key in keys:
        groups: dict[str, list[int]] = defaultdict(list)
        for i, qid in enumerate(ids):
            value = metadata.get(qid, {}).get(key)
            groups["(none)" if value is None else str(value)].append(i)
        segments = []
        for value, members in groups.items():
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
