"""The last two stages of a run: export the gauges, then raise and resolve alerts.

:func:`suite_snapshot` turns a run (or a failed attempt) into the exporters' record;
:func:`export` hands it to the suite's configured exporters (Pushgateway, textfile) and to
any extra sinks (the daemon's ``/metrics``, the CLI's ``--metrics-out``); :func:`alert`
drives the alert lifecycle of the suite's notifiers. :func:`publish_run` does both for a
completed run, :func:`publish_failure` for an attempt that failed. Neither raises for a
failed delivery: an export error is returned for the caller's exit code, an undelivered
notification stays in the store's outbox for the next run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from monitor.alerts import build_notifiers
from monitor.alerts.base import close_notifiers
from monitor.alerts.delivery import Delivery
from monitor.errors import (
    ErrorBudgetExceeded,
    InputError,
    InternalError,
    LockedTooLongError,
    MonitorError,
    NotMeasured,
    RunTerminated,
    SearchBackendError,
    ShardAttemptFailed,
    StoreError,
    StoreLockedError,
    UsageError,
)
from monitor.job.outcome import Published
from monitor.logs import get_logger
from monitor.store.measured import failure_figures

if TYPE_CHECKING:
    from monitor.alerts import Alert, AlertLifecycle, FailureReason, Notifier
    from monitor.config.model import SuiteConfig
    from monitor.config.traffic import OnlineSuiteConfig
    from monitor.exporters import SuiteSnapshot
    from monitor.job.outcome import SuiteOutcome
    from monitor.store import Store
    from monitor.store.records import RunFigures

log = get_logger(__name__)

#: Something that takes a snapshot: an exporter endpoint's ``update``, a file writer.
Sink = Callable[["SuiteSnapshot"], None]

#: Gives the current time, timezone-aware; a test injects a fixed or manual clock.
Clock = Callable[[], datetime]


@contextmanager
def suite_notifiers(
    suite: SuiteConfig | OnlineSuiteConfig, given: Mapping[str, Notifier] | None
) -> Iterator[dict[str, Notifier]]:
    """Yield ``given`` (a test's notifiers, kept open), else the suite's configured
    notifiers, built for the block and closed after it."""
    built = dict(given) if given is not None else build_notifiers(suite)
    try:
        yield built
    finally:
        if given is None:
            close_notifiers(built.values())


def suite_snapshot(
    suite: SuiteConfig,
    outcome: SuiteOutcome | None,
    *,
    started_at: datetime,
    finished_at: datetime,
    last_success_at: datetime | None,
    figures: RunFigures | None = None,
) -> SuiteSnapshot:
    """Return what one run of ``suite`` tells Prometheus (``outcome`` None: the run failed).

    A failed run exports the attempt's ``figures``: the queries sent and failed and their
    error rate, as far as the run got (none when not given).
    """
    from monitor.exporters import RuleState, SuiteSnapshot

    if outcome is None:
        from monitor.store.records import RunFigures

        attempt = figures if figures is not None else RunFigures()
        return SuiteSnapshot(
            suite=suite.name,
            pipeline=suite.pipeline,
            labels=suite.labels,
            success=False,
            started_at=started_at,
            finished_at=finished_at,
            last_success_at=last_success_at,
            error_rate=attempt.error_rate,
            queries_sent=attempt.sent,
            queries_failed=attempt.failed,
        )
    run, comparison, agreement = outcome.run, outcome.comparison, outcome.agreement
    changes = comparison.metrics
    overlap = comparison.overlap
    segments: dict[str, dict[str, dict[str, float]]] = {}
    for segment in comparison.segments:
        values = segments.setdefault(segment.key, {}).setdefault(segment.value, {})
        values[segment.metric] = segment.current
    figures = run.figures
    latency = {
        name: value
        for name in ("p50", "p95", "p99", "max", "mean")
        if (value := getattr(figures.latency, name)) is not None and not math.isnan(value)
    }
    return SuiteSnapshot(
        suite=suite.name,
        pipeline=run.pipeline,
        labels=suite.labels,
        success=True,
        started_at=run.started_at,
        finished_at=run.finished_at,
        means=run.means,
        baseline={c.metric: c.baseline for c in changes} if changes else None,
        baseline_ci={
            c.metric: (c.ci_low, c.ci_high)
            for c in changes
            if c.ci_low is not None and c.ci_high is not None
        },
        rules={rule.rule: RuleState(rule.breached, rule.severity) for rule in comparison.rules},
        latency=latency,
        error_rate=figures.error_rate,
        zero_result_rate=figures.zero_result_rate,
        mean_top1_score=figures.mean_top1_score,
        queries_sent=figures.sent,
        queries_failed=figures.failed,
        queries_evaluated=figures.evaluated,
        evalset_fingerprint=run.evalset_fingerprint,
        baseline_run_id=comparison.baseline_run_id,
        index_size=figures.index_size,
        ann_recall_k=figures.ann_recall_k,
        ann_recall=figures.ann_recall,
        corpus_fingerprint=_corpus_fingerprint(run.stats.get("corpus_fingerprint")),
        segments=segments,
        overlap_k=overlap.k if overlap is not None else None,
        rbo=overlap.rbo if overlap is not None else None,
        jaccard=overlap.jaccard if overlap is not None else None,
        labels_needed=bool(comparison.held) if comparison.coverage else None,
        judge="" if agreement is None else agreement.judge,
        judge_agreement={} if agreement is None else dict(agreement.statistics),
        judge_pairs=None if agreement is None else agreement.pairs,
        last_success_at=run.finished_at,
    )


def _corpus_fingerprint(value: object) -> str:
    """Return the corpus fingerprint a run recorded, ``""`` for none (or a stored value that
    is not a short digest, which no label should carry)."""
    return value if isinstance(value, str) and 0 < len(value) <= 64 else ""


def export(
    snapshot: SuiteSnapshot, suite: SuiteConfig | OnlineSuiteConfig, sinks: Iterable[Sink] = ()
) -> list[str]:
    """Send ``snapshot`` to the suite's exporters and ``sinks``; return the errors, logged."""
    from monitor.config.common import PushgatewayExporterConfig, TextfileExporterConfig

    targets: list[tuple[str, Sink]] = []
    for exporter in suite.exporters:
        if isinstance(exporter, PushgatewayExporterConfig):
            targets.append(("pushgateway", partial(_push, exporter.url.reveal(), exporter.job)))
        elif isinstance(exporter, TextfileExporterConfig):
            targets.append(("textfile", partial(_write, exporter.path)))
        # An http exporter is the daemon's /metrics, fed through ``sinks``.
    targets.extend(("sink", sink) for sink in sinks)
    errors = []
    for name, send in targets:
        try:
            send(snapshot)
        except MonitorError as error:
            log.error("export_failed", suite=suite.name, exporter=name, error=str(error))
            errors.append(f"{name}: {error}")
    return errors


def _push(url: str, job: str, snapshot: SuiteSnapshot) -> None:
    from monitor.exporters import push_snapshot

    push_snapshot(snapshot, url, job=job)


def _write(path: Path, snapshot: SuiteSnapshot) -> None:
    from monitor.exporters import write_textfile

    write_textfile(snapshot, path)


def failure_reason(error: BaseException) -> FailureReason | None:
    """Return the monitor-failure alert an error raises, or None (config errors, a held lock)."""
    from monitor.alerts import FailureReason

    table: Sequence[tuple[type[BaseException], FailureReason | None]] = (
        (LockedTooLongError, FailureReason.SUITE_LOCKED),
        (StoreLockedError, None),
        (StoreError, FailureReason.STORE_UNWRITABLE),
        (ErrorBudgetExceeded, FailureReason.ERROR_BUDGET_EXCEEDED),
        (NotMeasured, FailureReason.NOT_MEASURED),
        (ShardAttemptFailed, FailureReason.NOT_MEASURED),
        (RunTerminated, FailureReason.RUN_TERMINATED),
        (SearchBackendError, FailureReason.SEARCH_BACKEND_DOWN),
        (InputError, FailureReason.EVALSET_MISSING),
        (InternalError, FailureReason.MONITOR_FAULT),
    )
    reason = next((reason for kind, reason in table if isinstance(error, kind)), None)
    if reason is None and not isinstance(error, MonitorError):
        return FailureReason.MONITOR_FAULT  # a bug: the run did not measure, say so
    return reason


def alert(
    suite: SuiteConfig,
    store: Store,
    outcome: SuiteOutcome | None,
    error: BaseException | None,
    *,
    at: datetime,
    notifiers: Mapping[str, Notifier] | None = None,
    delivery: Delivery | None = None,
) -> Published:
    """Raise, repeat or resolve the suite's alerts after a run (or a failed attempt).

    A completed run resolves any monitor-failure alert and sets the regression alerts to its
    breached rules and invariants (those it skipped keep their state); each rule's alert
    carries its own metric's segment and worse queries, each invariant's the queries that
    broke it. A failed run raises the matching monitor-failure alert and
    leaves regression alerts as they were. When the store itself failed, the failure alert is
    sent directly, without the lifecycle's state. ``delivery`` says how sends are retried.
    """
    from monitor.alerts import FailureReason, failures_checked
    from monitor.alerts.build import (
        checked_rules,
        invariant_alerts,
        labels_needed_alerts,
        regression_alerts,
    )
    from monitor.alerts.model import LABELS_NEEDED_RULE
    from monitor.alerts.outbox import send_now
    from monitor.alerts.spool import spool, spool_dir, spooled

    delivery = delivery or Delivery()
    with suite_notifiers(suite, notifiers) as built:
        if not built:
            return Published()
        if outcome is None:
            reason = failure_reason(error) if error is not None else None
            if reason is None:
                return Published()
            failure = _failure_alert(suite, reason, error, at)
            if reason is FailureReason.STORE_UNWRITABLE:
                sent = send_now(
                    [failure], built, policy=delivery.policy, sleep=delivery.sleep, rng=delivery.rng
                )
                told = {outcome.notifier: at for outcome in sent if outcome.delivered}
                spool(failure, told, spool_dir())
                return Published(firing=(failure.rule,))
            lifecycle = _lifecycle(store, built, at, delivery)
            lifecycle.flush()
            report = lifecycle.update(
                suite.name, "monitor_failure", [failure], evaluated=failures_checked(reason)
            )
            return Published(
                firing=tuple(a.rule for a in report.firing), undelivered=len(report.undelivered)
            )
        lifecycle = _lifecycle(store, built, at, delivery)
        lifecycle.flush()
        for sent_alert, told, path in spooled(suite.name, spool_dir()):
            # So that the update below resolves it, for every notifier, told then or not.
            lifecycle.remember(sent_alert, told, owed=True)
            path.unlink(missing_ok=True)
        cleared = lifecycle.update(
            suite.name, "monitor_failure", [], evaluated=failures_checked(None)
        )
        comparison = outcome.comparison
        firing = [
            fired
            for build in (regression_alerts, invariant_alerts)
            for fired in build(
                suite.name,
                comparison,
                at=at,
                labels=suite.labels,
                links=suite.links,
                pipeline=suite.pipeline,
            )
        ]
        report = lifecycle.update(
            suite.name, "regression", firing, evaluated=checked_rules(comparison)
        )
        needed = labels_needed_alerts(
            suite.name,
            comparison,
            at=at,
            coverage=suite.coverage,
            labels=suite.labels,
            links=suite.links,
            pipeline=suite.pipeline,
            config_file=suite.config_file,
        )
        # Coverage is only measured against a baseline of the same eval set: without one
        # the labels-needed alert keeps its state, as skipped rules keep theirs.
        measured = frozenset({LABELS_NEEDED_RULE}) if comparison.coverage else frozenset()
        labelled = lifecycle.update(suite.name, "labels_needed", needed, evaluated=measured)
        return Published(
            firing=tuple(a.rule for a in (*report.firing, *labelled.firing)),
            resolved=tuple(
                a.rule for a in (*cleared.resolved, *report.resolved, *labelled.resolved)
            ),
            undelivered=len(report.undelivered)
            + len(cleared.undelivered)
            + len(labelled.undelivered),
        )


def _lifecycle(
    store: Store, notifiers: Mapping[str, Notifier], at: datetime, delivery: Delivery
) -> AlertLifecycle:
    from monitor.alerts import AlertLifecycle

    return AlertLifecycle(
        store,
        notifiers,
        policy=delivery.policy,
        clock=lambda: at,
        sleep=delivery.sleep,
        rng=delivery.rng,
    )


def _failure_alert(
    suite: SuiteConfig, reason: FailureReason, error: BaseException | None, at: datetime
) -> Alert:
    from monitor.alerts.build import failure_alert
    from monitor.secrets import suite_scrubber

    message = str(error) if isinstance(error, MonitorError) else f"{type(error).__name__}: {error}"
    return failure_alert(
        suite.name,
        reason,
        suite_scrubber(suite)(message),
        at=at,
        labels=suite.labels,
        links=suite.links,
        pipeline=suite.pipeline,
    )


def publish_run(
    suite: SuiteConfig,
    store: Store,
    outcome: SuiteOutcome,
    sinks: Sequence[Sink],
    notifiers: Mapping[str, Notifier],
    clock: Clock,
    delivery: Delivery,
) -> SuiteOutcome:
    """Export a completed run's gauges and send its alerts; return the outcome with both."""
    snapshot, errors = _run_snapshot(suite, outcome)
    if snapshot is not None and suite.drift is not None:
        snapshot = replace(snapshot, drift=latest_drift(store, suite))
    if snapshot is not None:
        errors += export(snapshot, suite, sinks)
    alerts = alert(suite, store, outcome, None, at=clock(), notifiers=notifiers, delivery=delivery)
    return replace(outcome, published=replace(alerts, export_errors=tuple(errors)))


def latest_drift(store: Store, suite: SuiteConfig) -> dict[str, dict[str, float]]:
    """Return the statistics of the suite's latest drift check that measured, by its name."""
    if suite.drift is None:
        return {}
    try:
        checks = store.drift_checks(suite.name, limit=20)
    except MonitorError as error:  # the gauges of the run go out without them
        log.error("drift_checks_unreadable", suite=suite.name, error=str(error))
        return {}
    measured = [c for c in checks if c.name == suite.drift.name and c.statistics]
    return {suite.drift.name: dict(measured[0].statistics)} if measured else {}


def publish_lock_failure(
    suite: SuiteConfig,
    store: Store,
    sinks: Sequence[Sink],
    notifiers: Mapping[str, Notifier],
    clock: Clock,
    delivery: Delivery,
    error: LockedTooLongError,
) -> None:
    """Publish a suite skipped for its lock too long as a failed attempt."""
    publish_failure(suite, store, error, clock(), sinks, notifiers, clock, delivery)


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


def publish_failure(
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
        figures=failure_figures(error),
    )
    export(snapshot, suite, sinks)
    try:
        alert(suite, store, None, error, at=finished, notifiers=notifiers, delivery=delivery)
    except MonitorError as failure:
        log.error("failure_alert_failed", suite=suite.name, error=str(failure))


class _Unopened:
    """The store of a run that could not open it: whatever is asked of it raises the error
    that said so, as a store that fails each call would."""

    def __init__(self, error: StoreError) -> None:
        self._error = error
        self.location = error.location

    def __getattr__(self, name: str) -> Callable[..., object]:
        def refuse(*args: object, **kwargs: object) -> object:
            raise self._error

        return refuse


def publish_store_failure(
    suite: SuiteConfig,
    error: StoreError,
    sinks: Sequence[Sink] = (),
    *,
    clock: Clock,
    delivery: Delivery | None = None,
) -> None:
    """Export the failure gauges of ``suite`` and send its ``store_unwritable`` alert, when
    the store could not even be opened: the run cannot start, and must still say so."""
    with suite_notifiers(suite, None) as built:
        at = clock()
        unopened: Store = _Unopened(error)  # type: ignore[assignment]
        publish_failure(suite, unopened, error, at, sinks, built, clock, delivery or Delivery())
