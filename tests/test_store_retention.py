"""Retention: runs keep per-query detail while recent or kept, their figures for ever; the
``store.retention`` key, ``store prune`` and the prune after each run."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from test_store import make_run

from monitor.cli import main
from monitor.config import load_config
from monitor.errors import ConfigError, UsageError
from monitor.store import QueryRecord, SqlStore, open_store
from monitor.store.retention import Retention

T0 = datetime(2024, 5, 1, 3, 0, tzinfo=timezone.utc)


class Clock:
    """A clock the test moves."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    """Return a clock set to 30 days after T0."""
    return Clock(T0 + timedelta(days=30))


@pytest.fixture
def store(store_url: str, clock: Clock) -> Iterator[SqlStore]:
    """Return an open store on an empty database, with a clock the test moves."""
    with open_store(store_url) as opened:
        assert isinstance(opened, SqlStore)
        opened._clock = clock
        yield opened


def _days(store: SqlStore, days: range, status: str = "ok") -> list[int]:
    return [store.save_run(make_run(day=day, status=status)) for day in days]


def _detailed(store: SqlStore, ids: list[int]) -> list[int]:
    return [run_id for run_id in ids if store.get_run(run_id).queries]


def test_a_number_of_runs_keeps_the_newest_ones_detail(store: SqlStore) -> None:
    """``per_query: 3`` keeps the detail of the suite's three latest runs only."""
    ids = _days(store, range(6))
    pruned = store.prune("nightly", Retention(runs=3, keep=()))
    assert (ids[:3], ids[3:]) == ([r.run_id for r in pruned.runs], _detailed(store, ids))


def test_an_age_keeps_the_detail_of_runs_started_since(store: SqlStore) -> None:
    """``per_query: 7d`` keeps the detail of runs started in the last seven days."""
    ids = _days(store, range(20, 30))  # days 20..29; the clock is at day 30
    store.prune("nightly", Retention(age=timedelta(days=7), keep=()))
    assert ids[3:] == _detailed(store, ids)


def test_the_pinned_baseline_keeps_its_detail(store: SqlStore) -> None:
    """With ``keep: [baselines]`` an old pinned baseline keeps its per-query detail."""
    ids = _days(store, range(5))
    store.set_baseline("nightly", ids[0])
    store.prune("nightly", Retention(runs=1))
    assert [ids[0], ids[4]] == _detailed(store, ids)


def test_failed_runs_are_kept_when_asked(store: SqlStore) -> None:
    """With ``keep: [failed]`` a failed run keeps its detail however old."""
    failed = _days(store, range(1), status="failed")
    ok = _days(store, range(1, 4))
    store.prune("nightly", Retention(runs=1, keep=("failed",)))
    assert [failed[0], ok[-1]] == _detailed(store, failed + ok)


def test_other_suites_are_left_alone(store: SqlStore) -> None:
    """Pruning one suite leaves another suite's runs as they were."""
    other = store.save_run(make_run("weekly"))
    _days(store, range(3))
    store.prune("nightly", Retention(runs=0, keep=()))
    assert 3 == len(store.get_run(other).queries)


def test_a_pruned_run_keeps_its_figures_and_query_count(store: SqlStore) -> None:
    """A pruned run reads back with its means, figures and count, without its queries."""
    run_id, _ = _days(store, range(2))
    before = store.get_run(run_id)
    store.prune("nightly", Retention(runs=1, keep=()))
    after = store.get_run(run_id)
    summary = next(s for s in store.list_runs() if s.run_id == run_id)
    assert (before.means, before.figures, ()) == (after.means, after.figures, after.queries)
    assert (3, store._clock()) == (summary.query_count, after.pruned_at)


def test_history_keeps_every_run_after_pruning(store: SqlStore) -> None:
    """The trend of a suite has every run's means after its detail was pruned."""
    _days(store, range(4))
    before = store.history("nightly")
    store.prune("nightly", Retention(runs=1, keep=()))
    assert before.equals(store.history("nightly"))


