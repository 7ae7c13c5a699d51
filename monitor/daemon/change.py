"""Runs on a change of the corpus: what the daemon decides at each poll of a suite's search.

A suite with ``trigger: on_change`` has a :class:`ChangeWatch`: the daemon builds its search
once, polls its ``corpus_fingerprint()`` every ``poll_interval`` and hands each digest to
:meth:`ChangeWatch.observe`, which says what to do:

- ``same``: the digest is the one last stored; nothing changed (a change that went back
  before it settled is forgotten).
- ``covered``: the last run of the suite this daemon finished (scheduled, or the run at
  start-up) ran against this very corpus: the digest is stored, nothing runs again.
- ``changed``: a digest not seen before; the wait of ``settle`` starts, and starts again at
  each further change, so a bulk load that takes several polls gives one run at its end.
- ``settling``: the change is younger than ``settle``.
- ``waiting``: the change has settled, but the last change-run started less than
  ``min_interval`` ago; a burst of changes in that time still gives one run.
- ``run``: run the suite, then store the digest (whether the run succeeded or not: a
  failed run raises its own alert, and the schedule runs the suite again).

Times come from an injected monotonic clock, so tests advance it instead of sleeping. The
watch starts unloaded: the first poll reads the stored digest (the daemon stores the current
one when there is none and the suite has run before, so only a later change runs it; a suite
that never ran runs once).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from monitor.search.base import close_search, corpus_fingerprint, fingerprint_digest

if TYPE_CHECKING:
    from monitor.config.model import SearchConfig, TriggerConfig
    from monitor.records import MetaValue
    from monitor.search.base import Search

#: What a poll decided (see the module's docstring).
Decision = Literal["same", "changed", "settling", "waiting", "covered", "run"]

#: The id prefixes of a suite's poll job and of its change-runs on the scheduler (no suite
#: name holds a colon, so neither id is a suite's).
POLL_JOB_PREFIX = "corpus-poll:"
CHANGE_RUN_JOB_PREFIX = "corpus-run:"


def poll_job_id(suite: str) -> str:
    """Return the scheduler's id of the poll job of ``suite``."""
    return f"{POLL_JOB_PREFIX}{suite}"


def change_run_job_id(suite: str) -> str:
    """Return the scheduler's id of a change-run of ``suite``."""
    return f"{CHANGE_RUN_JOB_PREFIX}{suite}"


def watch_job_suite(job_id: str) -> str | None:
    """Return the suite whose poll or change-run job ``job_id`` is; None for a run job."""
    for prefix in (POLL_JOB_PREFIX, CHANGE_RUN_JOB_PREFIX):
        if job_id.startswith(prefix):
            return job_id.removeprefix(prefix)
    return None


class ChangeWatch:
    """One on_change suite's search and what its polls have seen. Thread-safe.

    ``search`` is built once by the daemon (from ``search_config``, kept to tell whether a
    reloaded config changed it) and closed by :meth:`close`; ``clock`` is a monotonic clock
    in seconds.
    """

    def __init__(
        self,
        suite: str,
        trigger: TriggerConfig,
        search: Search,
        clock: Callable[[], float],
        search_config: SearchConfig | None = None,
    ) -> None:
        self.suite = suite
        self.trigger = trigger
        self.search_config = search_config
        self._search = search
        self._clock = clock
        self._lock = threading.Lock()
        # Held while the search is asked or closed, apart from the state's lock, so that a
        # slow corpus_fingerprint() never holds up the runs reporting what they ran against.
        self._using = threading.Lock()
        self._closed = False
        self._loaded = False
        self._known: str | None = None
        self._pending: str | None = None
        self._pending_since = 0.0
        self._last_run_at: float | None = None
        self._ran_against: str | None = None
        self._running = False

    # -- the search -------------------------------------------------------------------------

    def fingerprint(self) -> tuple[str, dict[str, MetaValue]]:
        """Return the digest of the search's corpus fingerprint, and the fingerprint."""
        with self._using:
            if self._closed:
                raise RuntimeError(f"the watch of suite {self.suite!r} is closed")
            reported = corpus_fingerprint(self._search)
        if reported is None:  # the daemon only watches searches that have one
            raise RuntimeError(f"the search of suite {self.suite!r} has no corpus_fingerprint()")
        return fingerprint_digest(reported), reported

    def close(self, timeout: float = 1.0) -> None:
        """Close the search, waiting up to ``timeout`` seconds for a poll that is asking it."""
        got = self._using.acquire(timeout=max(timeout, 0.0))
        try:
            if not self._closed:
                self._closed = True
                close_search(self._search)
        finally:
            if got:
                self._using.release()

    # -- what the polls saw -----------------------------------------------------------------

    @property
    def loaded(self) -> bool:
        """Return whether the stored digest has been read (by the first poll that could)."""
        with self._lock:
            return self._loaded

    @property
    def known(self) -> str | None:
        """Return the digest last stored for the suite (None: none yet)."""
        with self._lock:
            return self._known

    @property
    def pending(self) -> str | None:
        """Return the changed digest waiting for its run, or None."""
        with self._lock:
            return self._pending

    def load(self, stored: str | None) -> None:
        """Take ``stored`` (the store's digest, None when it has none) as the known one."""
        with self._lock:
            self._known = stored
            self._loaded = True

    def observe(self, digest: str) -> Decision:
        """Return what to do now that a poll read ``digest``."""
        now = self._clock()
        with self._lock:
            if digest == self._known:
                self._pending = None
                return "same"
            new = digest != self._pending
            if new:
                self._pending = digest
                self._pending_since = now
            if digest == self._ran_against:
                return "covered"
            if new:
                return "changed"
            if now - self._pending_since < self.trigger.settle_seconds:
                return "settling"
            last = self._last_run_at
            if last is not None and now - last < self.trigger.min_interval_seconds:
                return "waiting"
            return "run"

    @property
    def running(self) -> bool:
        """Return whether a change-run is on its way (between :meth:`begin_run` and
        :meth:`ran`): polls then pass."""
        with self._lock:
            return self._running

    def begin_run(self) -> bool:
        """Note that a change-run is on its way; return False when one already is."""
        with self._lock:
            if self._running:
                return False
            self._running = True
            return True

    def ran(self, started_at: float | None) -> None:
        """Note that the change-run has ended: started at ``started_at`` (the clock's time),
        or None when it did not start (the change stays pending)."""
        with self._lock:
            self._running = False
            if started_at is not None:
                self._last_run_at = started_at
                self._pending = None

    def ran_against(self, digest: str | None) -> None:
        """Note the digest a finished run of the suite recorded (None: it recorded none)."""
        with self._lock:
            self._ran_against = digest

    def stored(self, digest: str) -> None:
        """Note that ``digest`` is now the store's digest of the suite."""
        with self._lock:
            self._known = digest
            if self._pending == digest:
                self._pending = None

    def now(self) -> float:
        """Return the watch's clock's time."""
        return self._clock()
