"""Compose one run of a suite: the single path both ``run`` and ``daemon`` take.

load eval set -> run search -> metrics -> store -> compare with baseline -> export -> alert

:func:`run_suite` holds the suite's store lock for the whole run, so two schedulers starting
the same suite at once cannot both proceed. A search backend that fails (error budget,
backend down) still leaves a ``failed`` run in the store, exports its failure gauges and
raises its monitor-failure alert; the error is then raised again for the caller to map to
its exit code. The run's clock and its delivery of notifications are injected, so a test
neither waits for real time nor sleeps through real backoff.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime, timezone
from functools import partial
from typing import TYPE_CHECKING

from monitor.alerts.delivery import Delivery
from monitor.errors import (
    InternalError,
    LockedTooLongError,
    MonitorError,
    SearchBackendError,
    ShardAttemptFailed,
    UsageError,
)
from monitor.lockskips import suite_lock
from monitor.logs import get_logger, hide_secrets
from monitor.memory import paused_collection, release_freed
from monitor.outcome import SuiteOutcome
from monitor.secrets import suite_scrubber

if TYPE_CHECKING:
    from monitor.alerts import Notifier
    from monitor.compare import Comparison
    from monitor.config.model import SuiteConfig
    from monitor.evalset import EvalSet
    from monitor.evalset.digests import SetDigests
    from monitor.evaluation import EvaluationResult
    from monitor.exporters import SuiteSnapshot
    from monitor.metrics.spec import Metric
    from monitor.publish import Sink
    from monitor.run.rankings import Rankings
    from monitor.runner import RunResult
    from monitor.search.base import Search
    from monitor.shards import Shard, ShardOutcome
    from monitor.store import Store
    from monitor.store.layers import RunLabels
    from monitor.store.records import RunFigures, RunRecord

log = get_logger(__name__)

#: How many recent runs' rule breaches are kept for persistence checks.
_HISTORY = 50
_RULE_HISTORY = "rule_history"


#: Gives the current time, timezone-aware; a test injects a fixed or manual clock.
Clock = Callable[[], datetime]


def _now() -> datetime:
    return datetime.now(timezone.utc)


@paused_collection()  # millions of long-lived objects: no collector pass over them
def run_suite(
    suite: SuiteConfig,
    store: Store,
    *,
    config_hash: str = "",
    progress: bool | None = None,
    sinks: Sequence[Sink] = (),
    notifiers: Mapping[str, Notifier] | None = None,
    clock: Clock = _now,
    delivery: Delivery | None = None,
    cancel: threading.Event | None = None,
    keep_outcomes: bool = True,
) -> SuiteOutcome:
    """Run ``suite`` once: search, measure, store, compare, export, alert.

    ``sinks`` also receive the run's gauges (the daemon's ``/metrics``, ``--metrics-out``);
    ``notifiers`` replace the suite's configured ones (tests). ``clock`` gives the times of
    the attempt and its alerts, ``delivery`` how notifications are retried. Once ``cancel``
    is set no further query starts and the run fails with RunTerminated. A run that fails
    still exports its failure gauges and raises its monitor-failure alert before the error
    propagates. Without ``keep_outcomes`` the search's outcomes (every hit, as the search
    gave it) are let go once the run is measured and stored: the outcome's ``result`` is
    then None, and a large run compares with its baseline without holding them.
    """
    from monitor.alerts import build_notifiers
    from monitor.alerts.base import close_notifiers

    hide_secrets(suite_scrubber(suite))
    delivery = delivery or Delivery()
    built = dict(notifiers) if notifiers is not None else build_notifiers(suite)
    try:
        on_too_long = partial(_publish_lock_failure, suite, store, sinks, built, clock, delivery)
        with suite_lock(store, suite, clock, on_too_long):
            started = clock()
            try:
                outcome = _run_locked(
                    suite, store, config_hash, progress, clock, cancel, keep_outcomes
                )
            except Exception as error:  # a bug too: the failure gauges still go out
                _publish_failure(suite, store, error, started, sinks, built, clock, delivery)
                raise
            return _publish(suite, store, outcome, sinks, built, clock, delivery)
    finally:
        if notifiers is None:
            close_notifiers(built.values())


@paused_collection()
def run_shard(
    suite: SuiteConfig,
    store: Store,
    shard: Shard,
    attempt: str,
    *,
    deadline_seconds: float | None = None,
    config_hash: str = "",
    progress: bool | None = None,
    sinks: Sequence[Sink] = (),
    notifiers: Mapping[str, Notifier] | None = None,
    clock: Clock = _now,
    delivery: Delivery | None = None,
    cancel: threading.Event | None = None,
) -> ShardOutcome:
    """Run shard ``shard`` of ``suite`` as a part of ``attempt``; finish the attempt if last.

    The shard runs its slice of the eval set (:func:`monitor.shards.select`) and stores the
    outcomes as its part. The shard whose part completes the attempt measures the whole run,
    stores it (in the transaction that stores the part), compares it with the baseline and
    publishes it exactly as :func:`run_suite` does, and its outcome is returned. A shard
    whose search fails, or that finds the attempt past its ``deadline_seconds`` (counted
    from its first shard) with parts missing, stores a failed run instead, raises the
    monitor-failure alert, exports the failure gauges and raises: that happens once per
    attempt. Open attempts of the suite whose deadline has passed are failed the same way
    when any shard of the suite starts.
    """
    from monitor.alerts import build_notifiers
    from monitor.alerts.base import close_notifiers
    from monitor.evalset.suite import load_evalset
    from monitor.judgments.suite import suite_evalset
    from monitor.search import build_search, close_search
    from monitor.shards import (
        DEFAULT_DEADLINE_SECONDS,
        Part,
        ShardOutcome,
        ShardStore,
        merge,
        select,
    )

    hide_secrets(suite_scrubber(suite))
    delivery = delivery or Delivery()
    built = dict(notifiers) if notifiers is not None else build_notifiers(suite)
    deadline = DEFAULT_DEADLINE_SECONDS if deadline_seconds is None else deadline_seconds
    if not deadline > 0:
        raise UsageError(f"shard deadline: expected seconds above 0, found {deadline}")
    if suite.evalset.reference is not None:
        raise UsageError(
            f"suite {suite.name!r}: evalset.reference judges the whole eval set at once; "
            "it cannot run sharded"
        )
    publish_failure = partial(
        _publish_failure, suite, store, sinks=sinks, notifiers=built, clock=clock, delivery=delivery
    )
    try:
        parts = ShardStore(store)
        started = clock()
        frozen = load_evalset(suite.evalset)
        evalset = suite_evalset(store, suite, frozen)
        opened = parts.open(
            suite.name,
            attempt,
            shard,
            config_hash=config_hash,
            evalset_fingerprint=evalset.fingerprint,
            deadline_seconds=deadline,
            now=started,
        )

        def failed_run(error: MonitorError | None, reason: str, at: datetime) -> RunRecord:
            return _failed_attempt(suite, evalset, config_hash, opened.opened_at, at, reason, error)

        expired = parts.expire(suite.name, now=started, fail=partial(failed_run, None))
        for gone in expired:
            late = ShardAttemptFailed(suite.name, gone.attempt, gone.missing, gone.count)
            publish_failure(late, gone.opened_at)
            if gone.attempt == attempt:
                raise late
        if opened.status != "open":
            return ShardOutcome(shard, opened, "closed", None)
        search = build_search(suite.search.kind, suite.search.plugin_options())
        failure: SearchBackendError | None = None
        result: RunResult | None = None
        try:
            result = search_suite(
                suite,
                select(evalset, shard),
                search,
                progress=progress,
                label=f"{suite.name} shard {shard}",
                cancel=cancel,
            )
        except SearchBackendError as error:
            failure = error
        finally:
            close_search(search)
        said = (
            None
            if failure is None
            else suite_scrubber(suite)(f"{type(failure).__name__}: {failure}")
        )
        measured: list[tuple[EvaluationResult, RunResult]] = []

        def finalise(stored: Sequence[Part]) -> RunRecord:
            merged = merge(evalset, stored)
            record, evaluation = _measured(suite, evalset, config_hash, merged)
            measured.append((evaluation, merged))
            return record

        saved = parts.save_part(
            suite.name,
            attempt,
            Part(shard.index, result, said),
            now=clock(),
            finalise=finalise,
            fail=partial(failed_run, failure),
        )
        if saved.result == "failed":
            stopped = failure or ShardAttemptFailed(
                suite.name, attempt, saved.attempt.missing, saved.attempt.count
            )
            publish_failure(stopped, opened.opened_at)
            raise stopped
        if failure is not None:  # the attempt was decided already: its alert went out then
            raise failure
        if saved.result != "finalised" or saved.run_id is None:
            return ShardOutcome(shard, saved.attempt, saved.result, None)
        _seed_unpinned(suite, store, evalset, config_hash)
        evaluation, merged = measured[0]
        try:
            outcome = _compared(suite, store, saved.run_id, evalset, evaluation, merged, frozen)
        except Exception as error:  # the run is stored; its failure still goes out
            publish_failure(error, opened.opened_at)
            raise
        outcome = _publish(suite, store, outcome, sinks, built, clock, delivery)
        return ShardOutcome(shard, saved.attempt, "finalised", outcome)
    finally:
        if notifiers is None:
            close_notifiers(built.values())


def _publish(
    suite: SuiteConfig,
    store: Store,
    outcome: SuiteOutcome,
    sinks: Sequence[Sink],
    notifiers: Mapping[str, Notifier],
    clock: Clock,
    delivery: Delivery,
) -> SuiteOutcome:
    """Export a completed run's gauges and send its alerts; return the outcome with both."""
    from monitor.publish import alert, export

    snapshot, errors = _run_snapshot(suite, outcome)
    if snapshot is not None:
        errors += export(snapshot, suite, sinks)
    alerts = alert(suite, store, outcome, None, at=clock(), notifiers=notifiers, delivery=delivery)
    return replace(outcome, published=replace(alerts, export_errors=tuple(errors)))


