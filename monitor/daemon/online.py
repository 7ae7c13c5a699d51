"""The daemon's online suites: each on its own schedule, through the same composer as
``online run`` (:func:`monitor.job.online.run_online`).

An online suite is a scheduler job of id ``online:<name>``; :meth:`OnlineJobs.install`
replaces every such job with those of the config it is given (on start and on each reload),
and a run reads the config current at its start, so a reload applies from the next run.
A run never raises into the scheduler: its errors are logged as ``online_run_failed``, and a
window with no search is logged as ``online_no_data`` (its alert and gauge tell the rest).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from monitor.daemon.schedule import build_trigger, misfire_grace_seconds
from monitor.logs import get_logger

if TYPE_CHECKING:
    from monitor.config.model import MonitorConfig
    from monitor.job.publish import Sink
    from monitor.store.base import Store

log = get_logger("monitor.daemon")

#: The prefix of an online suite's scheduler job id.
PREFIX = "online:"


class OnlineJobs:
    """Schedules and runs the online suites of the daemon's current config."""

    def __init__(
        self,
        current: Callable[[], tuple[MonitorConfig, str]],
        open_store: Callable[[str], Store],
        stopping: threading.Event,
        sinks: tuple[Sink, ...] = (),
        initial_run: bool = True,
    ) -> None:
        self._current = current
        self._open_store = open_store
        self._stopping = stopping
        self._sinks = sinks
        self._initial_run = initial_run

    def plans(self, config: MonitorConfig) -> dict[str, tuple[Any, int]]:
        """Return each online suite's trigger and misfire grace; raise for a bad schedule."""
        suites = config.traffic.online if config.traffic is not None else {}
        plans = {}
        for name, suite in suites.items():
            trigger = build_trigger(suite.schedule)
            plans[name] = (trigger, misfire_grace_seconds(trigger))
        return plans

    def install(self, scheduler: Any, plans: dict[str, tuple[Any, int]]) -> None:
        """Replace the scheduler's online jobs with one per suite of ``plans``."""
        for job in scheduler.get_jobs():
            if job.id.startswith(PREFIX) and job.id[len(PREFIX) :] not in plans:
                scheduler.remove_job(job.id)
        for name, (trigger, grace) in plans.items():
            options: dict[str, Any] = {}
            if self._initial_run and scheduler.get_job(PREFIX + name) is None:
                options["next_run_time"] = datetime.now(timezone.utc)
            scheduler.add_job(
                self.run,
                trigger,
                args=(name,),
                id=PREFIX + name,
                name=PREFIX + name,
                max_instances=1,
                coalesce=True,
                misfire_grace_time=grace,
                replace_existing=True,
                **options,
            )

    def run(self, name: str) -> bool:
        """Run the online suite ``name`` once; return whether it ran."""
        from monitor.job.online import run_online

        config, target = self._current()
        traffic = config.traffic
        if traffic is None or name not in traffic.online or self._stopping.is_set():
            return False
        try:
            with self._open_store(target) as store:
                result = run_online(
                    traffic,
                    traffic.online[name],
                    store,
                    now=datetime.now(timezone.utc),
                    sinks=self._sinks,
                )
        except Exception as error:  # a scheduler contains job errors: this one is told
            log.error(
                "online_run_failed", suite=name, error_type=type(error).__name__, error=str(error)
            )
            return True
        event = "online_no_data" if result.no_data else "online_run_finished"
        log.info(event, suite=name, window=result.window.label, firing=list(result.firing) or None)
        return True
