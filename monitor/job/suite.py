"""The scheduled run of a suite, the single path both ``run`` and ``daemon`` take.

load eval set -> search -> measure -> store -> compare with baseline -> export -> alert

:func:`run_suite` holds the suite's store lock for the whole run, so two schedulers starting
the same suite at once cannot both proceed. A search backend that fails (error budget,
backend down) still leaves a ``failed`` run in the store, exports its failure gauges and
raises its monitor-failure alert; the error is then raised again for the caller to map to
its exit code. The run's clock and its delivery of notifications are injected, so a test
neither waits for real time nor sleeps through real backoff.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime, timezone
from functools import partial
from typing import TYPE_CHECKING

from monitor.alerts.delivery import Delivery
from monitor.errors import SearchBackendError, UsageError
from monitor.evalset import bundled, digests
from monitor.job.lockskips import suite_lock
from monitor.job.measurable import check_measured, measured_anything
from monitor.job.outcome import SuiteOutcome
from monitor.job.path import compare_stored, load_frozen, measure, score_run, search_suite
from monitor.job.publish import (
    Clock,
    publish_failure,
    publish_lock_failure,
    publish_run,
    suite_notifiers,
)
from monitor.judgments import labels_of
from monitor.judgments.suite import suite_evalset
from monitor.logs import get_logger, hide_secrets
from monitor.runner import run_queries
from monitor.runner.reference import judge_by_reference
from monitor.search import build_search, close_search
from monitor.secrets import suite_scrubber
from monitor.store.measured import failed_search, run_record

if TYPE_CHECKING:
    from monitor.alerts import Notifier
    from monitor.config.model import SuiteConfig, TriggerKind
    from monitor.evalset import EvalSet
    from monitor.job.publish import Sink
    from monitor.search.base import Search
    from monitor.store import Store
    from monitor.store.records import RunRecord

log = get_logger(__name__)


def _now() -> datetime:
    return datetime.now(timezone.utc)


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
    trigger: TriggerKind | None = None,
) -> SuiteOutcome:
    """Run ``suite`` once: search, measure, store, compare, export, alert.

    ``sinks`` also receive the run's gauges (the daemon's ``/metrics``, ``--metrics-out``);
    ``notifiers`` replace the suite's configured ones (tests). ``clock`` gives the times of
    the attempt and its alerts, ``delivery`` how notifications are retried. Once ``cancel``
    is set no further query starts and the run fails with RunTerminated. A run that fails
    still exports its failure gauges and raises its monitor-failure alert before the error
    propagates. Without ``keep_outcomes`` the search's outcomes (every hit, as the search
    gave it) are let go once the run is measured and stored: the outcome's ``result`` is
    then None, and a large run compares with its baseline without holding them. A
    ``trigger`` (the daemon's ``on_change``) is recorded with the run's stats as ``trigger``.
    """
    hide_secrets(suite_scrubber(suite))
    delivery = delivery or Delivery()
    with suite_notifiers(suite, notifiers) as built:
        on_too_long = partial(publish_lock_failure, suite, store, sinks, built, clock, delivery)
        with suite_lock(store, suite, clock, on_too_long):
            started = clock()
            try:
                outcome = _run_locked(
                    suite, store, config_hash, progress, clock, cancel, keep_outcomes, trigger
                )
            except Exception as error:  # a bug too: the failure gauges still go out
                publish_failure(suite, store, error, started, sinks, built, clock, delivery)
                raise
            return publish_run(suite, store, outcome, sinks, built, clock, delivery)


def _run_locked(
    suite: SuiteConfig,
    store: Store,
    config_hash: str,
    progress: bool | None,
    clock: Clock,
    cancel: threading.Event | None = None,
    keep_outcomes: bool = True,
    trigger: TriggerKind | None = None,
) -> SuiteOutcome:
    started = clock()
    # The eval set is read on a second thread while the search is built (a replay reads its
    # run file): both are mostly file reading and array work. An eval set that fails is
    # reported first, and the search's own failure where it was before, once the eval set
    # is in place.
    kept = store.get_state(digests.NAMESPACE, suite.name)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="monitor-evalset") as pool:
        loading = pool.submit(load_frozen, suite, kept)
        built = _built_search(suite)
        try:
            loaded = loading.result()
            evalset = loaded.evalset
        except BaseException:
            if not isinstance(built, BaseException):
                close_search(built)
            raise
    if loaded.fresh is not None:
        store.put_state(digests.NAMESPACE, suite.name, loaded.fresh.as_state())
    try:
        if suite.evalset.reference is not None:
            try:
                evalset = judge_by_reference(
                    evalset, suite.evalset.reference, suite.evalset.reference_k
                )
            except SearchBackendError as error:
                store.save_run(failed_search(suite, evalset, config_hash, started, clock(), error))
                raise
        evalset = suite_evalset(store, suite, evalset)
        seed_unpinned(suite, store, evalset, config_hash)
    except BaseException:
        if not isinstance(built, BaseException):
            close_search(built)
        raise
    if isinstance(built, BaseException):
        raise built
    search = built
    try:
        result = search_suite(suite, evalset, search, progress=progress, cancel=cancel)
        check_measured(suite, evalset, result)
    except SearchBackendError as error:
        store.save_run(failed_search(suite, evalset, config_hash, started, clock(), error))
        raise
    finally:
        close_search(search)

    if trigger is not None:
        result = replace(result, search_stats={**result.search_stats, "trigger": trigger})
    record, evaluation = measure(suite, evalset, config_hash, result)
    # A judge grades the run's hits after the comparison: only then are they still needed.
    # Otherwise they are let go once measured, before the record is saved.
    outcomes = result if keep_outcomes or suite.judge is not None else None
    del result
    run_id = store.save_run(record)
    del record
    return compare_stored(suite, store, run_id, evalset, evaluation, outcomes, loaded)


def _built_search(suite: SuiteConfig) -> Search | Exception:
    """Return the suite's search built, or the error building it raised (raised again by
    the caller where a run reports it)."""
    try:
        return build_search(suite.search.kind, suite.search.plugin_options())
    except Exception as error:
        return error


def seed_unpinned(suite: SuiteConfig, store: Store, evalset: EvalSet, config_hash: str) -> None:
    """Store the bundled run the suite names as its baseline when none is pinned yet."""
    if (
        suite.baseline is not None
        and suite.baseline.bundled_run
        and store.get_baseline(suite.name) is None
    ):
        seed_baseline(suite, store, evalset, config_hash)


def seed_record(suite: SuiteConfig, evalset: EvalSet, config_hash: str) -> RunRecord:
    """Return the bundled run the suite names as its first baseline (``baseline.bundled_run``),
    measured on ``evalset`` as a run of the suite; raise UsageError when it names none."""
    name = suite.baseline.bundled_run if suite.baseline else None
    collection, _, method = (name or "").partition("/")
    if collection != "larkfield" or method not in bundled.LARKFIELD_METHODS:
        known = ", ".join(f"larkfield/{m}" for m in bundled.LARKFIELD_METHODS)
        raise UsageError(f"unknown bundled baseline run {name!r}; known: {known}")
    search = build_search("replay", {"bundled": name})
    result = run_queries(evalset, search, k=suite.k, label=f"{suite.name} baseline")
    evaluation = score_run(suite, evalset, result)
    return run_record(suite, evalset, config_hash, result, evaluation, pipeline=name)


def seed_baseline(
    suite: SuiteConfig, store: Store, evalset: EvalSet, config_hash: str
) -> int | None:
    """Store the bundled run the suite names as its first baseline; return the run id, or
    None when it measured nothing on ``evalset`` (no answerable query): nothing to pin."""
    name = suite.baseline.bundled_run if suite.baseline else None
    record = seed_record(suite, evalset, config_hash)
    if not measured_anything(record.means):
        log.warning("baseline_not_pinned", suite=suite.name, run=name, reason="measured nothing")
        return None
    run_id = store.save_run(record)
    store.set_run_labels(run_id, labels_of(evalset))
    store.set_baseline(suite.name, run_id)
    log.info("baseline_pinned", suite=suite.name, run=name, run_id=run_id)
    return run_id