def test_a_dry_run_lists_the_same_runs_and_changes_nothing(store: SqlStore) -> None:
    """``dry_run`` names the runs and bytes a prune would free, and frees nothing."""
    ids = _days(store, range(4))
    policy = Retention(runs=2, keep=())
    planned = store.prune("nightly", policy, dry_run=True)
    assert ids == _detailed(store, ids)
    done = store.prune("nightly", policy)
    assert (planned.runs, planned.bytes_freed) == (done.runs, done.bytes_freed)
    assert 0 < done.bytes_freed


def test_pruning_twice_frees_nothing_the_second_time(store: SqlStore) -> None:
    """A run pruned once is not counted again."""
    _days(store, range(3))
    store.prune("nightly", Retention(runs=1, keep=()))
    assert () == store.prune("nightly", Retention(runs=1, keep=())).runs


def test_values_of_a_pruned_run_are_empty(store: SqlStore) -> None:
    """per_query_values of a pruned run has no queries."""
    run_id, _ = _days(store, range(2))
    store.prune("nightly", Retention(runs=1, keep=()))
    assert () == store.per_query_values(run_id).query_ids


def _big(day: int) -> tuple[QueryRecord, ...]:
    return tuple(
        QueryRecord(
            f"q{i}",
            {"ndcg@10": (i * 7919 % 1000) / 997},
            (f"{day}-{i}-{j}" for j in range(10)),
            latency_seconds=i / 1e4,
        )
        for i in range(3000)
    )


@pytest.mark.slow
def test_sqlite_hands_the_freed_space_back(tmp_path: Path, clock: Clock) -> None:
    """After a prune the SQLite file holds fewer pages, and the result says how many bytes."""
    path = tmp_path / "monitor.db"
    with open_store(path) as store:
        assert isinstance(store, SqlStore)
        for day in range(4):
            store.save_run(make_run(day=day, queries=_big(day)))
        with sqlite3.connect(path) as raw:
            before = raw.execute("PRAGMA page_count").fetchone()[0]
        result = store.prune("nightly", Retention(runs=1, keep=()))
        with sqlite3.connect(path) as raw:
            raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            after, size = (
                raw.execute(f"PRAGMA {p}").fetchone()[0] for p in ("page_count", "page_size")
            )
    assert 0 < result.bytes_returned
    assert result.bytes_returned == (before - after) * size


@pytest.mark.slow
def test_space_is_handed_back_in_small_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Returning space takes one short write transaction per step, so writers interleave."""
    with open_store(tmp_path / "monitor.db") as store:
        assert isinstance(store, SqlStore)
        for day in range(2):
            store.save_run(make_run(day=day, queries=_big(day)))
        with store._db.transaction(write=True) as tx:
            tx.execute("DELETE FROM run_blobs")
        writes: list[bool] = []
        original = store._db.transaction

        def counting(*, write: bool, doing: str = "") -> object:
            writes.append(write)
            return original(write=write, doing=doing)

        monkeypatch.setattr(store._db, "transaction", counting)
        store.reclaim_space(step_pages=16)
    assert 3 <= writes.count(True)


# The config key -----------------------------------------------------------------------------

SUITE = """
    evalset: {bundled: larkfield}
    search: {kind: replay, bundled: larkfield/keyword}
    baseline: {bundled_run: larkfield/rerank}
