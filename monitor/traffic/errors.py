"""The errors of the traffic stage."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from monitor.errors import MonitorError

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
