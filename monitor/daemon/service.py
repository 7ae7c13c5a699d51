"""The long-running daemon: every suite on its own schedule, until a signal stops it.

Scheduling is APScheduler 3.x's :class:`BackgroundScheduler`: it runs in its own thread and
hands runs to a small thread pool, which leaves the main thread free to wait for signals
and to decide how shutdown goes (the grace period, a second signal). A BlockingScheduler
would own the main thread, so the signal handlers would run inside its loop and a bounded
wait for the running suite would have to be built around its ``shutdown(wait=True)``,
which waits without limit.

Each suite is one job (id = the suite's name) with ``max_instances=1`` (a run due while
the previous one is still going is skipped and counted), ``coalesce=True`` (runs missed in a
row become one) and the misfire grace time of :mod:`monitor.daemon.schedule`. The job
calls :func:`monitor.job.run_suite`, the same composer the one-shot ``run`` uses, and
catches every error it raises: a failing suite is logged and counted, and the next run
comes as scheduled. A suite another process is running (its store lock is held) is
skipped, as ``run`` skips it. A listener on the scheduler logs and counts missed and skipped
runs and any fault of the job itself.

The job reads the suite's config when it starts, so a reload (:meth:`Daemon.reload`)
changes the next run of every suite; only a changed schedule touches the scheduler.

A suite with ``trigger: on_change`` also has a poll job (:mod:`monitor.daemon.polls`) on
a pool of its own, so that polls never wait behind long runs; once its corpus has changed
and settled, the suite runs through the same :meth:`Daemon.run_job` as on its schedule
(``trigger=on_change``).
"""

from __future__ import annotations

import logging
import os
import queue
import signal
import socket
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from types import FrameType
from typing import TYPE_CHECKING, Any, Protocol

from monitor.daemon.change import watch_job_suite
from monitor.daemon.online import OnlineJobs
from monitor.daemon.polls import POLL_EXECUTOR, CorpusPolls
from monitor.daemon.schedule import build_trigger, misfire_grace_seconds
from monitor.daemon.status import DaemonSnapshot, StatusBoard
from monitor.errors import MonitorError, StoreLockedError, UsageError
from monitor.logs import get_logger

if TYPE_CHECKING:
    from monitor.config.model import MonitorConfig, SuiteConfig, TriggerKind
    from monitor.daemon.metrics import MetricsEndpoint
    from monitor.exporters import SuiteSnapshot
    from monitor.job.outcome import SuiteOutcome
    from monitor.store import Store

log = get_logger("monitor.daemon")

#: The fewest suites that may run at the same time. Each run opens its own store connection.
WORKERS = 4

#: The most suites that may run at the same time, however many the config has.
MAX_WORKERS = 64

#: How long a shutdown waits for the running suites by default, in seconds.
DEFAULT_SHUTDOWN_GRACE_SECONDS = 30.0

#: What becomes of an abandoned run's store lock (see :mod:`monitor.store.locks`): it names
#: this host and process, so it is taken over once the process has ended.
ABANDONED_LOCK = (
    "taken over at once by the suite's next run on this host once this process has ended; "
    "a run on another host takes it over once its lease (60 s) runs out unrenewed"
)

_STOP = "stop"
_RELOAD = "reload"


class SuiteRunner(Protocol):
    """Run one suite against a store: :func:`monitor.job.run_suite`'s signature."""

    def __call__(
        self,
        suite: SuiteConfig,
        store: Store,
        *,
        config_hash: str = "",
        progress: bool | None = None,
        sinks: Sequence[Callable[[SuiteSnapshot], None]] = (),
        trigger: TriggerKind | None = None,
    ) -> SuiteOutcome: ...


