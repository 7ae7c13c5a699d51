"""The errors of the traffic stage."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from monitor.errors import MonitorError, UsageError

if TYPE_CHECKING:
    from monitor.config.windows import Window


class NoTrafficError(MonitorError):
    """A window holds no search: its metrics are no data, not 0."""

    def __init__(
        self, window: Window, first: datetime | None, last: datetime | None, searches: int
    ) -> None:
        self.window = window
        self.first = first
        self.last = last
        self.searches = searches
        if not searches or first is None or last is None:
            held = "the database holds no search"
        else:
            held = (
                f"the database holds {searches} searches from {first:%Y-%m-%dT%H:%M:%S}Z "
                f"to {last:%Y-%m-%dT%H:%M:%S}Z"
            )
        super().__init__(f"no data: no search from {window} ({held})")


class JavaMissingError(UsageError):
    """``--engine spark`` found no Java to start Spark with."""

    def __init__(self, java_home: str | None) -> None:
        self.java_home = java_home
        where = (
            f"JAVA_HOME={java_home} holds no bin/java"
            if java_home
            else "no `java` on PATH and JAVA_HOME is not set"
        )
        super().__init__(f"--engine spark needs Java 17 or later: {where}")


class SparkStartError(UsageError):
    """Spark did not start (a bad master, a Java too old, a setting Spark refuses)."""

    def __init__(self, master: str, reason: str) -> None:
        self.master = master
        self.reason = reason
        first = next((line.strip() for line in reason.splitlines() if line.strip()), "no reason")
        super().__init__(f"Spark did not start with master {master!r}: {first}")


class NoInterleavedTrafficError(MonitorError):
    """No search of a team log is in the traffic database: its preference is no data."""

    def __init__(self, teams: Path, logs: Path, served: int) -> None:
        self.teams = teams
        self.logs = logs
        self.served = served
        super().__init__(
            f"no data: none of the {served} interleavings served in {teams} is a search of "
            f"{logs} (joined by query_id)"
        )
