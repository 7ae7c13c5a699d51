"""Judgment coverage: how much of a run's top k its eval set has judged, and whether it fell.

``judged@k`` of a query is trec_eval's ``judged_k``: the documents of the top k that have a
judgment (any grade, 0 included), divided by k, so a ranking shorter than k counts its
missing ranks as unjudged. A drop in a quality metric that comes with a fall of coverage
may be an artefact: the new ranking put documents nobody labelled into the top k, each
scored as not relevant. :func:`coverage_change` measures that fall against the baseline over
the queries both runs answered and evaluated, and counts the unjudged documents that came
in; the comparison holds a quality breach as ``unjudged`` (labels needed) when the fall is
larger than the suite's ``coverage.max_drop``.

Judged-only figures (trec_eval ``-J``) are the same metrics with every unjudged document
removed from each ranking before scoring (those below move up): :func:`judged_only_means`.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

from monitor.metrics.ranks import Qrels
from monitor.metrics.spec import parse_metric
from monitor.store.records import QueryRecord, RunRecord


@dataclass(frozen=True, slots=True)
class CoverageChange:
    """Coverage at ``k`` in the baseline and the current run, over ``n`` shared queries.

    ``baseline`` and ``current`` are mean ``judged@k``; ``drop`` is baseline - current.
    ``unjudged_added`` is how many more unjudged documents the current top k holds than the
    baseline's, summed over the ``queries`` queries that hold more.
    """

    k: int
    baseline: float
    current: float
    n: int
    unjudged_added: int
    queries: int

    @property
    def drop(self) -> float:
        """Return how far coverage fell (negative when it rose)."""
        return self.baseline - self.current

    @property
    def metric(self) -> str:
        """Return the metric name of this coverage, e.g. ``judged@10``."""
        return f"judged@{self.k}"

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready form."""
        return {
            "k": self.k,
            "metric": self.metric,
            "baseline": self.baseline,
            "current": self.current,
            "drop": self.drop,
            "n": self.n,
            "unjudged_added": self.unjudged_added,
            "queries": self.queries,
        }


def _answered(query: QueryRecord) -> bool:
    """Return whether the search answered ``query`` and it was evaluated (it has values)."""
    return query.error_type is None and bool(query.values)


def judged_count(ranking: Iterable[str], judged: Collection[str], k: int) -> int:
    """Return how many of the first ``k`` distinct ids of ``ranking`` are judged."""
    return sum(1 for doc in list(dict.fromkeys(ranking))[:k] if doc in judged)


def judged_at(ranking: Iterable[str], judged: Collection[str], k: int) -> float:
    """Return ``judged@k`` of one ranking: judged documents of the top ``k``, divided by k."""
    return judged_count(ranking, judged, k) / k


def coverage_change(
    baseline: RunRecord, current: RunRecord, qrels: Qrels, k: int
) -> CoverageChange | None:
    """Return coverage at ``k`` of both runs over the queries both answered and evaluated
    (None when there are none)."""
    before = {q.query_id: q for q in baseline.queries if _answered(q)}
    pairs = [
        (before[q.query_id], q) for q in current.queries if _answered(q) and q.query_id in before
    ]
    if not pairs:
        return None
    old = new = 0.0
    added = queries = 0
    for was, now in pairs:
        judged = qrels.get(now.query_id, {})
        old_judged = judged_count(was.retrieved_ids, judged, k)
        new_judged = judged_count(now.retrieved_ids, judged, k)
        old += old_judged / k
        new += new_judged / k
        old_unjudged = min(k, len(dict.fromkeys(was.retrieved_ids))) - old_judged
        new_unjudged = min(k, len(dict.fromkeys(now.retrieved_ids))) - new_judged
        if new_unjudged > old_unjudged:
            added += new_unjudged - old_unjudged
            queries += 1
    n = len(pairs)
    return CoverageChange(k, old / n, new / n, n, added, queries)


def judged_only_means(run: RunRecord, qrels: Qrels, metrics: Iterable[str]) -> dict[str, float]:
    """Return each metric's mean over ``run``'s evaluated queries with unjudged documents
    removed from every ranking first (trec_eval ``-J``); NaN when none was evaluated."""
    from monitor.evaluation import evaluate

    names = [name for name in metrics if name.partition("@")[0] != "judged"]
    ranked = {
        q.query_id: [doc for doc in q.retrieved_ids if doc in qrels.get(q.query_id, {})]
        for q in run.queries
        if _answered(q)
    }
    judged = {qid: dict(qrels[qid]) for qid in ranked if qid in qrels}
    if not names or not judged:
        return dict.fromkeys(names, math.nan)
    result = evaluate(judged, ranked, names)
    return dict(result.means)


def depth(metrics: Iterable[str], default: int = 10) -> int:
    """Return the largest cutoff among metric names (``default`` when none has one)."""
    cutoffs = [parse_metric(name).k for name in metrics]
    return max((k for k in cutoffs if k is not None), default=default)
