"""Run one online suite once: measure its window, store it, compare, alert and export.

:func:`run_online` is what ``online run`` and the daemon both call. Per run:

1. the window ``[now - window, now)`` is read from the traffic database (read only);
2. an empty window is *no data*: stored as such, the ``no_data`` monitor-failure alert
   fires, ``retrieval_online_no_data`` is 1 and the last good figures stay exported (the
   run never reads as a rate of 0); the suite's regression alerts are left as they are;
3. otherwise the figures (overall, per application, per segment value) are computed, the
   baseline window measured again from the logs (the window before this one, or the one
   pinned with ``online pin``), the rules applied, the window stored with its outcomes,
   the ``no_data`` alert resolved, one regression alert raised per breached rule (and
   those no longer breached resolved) through the store's alert lifecycle, and the gauges
   exported.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from monitor.alerts.model import Alert, AlertIdentity
from monitor.config.windows import Window
from monitor.errors import UsageError
from monitor.job.publish import Sink, export, suite_notifiers
from monitor.traffic.errors import NoTrafficError

if TYPE_CHECKING:
    from monitor.alerts.base import Notifier
    from monitor.compare.online import OnlineOutcome
    from monitor.config.traffic import OnlineSuiteConfig, TrafficConfig
    from monitor.exporters.snapshot import SuiteSnapshot
    from monitor.store.base import Store
    from monitor.store.online import StoredWindow
    from monitor.traffic.engine import Connection
    from monitor.traffic.suite import GroupFigures, Searches

#: The rule name of the alert an empty window raises.
NO_DATA_RULE = "no_data"


@dataclass(frozen=True, slots=True)
class OnlineResult:
    """What one run of an online suite found."""

    suite: str
    window: Window
    no_data: bool
    baseline: str
    groups: tuple[GroupFigures, ...] = ()
    outcomes: tuple[OnlineOutcome, ...] = ()
    window_id: int | None = None
    firing: tuple[str, ...] = ()
    export_errors: tuple[str, ...] = field(default=())

    @property
    def breached(self) -> bool:
        """Return whether a rule breached."""
        return any(outcome.breached for outcome in self.outcomes)


def _naive(moment: datetime) -> datetime:
    return moment.astimezone(timezone.utc).replace(tzinfo=None)


def _aware(moment: datetime) -> datetime:
    return moment.replace(tzinfo=timezone.utc)


def run_online(
    traffic: TrafficConfig,
    suite: OnlineSuiteConfig,
    store: Store,
    *,
    now: datetime,
    notifiers: Mapping[str, Notifier] | None = None,
    sinks: tuple[Sink, ...] = (),
) -> OnlineResult:
    """Run ``suite`` once for the window ending at ``now`` (timezone-aware)."""
    from monitor.traffic.engine import connect

    at = now.astimezone(timezone.utc)
    end = _naive(at)
    window = Window(end - suite.window, end)
    connection = connect(traffic.database, read_only=True)
    try:
        return _run(traffic, suite, store, connection, window, at, notifiers, sinks)
    finally:
        connection.close()


def _read(
    connection: Connection, traffic: TrafficConfig, suite: OnlineSuiteConfig, window: Window
) -> Searches | None:
    from monitor.traffic.suite import read_searches

    try:
        return read_searches(connection, window, traffic.click_action, suite.segment)
    except NoTrafficError:
        return None


def _baseline_window(
    suite: OnlineSuiteConfig, store: Store, window: Window
) -> tuple[Window | None, str]:
    if suite.baseline == "last_window":
        before = Window(window.start - suite.window, window.start)
        return before, f"the window before, {before.label}"
    pinned: StoredWindow | None = store.pinned_online_window(suite.name)
    if pinned is None:
        return None, f"none pinned: `retrieval-monitor online pin --suite {suite.name}`"
    span = Window(_naive(pinned.start), _naive(pinned.end))
    return span, f"pinned window {pinned.window_id}, {span.label}"


def _run(
    traffic: TrafficConfig,
    suite: OnlineSuiteConfig,
    store: Store,
    connection: Connection,
    window: Window,
    at: datetime,
    notifiers: Mapping[str, Notifier] | None,
    sinks: tuple[Sink, ...],
) -> OnlineResult:
    from monitor.compare.online import apply_rules
    from monitor.store.online import StoredWindow
    from monitor.traffic import sql
    from monitor.traffic.suite import figures

    if suite.segment is not None:
        kept = {row[0] for row in connection.execute(sql.KEPT_ATTRIBUTES).fetchall()}
        if suite.segment not in kept:
            raise UsageError(
                f"online suite {suite.name!r}: segment {suite.segment!r} is no field the "
                f"traffic database keeps (kept: {', '.join(sorted(kept)) or 'none'}); import "
                f"the query logs with `logs import --keep-attribute {suite.segment}`"
            )
    current = _read(connection, traffic, suite, window)
    span, label = _baseline_window(suite, store, window)
    if current is None:
        stored = StoredWindow(suite.name, _aware(window.start), _aware(window.end), "no_data", 0)
        window_id = store.save_online_window(stored)
        alert = _no_data_alert(suite, window, at)
        with suite_notifiers(suite, notifiers) as built:
            lifecycle = _lifecycle(store, built, at)
            lifecycle.flush()
            lifecycle.update(suite.name, "monitor_failure", [alert], evaluated={NO_DATA_RULE})
        snapshot = _snapshot(suite, at, (), (), no_data=True)
        errors = export(snapshot, suite, sinks)
        return OnlineResult(
            suite.name,
            window,
            True,
            label,
            window_id=window_id,
            firing=(NO_DATA_RULE,),
            export_errors=tuple(errors),
        )
    baseline = None if span is None else _read(connection, traffic, suite, span)
    if baseline is None and span is not None:
        label += " (no search in it)"
    groups = figures(current, suite)
    outcomes = apply_rules(suite, current, baseline, label)
    stored = StoredWindow(
        suite.name,
        _aware(window.start),
        _aware(window.end),
        "ok",
        len(current),
        _figures_json(groups, outcomes, label),
    )
    window_id = store.save_online_window(stored)
    alerts = [_rule_alert(suite, outcome, at) for outcome in outcomes if outcome.breached]
    evaluated = {outcome.rule for outcome in outcomes if outcome.status != "skipped"}
    with suite_notifiers(suite, notifiers) as built:
        lifecycle = _lifecycle(store, built, at)
        lifecycle.flush()
        lifecycle.update(suite.name, "monitor_failure", [], evaluated={NO_DATA_RULE})
        report = lifecycle.update(suite.name, "regression", alerts, evaluated=evaluated)
    snapshot = _snapshot(suite, at, groups, outcomes, no_data=False)
    errors = export(snapshot, suite, sinks)
    return OnlineResult(
        suite.name,
        window,
        False,
        label,
        groups=groups,
        outcomes=outcomes,
        window_id=window_id,
        firing=tuple(alert.rule for alert in report.firing),
        export_errors=tuple(errors),
    )


def _lifecycle(store: Store, notifiers: Mapping[str, Notifier], at: datetime) -> Any:
    from monitor.alerts import AlertLifecycle

    return AlertLifecycle(store, notifiers, clock=lambda: at)


def _no_data_alert(suite: OnlineSuiteConfig, window: Window, at: datetime) -> Alert:
    return Alert(
        identity=AlertIdentity("monitor_failure", suite.name, NO_DATA_RULE),
        severity="warning",
        summary=f"online suite {suite.name}: no data, no search in the window {window}",
        description=(
            "The window of traffic the suite measures holds no search, so it has no "
            "metric (no data, never a rate of 0): is the query log still imported "
            "(`retrieval-monitor logs import`)?"
        ),
        starts_at=at,
        labels=dict(suite.labels),
        links=suite.links,
    )


def _rule_alert(suite: OnlineSuiteConfig, outcome: OnlineOutcome, at: datetime) -> Alert:
    return Alert(
        identity=AlertIdentity("regression", suite.name, outcome.rule, outcome.metric),
        severity="critical"
        if outcome.severity == "critical"
        else ("info" if outcome.severity == "info" else "warning"),
        summary=f"online suite {suite.name}: {outcome.rule} breached",
        description=outcome.message,
        starts_at=at,
        labels=dict(suite.labels),
        links=suite.links,
    )


def _figures_json(
    groups: tuple[GroupFigures, ...], outcomes: tuple[OnlineOutcome, ...], baseline: str
) -> dict[str, Any]:
    return {
        "baseline": baseline,
        "groups": [
            {
                "application": g.application,
                "segment": g.segment,
                "searches": g.searches,
                "values": dict(g.values),
            }
            for g in groups
        ],
        "rules": [
            {
                "rule": o.rule,
                "status": o.status,
                "current": o.current,
                "baseline": o.baseline,
                "delta": o.delta,
                "ci_low": o.ci_low,
                "ci_high": o.ci_high,
                "p_value": o.p_value,
                "message": o.message,
            }
            for o in outcomes
        ],
    }


def _snapshot(
    suite: OnlineSuiteConfig,
    at: datetime,
    groups: tuple[GroupFigures, ...],
    outcomes: tuple[OnlineOutcome, ...],
    *,
    no_data: bool,
) -> SuiteSnapshot:
    from monitor.exporters.snapshot import RuleState, SuiteSnapshot

    values = {
        (metric, g.application, g.segment): value
        for g in groups
        for metric, value in g.values.items()
        if value is not None
    }
    return SuiteSnapshot(
        suite=suite.name,
        pipeline=suite.name,
        labels=suite.labels,
        success=not no_data,
        started_at=at,
        finished_at=at,
        rules={o.rule: RuleState(o.breached, o.severity) for o in outcomes},
        online=values,
        online_searches={(g.application, g.segment): g.searches for g in groups},
        online_no_data=no_data,
    )