def _publish_lock_failure(
    suite: SuiteConfig,
    store: Store,
    sinks: Sequence[Sink],
    notifiers: Mapping[str, Notifier],
    clock: Clock,
    delivery: Delivery,
    error: LockedTooLongError,
) -> None:
    """Publish a suite skipped for its lock too long as a failed attempt."""
    _publish_failure(suite, store, error, clock(), sinks, notifiers, clock, delivery)


def _run_snapshot(
    suite: SuiteConfig, outcome: SuiteOutcome
) -> tuple[SuiteSnapshot | None, list[str]]:
    """Return the gauges of a completed run and the problems met building them.

    The snapshot checks every figure it is given. A figure of the monitor's own making that
    fails a check (the run is stored and compared by then) is a fault of the monitor, never
    of the config: it is logged and returned as a problem, and the attempt's gauges (run
    success 0, its query counts) go out instead, so Prometheus sees that something is wrong
    while the run's alerts still go out.
    """
    from monitor.publish import suite_snapshot

    run = outcome.run
    try:
        snapshot = suite_snapshot(
            suite,
            outcome,
            started_at=run.started_at,
            finished_at=run.finished_at,
            last_success_at=run.finished_at,
        )
    except UsageError as error:
        log.error("snapshot_invalid", suite=suite.name, run_id=run.run_id, error=str(error))
        problem = f"snapshot of run {run.run_id}: {error}"
    else:
        return snapshot, []
    try:
        attempt = suite_snapshot(
            suite,
            None,
            started_at=run.started_at,
            finished_at=run.finished_at,
            last_success_at=None,
            figures=run.figures,
        )
    except UsageError as error:
        log.error("snapshot_invalid", suite=suite.name, run_id=run.run_id, error=str(error))
        return None, [problem]
    return attempt, [problem]


