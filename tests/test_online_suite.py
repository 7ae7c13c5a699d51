"""Online suites: a window of hand-built traffic measured per application and segment,
compared with its baseline window by a bootstrap, alerted on and exported.

Day 1 (2026-11-01) is the baseline window, day 2 the current one. The small log of
:data:`SMALL` has known values; the large one plants a CTR drop from 0.6 to 0.3 on day 2.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("duckdb")

from monitor.alerts.lifecycle import AlertLifecycle
from monitor.alerts.testing import RecordingNotifier
from monitor.cli import main
from monitor.compare.independent import Sample, compare_independent
from monitor.config import load_config, load_config_text
from monitor.config.online import MAX_APPLICATIONS
from monitor.config.traffic import OnlineSuiteConfig, TrafficConfig
from monitor.config.vocab import ONLINE_METRICS
from monitor.errors import ConfigError, UsageError
from monitor.exporters.snapshot import SuiteSnapshot
from monitor.job.online import run_online
from monitor.store import open_store
from monitor.traffic.engine import connect
from monitor.traffic.importer import import_logs
from tests.traffic_logs import T0, click, search, write_ndjson

DAY = timedelta(days=1)
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "traffic" / "online.yaml"


def row(query_id: str, app: str, device: str | None, latency: float | None, **kw: Any) -> Any:
    """Return a query row with an application, a device attribute and a latency."""
    found = search(
        query_id, kw.pop("text", "red shoes"), kw.pop("hits", ["a", "b"]), application=app, **kw
    )
    attributes: dict[str, Any] = {}
    if device is not None:
        attributes["device"] = device
    if latency is not None:
        attributes["latency_ms"] = latency
    if attributes:
        found["query_attributes"] = attributes
    return found


#: Day 2: (id, application, device, latency ms, clicked rank or None, hits).
SMALL = [
    ("q1", "web", "mobile", 10.0, 1, 2),
    ("q2", "web", "mobile", 20.0, None, 2),
    ("q3", "web", "desktop", 30.0, 2, 2),
    ("q4", "app", "desktop", 40.0, None, 0),
    ("q5", "app", None, None, 1, 2),
]


def small_logs(tmp_path: Path) -> Path:
    """Import :data:`SMALL` (each search by its own client, an hour apart) into a database."""
    queries, events = [], []
    for number, (qid, app, device, latency, rank, hits) in enumerate(SMALL):
        at = T0 + DAY + timedelta(hours=number)
        shown = ["a", "b"][:hits]
        queries.append(row(qid, app, device, latency, hits=shown, client=f"c{number}", at=at))
        if rank is not None:
            events.append(click(qid, shown[rank - 1], at=at))
    return _import(tmp_path, queries, events)


def _import(tmp_path: Path, queries: list[Any], events: list[Any]) -> Path:
    db = tmp_path / "traffic.duckdb"
    connection = connect(db)
    try:
        import_logs(
            connection,
            [write_ndjson(tmp_path / "q.ndjson", queries)],
            [write_ndjson(tmp_path / "e.ndjson", events)] if events else [],
            min_distinct_clients=1,
            keep_attribute="query_attributes.device",
        )
    finally:
        connection.close()
    return db


def planted_logs(tmp_path: Path, ctr: tuple[float, float], searches: int = 300) -> Path:
    """Import a day of searches for each CTR of ``ctr``: ``ctr[0]`` on day 1, and so on."""
    rng = random.Random(7)
    queries, events = [], []
    for day, rate in enumerate(ctr):
        for number in range(searches):
            qid = f"d{day}-{number}"
            at = T0 + day * DAY + timedelta(seconds=number * 200)
            queries.append(row(qid, "web", None, 50.0, client=f"c{number}", at=at))
            if rng.random() < rate:
                events.append(click(qid, "a", at=at))
    return _import(tmp_path, queries, events)


def traffic(db: Path, **suite: Any) -> tuple[TrafficConfig, OnlineSuiteConfig]:
    """Return a traffic section with one online suite ``shop`` (a 1-day window)."""
    fields: dict[str, Any] = {"name": "shop", "window": DAY, "metrics": ONLINE_METRICS, **suite}
    online = OnlineSuiteConfig(**fields)
    return TrafficConfig(database=db, click_action="click", online={"shop": online}), online


NOW = datetime(2026, 11, 3, tzinfo=timezone.utc)


@pytest.fixture
def store(tmp_path: Path) -> Any:
    """Return a fresh SQLite store."""
    with open_store(str(tmp_path / "monitor.db")) as opened:
        yield opened


@pytest.mark.slow
def test_the_window_figures_are_known_per_application_and_segment(
    tmp_path: Path, store: Any
) -> None:
    """The small log's CTR, zero-result rate and latency are as counted by hand, by group."""
    section, suite = traffic(
        small_logs(tmp_path),
        segment="query_attributes.device",
        metrics=("ctr", "zero_result_rate", "latency_p50"),
    )
    result = run_online(section, suite, store, now=NOW)
    got = {(g.application, g.segment): (g.searches, dict(g.values)) for g in result.groups}
    expected = {
        ("all", "all"): (5, {"ctr": 0.6, "zero_result_rate": 0.2, "latency_p50": 25.0}),
        ("app", "all"): (2, {"ctr": 0.5, "zero_result_rate": 0.5, "latency_p50": 40.0}),
        ("web", "all"): (3, {"ctr": 2 / 3, "zero_result_rate": 0.0, "latency_p50": 20.0}),
        ("all", "desktop"): (2, {"ctr": 0.5, "zero_result_rate": 0.5, "latency_p50": 35.0}),
        ("all", "mobile"): (2, {"ctr": 0.5, "zero_result_rate": 0.0, "latency_p50": 15.0}),
        ("all", "none"): (1, {"ctr": 1.0, "zero_result_rate": 0.0, "latency_p50": None}),
    }
    assert expected == pytest.approx(got)


