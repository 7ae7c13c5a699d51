"""Alerts: the alert model, notifier plug-ins, delivery with an outbox, and the lifecycle.

- :mod:`monitor.alerts.model`: :class:`Alert` and its parts; build alerts with
  :meth:`Alert.regression`, :meth:`Alert.from_outcome` and :meth:`Alert.monitor_failure`.
"""

from __future__ import annotations

from monitor.alerts.model import (
    Alert,
    AlertIdentity,
    AlertKind,
    FailureReason,
    RegressionDetails,
    SegmentShift,
    WorseQuery,
    failures_checked,
)

__all__ = [
    "Alert",
    "AlertIdentity",
    "AlertKind",
    "FailureReason",
    "RegressionDetails",
    "SegmentShift",
    "WorseQuery",
    "failures_checked",
]
