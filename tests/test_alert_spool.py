"""The store-unwritable alert, sent outside the lifecycle, resolves once the store works."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest

from monitor.alerts.delivery import Delivery
from monitor.alerts.testing import MemoryStore, RecordingNotifier, no_sleep
from monitor.compare.records import Comparison
from monitor.config import load_config_text
from monitor.errors import StoreError
from monitor.job.publish import alert

T0 = datetime(2030, 1, 1, 9, 0, tzinfo=timezone.utc)
CONFIG = """
store: {path: m.db}
suites:
  nightly:
    evalset: {bundled: larkfield}
    search: {kind: replay, bundled: larkfield/keyword}
"""


def test_a_store_unwritable_alert_resolves_when_the_store_works_again() -> None:
    """The failure alert is sent at once; the next completed run resolves it."""
    suite = load_config_text(CONFIG).suite("nightly")
    hook = RecordingNotifier("nightly/hook")
    store = MemoryStore()
    down = StoreError("m.db", "disk I/O error")
    assert ("store_unwritable",) == alert(
        suite, store, None, down, at=T0, notifiers={hook.name: hook}
    ).firing
    recovered = SimpleNamespace(comparison=Comparison("nightly", 2, None, "no_baseline"))
    published = alert(suite, store, recovered, None, at=T0, notifiers={hook.name: hook})  # type: ignore[arg-type]
    assert ("store_unwritable",) == published.resolved
    assert [("firing", "store_unwritable"), ("resolved", "store_unwritable")] == (
        hook.transitions()
    )
    assert [] == os.listdir(Path(os.environ["MONITOR_SPOOL_DIR"]))


def test_a_store_outage_while_the_receiver_is_down_is_told_when_both_are_back() -> None:
    """The receiver down when the store failed misses the firing then; the next completed run
    tells it the firing, then the resolve, and a receiver that was told gets only the resolve."""
    suite = load_config_text(CONFIG).suite("nightly")
    missed, told = RecordingNotifier("nightly/missed"), RecordingNotifier("nightly/told")
    missed.down = True
    hooks = {missed.name: missed, told.name: told}
    store = MemoryStore()
    down = StoreError("m.db", "disk I/O error")
    alert(suite, store, None, down, at=T0, notifiers=hooks, delivery=Delivery(sleep=no_sleep))
    missed.down = False
    recovered = SimpleNamespace(comparison=Comparison("nightly", 2, None, "no_baseline"))
    alert(suite, store, recovered, None, at=T0, notifiers=hooks)  # type: ignore[arg-type]
    both = [("firing", "store_unwritable"), ("resolved", "store_unwritable")]
    assert (both, both) == (missed.transitions(), told.transitions())


def test_a_spool_that_cannot_be_written_does_not_stop_the_alert(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the spool folder unusable the failure alert is still sent."""
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setenv("MONITOR_SPOOL_DIR", str(blocked / "spool"))
    suite = load_config_text(CONFIG).suite("nightly")
    hook = RecordingNotifier("nightly/hook")
    down = StoreError("m.db", "disk I/O error")
    alert(suite, MemoryStore(), None, down, at=T0, notifiers={hook.name: hook})
    assert [("firing", "store_unwritable")] == hook.transitions()