def test_a_window_without_latency_gives_no_data_for_its_percentiles(
    tmp_path: Path, store: Any
) -> None:
    """A log without latency_ms reads as no data for latency_p95, never as 0."""
    queries = [search(f"q{n}", "x", ["a"], client=f"c{n}", at=T0 + DAY) for n in range(3)]
    section, suite = traffic(_import(tmp_path, queries, []), metrics=("ctr", "latency_p95"))
    result = run_online(section, suite, store, now=NOW)
    assert None is result.groups[0].values["latency_p95"]


@pytest.mark.slow
def test_a_planted_ctr_drop_breaches_its_rule(tmp_path: Path, store: Any) -> None:
    """CTR falling from 0.6 to 0.3 between the windows is a significant breach."""
    from monitor.config.traffic import OnlineRule, OnlineSignificance

    section, suite = traffic(
        planted_logs(tmp_path, (0.6, 0.3)),
        metrics=("ctr",),
        rules=(OnlineRule("ctr", "max_relative_drop", 0.1),),
        significance=OnlineSignificance(resamples=300),
    )
    result = run_online(section, suite, store, now=NOW)
    assert ("breach", True) == (result.outcomes[0].status, result.outcomes[0].p_value < 0.05)


@pytest.mark.slow
@pytest.mark.parametrize("over", ["searches", "sessions"])
def test_identical_windows_are_not_flagged(tmp_path: Path, store: Any, over: str) -> None:
    """The same CTR in both windows breaches no rule, over searches or sessions."""
    from monitor.config.traffic import OnlineRule, OnlineSignificance

    section, suite = traffic(
        planted_logs(tmp_path, (0.5, 0.5)),
        metrics=("ctr",),
        rules=(OnlineRule("ctr", "max_drop", 0.0),),
        significance=OnlineSignificance(over=over, resamples=300),  # type: ignore[arg-type]
    )
    assert "breach" != run_online(section, suite, store, now=NOW).outcomes[0].status


@pytest.mark.slow
def test_false_alarms_over_seeds_stay_near_alpha() -> None:
    """Two windows of one distribution are flagged at about alpha (0.05) over 200 seeds."""
    rng = np.random.default_rng(3)
    flagged = 0
    for seed in range(200):
        windows = [(rng.random(400) < 0.3).astype(float) for _ in range(2)]
        test = compare_independent(
            *(Sample(w, np.arange(len(w))) for w in windows),
            resamples=300,
            seed=seed,
            alpha=0.05,
            higher_is_better=True,
        )
        flagged += test is not None and test.p_value < 0.05
    assert 0.01 <= flagged / 200 <= 0.10