def _publish_failure(
    suite: SuiteConfig,
    store: Store,
    error: Exception,
    started: datetime,
    sinks: Sequence[Sink],
    notifiers: Mapping[str, Notifier],
    clock: Clock,
    delivery: Delivery,
) -> None:
    """Export the failure gauges and raise the failure alert; never mask ``error``.

    The last success is read from the store, so it is right after a restart too.
    """
    from monitor.publish import alert, export, suite_snapshot

    finished = max(clock(), started)
    try:
        last = store.latest_run(suite.name)
        last_success = last.finished_at if last is not None else None
    except MonitorError:
        last_success = None
    snapshot = suite_snapshot(
        suite,
        None,
        started_at=started,
        finished_at=finished,
        last_success_at=last_success,
        figures=_failure_figures(error),
    )
    export(snapshot, suite, sinks)
    try:
        alert(suite, store, None, error, at=finished, notifiers=notifiers, delivery=delivery)
    except MonitorError as failure:
        log.error("failure_alert_failed", suite=suite.name, error=str(failure))


def _run_locked(
    suite: SuiteConfig,
    store: Store,
    config_hash: str,
    progress: bool | None,
    clock: Clock,
    cancel: threading.Event | None = None,
    keep_outcomes: bool = True,
) -> SuiteOutcome:
    from monitor.evalset import digests
    from monitor.judgments.suite import suite_evalset
    from monitor.runner.reference import judge_by_reference
    from monitor.search import close_search

    started = clock()
    # The eval set is read on a second thread while the search is built (a replay reads its
    # run file): both are mostly file reading and array work. An eval set that fails is
    # reported first, and the search's own failure where it was before, once the eval set
    # is in place.
    kept = store.get_state(digests.NAMESPACE, suite.name)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="monitor-evalset") as pool:
        loading = pool.submit(_loaded_evalset, suite, kept)
        built = _built_search(suite)
        try:
            frozen, frozen_labels, fresh = loading.result()
            evalset = frozen
        except BaseException:
            if not isinstance(built, BaseException):
                close_search(built)
            raise
    if fresh is not None:
        store.put_state(digests.NAMESPACE, suite.name, fresh.as_state())
    try:
        if suite.evalset.reference is not None:
            try:
                evalset = judge_by_reference(
                    evalset, suite.evalset.reference, suite.evalset.reference_k
                )
            except SearchBackendError as error:
                store.save_run(_failed_record(suite, evalset, config_hash, started, clock(), error))
                raise
        evalset = suite_evalset(store, suite, evalset)
        _seed_unpinned(suite, store, evalset, config_hash)
    except BaseException:
        if not isinstance(built, BaseException):
            close_search(built)
        raise
    if isinstance(built, BaseException):
        raise built
    search = built
    try:
        result = search_suite(suite, evalset, search, progress=progress, cancel=cancel)
    except SearchBackendError as error:
        store.save_run(_failed_record(suite, evalset, config_hash, started, clock(), error))
        raise
    finally:
        close_search(search)

    release_freed()  # what reading and answering freed, before the run is measured
    record, evaluation = _measured(suite, evalset, config_hash, result)
    # A judge grades the run's hits after the comparison: only then are they still needed.
    # Otherwise they are let go once measured, before the record is saved.
    outcomes = result if keep_outcomes or suite.judge is not None else None
    del result
    release_freed()
    run_id = store.save_run(record)
    del record
    release_freed()
    labels = frozen_labels if evalset is frozen else None
    return _compared(suite, store, run_id, evalset, evaluation, outcomes, frozen, labels)


