"""Alerts: the alert model, notifier plug-ins, delivery with an outbox, and the lifecycle.

- :mod:`monitor.alerts.model`: :class:`Alert` and its parts, holding the comparison's own
  records as evidence.
- :mod:`monitor.alerts.build`: :func:`regression_alerts` from a comparison,
  :func:`regression_alert` and :func:`failure_alert`; the words are
  :mod:`monitor.alerts.text`'s.
- :mod:`monitor.alerts.registry`: :func:`build_notifiers` from a suite's config
  (``webhook``, ``slack``, ``alertmanager``, ``pagerduty``, ``stdout``, and entry points in
  the group ``retrieval_monitor.notifiers``).
- :mod:`monitor.alerts.lifecycle`: :class:`AlertLifecycle`: firing, reminders, resolve,
  with its state in the store.
- :mod:`monitor.alerts.outbox`: :func:`flush_outbox`, the outbox that keeps what could not
  be delivered for the next run.
- :mod:`monitor.alerts.testing`: an in-memory store and a recording notifier for tests.
"""

from __future__ import annotations

from monitor.alerts.base import Notification, Notifier, NotifierContext, Transition
from monitor.alerts.build import (
    failure_alert,
    invariant_alerts,
    labels_needed_alerts,
    regression_alert,
    regression_alerts,
)
from monitor.alerts.delivery import DeliveryPolicy, deliver
from monitor.alerts.lifecycle import AlertLifecycle, AlertStore, LifecycleReport
from monitor.alerts.model import (
    Alert,
    AlertIdentity,
    AlertKind,
    FailureReason,
    InvariantDetails,
    LabelsNeededDetails,
    RegressionDetails,
    failures_checked,
)
from monitor.alerts.outbox import DeliveryOutcome, flush_outbox, send_now
from monitor.alerts.registry import build_notifier, build_notifiers, known_kinds

__all__ = [
    "Alert",
    "AlertIdentity",
    "AlertKind",
    "AlertLifecycle",
    "AlertStore",
    "DeliveryOutcome",
    "DeliveryPolicy",
    "FailureReason",
    "InvariantDetails",
    "LabelsNeededDetails",
    "LifecycleReport",
    "Notification",
    "Notifier",
    "NotifierContext",
    "RegressionDetails",
    "Transition",
    "build_notifier",
    "build_notifiers",
    "deliver",
    "failure_alert",
    "failures_checked",
    "flush_outbox",
    "invariant_alerts",
    "known_kinds",
    "labels_needed_alerts",
    "regression_alert",
    "regression_alerts",
    "send_now",
]