class Daemon:
    """Run each suite of a config on its schedule; reload on request; stop within a grace.

    ``store_target`` gives the store URL for a config (the CLI's ``--store`` wins over the
    config's); ``reload_config`` reads the config again for :meth:`reload`. Every run hands
    ``metrics`` (the ``/metrics`` endpoint) its snapshot through the composer's sinks, as
    ``run --metrics-out`` does, so a failed run's last success comes from the store, not
    from what this process has seen. With ``initial_run`` every suite also runs once as soon
    as it is scheduled. ``workers`` (default :func:`pool_size`) is how many suites may run at
    once. ``run`` and ``open_store`` default to the real ones; ``clock`` (monotonic seconds)
    times the waits of the on_change suites (``settle``, ``min_interval``).
    """

    def __init__(
        self,
        config: MonitorConfig,
        *,
        store_target: Callable[[MonitorConfig], str],
        reload_config: Callable[[], MonitorConfig] | None = None,
        metrics: MetricsEndpoint | None = None,
        initial_run: bool = True,
        shutdown_grace: float = DEFAULT_SHUTDOWN_GRACE_SECONDS,
        workers: int | None = None,
        run: SuiteRunner | None = None,
        open_store: Callable[[str], Store] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if shutdown_grace < 0:
            raise UsageError(f"the shutdown grace must be 0 s or more, not {shutdown_grace}")
        # One attribute, so a job never sees a new config with an old store or the reverse.
        self._current = (config, store_target(config))
        self._store_target = store_target
        self._reload_config = reload_config
        self._metrics = metrics
        self._initial_run = initial_run
        self._grace = shutdown_grace
        self._workers = pool_size(len(config.suites)) if workers is None else workers
        self._run = run
        self._open_store = open_store
        self._board = StatusBoard(config.suites, config.source)
        self._requests: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._stopping = threading.Event()
        self._running: set[str] = set()
        self._idle = threading.Condition()
        self._scheduler: Any = None
        self._polls = CorpusPolls(
            open_store=self._store,
            target=lambda: self._current[1],
            run=self.run_job,
            running=self._is_running,
            stopping=self._stopping,
            clock=clock,
        )
        self._online = OnlineJobs(
            lambda: self._current,
            self._store,
            self._stopping,
            () if metrics is None else (metrics.update,),
            initial_run,
        )

    # -- life cycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Schedule every suite and start the scheduler thread."""
        from apscheduler.events import (
            EVENT_JOB_ERROR,
            EVENT_JOB_EXECUTED,
            EVENT_JOB_MAX_INSTANCES,
            EVENT_JOB_MISSED,
        )
        from apscheduler.executors.pool import ThreadPoolExecutor
        from apscheduler.schedulers.background import BackgroundScheduler

        config = self._current[0]
        plans = {name: _plan(suite) for name, suite in config.suites.items()}
        online = self._online.plans(config)
        # Built before anything starts: a search that cannot be watched stops the start.
        watches = self._polls.build(config)
        self._scheduler = BackgroundScheduler(
            executors={
                "default": ThreadPoolExecutor(self._workers),
                POLL_EXECUTOR: ThreadPoolExecutor(pool_size(len(watches))),
            }
        )
        self._scheduler.add_listener(
            self.on_event,
            EVENT_JOB_ERROR | EVENT_JOB_MISSED | EVENT_JOB_EXECUTED | EVENT_JOB_MAX_INSTANCES,
        )
        for name, (trigger, grace) in plans.items():
            self._add_job(name, trigger, grace)
        self._polls.install(self._scheduler, watches)
        self._online.install(self._scheduler, online)
        self._scheduler.start()
        log.info(
            "daemon_started",
            config=config.source,
            suites=list(config.suites),
            workers=self._workers,
            initial_run=self._initial_run,
            shutdown_grace_seconds=self._grace,
            on_change=self._polls.suites or None,
        )
        self._log_schedule(list(plans))

    def serve(self) -> tuple[str, ...]:
        """Start, then handle stop and reload requests until a stop; return :meth:`shutdown`'s."""
        self.start()
        while True:
            try:
                request = self._requests.get(timeout=0.5)
            except queue.Empty:
                continue
            if request == _STOP:
                return self.shutdown()
            self.reload()

    def request_stop(self) -> None:
        """Ask :meth:`serve` to shut down (safe from a signal handler)."""
        self._requests.put(_STOP)

    def request_reload(self) -> None:
        """Ask :meth:`serve` to reload the config (safe from a signal handler)."""
        self._requests.put(_RELOAD)

    def install_signal_handlers(self) -> None:
        """Stop on SIGTERM and SIGINT, reload on SIGHUP. Call from the main thread."""

        def on_signal(signum: int, frame: FrameType | None) -> None:
            if signum == getattr(signal, "SIGHUP", None):
                self.request_reload()
            else:
                self.request_stop()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        if hasattr(signal, "SIGHUP"):
            signal.signal(signal.SIGHUP, on_signal)

    def shutdown(self) -> tuple[str, ...]:
        """Stop scheduling and wait up to the grace period for the running suites.

        Return the suites still running when the grace ran out or a second stop request
        came (empty when every run finished); ``shutdown_abandoned`` logs which of the two
        it was. The caller ends the process without waiting for them. Nothing is left
        half-written, since every store write is one transaction and a run's record is
        written at its end. An abandoned run's store lock names this host and process: once
        the process has ended, the suite's next run on this host takes it over at once,
        while a run on another host takes it over once its lease runs out
        (:mod:`monitor.store.locks`).
        """
        with self._idle:
            self._stopping.set()
            running = sorted(self._running)
        log.info(
            "shutdown_started",
            grace_seconds=self._grace,
            running=running or None,
        )
        if self._scheduler is not None and self._scheduler.running:
            # Not waiting here: the wait below is bounded, APScheduler's is not.
            self._scheduler.shutdown(wait=False)
        deadline = time.monotonic() + self._grace
        reason = f"the grace period of {self._grace:g} s ran out"
        with self._idle:
            while self._running:
                if self._stop_requested_again():
                    reason = "a second stop request came"
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._idle.wait(min(remaining, 0.2))
            abandoned = tuple(sorted(self._running))
        self._polls.close()
        if abandoned:
            log.warning(
                "shutdown_abandoned",
                suites=list(abandoned),
                reason=reason,
                lock=ABANDONED_LOCK,
                host=socket.gethostname(),
                pid=os.getpid(),
            )
        else:
            log.info("shutdown_finished")
        return abandoned

    def _stop_requested_again(self) -> bool:
        try:
            while True:
                if self._requests.get_nowait() == _STOP:
                    return True
        except queue.Empty:
            return False

    # -- config reload ----------------------------------------------------------------------

    def reload(self) -> bool:
        """Read the config again and reschedule what changed; return whether it was taken.

        The new config is checked whole first (it loads, every schedule builds, the store
        opens); on any error the running config stays and the error is logged. Suites that
        left the config are unscheduled (a run in progress finishes), new ones scheduled
        (and run at once with ``initial_run``), those with a changed schedule rescheduled.
        A suite whose trigger or search changed gets a new watch of its corpus (its search
        built again; one that cannot be watched refuses the reload). Any other change
        applies from each suite's next run.
        """
        if self._reload_config is None or self._scheduler is None:
            return False
        current, current_target = self._current
        try:
            config = self._reload_config()
            plans = {name: _plan(suite) for name, suite in config.suites.items()}
            online = self._online.plans(config)
            target = self._store_target(config)
            if target != current_target:
                self._store(target).close()
            # Last: once built, nothing after it may fail and leave their searches open.
            watches = self._polls.build(config)
        except Exception as error:
            self._board.reloaded(False)
            log.error(
                "reload_failed",
                error_type=type(error).__name__,
                error=str(error),
                kept=current.source,
                exc_info=None if isinstance(error, MonitorError) else error,
            )
            return False

        old = current.suites
        added = [name for name in config.suites if name not in old]
        removed = [name for name in old if name not in config.suites]
        rescheduled = [
            name
            for name in config.suites
            if name in old and old[name].schedule != config.suites[name].schedule
        ]
        changed = [
            name
            for name in config.suites
            if name in old and name not in rescheduled and old[name] != config.suites[name]
        ]
        self._current = (config, target)
        self._board.set_suites(config.suites, config.source)
        for name in removed:
            self._scheduler.remove_job(name)
            if self._metrics is not None:
                self._metrics.forget(name)
        for name in rescheduled:
            trigger, grace = plans[name]
            self._scheduler.modify_job(name, misfire_grace_time=grace)
            self._scheduler.reschedule_job(name, trigger=trigger)
        for name in added:
            self._add_job(name, *plans[name])
        self._polls.install(self._scheduler, watches)
        self._online.install(self._scheduler, online)
        self._board.reloaded(True)
        log.info(
            "config_reloaded",
            config=config.source,
            added=added or None,
            removed=removed or None,
            rescheduled=rescheduled or None,
            changed=changed or None,
        )
        self._log_schedule(added + rescheduled)
        return True

    # -- the job ----------------------------------------------------------------------------

    def run_job(self, name: str, trigger: TriggerKind = "schedule") -> bool:
        """Run the suite ``name`` once with the current config; log and count how it went;
        return whether it ran (False: unknown suite, shutting down, or already running).

        Never raises for a failing suite: every error of the run is caught, logged as
        ``run_failed`` and counted, so the scheduler goes on with the next run. A suite whose
        store lock another process holds, or that is running here already (a change-run when
        its schedule comes), is skipped: counted and logged as ``run_skipped``. ``trigger``
        says what started the run; an ``on_change`` run records it with the run.
        """
        config, target = self._current
        suite = config.suites.get(name)
        with self._idle:
            # Checked under the lock shutdown takes: once it has counted the running suites,
            # no run starts that the process would then wait for on its way out.
            if suite is None or self._stopping.is_set():
                return False
            if name in self._running:
                busy = True
            else:
                busy = False
                self._running.add(name)
        if busy:
            self._board.skipped(name)
            log.warning(
                "run_skipped", suite=name, trigger=trigger, reason="a run of the suite is going"
            )
            return False
        self._board.started(name)
        started = time.monotonic()
        log.info("run_started", suite=name, trigger=trigger)
        try:
            outcome = self._run_suite(suite, target, trigger)
        except StoreLockedError as error:
            # Another process (a second replica, a manual `run`) is running the suite now:
            # a skip, as for `run`, not a failure. The composer exported nothing for it.
            self._board.skipped(name)
            log.warning(
                "run_skipped",
                suite=name,
                reason="another process holds the suite's lock",
                holder_host=error.host,
                holder_pid=error.pid,
                locked_since=error.since,
                skips_in_a_row=getattr(error, "skips", None),
            )
        except Exception as error:
            self._board.failed(name, error)
            expected = isinstance(error, MonitorError)
            log.error(
                "run_failed",
                suite=name,
                error_type=type(error).__name__,
                error=str(error),
                duration_seconds=round(time.monotonic() - started, 3),
                exc_info=None if expected else error,
            )
        else:
            self._board.succeeded(name, outcome)
            corpus = outcome.run.stats.get("corpus_fingerprint")
            self._polls.ran_against(name, corpus if isinstance(corpus, str) else None)
            comparison = outcome.comparison
            log.log(
                logging.WARNING if comparison.verdict == "evalset_changed" else logging.INFO,
                "run_finished",
                suite=name,
                trigger=trigger,
                corpus_fingerprint=corpus,
                run_id=outcome.run_id,
                verdict=comparison.verdict,
                regression=comparison.regression,
                export_errors=list(outcome.published.export_errors) or None,
                duration_seconds=round(time.monotonic() - started, 3),
            )
        finally:
            self._board.finished(name)
            with self._idle:
                self._running.discard(name)
                self._idle.notify_all()
        return True

    def _run_suite(self, suite: SuiteConfig, target: str, trigger: TriggerKind) -> SuiteOutcome:
        from monitor.config import config_hash
        from monitor.job import run_suite

        run = self._run or run_suite
        sinks = () if self._metrics is None else (self._metrics.update,)
        # A scheduled run is recorded as before triggers existed: no trigger is the schedule.
        extra: dict[str, TriggerKind] = {} if trigger == "schedule" else {"trigger": trigger}
        with self._store(target) as store:
            return run(
                suite,
                store,
                config_hash=config_hash(suite),
                progress=False,
                sinks=sinks,
                **extra,
            )

    def _is_running(self, name: str) -> bool:
        with self._idle:
            return name in self._running

    def _store(self, target: str) -> Store:
        if self._open_store is not None:
            return self._open_store(target)
        from monitor.store import open_store

        return open_store(target)

    # -- scheduler events -------------------------------------------------------------------

    def on_event(self, event: Any) -> None:
        """Log and count what the scheduler reports: missed and skipped runs, job faults."""
        from apscheduler.events import (
            EVENT_JOB_ERROR,
            EVENT_JOB_EXECUTED,
            EVENT_JOB_MAX_INSTANCES,
            EVENT_JOB_MISSED,
        )

        name = str(event.job_id)
        polled = watch_job_suite(name)
        if polled is not None:
            self._polls.on_event(polled, event)
            return
        if event.code == EVENT_JOB_MISSED:
            self._board.missed(name)
            log.warning(
                "run_missed",
                suite=name,
                scheduled_at=event.scheduled_run_time,
                reason="started later than the misfire grace time allows",
            )
        elif event.code == EVENT_JOB_MAX_INSTANCES:
            self._board.skipped(name)
            log.warning(
                "run_skipped",
                suite=name,
                scheduled_at=list(event.scheduled_run_times),
                reason="the previous run is still going",
            )
        elif event.code == EVENT_JOB_ERROR:
            self._board.job_error(name)
            log.error(
                "job_error",
                suite=name,
                error_type=type(event.exception).__name__,
                error=str(event.exception),
                exception=event.traceback,
            )
        elif event.code == EVENT_JOB_EXECUTED:
            log.debug("job_executed", suite=name)

    # -- state ------------------------------------------------------------------------------

    def snapshot(self) -> DaemonSnapshot:
        """Return the daemon's state now."""
        suites = self._current[0].suites
        labels = {name: suite.labels for name, suite in suites.items()}
        return self._board.snapshot(self.next_run_times(), labels)

    def next_run_times(self) -> dict[str, datetime | None]:
        """Return each scheduled suite's next run time (None while paused)."""
        if self._scheduler is None:
            return {}
        return {
            str(job.id): job.next_run_time
            for job in self._scheduler.get_jobs()
            if watch_job_suite(str(job.id)) is None
        }

    def _add_job(self, name: str, trigger: Any, grace: int) -> None:
        options: dict[str, Any] = {}
        if self._initial_run:
            options["next_run_time"] = datetime.now(timezone.utc)
        self._scheduler.add_job(
            self.run_job,
            trigger,
            args=(name,),
            id=name,
            name=name,
            max_instances=1,
            coalesce=True,
            misfire_grace_time=grace,
            replace_existing=True,
            **options,
        )

    def _log_schedule(self, names: list[str]) -> None:
        for name in names:
            job = self._scheduler.get_job(name)
            if job is None:
                continue
            log.info(
                "suite_scheduled",
                suite=name,
                trigger=str(job.trigger),
                misfire_grace_seconds=job.misfire_grace_time,
                next_run_at=job.next_run_time,
            )


def pool_size(suites: int) -> int:
    """Return how many workers a daemon of ``suites`` suites runs: one per suite, so that
    suites due at the same instant all start on time, at least :data:`WORKERS` (room for
    suites a reload adds) and at most :data:`MAX_WORKERS`.

    A worker is a thread started only when a run needs it, so an idle one costs nothing.
    """
    return min(max(suites, WORKERS), MAX_WORKERS)


def _plan(suite: SuiteConfig) -> tuple[Any, int]:
    """Return the suite's trigger and misfire grace time; raise for a schedule that fails."""
    trigger = build_trigger(suite.schedule)
    return trigger, misfire_grace_seconds(trigger)