def _loaded_evalset(
    suite: SuiteConfig, kept: Mapping[str, object] | None
) -> tuple[EvalSet, RunLabels, SetDigests | None]:
    """Return the suite's frozen eval set with its fingerprint (every run records it), its
    labels (the run's when no judgment layer changes the set), and the digests to keep for
    the next run (None when ``kept`` already holds them, or when they cannot be kept).

    ``kept`` is the store's record of the digests (:mod:`monitor.evalset.digests`): when
    the set's files hash as they did, the digests are taken from it instead of computed.
    """
    from monitor.evalset import cache, digests
    from monitor.evalset.suite import load_evalset
    from monitor.judgments import labels_of
    from monitor.store.layers import RunLabels

    before = digests.stat_files(suite.evalset)
    files = digests.files_digest(suite.evalset) if before is not None else None
    # A large set read into columns before is read back from the cache, not parsed again.
    cached = cache.read(files) if files is not None else None
    evalset = cached if cached is not None else load_evalset(suite.evalset)
    if digests.stat_files(suite.evalset) != before:
        files = None  # changed while it was read: neither trusted nor kept
        if cached is not None:
            evalset = load_evalset(suite.evalset)  # the file as it is now
    elif cached is None and files is not None and before is not None:
        cache.write(files, evalset, sum(size for size, _, _ in before))
    found = None if files is None else digests.known(kept, files)
    if found is not None:
        evalset.adopt_fingerprint(found.fingerprint)
        return evalset, RunLabels(found.queries_fingerprint, found.judgments_version), None
    fingerprint = evalset.fingerprint  # computed here, on the loading thread, and kept
    labels = labels_of(evalset)
    if files is None:
        return evalset, labels, None
    fresh = digests.SetDigests(
        files, fingerprint, labels.queries_fingerprint, labels.judgments_version
    )
    return evalset, labels, fresh


