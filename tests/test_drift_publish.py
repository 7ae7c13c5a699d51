"""A suite's drift check: stored in the store, raised and resolved as a `query_drift` alert."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from monitor.alerts.lifecycle import AlertLifecycle
from monitor.cli import main
from monitor.config import load_config
from monitor.exporters import SuiteSnapshot
from monitor.exporters.gauges import render
from monitor.job.publish import latest_drift
from monitor.store import open_store
from tests.drift_fakes import HashedWords, write_logs

WEEK_1 = "2026-11-01..2026-11-08"
WEEK_2 = "2026-11-08..2026-11-15"
EMPTY = "2026-11-20..2026-11-21"


def _config(tmp_path: Path, db: Path, current: str) -> Path:
    path = tmp_path / f"monitor-{len(list(tmp_path.glob('*.yaml')))}.yaml"
    path.write_text(
        f"store: {{path: {tmp_path / 'monitor.db'}}}\n"
        "suites:\n  nightly:\n"
        "    evalset: {bundled: larkfield}\n"
        "    search: {kind: replay, bundled: larkfield/keyword}\n"
        f"    drift: {{logs: {db}, reference: '{WEEK_1}', current: '{current}',"
        " permutations: 50, name: weekly, severity: critical}\n",
        encoding="utf-8",
    )
    return path


def _check(tmp_path: Path, db: Path, current: str) -> int:
    return main(
        ["drift", "check", "--suite", "nightly", "--config", str(_config(tmp_path, db, current))]
    )


def _firing(tmp_path: Path) -> list[str]:
    with open_store(tmp_path / "monitor.db") as store:
        return [a.rule for a in AlertLifecycle(store, {}).active("nightly", "query_drift")]


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A traffic database: a week of one vocabulary's queries, then a week of another's."""
    pytest.importorskip("duckdb")
    return write_logs(tmp_path_factory.mktemp("drift"))


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> HashedWords:
    """The fake embedder, as `drift check --suite` opens it."""
    from monitor.drift import queries

    embedder = HashedWords()
    monkeypatch.setattr(queries, "open_embedder", lambda kind: embedder)
    return embedder


@pytest.mark.slow
def test_a_drift_fires_the_checks_alert(tmp_path: Path, logs: Path, fake: HashedWords) -> None:
    """A drift exits 4 and leaves the check's alert firing."""
    assert (4, ["weekly"]) == (_check(tmp_path, logs, WEEK_2), _firing(tmp_path))


def test_an_ok_check_resolves_it(tmp_path: Path, logs: Path, fake: HashedWords) -> None:
    """A later ok check resolves the alert."""
    _check(tmp_path, logs, WEEK_2)
    assert (0, []) == (_check(tmp_path, logs, WEEK_1), _firing(tmp_path))


def test_no_data_leaves_the_alert_as_it_was(tmp_path: Path, logs: Path, fake: HashedWords) -> None:
    """A window too small to tell neither fires nor resolves the alert."""
    _check(tmp_path, logs, WEEK_2)
    assert (5, ["weekly"]) == (_check(tmp_path, logs, EMPTY), _firing(tmp_path))


def test_each_check_is_stored_with_its_figures(
    tmp_path: Path, logs: Path, fake: HashedWords
) -> None:
    """The store keeps each check, newest first, its statistics empty when no data."""
    _check(tmp_path, logs, WEEK_2)
    _check(tmp_path, logs, EMPTY)
    with open_store(tmp_path / "monitor.db") as store:
        found = store.drift_checks("nightly")
    assert [("no data", False), ("drift", True)] == [
        (r.status, "auc" in r.statistics) for r in found
    ]


def test_a_suite_without_drift_exits_2(
    tmp_path: Path, fake: HashedWords, capsys: pytest.CaptureFixture[str]
) -> None:
    """A suite with no drift: section is a usage error naming it."""
    path = tmp_path / "monitor.yaml"
    path.write_text(
        "suites:\n  nightly:\n    evalset: {bundled: larkfield}\n"
        "    search: {kind: replay, bundled: larkfield/keyword}\n",
        encoding="utf-8",
    )
    argv = [
        "drift",
        "check",
        "--suite",
        "nightly",
        "--config",
        str(path),
        "--store",
        str(tmp_path / "s.db"),
    ]
    assert 2 == main(argv)
    assert "has no drift: section" in capsys.readouterr().err


def _snapshot(drift: dict[str, dict[str, float]]) -> SuiteSnapshot:
    moment = datetime(2026, 11, 30, tzinfo=timezone.utc)
    return SuiteSnapshot(
        suite="nightly",
        pipeline="nightly",
        success=True,
        started_at=moment,
        finished_at=moment,
        drift=drift,
    )


def test_the_gauge_holds_each_statistic_of_the_check() -> None:
    """retrieval_query_drift has a series per statistic, labelled by check and statistic."""
    text = render(_snapshot({"weekly": {"auc": 0.75, "mmd2": 0.01}}))
    series = (
        'retrieval_query_drift{check="weekly",pipeline="nightly",statistic="auc",suite="nightly"}'
    )
    assert f"{series} 0.75" in text.splitlines()


def test_a_runs_gauges_take_the_latest_check_that_measured(
    tmp_path: Path, logs: Path, fake: HashedWords
) -> None:
    """The run's snapshot takes the figures of the latest check with statistics."""
    config = load_config(_config(tmp_path, logs, WEEK_2))
    suite = config.suite("nightly")
    _check(tmp_path, logs, WEEK_2)
    _check(tmp_path, logs, EMPTY)
    with open_store(tmp_path / "monitor.db") as store:
        stored = store.drift_checks("nightly")[1]
        assert {"weekly": dict(stored.statistics)} == latest_drift(store, suite)
