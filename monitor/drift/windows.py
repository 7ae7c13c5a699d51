"""The two windows of a drift check, as ``--reference``/``--current`` or the config give them.

A window is ``START..END`` (ISO 8601 times or dates, UTC when no zone is given, ``START <=
t < END``) or a length (``30m``, ``24h``, ``7d``, ``2w``): the current window's ends at
``until`` (default now), the reference window's where the current one starts, so that
``reference 28d, current 7d`` compares the last week with the four weeks before it. No
numpy here: the config checks its windows with these functions.
"""

from __future__ import annotations

from datetime import datetime

from monitor.errors import UsageError
from monitor.traffic.window import Window, parse_length, parse_moment


def parse_span(text: str, option: str, *, until: datetime) -> Window:
    """Return the window ``text`` names: ``START..END``, or a length ending at ``until``."""
    if ".." in text:
        start, _, end = text.partition("..")
        span = Window(parse_moment(start, option), parse_moment(end, option))
        if span.start >= span.end:
            raise UsageError(f"{option}: expected START..END with START before END, found {text!r}")
        return span
    try:
        length = parse_length(text)
    except UsageError:
        raise UsageError(
            f"{option}: expected START..END (ISO 8601) or a length such as 24h, 7d or 2w, "
            f"found {text!r}"
        ) from None
    return Window(until - length, until)


def windows(
    reference: str,
    current: str,
    *,
    until: datetime,
    names: tuple[str, str] = ("--reference", "--current"),
) -> tuple[Window, Window]:
    """Return the reference and current windows: a reference length ends at the current start.

    ``names`` are how errors name the two (options, or config keys).
    """
    now = parse_span(current, names[1], until=until)
    return parse_span(reference, names[0], until=now.start), now