def _built_search(suite: SuiteConfig) -> Search | Exception:
    """Return the suite's search built, or the error building it raised (raised again by
    the caller where a run reports it)."""
    from monitor.search import build_search

    try:
        return build_search(suite.search.kind, suite.search.plugin_options())
    except Exception as error:
        return error


#: Most hits whose rankings are numbered beside the scoring. Both need temporaries of tens
#: of bytes a hit: a larger run numbers them after it is scored, so that its peak memory
#: holds one set of them, for a few seconds more.
BESIDE_SCORING_MAX_HITS = 4_000_000


def _measured(
    suite: SuiteConfig, evalset: EvalSet, config_hash: str, result: RunResult
) -> tuple[RunRecord, EvaluationResult]:
    """Measure a finished run; return the store's record of it and the evaluation.

    The rankings the store saves are numbered on a second thread while the run is scored:
    both are numpy and pandas work that lets go of the GIL, and neither needs the other. A
    run of more than :data:`BESIDE_SCORING_MAX_HITS` hits numbers them after the scoring.
    """
    try:
        if _hits(result) > BESIDE_SCORING_MAX_HITS:
            evaluation = score_run(suite, evalset, result)
            release_freed()
            numbered = run_rankings(result)
        else:
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="monitor-record") as pool:
                rankings = pool.submit(run_rankings, result)
                evaluation = score_run(suite, evalset, result)
                release_freed()  # the scoring's temporaries, while the rankings are numbered
                numbered = rankings.result()
        record = _record(suite, evalset, config_hash, result, evaluation, rankings=numbered)
        return record, evaluation
    except UsageError as error:  # the monitor's own figures failed their checks
        raise InternalError("measuring the run", str(error)) from error


def _hits(result: RunResult) -> int:
    """Return how many hits ``result`` holds (its outcomes' retrieved ids)."""
    return result.outcomes.hit_count


