"""Re-score stored runs under changed judgments, so comparison goes on.

Runs keep each query's ranking, so when grades are added (a layer) or the frozen file is
edited, a baseline measured with other labels is measured again from its rankings under
today's labels: both sides of a comparison then use the same judgments. Only a change of the
queries themselves (ids or texts) still ends comparison.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np

from monitor.evalset import EvalSet
from monitor.evalset.corpus import Corpus
from monitor.judgments.merge import labels_of, queries_fingerprint
from monitor.run.rankings import Rankings
from monitor.store import RunLabels, RunRecord, Store
from monitor.store.records import ColumnQueries


@dataclass(frozen=True, slots=True)
class Aligned:
    """A baseline ready to compare with a run, and how it was made so."""

    baseline: RunRecord | None
    rescored: bool = False
    note: str | None = None


def rescore(
    run: RunRecord,
    evalset: EvalSet,
    metrics: Iterable[str] | None = None,
    *,
    corpus: Corpus | None = None,
) -> RunRecord:
    """Return ``run`` measured again from its stored rankings under ``evalset``'s grades.

    ``metrics`` default to those the run measured; ``corpus`` maps passages to their units
    for metrics with one (``recall@5[section]``). Failed queries stay without values, as
    do queries with no relevant grade; the means, the evaluated count, the relevant ids and
    the stored eval-set fingerprint follow the new grades. Rankings, latency and errors are
    kept as they were. The stored columns are read as they are: the answered queries'
    rankings are scored as a run's columns, and the values written into a copy of the
    columns, with no record built per query.
    """
    from monitor.metrics.evaluation import evaluate

    names = list(run.means) if metrics is None else list(metrics)
    stored = run.columns
    ids = list(stored.query_ids)
    rows = np.flatnonzero(stored.answered()).tolist()
    answered = [ids[i] for i in rows]
    grades = evalset.qrels()
    kept = frozenset(answered)
    qrels = {qid: judged for qid, judged in grades.items() if qid in kept}
    picked = stored.retrieved_ids.take(np.array(rows, dtype=np.intp))
    ranked = picked.ranking_columns(answered, repeats=True)  # as the engine on dicts read them
    evaluation = evaluate(qrels, ranked, names, corpus=corpus)
    measured = tuple(str(metric) for metric in evaluation.metrics)
    position = {query_id: row for row, query_id in enumerate(ids)}
    at = np.fromiter(map(position.__getitem__, evaluation.query_ids), np.intp)
    values = np.full((len(ids), len(measured) if at.size else 0), np.nan)
    present = np.zeros(values.shape, dtype=np.bool_)
    if at.size:
        for j, metric in enumerate(evaluation.metrics):
            values[at, j] = evaluation.values[metric]
        present[at] = True
    relevant = Rankings.of(
        [tuple(doc for doc, grade in grades.get(qid, {}).items() if grade >= 1) for qid in ids]
    )
    columns = replace(
        stored,
        relevant_ids=relevant,
        metrics=measured if at.size else (),
        values=values,
        present=present,
    )
    figures = replace(run.figures, evaluated=evaluation.counts.evaluated)
    return replace(
        run,
        queries=ColumnQueries(columns),
        means=evaluation.means,
        figures=figures,
        evalset_fingerprint=evalset.fingerprint,
    )


def labels_of_run(store: Store, run: RunRecord, frozen: EvalSet) -> RunLabels | None:
    """Return the labels ``run`` was scored with, or None when they cannot be known.

    A run saved before layers existed has no record of them; when its fingerprint is that
    of ``frozen`` it was scored with the frozen set, whose labels are then its own.
    """
    if run.run_id is not None:
        labels = store.run_labels(run.run_id)
        if labels is not None:
            return labels
    if run.evalset_fingerprint == frozen.fingerprint:
        return labels_of(frozen)
    return None


def align_baseline(
    store: Store,
    baseline: RunRecord | None,
    evalset: EvalSet,
    frozen: EvalSet,
    *,
    role: str = "baseline run",
    corpus: Corpus | None = None,
    current: RunLabels | None = None,
) -> Aligned:
    """Return ``baseline`` as it compares with a run scored under ``evalset``.

    Same judgments: the baseline as stored. Same queries but other judgments: the baseline
    re-scored under ``evalset``. Other queries, or labels that cannot be known: as stored,
    and the comparison says the eval set changed. ``current`` is ``labels_of(evalset)``
    when the caller has it already (aligning many runs with one eval set).
    """
    if baseline is None:
        return Aligned(None)
    current = current or labels_of(evalset)
    labels = labels_of_run(store, baseline, frozen)
    if labels is None or labels.queries_fingerprint != current.queries_fingerprint:
        return Aligned(baseline)
    if labels.judgments_version == current.judgments_version:
        return Aligned(baseline)
    note = (
        f"{role} {baseline.run_id} re-scored under judgments "
        f"{current.judgments_version[:19]} (it was measured with "
        f"{labels.judgments_version[:19]})"
    )
    return Aligned(rescore(baseline, evalset, corpus=corpus), rescored=True, note=note)


def queries_changed(
    store: Store, run: RunRecord, frozen: EvalSet, current: str | None = None
) -> bool:
    """Return whether ``run`` was measured on other queries (ids or texts) than ``frozen``'s;
    a run whose labels are unknown counts as changed unless its fingerprint is ``frozen``'s.
    ``current`` is ``frozen``'s queries fingerprint, when the caller holds it already."""
    labels = labels_of_run(store, run, frozen)
    if labels is None:
        return True
    return labels.queries_fingerprint != (current or queries_fingerprint(frozen))
