"""Turn a suite's ``schedule`` into an APScheduler 3.x trigger and a misfire grace time.

Cron expressions mean what crontab(5) says (see :mod:`monitor.daemon.cron`).

A run that starts late (the workers were busy, the host was suspended) still runs while it
is at most :func:`misfire_grace_seconds` late: half the schedule's shortest gap between two
runs, at least 1 s and at most :data:`MAX_MISFIRE_GRACE_SECONDS`. APScheduler's default of
1 s silently drops nearly every late run; half the period keeps a late run while the next
one is still further away than the run is late, and the cap keeps a nightly run from
starting in the middle of the next working day. With ``coalesce`` several missed runs
collapse into that one late run.
"""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from monitor.daemon.cron import cron_trigger
from monitor.errors import UsageError

if TYPE_CHECKING:
    from monitor.config.common import ScheduleConfig

#: The most a run may start late and still run, in seconds.
MAX_MISFIRE_GRACE_SECONDS = 3600

#: Fire times looked at to find a cron schedule's shortest gap.
_SAMPLES = 8


def build_trigger(schedule: ScheduleConfig) -> Any:
    """Return the trigger for ``schedule``: a CronTrigger in its time zone, or an IntervalTrigger.

    A cron schedule without a time zone uses the host's local time.
    """
    if schedule.cron is not None:
        return cron_trigger(schedule.cron, schedule.timezone)
    if schedule.interval_seconds is not None:
        from apscheduler.triggers.interval import IntervalTrigger

        return IntervalTrigger(seconds=schedule.interval_seconds)
    raise UsageError("a schedule needs a cron expression or an interval")


def misfire_grace_seconds(trigger: Any, now: datetime | None = None) -> int:
    """Return how many seconds late a run of ``trigger`` may start and still run.

    Half the shortest gap between the trigger's next few fire times, at least 1 and at most
    :data:`MAX_MISFIRE_GRACE_SECONDS` (a whole number: APScheduler 3.x wants an int).
    """
    gap = shortest_gap(trigger, now or datetime.now(timezone.utc))
    if gap is None:
        return MAX_MISFIRE_GRACE_SECONDS
    return int(min(max(gap.total_seconds() / 2, 1), MAX_MISFIRE_GRACE_SECONDS))


def shortest_gap(trigger: Any, now: datetime) -> timedelta | None:
    """Return the shortest time between two of the trigger's next fire times, or None."""
    fire_times: list[datetime] = []
    previous: datetime | None = None
    for _ in range(_SAMPLES):
        nxt: datetime | None = trigger.get_next_fire_time(previous, previous or now)
        if nxt is None:
            break
        fire_times.append(nxt)
        previous = nxt
    gaps = [later - earlier for earlier, later in itertools.pairwise(fire_times)]
    return min(gaps) if gaps else None
