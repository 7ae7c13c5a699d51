"""A suite's drift check, kept and told like a rule: stored, then raised or resolved.

:func:`run_suite_check` reads the suite's ``drift:`` windows from the traffic database,
checks them (:func:`monitor.drift.queries.check_queries`), stores the result in the store's
``drift_checks`` table and hands the verdict to the alert lifecycle as a ``query_drift``
alert whose rule is the check's name: ``drift`` fires it (the lifecycle deduplicates and
reminds across runs), ``ok`` resolves it, and ``no data`` leaves it as it was, since a
window too small to tell shows neither that the drift is over nor that it began.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Final

from monitor.alerts.model import Alert, AlertIdentity, AlertKind
from monitor.drift.check import DriftResult
from monitor.errors import UsageError
from monitor.store.drift import DriftRecord

if TYPE_CHECKING:
    from monitor.alerts.base import Notifier
    from monitor.alerts.lifecycle import LifecycleReport
    from monitor.config.model import DriftConfig, SuiteConfig
    from monitor.config.windows import Window
    from monitor.embedding.base import Embedder
    from monitor.store.base import Store

#: The alert kind of a drift check.
KIND: Final[AlertKind] = "query_drift"


def _check(suite: SuiteConfig) -> DriftConfig:
    if suite.drift is None:
        raise UsageError(f"suite {suite.name!r} has no drift: section in its config")
    return suite.drift


def drift_alert(suite: SuiteConfig, check: DriftConfig, result: DriftResult, at: datetime) -> Alert:
    """Return the firing alert of a ``drift`` verdict of the suite's check."""
    figures = result.figures()
    description = "; ".join(result.reasons)
    if figures:
        description += (
            f". MMD^2 {figures['mmd2']:.6f} (p = {figures['mmd_p_value']:.4f}), "
            f"domain classifier AUC {figures['auc']:.4f}, "
            f"centroid distance {figures['centroid_cosine_distance']:.6f} (1 - cos)"
        )
    return Alert(
        identity=AlertIdentity(KIND, suite.name, check.name),
        severity=check.severity,
        summary=f"{suite.name}: {check.name}: the current queries drifted from the reference's",
        description=description,
        starts_at=at,
        labels={**suite.labels, "pipeline": suite.pipeline},
        links=suite.links,
    )


def drift_record(
    suite: str, check: DriftConfig, result: DriftResult, spans: tuple[Window, Window]
) -> DriftRecord:
    """Return the row the store keeps of ``result``."""
    body = result.to_json()
    return DriftRecord(
        suite=suite,
        name=check.name,
        status=result.status,
        reference=spans[0].label,
        current=spans[1].label,
        statistics=result.figures(),
        detail={key: body[key] for key in ("reasons", "reference", "current", "settings")},
    )


def publish(
    store: Store,
    suite: SuiteConfig,
    result: DriftResult,
    spans: tuple[Window, Window],
    notifiers: Mapping[str, Notifier],
    at: datetime,
) -> LifecycleReport:
    """Store ``result`` and raise, resolve or keep the check's alert; return what was told."""
    from monitor.alerts.lifecycle import AlertLifecycle

    check = _check(suite)
    store.add_drift_check(drift_record(suite.name, check, result, spans))
    lifecycle = AlertLifecycle(store, notifiers, clock=lambda: at)
    lifecycle.flush()
    firing = [drift_alert(suite, check, result, at)] if result.status == "drift" else []
    evaluated = frozenset() if result.status == "no data" else frozenset({check.name})
    return lifecycle.update(suite.name, KIND, firing, evaluated=evaluated)


def run_suite_check(
    store: Store,
    suite: SuiteConfig,
    embedder: Embedder,
    notifiers: Mapping[str, Notifier],
    at: datetime,
) -> tuple[DriftResult, tuple[Window, Window], LifecycleReport]:
    """Check the suite's drift windows ending at ``at``, store the result and tell it."""
    from monitor.config.windows import windows
    from monitor.drift.queries import check_queries, window_queries
    from monitor.traffic.engine import connect

    check = _check(suite)
    spans = windows(
        check.reference,
        check.current,
        until=at.astimezone(timezone.utc).replace(tzinfo=None),  # the logs' UTC, no zone
        names=(f"suites.{suite.name}.drift.reference", f"suites.{suite.name}.drift.current"),
    )
    connection = connect(check.logs, read_only=True, create=False)
    try:
        samples = window_queries(connection, spans[0]), window_queries(connection, spans[1])
    finally:
        connection.close()
    result = check_queries(*samples, embedder, check.settings, check.weighting)
    return result, spans, publish(store, suite, result, spans, notifiers, at)
