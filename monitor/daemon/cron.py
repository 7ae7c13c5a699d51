"""Crontab expressions as crontab(5) means them, read by APScheduler 3.x.

APScheduler 3.x numbers weekdays from Monday (0 = Monday, its issue 286), so ``0 3 * * 1-5``
given to ``CronTrigger.from_crontab`` as is would run Tuesday to Saturday.
:func:`crontab_weekdays` rewrites the weekday field into day names first (0 and 7 are
Sunday), which both readings agree on. The config loader and the daemon both go through
:func:`cron_trigger`, so a schedule that validates is the schedule that runs.
"""

from __future__ import annotations

from typing import Any

from monitor.errors import UsageError

#: Crontab's weekday numbers: 0 (and 7) is Sunday.
_DAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


def cron_trigger(expression: str, timezone: str | None = None) -> Any:
    """Return the APScheduler CronTrigger of a 5-field crontab expression.

    Raise UsageError for an expression that is not 5 fields or that the trigger refuses.
    """
    from apscheduler.triggers.cron import CronTrigger

    fields = expression.split()
    if len(fields) != 5:
        raise UsageError(f"cron expression {expression!r}: expected 5 fields, found {len(fields)}")
    minute, hour, day, month, weekday = fields
    translated = " ".join((minute, hour, day, month, crontab_weekdays(weekday)))
    try:
        return CronTrigger.from_crontab(translated, timezone=timezone)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"cron expression {expression!r}: {exc}") from None


def crontab_weekdays(field: str) -> str:
    """Return a crontab weekday field as day names, which APScheduler 3.x reads the same way.

    ``1-5`` becomes ``mon,tue,wed,thu,fri``, ``0`` and ``7`` ``sun``, ``*/2``
    ``sun,tue,thu,sat``; ``*`` and names stay as they are. Raise UsageError for a field that
    is not a crontab weekday list.
    """
    if field in ("*", "?"):
        return "*"
    days: set[int] = set()
    for item in field.split(","):
        base, slash, step_text = item.partition("/")
        try:
            step = int(step_text) if slash else 1
            if base == "*":
                first, last = 0, 6
            elif "-" in base:
                start, _, end = base.partition("-")
                first, last = _weekday(start), _weekday(end)
                if last == 0 < first:  # sat-sun: Sunday closes the week
                    last = 7
            else:
                first = _weekday(base)
                last = 7 if slash else first
        except ValueError:
            raise UsageError(f"cron weekday field {field!r}: cannot read {item!r}") from None
        if step < 1 or first > last:
            raise UsageError(f"cron weekday field {field!r}: cannot read {item!r}")
        days.update(day % 7 for day in range(first, last + 1, step))
    if len(days) == 7:
        return "*"
    return ",".join(_DAY_NAMES[day] for day in sorted(days))


def _weekday(text: str) -> int:
    name = text.strip().lower()
    if name in _DAY_NAMES:
        return _DAY_NAMES.index(name)
    number = int(name)
    if not 0 <= number <= 7:
        raise ValueError(text)
    return number
