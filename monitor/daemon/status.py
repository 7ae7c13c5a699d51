"""What the daemon knows about its suites: counts, last success and failure, the last outcome.

The scheduler runs jobs in worker threads and calls its listener from them, so the
:class:`StatusBoard` is the one place they write to, under a lock; readers get a frozen
:class:`DaemonSnapshot` (:meth:`monitor.daemon.Daemon.snapshot`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from monitor.job.outcome import SuiteOutcome


@dataclass(frozen=True, slots=True)
class SuiteStatus:
    """One suite as the daemon has seen it since it started.

    ``runs`` counts runs that finished and were stored; ``failures`` runs that raised (the
    search backend failed, the store was unreachable, a bad eval set); ``missed``
    runs that started later than the misfire grace time allowed and were dropped;
    ``skipped`` runs that were due while the previous run of the suite was still going, or
    while another process held the suite's store lock;
    ``job_errors`` faults in the daemon's job itself, reported by the scheduler.
    ``next_run_at`` and ``labels`` (the suite's static labels) come from the schedule and the
    config when the snapshot is taken.
    """

    suite: str
    runs: int = 0
    failures: int = 0
    missed: int = 0
    skipped: int = 0
    job_errors: int = 0
    running: bool = False
    last_started_at: datetime | None = None
    last_success_at: datetime | None = None
    last_failure_at: datetime | None = None
    last_error: str | None = None
    last_outcome: SuiteOutcome | None = field(default=None, repr=False)
    next_run_at: datetime | None = None
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DaemonSnapshot:
    """The daemon's state at one moment: its suites and how its config reloads went."""

    started_at: datetime
    taken_at: datetime
    config_source: str
    reloads: int
    reload_failures: int
    suites: Mapping[str, SuiteStatus]

    def __post_init__(self) -> None:
        object.__setattr__(self, "suites", MappingProxyType(dict(self.suites)))


class StatusBoard:
    """Collect what the jobs and the scheduler report; hand out snapshots. Thread-safe."""

    def __init__(self, suites: Iterable[str], config_source: str) -> None:
        self._lock = threading.Lock()
        self._started_at = _now()
        self._source = config_source
        self._reloads = 0
        self._reload_failures = 0
        self._suites: dict[str, SuiteStatus] = {name: SuiteStatus(name) for name in suites}

    def set_suites(self, suites: Iterable[str], config_source: str) -> None:
        """Follow a reloaded config: keep the suites still in it, add new ones, drop the rest."""
        with self._lock:
            self._source = config_source
            self._suites = {name: self._suites.get(name, SuiteStatus(name)) for name in suites}

    def started(self, suite: str) -> None:
        """Note that a run of ``suite`` has started."""
        self._change(suite, lambda s: replace(s, running=True, last_started_at=_now()))

    def succeeded(self, suite: str, outcome: SuiteOutcome) -> None:
        """Note that a run of ``suite`` finished and was stored."""
        self._change(
            suite,
            lambda s: replace(s, runs=s.runs + 1, last_success_at=_now(), last_outcome=outcome),
        )

    def failed(self, suite: str, error: BaseException) -> None:
        """Note that a run of ``suite`` raised ``error``."""
        message = f"{type(error).__name__}: {error}"
        self._change(
            suite,
            lambda s: replace(
                s, failures=s.failures + 1, last_failure_at=_now(), last_error=message
            ),
        )

    def finished(self, suite: str) -> None:
        """Note that the job for ``suite`` has returned, however it went."""
        self._change(suite, lambda s: replace(s, running=False))

    def missed(self, suite: str) -> None:
        """Count a run of ``suite`` dropped for starting too late."""
        self._change(suite, lambda s: replace(s, missed=s.missed + 1))

    def skipped(self, suite: str) -> None:
        """Count a run of ``suite`` not made: the previous one, or another process's, was going."""
        self._change(suite, lambda s: replace(s, skipped=s.skipped + 1))

    def job_error(self, suite: str) -> None:
        """Count a fault in the job of ``suite`` that the scheduler caught."""
        self._change(suite, lambda s: replace(s, job_errors=s.job_errors + 1))

    def reloaded(self, ok: bool) -> None:
        """Count a config reload, or a reload that was refused."""
        with self._lock:
            if ok:
                self._reloads += 1
            else:
                self._reload_failures += 1

    def snapshot(
        self,
        next_runs: Mapping[str, datetime | None] | None = None,
        labels: Mapping[str, Mapping[str, str]] | None = None,
    ) -> DaemonSnapshot:
        """Return the state now, with each suite's next run time and static labels."""
        next_runs = next_runs or {}
        labels = labels or {}
        with self._lock:
            suites = {
                name: replace(
                    status,
                    next_run_at=next_runs.get(name),
                    labels=MappingProxyType(dict(labels.get(name, {}))),
                )
                for name, status in self._suites.items()
            }
            return DaemonSnapshot(
                started_at=self._started_at,
                taken_at=_now(),
                config_source=self._source,
                reloads=self._reloads,
                reload_failures=self._reload_failures,
                suites=suites,
            )

    def _change(self, suite: str, change: Callable[[SuiteStatus], SuiteStatus]) -> None:
        # A suite dropped by a reload while its run was going is not brought back.
        with self._lock:
            status = self._suites.get(suite)
            if status is not None:
                self._suites[suite] = change(status)


def _now() -> datetime:
    return datetime.now(timezone.utc)
