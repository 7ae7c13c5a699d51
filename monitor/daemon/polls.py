"""The daemon's polls of its on_change suites' corpora, on the scheduler it already runs.

:class:`CorpusPolls` builds one :class:`~monitor.daemon.change.ChangeWatch` per suite with
``trigger: on_change`` (its search built once, closed at shutdown or when a reload replaces
it), adds a poll job for each on the scheduler's ``polls`` pool, and acts on what each poll
decides: it logs a change, stores a digest, or hands a change-run to the runs' pool, where
it goes through the daemon's own run job (``trigger=on_change``), the path of every
scheduled run. The last digest of each suite is kept in the store, so the first poll after
a restart notices a change made while the daemon was down.

A poll that fails (the search's ``corpus_fingerprint()``, or the store) is logged as
``corpus_poll_failed`` and tried again at the next poll; it never reaches the scheduler.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from monitor.daemon.change import ChangeWatch, change_run_job_id, poll_job_id
from monitor.errors import MonitorError, UsageError
from monitor.logs import get_logger

if TYPE_CHECKING:
    from monitor.config.model import MonitorConfig, TriggerKind
    from monitor.records import MetaValue
    from monitor.store import Store

log = get_logger("monitor.daemon")

#: The scheduler's executor the poll jobs run on, apart from the runs.
POLL_EXECUTOR = "polls"


class CorpusPolls:
    """The watches and poll jobs of a daemon's on_change suites.

    ``open_store`` opens the store at ``target()`` (the daemon's current one); ``run`` is
    the daemon's run job (``(suite, trigger) -> whether it ran``) and ``running`` tells
    whether a suite is running now; ``stopping`` is set once the daemon shuts down.
    ``clock`` (monotonic seconds) times the watches' waits.
    """

    def __init__(
        self,
        *,
        open_store: Callable[[str], Store],
        target: Callable[[], str],
        run: Callable[[str, TriggerKind], bool],
        running: Callable[[str], bool],
        stopping: threading.Event,
        clock: Callable[[], float],
    ) -> None:
        self._open_store = open_store
        self._target = target
        self._run = run
        self._running = running
        self._stopping = stopping
        self._clock = clock
        self._scheduler: Any = None
        #: The watches by suite; replaced whole, never changed in place.
        self._watches: dict[str, ChangeWatch] = {}

    @property
    def suites(self) -> list[str]:
        """Return the suites watched now."""
        return list(self._watches)

    # -- building and installing ------------------------------------------------------------

    def build(self, config: MonitorConfig) -> dict[str, ChangeWatch]:
        """Return a watch for each on_change suite of ``config``: the current one when its
        suite's search and trigger are unchanged, else one with its search built now.

        Raise UsageError, naming the suite, for a search without ``corpus_fingerprint()``;
        on any error the searches built here are closed again.
        """
        from monitor.search import build_search, close_search, has_corpus_fingerprint

        watches: dict[str, ChangeWatch] = {}
        built: list[ChangeWatch] = []
        try:
            for name, suite in config.suites.items():
                if not suite.trigger.on_change:
                    continue
                old = self._watches.get(name)
                if old is not None and (old.trigger, old.search_config) == (
                    suite.trigger,
                    suite.search,
                ):
                    watches[name] = old
                    continue
                search = build_search(suite.search.kind, suite.search.plugin_options())
                if not has_corpus_fingerprint(search):
                    close_search(search)
                    raise UsageError(
                        f"suite {name!r}: trigger: on_change needs a search with"
                        f" corpus_fingerprint(); search kind {suite.search.kind!r} has none"
                    )
                watch = ChangeWatch(name, suite.trigger, search, self._clock, suite.search)
                built.append(watch)
                watches[name] = watch
        except BaseException:
            close_watches(built)
            raise
        return watches

    def install(self, scheduler: Any, watches: Mapping[str, ChangeWatch]) -> None:
        """Poll ``watches`` (from :meth:`build`) on ``scheduler`` from now on: add the polls
        of new watches, remove those of suites no longer watched, close replaced searches."""
        self._scheduler = scheduler
        before, self._watches = self._watches, dict(watches)
        for name, watch in watches.items():
            if before.get(name) is not watch:
                self._add_poll(watch)  # replaces the poll of the watch it follows
        for name in before.keys() - watches.keys():
            scheduler.remove_job(poll_job_id(name))
        close_watches(w for n, w in before.items() if watches.get(n) is not w)

    def close(self) -> None:
        """Close every watched search (the scheduler is shut down already)."""
        close_watches(self._watches.values())

    def ran_against(self, suite: str, digest: str | None) -> None:
        """Note the corpus digest a finished run of ``suite`` recorded (None: none)."""
        watch = self._watches.get(suite)
        if watch is not None:
            watch.ran_against(digest)

    # -- the polls --------------------------------------------------------------------------

    def poll(self, name: str) -> None:
        """Poll the corpus of the on_change suite ``name`` once; start its run when due.

        Never raises: a poll that fails (the search's ``corpus_fingerprint()`` or the store)
        is logged as ``corpus_poll_failed`` and the next poll tries again.
        """
        watch = self._watches.get(name)
        if watch is None or watch.running or self._stopping.is_set():
            return
        try:
            self._poll(watch)
        except Exception as error:
            _poll_failed(name, error)

    def _poll(self, watch: ChangeWatch) -> None:
        name = watch.suite
        digest, detail = watch.fingerprint()
        target = self._target()
        if not watch.loaded:
            with self._open_store(target) as store:
                known = store.known_corpus(name)
                if known is None and store.list_runs(name, limit=1):
                    # Watched for the first time, a suite that has run: later changes run it.
                    store.set_known_corpus(name, digest, detail)
                    watch.load(digest)
                    log.info("corpus_recorded", suite=name, corpus_fingerprint=digest)
                    return
            # No digest and no run: the suite runs once, as for a change.
            watch.load(None if known is None else known.fingerprint)
        previous = watch.known
        decision = watch.observe(digest)
        if decision == "changed":
            log.info(
                "corpus_changed",
                suite=name,
                corpus_fingerprint=digest,
                previous=previous,
                settle_seconds=watch.trigger.settle_seconds,
            )
        elif decision == "covered":
            self._store_corpus(watch, target, digest, detail)
            log.info("corpus_change_covered", suite=name, corpus_fingerprint=digest)
        elif decision == "run":
            # A scheduled run going: the next poll decides again once it is done.
            if self._running(name) or not watch.begin_run():
                return
            log.info("corpus_change_run", suite=name, corpus_fingerprint=digest, previous=previous)
            # On the runs' pool, as a scheduled run: the polls go on meanwhile (and pass).
            try:
                self._scheduler.add_job(
                    self._run_change,
                    args=(watch, digest, detail),
                    id=change_run_job_id(name),
                    name=change_run_job_id(name),
                    misfire_grace_time=None,
                    replace_existing=True,
                )
            except BaseException:
                watch.ran(None)  # not on its way after all: the next poll decides again
                raise

    def _run_change(self, watch: ChangeWatch, digest: str, detail: Mapping[str, MetaValue]) -> None:
        """Run the suite for the change to ``digest``, then store the digest; never raise."""
        started = watch.now()
        ran = False
        try:
            ran = self._run(watch.suite, "on_change")
        finally:
            watch.ran(started if ran else None)
        if not ran:  # not started (shutting down, or a run came first): the next poll decides
            return
        try:
            self._store_corpus(watch, self._target(), digest, detail)
        except Exception as error:  # the next poll finds the run covered it, and stores it
            _poll_failed(watch.suite, error)

    def _store_corpus(
        self, watch: ChangeWatch, target: str, digest: str, detail: Mapping[str, MetaValue]
    ) -> None:
        with self._open_store(target) as store:
            store.set_known_corpus(watch.suite, digest, detail)
        watch.stored(digest)

    def _add_poll(self, watch: ChangeWatch) -> None:
        from apscheduler.triggers.interval import IntervalTrigger

        every = watch.trigger.poll_interval_seconds
        # The first poll comes at once: a change made while the daemon was down is seen now.
        self._scheduler.add_job(
            self.poll,
            IntervalTrigger(seconds=every),
            args=(watch.suite,),
            id=poll_job_id(watch.suite),
            name=poll_job_id(watch.suite),
            executor=POLL_EXECUTOR,
            max_instances=1,
            coalesce=True,
            misfire_grace_time=max(1, int(every)),
            replace_existing=True,
            next_run_time=datetime.now(timezone.utc),
        )

    # -- scheduler events -------------------------------------------------------------------

    def on_event(self, suite: str, event: Any) -> None:
        """Log what the scheduler reports of a poll or change-run job; a late or skipped
        poll is no run missed (the next poll sees the same corpus), so nothing is counted."""
        from apscheduler.events import EVENT_JOB_ERROR

        if event.code == EVENT_JOB_ERROR:
            log.error(
                "corpus_poll_failed",
                suite=suite,
                error_type=type(event.exception).__name__,
                error=str(event.exception),
                exception=event.traceback,
            )
        else:
            log.debug("corpus_poll_event", suite=suite, code=event.code)


def close_watches(watches: Iterable[ChangeWatch]) -> None:
    """Close each watch's search; a close that fails is logged, the others still close."""
    for watch in watches:
        try:
            watch.close()
        except Exception as error:
            log.warning(
                "corpus_search_close_failed",
                suite=watch.suite,
                error_type=type(error).__name__,
                error=str(error),
            )


def _poll_failed(suite: str, error: Exception) -> None:
    log.error(
        "corpus_poll_failed",
        suite=suite,
        error_type=type(error).__name__,
        error=str(error),
        exc_info=None if isinstance(error, MonitorError) else error,
    )
