"""A suite skipped for its held store lock run after run raises a monitor-failure alert."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor.alerts.delivery import Delivery
from monitor.alerts.testing import ManualClock, RecordingReceiver, no_sleep
from monitor.cli import main
from monitor.config import load_config
from monitor.config.model import SuiteConfig
from monitor.errors import LockedTooLongError, StoreLockedError
from monitor.job import run_suite
from monitor.store import Store, open_store

SUITE = """
store: {{path: {store}}}
suites:
  nightly:
    evalset: {{bundled: larkfield}}
    search: {{kind: replay, bundled: larkfield/rerank}}
    metrics: [mrr@10]
    rules: []
    runner: {{max_lock_skips: {max_skips}}}
    schedule: {{interval: {interval}}}
    exporters: [{{kind: textfile, path: {prom}}}]
    notifiers: [{{kind: webhook, url: "{url}/hook"}}]
"""


@pytest.fixture
def receiver() -> Iterator[RecordingReceiver]:
    with RecordingReceiver() as running:
        yield running


def write(
    tmp_path: Path, receiver: RecordingReceiver, *, max_skips: int = 3, interval: str = "1h"
) -> Path:
    """Write a one-suite config; return its path."""
    config = tmp_path / "monitor.yaml"
    config.write_text(
        textwrap.dedent(SUITE).format(
            store=tmp_path / "m.db",
            prom=tmp_path / "suite.prom",
            url=receiver.url,
            max_skips=max_skips,
            interval=interval,
        )
    )
    return config


def suite_of(config: Path) -> tuple[SuiteConfig, str]:
    """Return the config's suite and its store URL."""
    loaded = load_config(config)
    return loaded.suite("nightly"), loaded.store.url.reveal()


def attempt(suite: SuiteConfig, store: Store, clock: ManualClock) -> str:
    """Run the suite once; return how it went: ``ok``, ``skipped`` or ``too_long``."""
    try:
        run_suite(suite, store, progress=False, clock=clock, delivery=Delivery(sleep=no_sleep))
    except LockedTooLongError:
        return "too_long"
    except StoreLockedError:
        return "skipped"
    return "ok"


def firing_rules(receiver: RecordingReceiver) -> list[tuple[str, list[str]]]:
    """Return each delivered payload's status and its alerts' rule labels."""
    out = []
    for request in receiver.accepted:
        payload = json.loads(request.body)
        out.append((payload["status"], [a["labels"]["rule"] for a in payload["alerts"]]))
    return out


def test_more_skips_in_a_row_than_allowed_raise_the_suite_locked_alert(
    tmp_path: Path, receiver: RecordingReceiver
) -> None:
    """With max_lock_skips 3 the fourth skip in a row fires ``suite_locked``; three are quiet."""
    suite, url = suite_of(write(tmp_path, receiver, max_skips=3))
    clock = ManualClock()
    with open_store(url) as store, open_store(url) as other, other.lock("nightly"):
        outcomes = [attempt(suite, store, clock) for _ in range(4)]
    assert ["skipped", "skipped", "skipped", "too_long"] == outcomes
    assert [("firing", ["suite_locked"])] == firing_rules(receiver)


def test_a_suite_skipped_too_long_exports_its_failed_attempt(
    tmp_path: Path, receiver: RecordingReceiver
) -> None:
    """The attempt that raises the alert writes the failure gauges (success 0)."""
    suite, url = suite_of(write(tmp_path, receiver, max_skips=0))
    with open_store(url) as store, open_store(url) as other, other.lock("nightly"):
        assert "too_long" == attempt(suite, store, ManualClock())
    text = (tmp_path / "suite.prom").read_text()
    assert 'retrieval_run_success{pipeline="nightly",suite="nightly"} 0.0' in text


def test_skips_for_longer_than_the_interval_raise_the_alert(
    tmp_path: Path, receiver: RecordingReceiver
) -> None:
    """A second skip more than one schedule interval after the first fires ``suite_locked``."""
    suite, url = suite_of(write(tmp_path, receiver, max_skips=10, interval="1m"))
    clock = ManualClock()
    with open_store(url) as store, open_store(url) as other, other.lock("nightly"):
        first = attempt(suite, store, clock)
        clock.advance(61)
        second = attempt(suite, store, clock)
    assert ("skipped", "too_long") == (first, second)


def test_a_run_that_gets_the_lock_clears_the_count_and_resolves_the_alert(
    tmp_path: Path, receiver: RecordingReceiver
) -> None:
    """After a run that got the lock, skips count from zero again and the alert resolves."""
    suite, url = suite_of(write(tmp_path, receiver, max_skips=1))
    clock = ManualClock()
    with open_store(url) as store:
        with open_store(url) as other, other.lock("nightly"):
            before = [attempt(suite, store, clock) for _ in range(2)]
        ran = attempt(suite, store, clock)
        with open_store(url) as other, other.lock("nightly"):
            after = attempt(suite, store, clock)
    assert (["skipped", "too_long"], "ok", "skipped") == (before, ran, after)
    assert [("firing", ["suite_locked"]), ("resolved", ["suite_locked"])] == firing_rules(receiver)


def test_run_reports_a_suite_skipped_too_long_and_exits_0(
    tmp_path: Path, receiver: RecordingReceiver, capsys: pytest.CaptureFixture[str]
) -> None:
    """``run`` exits 0 for the skip (the alert and gauges carry it) and says how many in a row."""
    config = write(tmp_path, receiver, max_skips=0)
    _, url = suite_of(config)
    with open_store(url) as other, other.lock("nightly"):
        code = main(["run", "--config", str(config), "--no-progress"])
    assert 0 == code
    assert "skipped 1 times in a row" in capsys.readouterr().err


@pytest.mark.parametrize("value", [-1, "three"])
def test_max_lock_skips_must_be_a_whole_number_of_0_or_more(
    tmp_path: Path, receiver: RecordingReceiver, value: object
) -> None:
    """A bad ``runner.max_lock_skips`` is a config error naming the key."""
    from monitor.errors import ConfigError

    config = write(tmp_path, receiver)
    config.write_text(config.read_text().replace("max_lock_skips: 3", f"max_lock_skips: {value}"))
    with pytest.raises(ConfigError, match="max_lock_skips"):
        load_config(config)


def test_a_run_holds_its_lock_as_a_one_minute_lease(
    tmp_path: Path, receiver: RecordingReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``run_suite`` takes a 60 s lease (renewed while it runs), not one for hours."""
    from contextlib import contextmanager

    suite, url = suite_of(write(tmp_path, receiver))
    leases: list[float] = []
    with open_store(url) as store:
        real = store.lock

        @contextmanager
        def spy(name: str, *args: float, **kwargs: float) -> Iterator[object]:
            with real(name, *args, **kwargs) as holder:
                leases.append((holder.expires_at - holder.since).total_seconds())
                yield holder

        monkeypatch.setattr(store, "lock", spy)
        assert "ok" == attempt(suite, store, ManualClock())
    assert [60.0] == leases
