"""Tell a person how far a run has got: a bar on a terminal, log lines elsewhere.

A run shows a bar on stderr when stderr is an interactive terminal, from the moment the run
has taken a second; otherwise it logs ``queries_progress`` events (logger ``monitor.runner``,
see :mod:`monitor.logs`) every few seconds, between the runner's ``queries_started`` and
``queries_finished``.
"""

from __future__ import annotations

import sys
import time
from typing import Protocol, TextIO

from monitor.logs import get_logger

logger = get_logger("monitor.runner")


class Progress(Protocol):
    """Receives the number of finished and failed queries as the run goes."""

    #: Seconds between updates the reporter wants at the least (None: only on change).
    interval: float | None

    def update(self, done: int, failed: int) -> None:
        """Note that ``done`` queries have finished, ``failed`` of them failed."""

    def close(self) -> None:
        """Finish the display."""


class NoProgress:
    """Show nothing."""

    interval: float | None = None

    def update(self, done: int, failed: int) -> None:
        """Ignore the update."""

    def close(self) -> None:
        """Do nothing."""


class TerminalBar:
    """A one-line bar on an interactive terminal, shown once the run has taken ``delay`` s."""

    interval: float | None = 0.2

    def __init__(
        self,
        total: int,
        label: str | None = None,
        *,
        stream: TextIO | None = None,
        delay: float = 1.0,
    ) -> None:
        self.total = total
        self.label = label or "queries"
        self.stream = stream if stream is not None else sys.stderr
        self._started = time.perf_counter()
        self._shown_at = self._started + delay
        self._next = self._shown_at
        self._drawn = False
        self._last = (0, 0)

    def update(self, done: int, failed: int) -> None:
        """Redraw the bar, at most every ``interval`` seconds."""
        self._last = (done, failed)
        now = time.perf_counter()
        if now < self._next:
            return
        self._next = now + (self.interval or 0.0)
        self._draw(done, failed, now)

    def _draw(self, done: int, failed: int, now: float) -> None:
        width = 30
        share = done / self.total if self.total else 1.0
        filled = int(width * share)
        elapsed = now - self._started
        rate = done / elapsed if elapsed > 0 else 0.0
        line = (
            f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {done}/{self.total}"
            f" failed={failed} {rate:.1f} q/s {elapsed:.1f}s"
        )
        self.stream.write(line)
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        """Draw the final count and end the bar's line, if a bar was shown."""
        if self._drawn:
            self._draw(*self._last, time.perf_counter())
            self.stream.write("\n")
            self.stream.flush()


class LogProgress:
    """A ``queries_progress`` event every ``interval`` seconds."""

    def __init__(self, total: int, label: str | None = None, *, interval: float = 5.0) -> None:
        self.total = total
        self.label = label or "-"
        self.interval: float | None = interval
        self._started = time.perf_counter()
        self._next = self._started + interval

    def update(self, done: int, failed: int) -> None:
        """Log a progress line when ``interval`` seconds have passed since the last."""
        now = time.perf_counter()
        if now < self._next or done >= self.total:
            return
        self._next = now + (self.interval or 0.0)
        logger.info(
            "queries_progress",
            label=self.label,
            done=done,
            total=self.total,
            failed=failed,
            elapsed_seconds=round(now - self._started, 1),
        )

    def close(self) -> None:
        """Nothing to finish: the run logs its own summary."""


def choose(show: bool | None, total: int, label: str | None) -> Progress:
    """Return the reporter for ``show``: None picks a bar on a terminal, log lines elsewhere."""
    if show is False:
        return NoProgress()
    if show is True or _interactive():
        return TerminalBar(total, label)
    return LogProgress(total, label)


def _interactive() -> bool:
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except ValueError:  # a closed stream
        return False
