"""Schedules become APScheduler triggers that keep crontab's meaning, with a misfire grace
time that follows the schedule's period."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from monitor.config import ScheduleConfig
from monitor.daemon.cron import crontab_weekdays
from monitor.daemon.schedule import MAX_MISFIRE_GRACE_SECONDS, build_trigger, misfire_grace_seconds
from monitor.errors import UsageError

#: A Sunday.
SUNDAY = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)


def cron(expression: str, zone: str | None = "UTC") -> ScheduleConfig:
    return ScheduleConfig(cron=expression, interval_seconds=None, timezone=zone)


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ("*", "*"),
        ("1-5", "mon,tue,wed,thu,fri"),
        ("0", "sun"),
        ("7", "sun"),
        ("6,0", "sun,sat"),
        ("5-7", "sun,fri,sat"),
        ("*/2", "sun,tue,thu,sat"),
        ("1-5/2", "mon,wed,fri"),
        ("mon-fri", "mon,tue,wed,thu,fri"),
        ("sat-sun", "sun,sat"),
        ("0-6", "*"),
    ],
)
def test_crontab_weekday_field_becomes_day_names(field: str, expected: str) -> None:
    """Crontab weekday numbers (0 and 7 are Sunday) are rewritten as day names."""
    assert expected == crontab_weekdays(field)


@pytest.mark.parametrize("field", ["8", "5-1", "*/0", "funday", "1-"])
def test_crontab_weekday_field_that_cannot_be_read_raises(field: str) -> None:
    """A weekday field outside crontab's grammar raises UsageError naming it."""
    with pytest.raises(UsageError, match="cron weekday field"):
        crontab_weekdays(field)


@pytest.mark.parametrize(
    ("expression", "weekdays"),
    [
        ("0 9 * * 1-5", {0, 1, 2, 3, 4}),  # Monday to Friday, as crontab(5) says
        ("0 9 * * 0", {6}),  # Sunday
        ("0 9 * * 7", {6}),  # Sunday again
        ("0 9 * * *", {0, 1, 2, 3, 4, 5, 6}),
    ],
)
def test_cron_trigger_fires_on_crontabs_weekdays(expression: str, weekdays: set[int]) -> None:
    """The trigger fires on the weekdays crontab(5) means, not APScheduler 3.x's numbering."""
    trigger = build_trigger(cron(expression))
    fired: set[int] = set()
    previous = None
    for _ in range(14):
        previous = trigger.get_next_fire_time(previous, previous or SUNDAY)
        fired.add(previous.weekday())
    assert weekdays == fired


def test_cron_trigger_keeps_its_time_zone() -> None:
    """A cron schedule fires at its hour in its own time zone."""
    trigger = build_trigger(cron("30 2 * * *", "Europe/Berlin"))
    fire = trigger.get_next_fire_time(None, SUNDAY)
    local = fire.astimezone(ZoneInfo("Europe/Berlin"))
    assert (2, 30) == (local.hour, local.minute)


def test_interval_trigger_fires_every_interval() -> None:
    """An interval schedule fires every ``interval_seconds``."""
    trigger = build_trigger(ScheduleConfig(interval_seconds=90.0))
    first = trigger.get_next_fire_time(None, SUNDAY)
    assert timedelta(seconds=90) == trigger.get_next_fire_time(first, first) - first


def test_schedule_without_cron_or_interval_raises() -> None:
    """A schedule that names no time raises UsageError."""
    with pytest.raises(UsageError):
        build_trigger(ScheduleConfig(cron=None, interval_seconds=None))


@pytest.mark.parametrize(
    ("schedule", "expected"),
    [
        (ScheduleConfig(interval_seconds=1.0), 1),  # never below 1 s (APScheduler's minimum)
        (ScheduleConfig(interval_seconds=10.0), 5),
        (ScheduleConfig(interval_seconds=1800.0), 900),
        (ScheduleConfig(interval_seconds=86400.0), MAX_MISFIRE_GRACE_SECONDS),
        (cron("*/10 * * * *"), 300),
        (cron("0 9,17 * * *"), 3600),  # the shortest gap (8 h) halved, then capped
        (cron("30 2 * * *"), MAX_MISFIRE_GRACE_SECONDS),
    ],
)
def test_misfire_grace_is_half_the_shortest_gap_within_bounds(
    schedule: ScheduleConfig, expected: int
) -> None:
    """A late run still starts while it is at most half a period late, 1 s to 1 h."""
    assert expected == misfire_grace_seconds(build_trigger(schedule), SUNDAY)


def test_misfire_grace_of_a_schedule_that_never_fires_again_is_the_cap() -> None:
    """A trigger with no next fire time gets the largest grace."""

    class Never:
        def get_next_fire_time(self, previous: object, now: object) -> None:
            return None

    assert MAX_MISFIRE_GRACE_SECONDS == misfire_grace_seconds(Never(), SUNDAY)


def test_the_config_accepts_seven_as_sunday() -> None:
    """A crontab weekday 7 (Sunday) validates in the config, as crontab(5) allows."""
    from monitor.config import load_config_text

    text = """
suites:
  s:
    evalset: {bundled: larkfield}
    search: {kind: replay, bundled: larkfield/keyword}
    schedule: {cron: "0 3 * * 7"}
"""
    assert "0 3 * * 7" == load_config_text(text).suite("s").schedule.cron
