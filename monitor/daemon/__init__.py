"""Run the suites on their schedules in one long-running process (``retrieval-monitor daemon``).

:class:`Daemon` schedules each suite with APScheduler 3.x and runs it through
:func:`monitor.job.run_suite`, the composer the one-shot ``run`` uses too; it stops on
SIGTERM or SIGINT within a grace period and reloads its config on SIGHUP. Each run feeds the
``/metrics`` endpoint through the composer's sinks; :meth:`Daemon.snapshot` tells what it
has counted (runs, failures, missed and skipped runs, reloads).
"""

from monitor.daemon.metrics import MetricsEndpoint, SchedulerCollector
from monitor.daemon.schedule import MAX_MISFIRE_GRACE_SECONDS, build_trigger, misfire_grace_seconds
from monitor.daemon.service import DEFAULT_SHUTDOWN_GRACE_SECONDS, WORKERS, Daemon, SuiteRunner
from monitor.daemon.status import DaemonSnapshot, StatusBoard, SuiteStatus

__all__ = [
    "DEFAULT_SHUTDOWN_GRACE_SECONDS",
    "MAX_MISFIRE_GRACE_SECONDS",
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
]
