"""Time windows, as the config, the traffic commands and the drift checks name them.

A window is ``[start, end)`` in UTC without a zone, as the traffic database keeps times. A
length (``30m``, ``24h``, ``7d``, ``2w``) ends at a moment (``until``, default now); a span
is ``START..END`` (ISO 8601 times or dates, UTC when no zone is given) or a length. For a
drift check the current window ends at ``until`` and the reference window where the current
one starts, so that ``reference 28d, current 7d`` compares the last week with the four weeks
before it. The grammar lives with the config, which checks the windows it reads; no numpy.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from monitor.config import vocab
from monitor.errors import UsageError


@dataclass(frozen=True, slots=True)
class Window:
    """The span ``[start, end)`` of a traffic command, in UTC without a zone."""

    start: datetime
    end: datetime

    def __str__(self) -> str:
        return f"{_moment(self.start)} to {_moment(self.end)}"

    @property
    def label(self) -> str:
        """Return the window as ``start/end`` (ISO 8601), or ``all`` for every search."""
        if self == EVERYTHING:
            return "all"
        if self.start == EVERYTHING.start:
            return f"until {_moment(self.end)}"
        return f"{_moment(self.start)}/{_moment(self.end)}"


def _moment(moment: datetime) -> str:
    return f"{moment.isoformat(timespec='seconds')}Z"


def parse_length(text: str) -> timedelta:
    """Return the window length ``text`` (``30m``, ``24h``, ``7d``, ``2w``) as a timedelta."""
    match = vocab.WINDOW_LENGTH.fullmatch(text.strip())
    if match is None:
        raise UsageError(f"--window: expected a length such as 30m, 24h, 7d or 2w, found {text!r}")
    return timedelta(**{vocab.WINDOW_UNITS[match[2]]: int(match[1])})


def parse_moment(text: str, option: str = "--until") -> datetime:
    """Return the ISO 8601 time ``text`` as UTC without a zone (no zone means UTC)."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"{option}: expected an ISO 8601 time such as 2026-11-30T00:00:00Z, found {text!r}"
        ) from None
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc).replace(tzinfo=None)
    return moment


def window(length: str, until: str | None = None, *, now: datetime | None = None) -> Window:
    """Return the window of ``length`` ending at ``until`` (default: ``now``, the clock's)."""
    if until is not None:
        end = parse_moment(until)
    else:
        end = (now or datetime.now(timezone.utc)).astimezone(timezone.utc).replace(tzinfo=None)
    return Window(end - parse_length(length), end)


#: The window of every stored search.
EVERYTHING = Window(datetime(1, 1, 1), datetime(9999, 12, 31))


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
