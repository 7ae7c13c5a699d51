"""The one path of a run, composed once: load, search, measure, record, compare.

The scheduled run (:mod:`monitor.job.suite`), the shards of a sharded attempt
(:mod:`monitor.job.shard`) and the gate (:mod:`monitor.gate.compose`) all take these steps:
:func:`load_frozen` reads the suite's frozen eval set (from the eval-set cache, with the
digests the store kept, when its files are unchanged), :func:`search_suite` runs the eval
set through the search with the suite's runner settings, :func:`measure` scores the run and
builds the store's record of it, and
:func:`compare_with_baseline` compares a record with a baseline under the suite's rules;
:func:`compare_stored` does that for a stored run and keeps what the next runs read (the
rule flags, the overlap, retention) and the comparison, which the report and the web app
read instead of computing it again (:mod:`monitor.job.stored`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING

from monitor.compare import Comparison, compare_runs
from monitor.compare.history import (
    record_calibration,
    record_overlap,
    record_rule_flags,
    record_verdict,
    rule_history,
)
from monitor.compare.ppi import MIN_VERIFIED, Calibration, side_by_side
from monitor.errors import InternalError, UsageError
from monitor.evalset import cache, digests
from monitor.evalset.corpus import corpus_for
from monitor.job.measurable import measured_anything
from monitor.job.outcome import SuiteOutcome
from monitor.job.stored import comparison_key, evalset_identity, save_comparison
from monitor.judgments import align_baseline, labels_of
from monitor.judgments.calibrated import calibrated_views
from monitor.judgments.suite import judge_after_run, judge_agreement
from monitor.metrics.evaluation import EvaluationResult, evaluate
from monitor.metrics.spec import Metric
from monitor.runner import RunResult, run_queries
from monitor.secrets import suite_scrubber
from monitor.store.layers import RunLabels
from monitor.store.measured import run_rankings, run_record
from monitor.store.prune import apply_retention

if TYPE_CHECKING:
    from monitor.config.model import SignificanceConfig, SuiteConfig
    from monitor.evalset import EvalSet
    from monitor.evalset.digests import SetDigests
    from monitor.judgments.agreement import Agreement
    from monitor.search.base import Search
    from monitor.store import Store
    from monitor.store.comparisons import ComparisonKey
    from monitor.store.records import RunRecord


@dataclass(frozen=True, slots=True)
class FrozenEvalSet:
    """A suite's frozen eval set as a run read it.

    ``labels`` are its labels (the run's when no judgment layer changes the set); ``fresh``
    the digests to keep for the next run (None when the store holds them already, or when
    they cannot be kept); ``files`` the digest of the files it was read from (None for a
    bundled set, or files that changed while they were read).
    """

    evalset: EvalSet
    labels: RunLabels
    fresh: SetDigests | None = None
    files: str | None = None


def load_frozen(suite: SuiteConfig, kept: Mapping[str, object] | None) -> FrozenEvalSet:
    """Return the suite's frozen eval set with its fingerprint (every run records it), its
    labels and digests (:class:`FrozenEvalSet`).

    ``kept`` is the store's record of the digests (:mod:`monitor.evalset.digests`): when
    the set's files hash as they did, the digests are taken from it instead of computed.
    """
    evalset, files = cache.load_tracked(suite.evalset)
    found = None if files is None else digests.known(kept, files)
    if found is not None:
        evalset.adopt_fingerprint(found.fingerprint)
        labels = RunLabels(found.queries_fingerprint, found.judgments_version)
        return FrozenEvalSet(evalset, labels, files=files)
    fingerprint = evalset.fingerprint  # computed here, on the loading thread, and kept
    labels = labels_of(evalset)
    if files is None:
        return FrozenEvalSet(evalset, labels)
    fresh = digests.SetDigests(
        files, fingerprint, labels.queries_fingerprint, labels.judgments_version
    )
    return FrozenEvalSet(evalset, labels, fresh, files)


def search_suite(
    suite: SuiteConfig,
    evalset: EvalSet,
    search: Search,
    *,
    progress: bool | None = None,
    label: str | None = None,
    cancel: threading.Event | None = None,
) -> RunResult:
    """Run ``evalset`` through ``search`` with the suite's runner settings (concurrency,
    timeouts, retries, deadline, error budget, warm-up) and its secrets scrubbed from errors."""
    runner = suite.runner
    return run_queries(
        evalset.columns(),  # sent without a record per query
        search,
        k=suite.k,
        concurrency=runner.concurrency,
        timeout=runner.timeout_seconds,
        retries=runner.retries,
        deadline=runner.deadline_seconds,
        error_budget=runner.error_budget,
        warmup=runner.warmup,
        progress=progress,
        label=label or suite.name,
        scrub=suite_scrubber(suite),
        cancel=cancel,
    )


def score_run(suite: SuiteConfig, evalset: EvalSet, result: RunResult) -> EvaluationResult:
    """Score a finished run of ``suite`` as every run of it is scored: its recorded metrics
    (:func:`recorded_metrics`), failed queries left out, metrics with a unit counted through
    the suite's corpus, and the suite's scoring options (``scoring:``)."""
    return evaluate(
        evalset,
        result,
        recorded_metrics(suite),
        exclude_failed=True,
        corpus=corpus_for(suite.evalset, suite.metrics),
        **suite.scoring.options(),
    )


def recorded_metrics(suite: SuiteConfig) -> tuple[Metric, ...]:
    """Return the metrics a run of ``suite`` records: its own, then ``judged@k`` at its
    largest cutoff (judgment coverage, which tells whether the others can be trusted)."""
    cutoffs = [metric.k for metric in suite.metrics if metric.k is not None]
    coverage = Metric("judged", max(cutoffs, default=suite.k))
    return tuple(dict.fromkeys((*suite.metrics, coverage)))


#: Most hits whose rankings are numbered beside the scoring. Both need temporaries of tens
#: of bytes a hit: a larger run numbers them after it is scored, so that its peak memory
#: holds one set of them, for a few seconds more.
BESIDE_SCORING_MAX_HITS = 4_000_000


def measure(
    suite: SuiteConfig,
    evalset: EvalSet,
    config_hash: str,
    result: RunResult,
    *,
    pipeline: str | None = None,
    evaluation: EvaluationResult | None = None,
) -> tuple[RunRecord, EvaluationResult]:
    """Measure a finished run; return the store's record of it (named ``pipeline``, the
    suite's own by default) and the evaluation: ``evaluation`` when the run was scored
    already (a sharded run's, joined from its parts), else :func:`score_run`'s.

    The rankings the store saves are numbered on a second thread while the run is scored:
    both are numpy and pandas work that lets go of the GIL, and neither needs the other. A
    run of more than :data:`BESIDE_SCORING_MAX_HITS` hits numbers them after the scoring.
    """
    try:
        if evaluation is not None:
            numbered = run_rankings(result)
        elif result.outcomes.hit_count > BESIDE_SCORING_MAX_HITS:
            evaluation = score_run(suite, evalset, result)
            numbered = run_rankings(result)
        else:
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="monitor-record") as pool:
                rankings = pool.submit(run_rankings, result)
                evaluation = score_run(suite, evalset, result)
                numbered = rankings.result()
        record = run_record(
            suite, evalset, config_hash, result, evaluation, pipeline=pipeline, rankings=numbered
        )
        return record, evaluation
    except UsageError as error:  # the monitor's own figures failed their checks
        raise InternalError("measuring the run", str(error)) from error


def compare_with_baseline(
    suite: SuiteConfig,
    run: RunRecord,
    baseline: RunRecord | None,
    evalset: EvalSet,
    *,
    history: dict[str, list[bool]],
    significance: SignificanceConfig | None = None,
    agreement: Agreement | None = None,
    calibration: Calibration | None = None,
) -> Comparison:
    """Compare ``run`` (measured on ``evalset``) with ``baseline`` under the suite's rules,
    segments, invariants and coverage; ``significance`` replaces the suite's (the gate's,
    without persistence); ``agreement`` is the suite judge's, for ``judge_agreement``;
    ``calibration`` the judge-corrected figures the quality rules read instead
    (``alert_labels: calibrated``)."""
    columns = evalset.columns()  # the set's queries by id, read from its columns
    return compare_runs(
        run,
        baseline,
        suite.rules,
        significance=suite.significance if significance is None else significance,
        segments=suite.segments,
        metadata=columns.by_id(columns.metadata),
        texts=columns.by_id(columns.texts),
        history=history,
        invariants=suite.invariants,
        qrels=columns.qrels(),
        coverage=suite.coverage,
        agreement=agreement,
        calibration=calibration,
    )


def calibration_of(
    suite: SuiteConfig,
    store: Store,
    frozen: EvalSet,
    run: RunRecord,
    baseline: RunRecord | None,
) -> Calibration | None:
    """Return the judge-corrected figures of ``run`` and ``baseline`` under the judgments in
    force, for a suite with ``alert_labels: calibrated`` (None for any other)."""
    if suite.alert_labels != "calibrated":
        return None
    corpus = corpus_for(suite.evalset, suite.metrics)
    now = calibrated_views(store, suite, frozen, run, corpus=corpus)
    then = None
    if baseline is not None:
        then = calibrated_views(store, suite, frozen, baseline, corpus=corpus)
    least = suite.judge.min_verified if suite.judge is not None else MIN_VERIFIED
    return Calibration(now, then, min_verified=least)


def _key_after_judging(
    suite: SuiteConfig,
    store: Store,
    frozen: EvalSet,
    keys: tuple[ComparisonKey | None, ComparisonKey | None],
    added: set[int],
    judged: int | None,
    agreement: Agreement | None,
) -> ComparisonKey | None:
    """Return the key the comparison computed before the judge graded the run is kept under
    (None: none, a reader computes it again); ``keys`` are its key before and after the
    judge graded, ``added`` the ids of the suite's layers added meanwhile, ``judged`` the
    judge's own layer (None when it added none).

    A judge that added no layer left the key as it was. One that added a layer fills label
    holes only, which the comparison of a suite alerting on human labels does not read: it
    still holds under the key of the judgments now in force, while the only layer added since
    is the judge's and the judge's agreement with human grades (which only pairs graded by both
    move) reads as before. A suite whose rules read the judge's labels (``alert_labels: all``
    or ``calibrated``) is compared again."""
    before, after = keys
    if after == before:
        return before
    if suite.alert_labels != "human" or agreement is None or added != {judged}:
        return None
    now = judge_agreement(store, suite, frozen, keep=False)
    return after if now is not None and _same_overlap(agreement, now) else None


def _same_overlap(before: Agreement, after: Agreement) -> bool:
    """Return whether two agreements were computed on the same overlap of grades (their
    statistics, bootstrap included, follow from it)."""
    return (before.judge, before.pairs, before.queries, before.grades, before.confusion) == (
        after.judge,
        after.pairs,
        after.queries,
        after.grades,
        after.confusion,
    )


def compare_stored(
    suite: SuiteConfig,
    store: Store,
    run_id: int,
    evalset: EvalSet,
    evaluation: EvaluationResult,
    result: RunResult | None,
    loaded: FrozenEvalSet,
) -> SuiteOutcome:
    """Compare the stored run ``run_id`` (measured on ``evalset``: the frozen set ``loaded``
    with the suite's judgment layers) with the suite's baseline, and keep the comparison
    (:mod:`monitor.job.stored`) and what the next runs read."""
    frozen = loaded.evalset
    labels = loaded.labels if evalset is frozen else labels_of(evalset)
    store.set_run_labels(run_id, labels)
    record = store.get_run(run_id)

    # A baseline measured with other judgments of the same queries is re-scored, not lost.
    corpus = corpus_for(suite.evalset, suite.metrics)
    stored = store.get_baseline(suite.name)
    unmeasured = stored is not None and not measured_anything(stored.means)
    if unmeasured:  # an outage pinned before such runs failed: nothing to compare with
        stored = None
    aligned = align_baseline(store, stored, evalset, frozen, corpus=corpus, current=labels)
    baseline = aligned.baseline
    history = rule_history(store, suite.name, before=run_id)
    # Judging after the run fills holes only, so it never moves the overlap measured here.
    agreement = judge_agreement(store, suite, frozen)
    changed = baseline is not None and baseline.evalset_fingerprint != record.evalset_fingerprint
    calibration = calibration_of(suite, store, frozen, record, None if changed else baseline)
    keyed = partial(
        comparison_key,
        suite,
        store,
        record,
        baseline,
        evalset=evalset_identity(suite, frozen, loaded.files),
        judgments=labels.judgments_version,
        history=history,
        invariants=bool(suite.invariants),
    )
    key = keyed()
    layers = store.layer_ids(suite.name) if result is not None and suite.judge else ()
    try:
        comparison = compare_with_baseline(
            suite,
            record,
            baseline,
            evalset,
            history=history,
            agreement=agreement,
            calibration=calibration,
        )
    except UsageError as error:
        raise InternalError("comparing the run with its baseline", str(error)) from error
    computed = comparison  # as a reader computes it: before this run's own warnings and notes
    warned: tuple[str, ...] = () if aligned.note is None else (aligned.note,)
    if unmeasured:
        warned += (
            "the pinned baseline measured nothing (an outage pinned before such runs "
            "failed): compared with no baseline; pin a run that measured",
        )
    if result is not None:  # kept whenever the suite has a judge
        judged = judge_after_run(suite, store, frozen, record, result)
        warned += judged.warnings
        comparison = replace(comparison, notes=(*comparison.notes, *judged.notes))
        added = set(store.layer_ids(suite.name)) - set(layers)
        key = _key_after_judging(
            suite, store, frozen, (key, keyed()), added, judged.layer_id, agreement
        )
    if warned:
        comparison = replace(comparison, warnings=(*comparison.warnings, *warned))
    record_rule_flags(store, suite.name, run_id, comparison)
    record_overlap(store, suite.name, run_id, comparison.overlap)
    if calibration is not None:
        watched = dict.fromkeys(str(r.metric) for r in suite.rules if r.metric is not None)
        record_calibration(store, suite.name, run_id, side_by_side(calibration, list(watched))[1])
    record_verdict(store, suite.name, run_id, comparison)
    if key is not None:
        save_comparison(store, key, computed)
    apply_retention(store, suite.name, suite.retention)
    return SuiteOutcome(
        suite.name,
        record,
        comparison,
        evaluation,
        result,
        evalset,
        baseline=stored,
        agreement=agreement,
    )
