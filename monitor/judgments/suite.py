"""A suite's judgments: the view that gates alerts, and its judge after a run."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

from monitor.evalset import EvalSet
from monitor.judgments.judges import JudgeError, build_judge, judge_holes, judge_source
from monitor.judgments.layers import LabelView, effective_evalset
from monitor.judgments.merge import labels_of
from monitor.judgments.rescore import align_baseline, rescore
from monitor.judgments.todo import DocText
from monitor.logs import get_logger
from monitor.secrets import suite_scrubber
from monitor.store import RunLabels, RunRecord, Store
from monitor.terminal import counted

if TYPE_CHECKING:
    import pandas as pd

    from monitor.config.model import SuiteConfig
    from monitor.evalset.corpus import Corpus
    from monitor.judgments.agreement import Agreement
    from monitor.runner import RunResult

log = get_logger(__name__)


def _corpus(suite: SuiteConfig) -> Corpus | None:
    """Return the suite's corpus when one of its metrics counts units, else None."""
    from monitor.evalset.corpus import corpus_for

    return corpus_for(suite.evalset, suite.metrics)


def suite_evalset(
    store: Store, suite: SuiteConfig, frozen: EvalSet, view: LabelView | None = None
) -> EvalSet:
    """Return the suite's effective eval set in ``view`` (default: the one its runs are
    scored with, :func:`record_view`)."""
    source = judge_source(suite.judge) if suite.judge is not None else None
    return effective_evalset(
        store, suite.name, frozen, view=view or record_view(suite), judge_source=source
    )


def record_view(suite: SuiteConfig) -> LabelView:
    """Return the view a run of ``suite`` is scored and stored with: its ``alert_labels``,
    or ``human`` under ``calibrated`` (whose rules read the judge-corrected figures, so the
    stored means keep the meaning they have without a judge)."""
    return "all" if suite.alert_labels == "all" else "human"


def hit_texts(result: RunResult) -> dict[str, str]:
    """Return doc id -> text for every hit of the run that carried its text."""
    return result.outcomes.hit_text_by_id()


def doc_texts(suite: SuiteConfig, result: RunResult | None = None) -> DocText:
    """Return the suite's ``doc_text`` seam: the text a run's hit carried, else the text of
    the suite's corpus (``evalset.corpus``, or the passages a bundled set brings).

    The corpus is read whether or not a metric counts units: it is what shows a hit whose
    search returned no text.
    """
    from monitor.evalset.corpus import load_corpus

    texts = {} if result is None else hit_texts(result)
    corpus = load_corpus(suite.evalset)
    if corpus is None:
        return texts.get
    from_corpus = corpus.text

    def text_of(doc_id: str) -> str | None:
        found = texts.get(doc_id)
        return found if found is not None else from_corpus(doc_id)

    return text_of


class JudgeLines(NamedTuple):
    """What a judge's round says in the report: ``notes`` (how many pairs it graded, the
    rule metrics under human labels only and with its labels) and ``warnings`` (its
    failures and refused answers); ``layer_id`` is the layer it added (None: none)."""

    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    layer_id: int | None = None


def judge_after_run(
    suite: SuiteConfig, store: Store, frozen: EvalSet, record: RunRecord, result: RunResult
) -> JudgeLines:
    """Let the suite's judge grade the run's label holes; return lines for the report.

    The notes say how many pairs the judge graded and the rule metrics under human labels
    only and with the judge's labels. A judge that fails is logged and reported in a
    warning, with the suite's secrets (the judge's headers and URL credentials among them)
    masked: the run itself stands.
    """
    config = suite.judge
    if config is None:
        return JudgeLines()
    try:
        judge = build_judge(config)
        try:
            graded = judge_holes(
                store,
                suite.name,
                suite_evalset(store, suite, frozen, "all"),
                frozen,
                [record],
                judge,
                config,
                depth=suite.k,
                doc_text=doc_texts(suite, result),
            )
        finally:
            close = getattr(judge, "close", None)
            if callable(close):
                close()
    except JudgeError as error:
        said = suite_scrubber(suite)(str(error))
        log.error("judge_failed", suite=suite.name, error=said)
        return JudgeLines(warnings=(f"judge failed: {said}",))
    notes: list[str] = []
    warnings: list[str] = []
    layer = graded.layer
    if layer is not None:
        pairs = counted(layer.size, "pair")
        notes.append(f"judge {config.judge_id} graded {pairs} (layer {layer.layer_id})")
    if graded.refused:
        said = suite_scrubber(suite)(str(graded.first_refusal))
        log.error("judge_answers_refused", suite=suite.name, refused=graded.refused, first=said)
        warnings.append(
            f"judge failed: judge {config.judge_id!r}: {counted(graded.refused, 'answer')} "
            f"refused, never stored (first: {said})"
        )
    if graded.stopped is not None:
        log.warning("judge_cost_cap", suite=suite.name, stopped=graded.stopped, left=graded.left)
        warnings.append(
            f"judge {config.judge_id} stopped at its cost cap ({graded.stopped}): "
            f"{counted(graded.left, 'pair')} left unjudged this run"
        )
    notes += label_views(store, suite, frozen, record)
    return JudgeLines(tuple(notes), tuple(warnings), None if layer is None else layer.layer_id)


