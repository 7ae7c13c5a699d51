"""Run the suites on their schedules in one long-running process (``retrieval-monitor daemon``).

:class:`Daemon` schedules each suite with APScheduler 3.x and runs it through
:func:`monitor.job.run_suite`, the composer the one-shot ``run`` uses too; it stops on
SIGTERM or SIGINT within a grace period and reloads its config on SIGHUP. Each run feeds the
``/metrics`` endpoint through the composer's sinks; :meth:`Daemon.snapshot` tells what it
has counted (runs, failures, missed and skipped runs, reloads).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from monitor.daemon.metrics import MetricsEndpoint, SchedulerCollector
    from monitor.daemon.schedule import (
        MAX_MISFIRE_GRACE_SECONDS,
        build_trigger,
        misfire_grace_seconds,
    )
    from monitor.daemon.service import (
        DEFAULT_SHUTDOWN_GRACE_SECONDS,
        MAX_WORKERS,
        WORKERS,
        Daemon,
        SuiteRunner,
        pool_size,
    )
    from monitor.daemon.status import DaemonSnapshot, StatusBoard, SuiteStatus

# Loaded on first use, so that reading a config (which parses cron expressions with
# monitor.daemon.cron) loads neither the scheduler nor the Prometheus client.
_EXPORTS = {
    "MetricsEndpoint": "monitor.daemon.metrics",
    "SchedulerCollector": "monitor.daemon.metrics",
    "MAX_MISFIRE_GRACE_SECONDS": "monitor.daemon.schedule",
    "build_trigger": "monitor.daemon.schedule",
    "misfire_grace_seconds": "monitor.daemon.schedule",
    "DEFAULT_SHUTDOWN_GRACE_SECONDS": "monitor.daemon.service",
    "WORKERS": "monitor.daemon.service",
    "MAX_WORKERS": "monitor.daemon.service",
    "pool_size": "monitor.daemon.service",
    "Daemon": "monitor.daemon.service",
    "SuiteRunner": "monitor.daemon.service",
    "DaemonSnapshot": "monitor.daemon.status",
    "StatusBoard": "monitor.daemon.status",
    "SuiteStatus": "monitor.daemon.status",
}

__all__ = [
    "DEFAULT_SHUTDOWN_GRACE_SECONDS",
    "MAX_MISFIRE_GRACE_SECONDS",
    "MAX_WORKERS",
    "WORKERS",
    "Daemon",
    "DaemonSnapshot",
    "MetricsEndpoint",
    "SchedulerCollector",
    "StatusBoard",
    "SuiteRunner",
    "SuiteStatus",
    "build_trigger",
    "misfire_grace_seconds",
    "pool_size",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'monitor.daemon' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
