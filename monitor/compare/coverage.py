"""Judgment coverage: how much of a run's top k its eval set has judged, and whether it fell.

``judged@k`` of a query is the engine's (:mod:`monitor.metrics.judgments`): the share of
the top k (of a shorter ranking, all of it) that has a judgment of any grade. A drop in a
quality metric that comes with a fall of coverage may be an artefact: the new ranking put
documents nobody labelled into the top k, each scored as not relevant.
:func:`coverage_change` measures that fall against the baseline over the queries both runs
answered and evaluated whose judgments include a non-relevant one, and counts the unjudged
documents that came in; the comparison holds a quality breach as ``unjudged`` (labels
needed) when the fall is larger than the suite's ``coverage.max_drop``.

Judged-only figures (trec_eval ``-J``) are the same metrics with every unjudged document
removed from each ranking before scoring (those below move up), as the engine's
``judged_only`` scores them: :func:`judged_only_means`.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from functools import partial
from itertools import compress
from operator import methodcaller
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from monitor.config.model import config_option
from monitor.evalset.columns import ColumnQrels
from monitor.metrics.ranks import Qrels
from monitor.metrics.spec import parse_metric
from monitor.run.rankings import Rankings
from monitor.store.records import RunRecord

if TYPE_CHECKING:
    from monitor.search.trec_columns import TrecColumns


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

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CoverageChange:
        """Return the change :meth:`to_dict` wrote (its derived entries left out)."""
        return cls(**{item.name: data[item.name] for item in fields(cls)})


def _scored(run: RunRecord) -> NDArray[np.intp]:
    """Return the rows of ``run``'s queries the search answered and that were evaluated (they
    have values)."""
    columns = run.columns
    return np.flatnonzero(columns.answered() & columns.present.any(axis=1))


def _pooled(grades: Mapping[str, int]) -> bool:
    """Return whether a query's judgments include a non-relevant one (grade <= 0)."""
    return bool(grades) and min(grades.values()) <= 0


def pooled_qrels(qrels: Qrels) -> Qrels:
    """Return the judgments of the queries whose judgments include a non-relevant one."""
    if isinstance(qrels, ColumnQrels):  # an eval set's columns: found in their grades
        return {query_id: qrels[query_id] for query_id in qrels.pooled_ids()}
    lowest = map(partial(min, default=1), map(methodcaller("values"), qrels.values()))
    return dict(compress(qrels.items(), (grade <= 0 for grade in lowest)))


def judges_non_relevant(qrels: Qrels) -> bool:
    """Return whether any query's judgments include a non-relevant document."""
    return any(_pooled(grades) for grades in qrels.values())


def _ranked(run: RunRecord, qrels: Qrels) -> tuple[Qrels, TrecColumns]:
    """Return the judgments of ``run``'s answered, evaluated queries that ``qrels`` judges,
    and their rankings as the metric engine's columns, read from the run's own columns."""
    columns = run.columns
    ids = columns.query_ids
    rows = [i for i in _scored(run).tolist() if ids[i] in qrels]
    rankings = columns.retrieved_ids.take(np.array(rows, dtype=np.intp))
    ranked = rankings.ranking_columns([ids[i] for i in rows])
    return {ids[i]: qrels[ids[i]] for i in rows}, ranked


def _distinct(rankings: Rankings) -> list[int]:
    """Return how many distinct ids each ranking holds (a run's hold each id once; a record
    made by hand may repeat one)."""
    rows = np.repeat(np.arange(len(rankings), dtype=np.int64), rankings.counts)
    copies = np.bincount(rows[rankings.repeated()], minlength=len(rankings))
    return [int(count) for count in (rankings.counts - copies).tolist()]


def judged_at(run: RunRecord, qrels: Qrels, k: int) -> dict[str, float]:
    """Return ``judged@k`` of each answered, evaluated query of ``run``, by the engine."""
    return _judged_shares(*_ranked(run, qrels), (k,))[k]


def _judged_shares(
    judged: Qrels, ranked: TrecColumns, ks: Sequence[int]
) -> dict[int, dict[str, float]]:
    """Return, for each of ``ks``, ``judged@k`` of each query of ``ranked``: one engine pass."""
    from monitor.metrics.evaluation import evaluate

    if not judged:
        return {k: {} for k in ks}
    result = evaluate(judged, ranked, [f"judged@{k}" for k in ks])
    return {
        k: dict(zip(result.query_ids, result.values[metric].tolist(), strict=True))
        for k, metric in zip(ks, result.metrics, strict=True)
    }