def _compared(
    suite: SuiteConfig,
    store: Store,
    run_id: int,
    evalset: EvalSet,
    evaluation: EvaluationResult,
    result: RunResult | None,
    frozen: EvalSet,
    labels: RunLabels | None = None,
) -> SuiteOutcome:
    """Compare the stored run ``run_id`` (measured on ``evalset``: ``frozen`` with the suite's
    judgment layers) with the suite's baseline and keep its rule flags. ``labels`` are those
    of ``evalset``, when the caller has them already."""
    from monitor.compare import compare_runs
    from monitor.evalset.corpus import corpus_for
    from monitor.judgments import align_baseline, labels_of
    from monitor.judgments.suite import judge_after_run
    from monitor.report.history import record_overlap
    from monitor.store.prune import apply_retention

    labels = labels if labels is not None else labels_of(evalset)
    store.set_run_labels(run_id, labels)
    record = store.get_run(run_id)

    # A baseline measured with other judgments of the same queries is re-scored, not lost.
    corpus = corpus_for(suite.evalset, suite.metrics)
    stored = store.get_baseline(suite.name)
    aligned = align_baseline(store, stored, evalset, frozen, corpus=corpus, current=labels)
    baseline = aligned.baseline
    history = rule_history(store, suite.name, before=run_id)
    columns = evalset.columns()  # the set's queries by id, read from its columns
    try:
        comparison = compare_runs(
            record,
            baseline,
            suite.rules,
            significance=suite.significance,
            segments=suite.segments,
            metadata=columns.by_id(columns.metadata),
            texts=columns.by_id(columns.texts),
            history=history,
            invariants=suite.invariants,
            qrels=columns.qrels(),
            coverage=suite.coverage,
        )
    except UsageError as error:
        raise InternalError("comparing the run with its baseline", str(error)) from error
    notes: tuple[str, ...] = () if aligned.note is None else (aligned.note,)
    if result is not None:  # kept whenever the suite has a judge
        notes += judge_after_run(suite, store, frozen, record, result)
    if notes:
        comparison = replace(comparison, warnings=(*comparison.warnings, *notes))
    _record_rule_flags(store, suite.name, run_id, comparison)
    record_overlap(store, suite.name, run_id, comparison.overlap)
    apply_retention(store, suite.name, suite.retention)
    return SuiteOutcome(
        suite.name, record, comparison, evaluation, result, evalset, baseline=stored
    )


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
    from monitor.runner import run_queries

    runner = suite.runner
    return run_queries(
        evalset.as_sequence(),  # a set read into columns is sent without a record per query
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
    from monitor.evalset.corpus import corpus_for
    from monitor.evaluation import evaluate

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
    from monitor.metrics.spec import Metric

    cutoffs = [metric.k for metric in suite.metrics if metric.k is not None]
    coverage = Metric("judged", max(cutoffs, default=suite.k))
    return tuple(dict.fromkeys((*suite.metrics, coverage)))


def rule_history(store: Store, suite: str, *, before: int | None = None) -> dict[str, list[bool]]:
    """Return, per rule, whether it breached (significantly) in each recent run, oldest first.

    Only runs with an id below ``before`` count (all recorded runs when None), so a report on
    a past run sees the history that run was judged with. The last 50 runs are kept.
    """
    state = store.get_state(_RULE_HISTORY, suite) or {}
    history: dict[str, list[bool]] = {}
    for entry in state.get("runs", []):
        if before is not None and int(entry["run_id"]) >= before:
            continue
        for rule, flag in dict(entry["flags"]).items():
            history.setdefault(str(rule), []).append(bool(flag))
    return history


def _record_rule_flags(store: Store, suite: str, run_id: int, comparison: Comparison) -> None:
    """Append this run's breach flags (a breach or a pending one) to the suite's history."""
    state = store.get_state(_RULE_HISTORY, suite) or {}
    runs = [entry for entry in state.get("runs", []) if int(entry["run_id"]) != run_id]
    flags = {o.rule: o.status in ("breach", "pending") for o in comparison.rules}
    runs.append({"run_id": run_id, "flags": flags})
    store.put_state(_RULE_HISTORY, suite, {"runs": runs[-_HISTORY:]})


def _record(
    suite: SuiteConfig,
    evalset: EvalSet,
    config_hash: str,
    result: RunResult,
    evaluation: EvaluationResult,
    *,
    pipeline: str | None = None,
    rankings: tuple[Rankings, Rankings] | None = None,
) -> RunRecord:
    """Turn a finished run into the store's record: its queries as the columns the store
    saves, one row per eval-set query, and records of them built only when read.

    Queries left out of the metrics (no relevant judgment, or the search failed for them) keep
    their rankings, latency and error but carry no metric values. The run's table hands its
    hits over as arrays: no Python object is made per hit. ``rankings`` are
    :func:`run_rankings` of the run, when the caller has them already.
    """
    import numpy as np
    import pandas as pd

    from monitor.store.records import ColumnQueries, QueryColumns, RunFigures, RunRecord

    frame = evaluation.per_query
    table = result.outcomes
    ids = table.query_ids
    # Each query's row of the evaluation's float array, found for all queries at once.
    position = (
        frame.index.get_indexer(pd.Index(ids)) if len(frame.columns) else np.full(len(ids), -1)
    )
    present = position >= 0
    metrics = tuple(str(name) for name in frame.columns) if present.any() else ()
    matrix = np.full((len(ids), len(metrics)), np.nan)
    matrix[present] = frame.to_numpy(dtype=float)[position[present]] if metrics else 0.0
    marks = np.repeat(present[:, None], len(metrics), axis=1)
    retrieved, relevant = rankings if rankings is not None else run_rankings(result)
    errors, messages = table.error_columns()
    columns = QueryColumns(
        query_ids=ids,
        latency_seconds=table.latency_list(),
        error_types=errors,
        error_messages=messages,
        retrieved_ids=retrieved,
        relevant_ids=relevant,
        metrics=metrics,
        values=matrix,
        present=marks,
    )
    return RunRecord(
        suite=suite.name,
        pipeline=pipeline or suite.pipeline,
        started_at=result.started_at,
        finished_at=result.finished_at,
        status="ok",
        evalset_fingerprint=evalset.fingerprint,
        config_hash=config_hash,
        means=evaluation.means,
        figures=RunFigures(
            latency=result.latency,
            error_rate=result.error_rate,
            zero_result_rate=result.zero_result_rate,
            mean_top1_score=result.mean_top1_score,
            queries_per_second=result.queries_per_second,
            index_size=_count(result.search_stats.get("index_size")),
            sent=result.total,
            failed=result.failed,
            evaluated=evaluation.counts.evaluated,
        ),
        stats=dict(result.search_stats),
        queries=ColumnQueries(columns),
    )


def run_rankings(result: RunResult) -> tuple[Rankings, Rankings]:
    """Return the retrieved and the relevant ids of every query of ``result``, in order, as
    the store saves them."""
    return result.outcomes.rankings()


def _failed_attempt(
    suite: SuiteConfig,
    evalset: EvalSet,
    config_hash: str,
    started: datetime,
    finished: datetime,
    reason: str,
    error: MonitorError | None,
) -> RunRecord:
    """Return the failed run of a sharded attempt: why it failed, and what the shard sent."""
    from monitor.store.records import RunFigures, RunRecord

    return RunRecord(
        suite=suite.name,
        pipeline=suite.pipeline,
        started_at=started,
        finished_at=max(finished, started),
        status="failed",
        evalset_fingerprint=evalset.fingerprint,
        config_hash=config_hash,
        figures=RunFigures() if error is None else _failure_figures(error),
        error=suite_scrubber(suite)(reason),
    )


def _failed_record(
    suite: SuiteConfig,
    evalset: EvalSet,
    config_hash: str,
    started: datetime,
    finished: datetime,
    error: MonitorError,
) -> RunRecord:
    reason = f"{type(error).__name__}: {error}"
    return _failed_attempt(suite, evalset, config_hash, started, finished, reason, error)


def _failure_figures(error: BaseException) -> RunFigures:
    """Return what a failed attempt measured: the queries sent and failed, and their ratio.

    A backend error knows them when the runner stopped the run (the error budget); any other
    failure leaves them unknown (zero counts, no error rate).
    """
    from monitor.store.records import RunFigures

    if not isinstance(error, SearchBackendError) or error.sent is None or error.failed is None:
        return RunFigures()
    sent, failed = error.sent, error.failed
    if not 0 <= failed <= sent:
        log.warning("failure_counts_inconsistent", sent=sent, failed=failed)
        return RunFigures()
    return RunFigures(error_rate=failed / sent if sent else None, sent=sent, failed=failed)


def _seed_unpinned(suite: SuiteConfig, store: Store, evalset: EvalSet, config_hash: str) -> None:
    """Store the bundled run the suite names as its baseline when none is pinned yet."""
    if (
        suite.baseline is not None
        and suite.baseline.bundled_run
        and store.get_baseline(suite.name) is None
    ):
        _seed_baseline(suite, store, evalset, config_hash)


def _seed_baseline(suite: SuiteConfig, store: Store, evalset: EvalSet, config_hash: str) -> int:
    """Store the bundled run the suite names as its first baseline; return the run id."""
    from monitor import bundled
    from monitor.judgments import labels_of
    from monitor.runner import run_queries
    from monitor.search import build_search

    name = suite.baseline.bundled_run if suite.baseline else None
    collection, _, method = (name or "").partition("/")
    if collection != "larkfield" or method not in bundled.LARKFIELD_METHODS:
        known = ", ".join(f"larkfield/{m}" for m in bundled.LARKFIELD_METHODS)
        raise UsageError(f"unknown bundled baseline run {name!r}; known: {known}")
    search = build_search("replay", {"bundled": name})
    result = run_queries(evalset, search, k=suite.k, label=f"{suite.name} baseline")
    evaluation = score_run(suite, evalset, result)
    record = _record(suite, evalset, config_hash, result, evaluation, pipeline=name)
    run_id = store.save_run(record)
    store.set_run_labels(run_id, labels_of(evalset))
    store.set_baseline(suite.name, run_id)
    log.info("baseline_pinned", suite=suite.name, run=name, run_id=run_id)
    return run_id


def _count(value: object) -> int | None:
    """Return an integer count the search reported, or None for anything else."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
