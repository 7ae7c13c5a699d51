"""The errors the monitor raises on purpose.

Every class derives from :class:`MonitorError` and builds its own message from its fields, so
callers raise ``InputError(path, line, "an integer grade", found="high")`` and never format
strings by hand. The command line maps each class to an exit code in one table
(:data:`monitor.cli.EXIT_CODES`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


class MonitorError(Exception):
    """Root of every error the monitor raises on purpose."""


class UsageError(MonitorError):
    """A value given by the caller (argument, option, API parameter) is not acceptable."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class MetricError(UsageError):
    """A metric name does not parse, names an unknown measure, or has a bad cutoff."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"metric {name!r}: {reason}")
        self.name = name
        self.reason = reason


class UnknownMetricError(MetricError):
    """A metric name names no known measure."""

    def __init__(self, name: str, known: Iterable[str]) -> None:
        self.known = tuple(sorted(known))
        super().__init__(name, f"unknown measure; known measures: {', '.join(self.known)}")


class InputError(MonitorError):
    """A file or in-memory input is malformed.

    ``source`` names the file (or ``"<run>"`` style labels for in-memory data), ``line`` the
    1-based line when known, ``expected`` what should have been there and ``found`` what was.
    """

    def __init__(
        self,
        source: str | Path,
        expected: str,
        *,
        line: int | None = None,
        found: object = None,
    ) -> None:
        self.source = str(source)
        self.line = line
        self.expected = expected
        self.found = found
        where = self.source if line is None else f"{self.source}:{line}"
        message = f"{where}: expected {expected}"
        if found is not None:
            message += f", found {_short(found)}"
        super().__init__(message)


class ConfigError(MonitorError):
    """A configuration file or value is invalid.

    ``key`` is the dotted key path (``suites.nightly.metrics[2]``), ``line`` the 1-based line in
    ``source`` when known.
    """

    def __init__(
        self,
        source: str | Path,
        key: str,
        expected: str,
        *,
        line: int | None = None,
        found: object = None,
    ) -> None:
        self.source = str(source)
        self.key = key
        self.line = line
        self.expected = expected
        self.found = found
        where = self.source if line is None else f"{self.source}:{line}"
        message = f"{where}: {key}: expected {expected}"
        if found is not None:
            message += f", found {_short(found)}"
        super().__init__(message)


def _short(value: object, limit: int = 80) -> str:
    """Return ``repr(value)`` cut to ``limit`` characters, for error messages."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
