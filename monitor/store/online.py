"""The ``online_windows`` and ``online_pins`` tables: each measured window of an online suite,
and the window a suite compares with when its baseline is ``pinned``.

A window row holds the window's span, whether it had data (``ok``) or none (``no_data``),
its searches and its figures (JSON: overall, per application and per segment value, as
``online run`` printed them) and the rule outcomes. The logs themselves stay in the traffic
database, so a pinned window is measured again from them when compared.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any

from monitor.errors import StoreLookupError
from monitor.store.dialect import dump_json
from monitor.store.records import utc
from monitor.store.sql import Transaction

_COLUMNS = "window_id, suite, start_at, end_at, status, searches, figures, saved_at"


@dataclass(frozen=True, slots=True)
class StoredWindow:
    """One measured window of an online suite (times in UTC)."""

    suite: str
    start: datetime
    end: datetime
    status: str  # ok or no_data
    searches: int
    figures: Mapping[str, Any] = field(default_factory=dict, hash=False)
    window_id: int | None = None
    saved_at: datetime | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", utc(self.start, "start"))
        object.__setattr__(self, "end", utc(self.end, "end"))
        object.__setattr__(self, "figures", MappingProxyType(dict(self.figures)))


def save_window(tx: Transaction, window: StoredWindow, now: datetime) -> int:
    """Store ``window``; return its id."""
    found = tx.scalar(
        "INSERT INTO online_windows (suite, start_at, end_at, status, searches, figures, "
        "saved_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING window_id",
        (
            window.suite,
            tx.dialect.timestamp(window.start),
            tx.dialect.timestamp(window.end),
            window.status,
            window.searches,
            dump_json(dict(window.figures)),
            tx.dialect.timestamp(now),
        ),
    )
    return int(found)


def _window(tx: Transaction, row: tuple[Any, ...]) -> StoredWindow:
    window_id, suite, start, end, status, searches, figures, saved = row
    return StoredWindow(
        suite=str(suite),
        start=tx.dialect.read_timestamp(start),
        end=tx.dialect.read_timestamp(end),
        status=str(status),
        searches=int(searches),
        figures=dict(tx.dialect.read_json(figures)),
        window_id=int(window_id),
        saved_at=tx.dialect.read_timestamp(saved),
    )


def get_window(tx: Transaction, window_id: int) -> StoredWindow:
    """Return the stored window ``window_id``; raise StoreLookupError when there is none."""
    row = tx.one(f"SELECT {_COLUMNS} FROM online_windows WHERE window_id = ?", (window_id,))
    if row is None:
        raise StoreLookupError(tx.location, "online window", window_id)
    return _window(tx, row)


def latest_window(tx: Transaction, suite: str, status: str | None = "ok") -> StoredWindow | None:
    """Return the suite's latest stored window (of ``status`` unless None), or None."""
    where = "suite = ?" + ("" if status is None else " AND status = ?")
    params: tuple[object, ...] = (suite,) if status is None else (suite, status)
    row = tx.one(
        f"SELECT {_COLUMNS} FROM online_windows WHERE {where} "
        "ORDER BY saved_at DESC, window_id DESC LIMIT 1",
        params,
    )
    return None if row is None else _window(tx, row)


def pin_window(tx: Transaction, suite: str, window_id: int, now: datetime) -> None:
    """Pin the stored window ``window_id`` as the suite's baseline, replacing any."""
    window = get_window(tx, window_id)
    if window.suite != suite:
        raise StoreLookupError(tx.location, f"online window of suite {suite!r} with id", window_id)
    tx.execute(
        "INSERT INTO online_pins (suite, window_id, pinned_at) VALUES (?, ?, ?)"
        " ON CONFLICT (suite) DO UPDATE SET window_id = excluded.window_id,"
        " pinned_at = excluded.pinned_at",
        (suite, window_id, tx.dialect.timestamp(now)),
    )


def pinned_window(tx: Transaction, suite: str) -> StoredWindow | None:
    """Return the window pinned for ``suite``, or None."""
    window_id = tx.scalar("SELECT window_id FROM online_pins WHERE suite = ?", (suite,))
    return None if window_id is None else get_window(tx, int(window_id))
