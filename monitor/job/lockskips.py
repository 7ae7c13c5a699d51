"""Count the runs a suite skips for its held store lock; raise the alarm when they go on.

A suite whose lock another process holds is skipped, not failed: a second replica or a
manual ``run`` is running it. Skipped run after run it is not measured at all, though, so
the skips are counted in the store's state (namespace ``lock_skips``, one document per
suite), where a stateless CronJob finds them. A skip that makes more than the suite's
``runner.max_lock_skips`` in a row, or comes longer than one schedule interval after the
first of the row, raises :class:`~monitor.errors.LockedTooLongError` instead; the composer
then exports the attempt's gauges and raises the ``suite_locked`` monitor-failure alert. The
next run that gets the lock clears the count.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from monitor.errors import LockedTooLongError, StoreLockedError

if TYPE_CHECKING:
    from monitor.config.common import ScheduleConfig
    from monitor.config.model import SuiteConfig
    from monitor.store import Store
    from monitor.store.records import LockHolder

#: The state namespace of the skip counts.
NAMESPACE = "lock_skips"


@dataclass(frozen=True, slots=True)
class SkipStreak:
    """How many runs of a suite in a row were skipped for its lock, from when."""

    count: int
    since: datetime

    def too_long(self, max_skips: int, interval_seconds: float | None, at: datetime) -> bool:
        """Return whether the streak is more than ``max_skips`` long or lasts over an interval."""
        if self.count > max_skips:
            return True
        return interval_seconds is not None and (at - self.since).total_seconds() > interval_seconds


@contextmanager
def suite_lock(
    store: Store,
    suite: SuiteConfig,
    clock: Callable[[], datetime],
    on_too_long: Callable[[LockedTooLongError], None],
) -> Iterator[LockHolder]:
    """Hold the suite's store lock for the block, counting the skips of a held lock.

    A held lock raises StoreLockedError, or LockedTooLongError (after calling
    ``on_too_long`` with it) once the skips have gone on too long; taking the lock clears
    the count.
    """
    with ExitStack() as stack:
        try:
            holder = stack.enter_context(store.lock(suite.name))
        except StoreLockedError as error:
            at = clock()
            streak = record_skip(store, suite.name, at)
            interval = schedule_interval(suite.schedule, at)
            if not streak.too_long(suite.runner.max_lock_skips, interval, at):
                raise
            stuck = LockedTooLongError(
                error.location,
                suite.name,
                error.host,
                error.pid,
                error.since,
                skips=streak.count,
                skipping_since=streak.since,
            )
            on_too_long(stuck)
            raise stuck from error
        store.delete_state(NAMESPACE, suite.name)
        yield holder


def record_skip(store: Store, suite: str, at: datetime) -> SkipStreak:
    """Count one more skip of ``suite`` at ``at``; return the streak it makes."""
    state = store.get_state(NAMESPACE, suite)
    if state is None:
        streak = SkipStreak(1, at)
    else:
        streak = SkipStreak(int(state["count"]) + 1, datetime.fromisoformat(str(state["since"])))
    store.put_state(NAMESPACE, suite, {"count": streak.count, "since": streak.since.isoformat()})
    return streak


def schedule_interval(schedule: ScheduleConfig, at: datetime) -> float | None:
    """Return the schedule's interval in seconds (a cron schedule's shortest gap), or None."""
    if schedule.interval_seconds is not None:
        return schedule.interval_seconds
    from monitor.daemon.schedule import build_trigger, shortest_gap

    gap = shortest_gap(build_trigger(schedule), at)
    return None if gap is None else gap.total_seconds()
