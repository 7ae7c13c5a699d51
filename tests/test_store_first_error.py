"""A run that fails inside its lock reports its own error, not a later failure to unlock."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.errors import StoreError
from monitor.store import open_store


def _unlock_fails(*args: object, **kwargs: object) -> None:
    raise StoreError("m.db", "database is locked (unlocking)")


def test_the_runs_own_error_wins_over_a_failed_unlock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When saving failed and unlocking fails too, the save's error is the one raised."""
    with open_store(tmp_path / "m.db") as store:
        monkeypatch.setattr("monitor.store.locks.release", _unlock_fails)
        with pytest.raises(StoreError, match="the save failed"), store.lock("nightly"):
            raise StoreError("m.db", "the save failed")


def test_a_failed_unlock_after_a_good_run_is_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the run went well, a failure to unlock is not hidden."""
    with open_store(tmp_path / "m.db") as store:
        monkeypatch.setattr("monitor.store.locks.release", _unlock_fails)
        with pytest.raises(StoreError, match="unlocking"), store.lock("nightly"):
            pass