def judge_agreement(
    store: Store, suite: SuiteConfig, frozen: EvalSet, *, keep: bool = True
) -> Agreement | None:
    """Return the agreement of the suite's judge (as configured now) with human grades, with
    no pair when it graded nothing yet; None for a suite without judge. ``keep`` stores
    figures computed afresh (see ``suite_agreement``)."""
    if suite.judge is None:
        return None
    from monitor.judgments.agreement import agreement_of, suite_agreement

    source = judge_source(suite.judge)
    top = suite.judge.max_grade
    for found in suite_agreement(store, suite.name, frozen, max_grade=top, keep=keep):
        if found.judge == source:
            return found
    return agreement_of(suite.name, source, [], max_grade=top)


def label_views(
    store: Store, suite: SuiteConfig, frozen: EvalSet, record: RunRecord
) -> tuple[str, ...]:
    """Return lines giving the run's rule metrics with human labels only and with the
    judge's labels, which of the two gates alerts, and the judge's agreement with human
    grades (nothing for a suite without judge)."""
    if suite.judge is None:
        return ()
    lines = []
    metrics = list(dict.fromkeys(str(r.metric) for r in suite.rules if r.metric is not None))
    # Under calibrated the comparison's notes give each rule metric three ways already.
    if suite.alert_labels != "calibrated" or not metrics:
        corpus = _corpus(suite)
        human = rescore(record, suite_evalset(store, suite, frozen, "human"), corpus=corpus)
        judged = rescore(record, suite_evalset(store, suite, frozen, "all"), corpus=corpus)
        for metric in metrics or list(record.means)[:3]:
            a, b = human.means.get(metric, math.nan), judged.means.get(metric, math.nan)
            lines.append(f"{metric}: {a:.4f} with human labels only, {b:.4f} with judge labels")
    gate = {
        "human": "human labels only",
        "all": "judge labels",
        "calibrated": "judge labels corrected on the queries people verified",
    }[suite.alert_labels]
    lines.append(f"alerts are gated on {gate} (alert_labels: {suite.alert_labels})")
    # Read only: a report shows the figures and never writes the store.
    agreement = judge_agreement(store, suite, frozen, keep=False)
    if agreement is not None:
        lines.append(agreement.lines()[0])
    return tuple(lines)


def rescored_pair(
    store: Store,
    suite: SuiteConfig,
    frozen: EvalSet,
    run: RunRecord,
    baseline: RunRecord | None,
    *,
    effective: tuple[EvalSet, RunLabels] | None = None,
) -> tuple[RunRecord, RunRecord | None, tuple[str, ...]]:
    """Return ``run`` and ``baseline`` both measured under the suite's judgments in force,
    with lines saying which judgments the figures use.

    Each is re-scored from its stored rankings when it was measured with other judgments
    of the same queries; one measured on other queries is left as stored, so the comparison
    says that the eval set changed. ``effective`` is the suite's effective eval set and its
    ``labels_of``, when the caller holds them already (a report of many runs).
    """
    evalset, current = effective or _effective(store, suite, frozen)
    corpus = _corpus(suite)
    mine = align_baseline(store, run, evalset, frozen, role="run", corpus=corpus, current=current)
    theirs = align_baseline(store, baseline, evalset, frozen, corpus=corpus, current=current)
    version = current.judgments_version[:19]
    notes = [note for note in (mine.note, theirs.note) if note is not None]
    notes.append(f"figures use judgments {version} ({record_view(suite)} labels)")
    notes += label_views(store, suite, frozen, run)
    return mine.baseline or run, theirs.baseline, tuple(notes)


def rescored_history(
    store: Store,
    suite: SuiteConfig,
    frozen: EvalSet,
    frame: pd.DataFrame,
    *,
    effective: tuple[EvalSet, RunLabels] | None = None,
) -> tuple[pd.DataFrame, int]:
    """Return the suite's history frame (see ``Store.history``) with the metric means of
    every ok run measured with other judgments of the same queries re-scored under the
    judgments in force, and how many runs were re-scored.

    Runs measured on other queries, whose labels cannot be known, or whose per-query detail
    was pruned keep their figures.
    ``effective`` is as for :func:`rescored_pair`.
    """
    evalset, current = effective or _effective(store, suite, frozen)
    corpus = _corpus(suite)
    out = frame.copy()
    count = 0
    for position, (run_id, status) in enumerate(zip(frame["run_id"], frame["status"], strict=True)):
        if status != "ok":
            continue
        labels = store.run_labels(int(run_id))
        if labels is not None and labels == current:
            continue
        record = store.get_run(int(run_id))
        if record.pruned_at is not None:  # no per-query detail to re-score: as measured
            continue
        aligned = align_baseline(store, record, evalset, frozen, corpus=corpus, current=current)
        if not aligned.rescored or aligned.baseline is None:
            continue
        count += 1
        for metric, value in aligned.baseline.means.items():
            if metric in out.columns:
                out.at[out.index[position], metric] = value
    return out, count


def _effective(store: Store, suite: SuiteConfig, frozen: EvalSet) -> tuple[EvalSet, RunLabels]:
    evalset = suite_evalset(store, suite, frozen)
    return evalset, labels_of(evalset)