"""


def _config(tmp_path: Path, store: str, suite_extra: str = "") -> Path:
    path = tmp_path / "monitor.yaml"
    path.write_text(
        f"store: {store}\nsuites:\n  nightly:{SUITE}{suite_extra}\n  weekly:{SUITE}",
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("{per_query: 30d}", Retention(age=timedelta(days=30))),
        ("{per_query: 12h, keep: [failed]}", Retention(age=timedelta(hours=12), keep=("failed",))),
        (
            "{per_query: 100, keep: [baselines, failed]}",
            Retention(runs=100, keep=("baselines", "failed")),
        ),
        ("{per_query: 0, keep: []}", Retention(runs=0, keep=())),
    ],
)
def test_store_retention_is_read_for_every_suite(
    tmp_path: Path, written: str, expected: Retention
) -> None:
    """A store-level retention applies to every suite."""
    config = load_config(_config(tmp_path, f"{{path: m.db, retention: {written}}}"))
    assert [expected, expected] == [s.retention for s in config.suites.values()]


def test_a_suite_retention_replaces_the_stores(tmp_path: Path) -> None:
    """A suite's own ``store: {retention}`` wins over the store's, for that suite only."""
    extra = "    store: {retention: {per_query: 5}}\n"
    config = load_config(_config(tmp_path, "{path: m.db, retention: {per_query: 30d}}", extra))
    assert [Retention(runs=5), Retention(age=timedelta(days=30))] == [
        s.retention for s in config.suites.values()
    ]


def test_without_retention_detail_is_kept_for_ever(tmp_path: Path) -> None:
    """No retention key: no suite prunes."""
    config = load_config(_config(tmp_path, "{path: m.db}"))
    assert [None, None] == [s.retention for s in config.suites.values()]


def test_a_store_with_only_a_retention_is_the_default_file(tmp_path: Path) -> None:
    """``store: {retention: ...}`` alone keeps the default SQLite file."""
    config = load_config(
        _config(tmp_path, "{retention: {per_query: 3}}"), env={"XDG_DATA_HOME": str(tmp_path)}
    )
    assert (tmp_path / "retrieval-monitor" / "monitor.db", Retention(runs=3)) == (
        config.store.path,
        config.store.retention,
    )


@pytest.mark.parametrize(
    ("store", "key", "expected"),
    [
        (
            "{path: m.db, retention: {per_query: 30x}}",
            "store.retention.per_query",
            "an age such as 30d",
        ),
        ("{path: m.db, retention: {per_query: -1}}", "store.retention.per_query", "at least 0"),
        (
            "{path: m.db, retention: {per_query: '30'}}",
            "store.retention.per_query",
            "a number of runs",
        ),
        (
            "{path: m.db, retention: {per_query: 30d, keep: [latest]}}",
            "store.retention.keep[0]",
            "one of baselines, failed",
        ),
        ("{path: m.db, retention: {keep: [failed]}}", "store.retention", "the key 'per_query'"),
        ("{path: m.db, retention: {per_query: 3, kep: []}}", "store.retention.kep", "keep"),
    ],
)
def test_a_bad_retention_names_the_file_line_and_key(
    tmp_path: Path, store: str, key: str, expected: str
) -> None:
    """A malformed retention is a config error naming file, line 1, the key path and what fits."""
    with pytest.raises(ConfigError) as caught:
        load_config(_config(tmp_path, store))
    message = str(caught.value)
    assert (True, True, True) == (
        "monitor.yaml:1" in message,
        key in message,
        expected in message,
    ), message


def test_a_suite_store_takes_no_url(tmp_path: Path) -> None:
    """A suite's ``store`` holds only a retention: a url there names the key."""
    with pytest.raises(ConfigError, match=r"suites\.nightly\.store\.url"):
        load_config(_config(tmp_path, "{path: m.db}", "    store: {url: 'sqlite:///x.db'}\n"))


def test_a_retention_needs_one_of_runs_or_age() -> None:
    """A Retention built with neither or both bounds is refused."""
    with pytest.raises(UsageError, match="exactly one"):
        Retention()


# The command line and the job ---------------------------------------------------------------


def _run_twice(tmp_path: Path, retention: str) -> tuple[Path, Path]:
    db = tmp_path / "m.db"
    config = _config(tmp_path, f"{{path: m.db, retention: {retention}}}")
    for _ in range(3):
        assert 0 == main(["run", "--config", str(config), "--suite", "nightly", "--no-progress"])
    return config, db


