"""Read when a suite runs: its ``schedule`` (cron or an interval) and its ``trigger``
(the schedule, or a change of its search's corpus)."""

from __future__ import annotations

from collections.abc import Mapping

from monitor.config import vocab
from monitor.config.common import ScheduleConfig
from monitor.config.fields import Fields
from monitor.config.model import TriggerConfig
from monitor.config.nodes import Node
from monitor.errors import UsageError


def schedule(f: Fields, node: Node | None) -> ScheduleConfig:
    """Read ``schedule``: exactly one of ``cron`` (5 fields) or ``interval``; default 1h."""
    if node is None:
        return ScheduleConfig()
    entries = f.mapping(node, vocab.SCHEDULE_KEYS, "cron or interval")
    given = [key for key in ("cron", "interval") if key in entries]
    if len(given) != 1:
        where = entries["interval"] if len(given) == 2 else node
        raise f.error(where, "exactly one of 'cron' or 'interval'")
    timezone = None
    if "timezone" in entries:
        if "cron" not in entries:
            raise f.error(entries["timezone"], "'timezone' only with 'cron'")
        timezone = _timezone(f, entries["timezone"])
    if "cron" in entries:
        return ScheduleConfig(
            cron=_cron(f, entries["cron"]), interval_seconds=None, timezone=timezone
        )
    return ScheduleConfig(interval_seconds=interval_seconds(f, entries["interval"]))


def trigger(f: Fields, node: Node | None) -> TriggerConfig:
    """Read ``trigger``: ``schedule`` (the default) or ``on_change``, alone or as
    ``{kind: on_change, poll_interval?, settle?, min_interval?}``; defaults 60s, 30s, 5m."""
    if node is None:
        return TriggerConfig()
    expected = f"a trigger: {' or '.join(vocab.TRIGGER_KINDS)}"
    entries: Mapping[str, Node] = {}
    kind_node = node
    if not isinstance(node.value, str):
        entries = f.mapping(node, vocab.TRIGGER_KEYS, "kind, poll_interval, settle, min_interval")
        kind_node = f.require(node, entries, "kind")
    kind = f.string(kind_node, expected)
    if kind not in vocab.TRIGGER_KINDS:
        raise f.error(kind_node, expected, show=True)
    options = [key for key in vocab.TRIGGER_KEYS if key != "kind" and key in entries]
    if kind == "schedule":
        if options:
            raise f.error(entries[options[0]], f"{options[0]!r} only with kind: on_change")
        return TriggerConfig()
    default = TriggerConfig()
    return TriggerConfig(
        kind="on_change",
        poll_interval_seconds=(
            interval_seconds(f, entries["poll_interval"])
            if "poll_interval" in entries
            else default.poll_interval_seconds
        ),
        settle_seconds=_wait(f, entries.get("settle"), default.settle_seconds),
        min_interval_seconds=_wait(f, entries.get("min_interval"), default.min_interval_seconds),
    )


def _wait(f: Fields, node: Node | None, default: float) -> float:
    """Return a wait in seconds from ``0``, ``30s``, ``5m``, ...: 0 or more, at most a year."""
    if node is None:
        return default
    seconds = vocab.interval_to_seconds(node.value)
    if seconds is None or not 0 <= seconds <= vocab.MAX_INTERVAL_SECONDS:
        raise f.error(
            node, "a wait such as 0, 30s, 5m, 1h or a number of seconds, at most a year", show=True
        )
    return seconds


def interval_seconds(f: Fields, node: Node) -> float:
    """Return an interval in seconds from ``90``, ``90s``, ``30m``, ``1h``, ``1d`` or ``1h30m``."""
    expected = (
        "an interval such as 90s, 30m, 1h, 1d, 1h30m or a number of seconds above 0, at most a year"
    )
    seconds = vocab.interval_to_seconds(node.value)
    if seconds is None or not 0 < seconds <= vocab.MAX_INTERVAL_SECONDS:
        raise f.error(node, expected, show=True)
    return seconds


def _cron(f: Fields, node: Node) -> str:
    expected = 'a 5-field crontab expression (minute hour day month weekday) such as "*/15 * * * *"'
    text = f.string(node, expected)
    if len(text.split()) != 5:
        raise f.error(node, expected, show=True)
    # apscheduler is imported here only: a config without cron never pays for it.
    from monitor.daemon.cron import cron_trigger

    try:
        cron_trigger(text, timezone="UTC")
    except UsageError as exc:
        raise f.error(node, f"{expected} ({exc})", show=True) from None
    return " ".join(text.split())


def _timezone(f: Fields, node: Node) -> str:
    import zoneinfo

    expected = "an IANA time zone such as UTC or Europe/Berlin"
    name = f.string(node, expected)
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise f.error(node, expected, show=True) from None
    return name