@pytest.mark.slow
def test_an_empty_window_is_no_data_with_its_alert(tmp_path: Path, store: Any) -> None:
    """A window without searches stores no_data and fires the no_data alert."""
    section, suite = traffic(small_logs(tmp_path))
    result = run_online(section, suite, store, now=NOW + 10 * DAY)
    active = [a.rule for a in AlertLifecycle(store, {}).active("shop", "monitor_failure")]
    assert (True, ["no_data"], "no_data") == (
        result.no_data,
        active,
        store.latest_online_window("shop", None).status,
    )


@pytest.mark.slow
def test_online_run_exits_5_on_an_empty_window(tmp_path: Path, capsys: Any) -> None:
    """`online run` exits 5 (no data) and says so when the window holds no search."""
    db = small_logs(tmp_path)
    config = tmp_path / "monitor.yaml"
    config.write_text(
        f"store: {{path: {tmp_path / 'm.db'}}}\n"
        f"traffic:\n  database: {db}\n  online:\n    - {{name: shop, window: 1d}}\n"
    )
    code = main(["online", "run", "--config", str(config), "--now", "2026-12-01T00:00:00Z"])
    assert (5, True) == (code, "no data" in capsys.readouterr().out)


@pytest.mark.slow
def test_an_alert_is_raised_then_resolved_across_two_runs(tmp_path: Path, store: Any) -> None:
    """A CTR breach fires on day 2 and resolves when day 3's CTR is back up."""
    from monitor.config.traffic import OnlineRule, OnlineSignificance

    db = planted_logs(tmp_path, (0.6, 0.3, 0.6))
    section, suite = traffic(
        db,
        metrics=("ctr",),
        rules=(OnlineRule("ctr", "max_relative_drop", 0.1),),
        significance=OnlineSignificance(resamples=300),
    )
    notifier = RecordingNotifier("shop/test")
    run_online(section, suite, store, now=NOW, notifiers={"shop/test": notifier})
    run_online(section, suite, store, now=NOW + DAY, notifiers={"shop/test": notifier})
    assert [("firing", "ctr max_relative_drop"), ("resolved", "ctr max_relative_drop")] == [
        pair for pair in notifier.transitions() if pair[1] != "no_data"
    ]


@pytest.mark.slow
def test_gauge_labels_stay_bounded(tmp_path: Path, store: Any) -> None:
    """Applications past the suite's list fold into `other`: three labels for 30 apps."""
    queries = [
        search(f"q{n}", "x", ["a"], client=f"c{n}", at=T0 + DAY, application=f"app{n}")
        for n in range(30)
    ]
    seen: list[SuiteSnapshot] = []
    section, suite = traffic(
        _import(tmp_path, queries, []), applications=("app1",), metrics=("ctr",)
    )
    run_online(section, suite, store, now=NOW, sinks=(seen.append,))
    assert {"all", "app1", "other"} == {key[1] for key in seen[0].online}


@pytest.mark.slow
def test_an_online_window_exports_no_query_counts(tmp_path: Path, store: Any) -> None:
    """An online suite sends no query: no queries_sent or run duration series, not a 0."""
    from monitor.exporters.gauges import render

    seen: list[SuiteSnapshot] = []
    section, suite = traffic(small_logs(tmp_path), metrics=("ctr",))
    run_online(section, suite, store, now=NOW, sinks=(seen.append,))
    names = {line.split("{", 1)[0] for line in render(seen[0]).splitlines() if line[:1] != "#"}
    counts = {
        "retrieval_queries_sent",
        "retrieval_queries_failed",
        "retrieval_run_duration_seconds",
    }
    assert (set(), True) == (names & counts, "retrieval_online_metric" in names)