def _unjudged(length: int, share: float, k: int) -> int:
    """Return how many documents of the top ``k`` of a ranking of ``length`` distinct ids
    have no judgment, from its ``judged@k`` (a share of the top min(k, retrieved))."""
    shown = min(k, length)
    return shown - round(share * shown)


def coverage_change(
    baseline: RunRecord,
    current: RunRecord,
    qrels: Qrels,
    k: int,
    *,
    pooled: Qrels | None = None,
) -> CoverageChange | None:
    """Return :func:`coverage_changes` at ``k`` alone (None when no query counts)."""
    changes = coverage_changes(baseline, current, qrels, (k,), pooled=pooled)
    return changes[0] if changes else None


def coverage_changes(
    baseline: RunRecord,
    current: RunRecord,
    qrels: Qrels,
    ks: Sequence[int],
    *,
    pooled: Qrels | None = None,
) -> tuple[CoverageChange, ...]:
    """Return coverage at each of ``ks`` of both runs over the queries both answered and
    evaluated whose judgments include a non-relevant one (a k at which there are none is
    left out). Each run's rankings are read and scored once for every k.

    A query judged only by its relevant documents says nothing of the others: there every
    other document is unjudged, and coverage would only repeat precision (a lost relevant
    document would read as a lost judgment). So only such pooled queries count;
    ``pooled`` is :func:`pooled_qrels` of ``qrels`` when the caller has it already.
    """
    pooled = pooled_qrels(qrels) if pooled is None else pooled
    if not pooled or not ks:
        return ()
    olds = _judged_shares(*_ranked(baseline, pooled), ks)
    news = _judged_shares(*_ranked(current, pooled), ks)
    before = dict(
        zip(baseline.columns.query_ids, _distinct(baseline.columns.retrieved_ids), strict=True)
    )
    now = _distinct(current.columns.retrieved_ids)
    lengths = list(zip(current.columns.query_ids, now, strict=True))
    changes = []
    for k in ks:
        old, new = olds[k], news[k]
        pairs = [(qid, length) for qid, length in lengths if qid in old and qid in new]
        if not pairs:
            continue
        added = queries = 0
        for qid, length in pairs:
            more = _unjudged(length, new[qid], k) - _unjudged(before[qid], old[qid], k)
            if more > 0:
                added += more
                queries += 1
        n = len(pairs)
        changes.append(
            CoverageChange(
                k,
                sum(old[qid] for qid, _ in pairs) / n,
                sum(new[qid] for qid, _ in pairs) / n,
                n,
                added,
                queries,
            )
        )
    return tuple(changes)


def judged_only_means(run: RunRecord, qrels: Qrels, metrics: Iterable[str]) -> dict[str, float]:
    """Return each metric's mean over ``run``'s evaluated queries scored judged-only
    (trec_eval ``-J``: unjudged documents removed from each ranking first); NaN when none was
    evaluated. ``judged@k`` itself is left out: judged-only, it is 1 by construction."""
    from monitor.metrics.evaluation import evaluate

    names = [name for name in metrics if parse_metric(name).measure != "judged"]
    judged, ranked = _ranked(run, qrels)
    if not names or not judged:
        return dict.fromkeys(names, math.nan)
    return dict(evaluate(judged, ranked, names, judged_only=True).means)


def depth(metrics: Iterable[str], default: int = 10) -> int:
    """Return the largest cutoff among metric names (``default`` when none has one)."""
    cutoffs = [parse_metric(name).k for name in metrics]
    return max((k for k in cutoffs if k is not None), default=default)


def labels_todo(suite: str, run_id: int | None, config_file: Path | None = None) -> str:
    """Return the command that lists the documents of a run waiting for judgments, with the
    ``config_file`` the suite was read from (None: the embedded default)."""
    config = config_option(config_file)
    run = "" if run_id is None else f" --run {run_id}"
    return f"retrieval-monitor judgments todo{config} --suite {shlex.quote(suite)}{run}"


def held_cutoff(metric: str, default: int) -> int:
    """Return the k whose coverage a quality rule on ``metric`` reads: its cutoff, else
    ``default`` (the run's largest)."""
    k = parse_metric(metric).k
    return default if k is None else k