@pytest.mark.slow
def test_each_run_prunes_what_its_suite_no_longer_keeps(tmp_path: Path) -> None:
    """After each run the suite's retention is applied: with ``per_query: 1`` only the latest
    run and the pinned baseline keep their detail."""
    _config_path, db = _run_twice(tmp_path, "{per_query: 1}")
    with open_store(db) as store:
        runs = store.list_runs("nightly")
        baseline = store.get_baseline("nightly")
        detailed = [r.run_id for r in runs if store.get_run(r.run_id).queries]
    assert baseline is not None
    assert sorted([runs[0].run_id, baseline.run_id]) == sorted(detailed)
    assert 4 == len(runs)  # the seeded baseline and three runs, all listed


@pytest.mark.slow
def test_store_prune_dry_run_prints_what_it_would_free(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``store prune --dry-run`` names the runs and the bytes, and prunes nothing."""
    config, db = _run_twice(tmp_path, "{per_query: 10}")
    config.write_text(config.read_text().replace("per_query: 10", "per_query: 1"))
    capsys.readouterr()
    assert 0 == main(["store", "prune", "--config", str(config), "--dry-run"])
    out = capsys.readouterr().out
    assert "suite nightly: per-query detail for the last 1 run, keeping baselines\n" in out
    assert "  would prune 2 runs (runs 2-3): " in out
    assert "suite weekly: per-query detail for the last 1 run, keeping baselines\n" in out
    assert "  nothing to prune\n" in out
    with open_store(db) as store:
        assert 4 == sum(1 for r in store.list_runs("nightly") if r.pruned_at is None)


@pytest.mark.slow
def test_store_prune_json_lists_runs_and_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``store prune --format json`` prints the runs pruned and the bytes freed per suite."""
    config, _db = _run_twice(tmp_path, "{per_query: 10}")
    config.write_text(config.read_text().replace("per_query: 10", "per_query: 1"))
    capsys.readouterr()
    assert 0 == main(
        ["store", "prune", "--config", str(config), "--suite", "nightly", "--format", "json"]
    )
    doc = json.loads(capsys.readouterr().out)
    (suite,) = doc["suites"]
    assert ("nightly", {"per_query": 1, "keep": ["baselines"]}, [2, 3]) == (
        suite["suite"],
        suite["retention"],
        [run["run_id"] for run in suite["runs"]],
    )
    assert doc["bytes_freed"] == sum(run["bytes"] for run in suite["runs"]) > 0


@pytest.mark.slow
def test_a_report_of_a_pruned_run_still_gives_its_means(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``report --run`` of a run whose detail was pruned prints its figures, not an error."""
    config, _db = _run_twice(tmp_path, "{per_query: 1}")
    capsys.readouterr()
    assert 0 == main(
        ["report", "--config", str(config), "--suite", "nightly", "--run", "2", "--format", "json"]
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc


@pytest.mark.slow
@pytest.mark.service
def test_prune_on_postgresql_prints_no_file_system_figure(
    tmp_path: Path, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    """On PostgreSQL, whose autovacuum reuses the space, ``store prune`` prints what it freed
    and no bytes returned to the file system, which it never measures."""
    config = _config(tmp_path, "{path: m.db, retention: {per_query: 10}}")
    store = ["--store", request.getfixturevalue("postgres_schema_url"), "--suite", "nightly"]
    for _ in range(3):
        assert 0 == main(["run", "--config", str(config), *store, "--no-progress"])
    config.write_text(config.read_text().replace("per_query: 10", "per_query: 1"))
    capsys.readouterr()
    assert 0 == main(["store", "prune", "--config", str(config), *store])
    out = capsys.readouterr().out
    assert ("  pruned 2 runs", False) == (
        out.splitlines()[1].split(" (")[0],
        "returned to the file system" in out,
    ), out