def test_a_snapshot_refuses_unbounded_application_labels() -> None:
    """More application values than a label may take are refused, naming the fold."""
    online = {("ctr", f"app{n}", "all"): 0.1 for n in range(80)}
    start = datetime(2026, 11, 1, tzinfo=timezone.utc)
    with pytest.raises(UsageError, match="other"):
        SuiteSnapshot(
            suite="s",
            pipeline="s",
            success=True,
            started_at=start,
            finished_at=start,
            online=online,
        )


@pytest.mark.parametrize(
    ("suite", "line", "says"),
    [
        ("{name: shop, window: 1day}", 4, "window length"),
        ("{name: shop, window: 1d, metrics: [clicks]}", 4, "online metric"),
        (
            "{name: shop, window: 1d, rules: [{metric: abandonment, max_drop: 0.1}]}",
            4,
            "lower is better",
        ),
        ("{name: shop, window: 1d, rules: [{metric: ctr, max: 0.1}]}", 4, "higher is better"),
        ("{name: shop, window: 1d, baseline: yesterday}", 4, "last_window or pinned"),
        ("{name: shop, window: 1d, significance: {over: clients}}", 4, "searches or sessions"),
        ("{window: 1d}", 4, "'name'"),
        (
            "{name: shop, window: 1d, applications: ["
            + ", ".join(f"a{n}" for n in range(MAX_APPLICATIONS + 1))
            + "]}",
            4,
            "at most 20",
        ),
    ],
)
def test_config_errors_name_their_line(suite: str, line: int, says: str) -> None:
    """A bad online suite is a ConfigError naming its line and what was expected."""
    text = f"traffic:\n  database: t.duckdb\n  online:\n    - {suite}\n"
    with pytest.raises(ConfigError) as caught:
        load_config_text(text, "monitor.yaml")
    assert (line, True) == (caught.value.line, says in str(caught.value))


def test_the_shipped_example_loads() -> None:
    """examples/traffic/online.yaml loads, with its online suite."""
    traffic = load_config(EXAMPLE).traffic
    assert ["support"] == list(traffic.online if traffic is not None else {})


@pytest.mark.parametrize("by_rows", [False, True])
def test_the_import_keeps_latency_and_the_named_attribute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, by_rows: bool
) -> None:
    """A CSV log's latency and kept attribute are stored alike by the fast path and by rows."""
    from monitor.traffic import fast
    from tests.traffic_logs import write_csv

    if by_rows:
        monkeypatch.setattr(fast, "stage_queries", lambda connection, path, *rest: None)
    queries = [
        row("q1", "web", "mobile", 12.5, client="c1"),
        row("q2", "web", None, None, client="c2"),
    ]
    db = tmp_path / "t.duckdb"
    connection = connect(db)
    try:
        import_logs(
            connection,
            [write_csv(tmp_path / "q.csv", queries)],
            [],
            min_distinct_clients=1,
            keep_attribute="query_attributes.device",
        )
        stored = connection.execute(
            "SELECT query_id, latency_ms, attribute_name, attribute FROM queries ORDER BY query_id"
        ).fetchall()
    finally:
        connection.close()
    name = "query_attributes.device"
    assert [("q1", 12.5, name, "mobile"), ("q2", None, name, None)] == stored


def test_the_dashboard_has_an_online_row_reading_the_online_gauges() -> None:
    """The Grafana dashboard's Online row queries each online gauge of the gauge table."""
    import json

    from monitor.exporters.gauges import GAUGES

    path = EXAMPLE.parent.parent.parent / "alerts" / "grafana" / "retrieval-monitor.dashboard.json"
    panels = json.loads(path.read_text())["panels"]
    titles = [panel["title"] for panel in panels]
    exprs = " ".join(
        t["expr"] for p in panels[titles.index("Online") :] for t in p.get("targets", [])
    )
    online = {g.name for g in GAUGES if g.name.startswith("retrieval_online_")}
    assert online == {name for name in online if name in exprs}


@pytest.mark.slow
def test_the_daemon_schedules_and_runs_online_suites(tmp_path: Path) -> None:
    """The daemon's online jobs: one scheduler job per online suite, whose run stores a window."""
    import threading

    from apscheduler.schedulers.background import BackgroundScheduler

    from monitor.config.model import MonitorConfig, Secret, StoreConfig
    from monitor.daemon.online import OnlineJobs

    section, _ = traffic(small_logs(tmp_path))
    target = str(tmp_path / "m.db")
    store_config = StoreConfig(kind="sqlite", url=Secret(f"sqlite:///{target}"))
    config = MonitorConfig("test", store_config, {}, traffic=section)
    jobs = OnlineJobs(lambda: (config, target), open_store, threading.Event(), initial_run=False)
    scheduler = BackgroundScheduler()
    jobs.install(scheduler, jobs.plans(config))
    ran = jobs.run("shop")
    with open_store(target) as store:
        stored = store.latest_online_window("shop", None)
    assert (["online:shop"], True, "shop") == (
        [job.id for job in scheduler.get_jobs()],
        ran,
        stored.suite if stored else None,
    )


@pytest.mark.slow
def test_the_readme_online_walk_prints_what_the_readme_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's online-suite commands, run from a checkout's root, print its text block."""
    import re
    import shlex
    import shutil

    root = EXAMPLE.parent.parent.parent
    text = (root / "README.md").read_text(encoding="utf-8")
    section = re.split(r"\n###? ", text.split("\n### An online suite\n", 1)[1], maxsplit=1)[0]
    blocks = dict(re.findall(r"```(sh|text)\n(.*?)```", section, re.DOTALL))
    shutil.copytree(root / "examples" / "traffic", tmp_path / "examples" / "traffic")
    monkeypatch.chdir(tmp_path)
    codes = [main(shlex.split(line)[1:]) for line in blocks["sh"].splitlines() if line.strip()]
    printed = capsys.readouterr().out
    assert ([0, 0], blocks["text"]) == (codes, printed[printed.index("online suite") :])


def test_logs_import_takes_the_database_and_floor_from_the_config(tmp_path: Path) -> None:
    """`logs import --config` writes the traffic section's database with its client floor."""
    queries = [search(f"q{n}", "red", ["a"], client=f"c{n}", at=T0) for n in range(2)]
    config = tmp_path / "monitor.yaml"
    config.write_text("traffic:\n  database: t.duckdb\n  min_distinct_clients: 2\n  online: []\n")
    log = write_ndjson(tmp_path / "q.ndjson", queries)
    code = main(["logs", "import", "--config", str(config), "--queries", str(log)])
    connection = connect(tmp_path / "t.duckdb", read_only=True)
    try:
        stored = connection.execute("SELECT count(*) FROM queries").fetchone()[0]
    finally:
        connection.close()
    assert (0, 2) == (code, stored)


def test_each_online_metric_has_one_definition() -> None:
    """The config's online metric names are the SQL columns' metrics and the percentiles."""
    from monitor.traffic.online import METRICS, PERCENTILES

    assert ONLINE_METRICS == (*METRICS, *PERCENTILES)


@pytest.mark.slow
def test_a_pinned_baseline_is_the_window_pinned_not_the_window_before(
    tmp_path: Path, capsys: Any
) -> None:
    """Without a pin the run says so with a command that runs as printed; after `online pin`
    of day 1's window, day 3 is compared with day 1, not with day 2."""
    import shlex

    db = planted_logs(tmp_path, (0.6, 0.3, 0.6))
    config = tmp_path / "monitor.yaml"
    config.write_text(
        f"store: {{path: {tmp_path / 'm.db'}}}\n"
        f"traffic:\n  database: {db}\n  online:\n"
        "    - {name: shop, window: 1d, metrics: [ctr], baseline: pinned}\n"
    )
    run = ["online", "run", "--config", str(config), "--now"]
    assert 0 == main([*run, "2026-11-02T00:00:00Z"])
    unpinned = capsys.readouterr().out
    pin = unpinned.split("none pinned: `", 1)[1].split("`", 1)[0]
    assert 0 == main(shlex.split(pin)[1:])
    capsys.readouterr()
    assert 0 == main([*run, "2026-11-04T00:00:00Z"])
    pinned = capsys.readouterr().out
    assert ("pinned window 1, 2026-11-01T00:00:00Z/2026-11-02T00:00:00Z", True) == (
        pinned.split("baseline: ", 1)[1].split("\n", 1)[0],
        pin.endswith(f"--config {config}"),
    )
