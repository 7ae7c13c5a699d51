"""Online metrics of a window of traffic: hand-built logs with known values, and no data.

The logs (times in seconds after T0, all on 2026-11-01):

    search  app  client  t     key           hits          clicks (rank)
    s1      web  A       0     red shoes     a b c         b (2), c (3)
    s2      web  A       60    red sneakers  d e           d (1)
    s3      web  B       30    blue hat      (none)        -
    s4      app  C       30    red shoes     a b c d e f   - (a hover only)
    s5      app  C       1000  green         x             z, not shown, ordinal 6

s1 is reformulated (A searches another key 60 s later); s4 is not (970 s > 300 s).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("duckdb")

from monitor.cli import main
from monitor.config.windows import Window
from monitor.traffic.engine import connect
from monitor.traffic.errors import NoTrafficError
from monitor.traffic.importer import import_logs
from monitor.traffic.online import OnlineMetrics, online_metrics
from tests.traffic_logs import T0, click, search, write_ndjson

DAY = Window(datetime(2026, 11, 1), datetime(2026, 11, 2))


def at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


def timed(row: dict[str, Any], latency_ms: float) -> dict[str, Any]:
    """Return the search ``row`` logging ``latency_ms``."""
    return {**row, "query_attributes": {"latency_ms": latency_ms}}


QUERIES = [
    timed(search("s1", "red shoes", "abc", client="A", at=at(0)), 10.0),
    timed(search("s2", "Red  Sneakers", "de", client="A", at=at(60)), 20.0),
    search("s3", "blue hat", [], client="B", at=at(30)),
    timed(search("s4", "red shoes", "abcdef", client="C", at=at(30), application="app"), 40.0),
    search("s5", "green", "x", client="C", at=at(1000), application="app"),
]
EVENTS = [
    click("s1", "b", 2, at=at(5)),
    click("s1", "c", 3, at=at(9)),
    click("s1", "b", 2, at=at(20)),
    click("s2", "d", at=at(70)),
    {**click("s4", "a", 1, at=at(3)), "action_name": "hover"},
    click("s5", "z", 6, at=at(1005)),
]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "traffic.duckdb"
    connection = connect(path)
    try:
        import_logs(
            connection,
            [write_ndjson(tmp_path / "q.ndjson", QUERIES)],
            [write_ndjson(tmp_path / "e.ndjson", EVENTS)],
            min_distinct_clients=1,
        )
    finally:
        connection.close()
    return path


def metrics_of(db: Path, window: Window = DAY) -> dict[str | None, OnlineMetrics]:
    connection = connect(db, read_only=True)
    try:
        return {item.application: item for item in online_metrics(connection, window)}
    finally:
        connection.close()


EXPECTED = {
    None: {
        "zero_result_rate": 1 / 5,
        "ctr": 3 / 5,
        "ctr@1": 1 / 5,
        "ctr@3": 2 / 5,
        "ctr@5": 2 / 5,
        "abandonment": 1 / 4,
        "mean_first_click_position": 3.0,
        "reformulation_rate": 1 / 5,
        # s1: ranks 2 and 3 (b twice is one rank), s2: rank 1, s5: rank 6.
        "paulscore": (0.5 + 0.25 + 1 + 0.5**5) / 5,
        # 10, 20 and 40 ms logged: the 95th percentile lies 0.9 of the way from 20 to 40.
        "latency_p50": 20.0,
        "latency_p95": 38.0,
    },
    "web": {
        "zero_result_rate": 1 / 3,
        "ctr": 2 / 3,
        "ctr@1": 1 / 3,
        "ctr@3": 2 / 3,
        "ctr@5": 2 / 3,
        "abandonment": 0.0,
        "mean_first_click_position": 1.5,
        "reformulation_rate": 1 / 3,
        "paulscore": (0.5 + 0.25 + 1) / 3,
        "latency_p50": 15.0,
        "latency_p95": 19.5,
    },
    "app": {
        "zero_result_rate": 0.0,
        "ctr": 1 / 2,
        "ctr@1": 0.0,
        "ctr@3": 0.0,
        "ctr@5": 0.0,
        "abandonment": 1 / 2,
        "mean_first_click_position": 6.0,
        "reformulation_rate": 0.0,
        "paulscore": 0.5**5 / 2,
        "latency_p50": 40.0,
        "latency_p95": 40.0,
    },
}


@pytest.mark.slow
@pytest.mark.parametrize("application", list(EXPECTED), ids=lambda a: a or "all")
def test_each_metric_has_its_hand_computed_value(db: Path, application: str | None) -> None:
    """Overall and per application, every metric equals the value worked out by hand."""
    found = metrics_of(db)[application].values
    assert EXPECTED[application] == pytest.approx(dict(found))


def test_the_search_counts_are_overall_and_per_application(db: Path) -> None:
    """Searches and searches with results are counted per application and overall."""
    found = metrics_of(db)
    assert {None: (5, 4), "web": (3, 2), "app": (2, 2)} == {
        app: (item.searches, item.with_results) for app, item in found.items()
    }


def test_a_window_without_clicks_has_no_first_click_position(db: Path) -> None:
    """Mean first-click position over no clicked search is no data, not 0."""
    only_s3_s4 = Window(at(30), at(31))
    found = metrics_of(db, only_s3_s4)
    assert (None, 1.0) == (
        found[None].values["mean_first_click_position"],
        found["app"].values["abandonment"],
    )


def test_a_window_without_searches_is_no_data(db: Path) -> None:
    """A window holding no search raises NoTrafficError naming what the database holds."""
    with pytest.raises(NoTrafficError, match=r"no data: .*holds 5 searches from 2026-11-01"):
        metrics_of(db, Window(datetime(2026, 12, 1), datetime(2026, 12, 8)))


def test_an_empty_window_on_the_command_line_exits_5_saying_no_data(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``logs metrics`` over an empty window prints "no data" and exits 5, never a 0 rate."""
    code = main(["logs", "metrics", "--db", str(db), "--window", "7d",
                 "--until", "2026-12-08T00:00:00Z"])  # fmt: skip
    captured = capsys.readouterr()
    assert (5, "") == (code, captured.out)
    assert "no data: no search from 2026-12-01T00:00:00Z to 2026-12-08T00:00:00Z" in captured.err


def test_the_command_prints_json_per_application(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--format json`` gives the window and each application's metrics, overall first."""
    assert 0 == main(["logs", "metrics", "--db", str(db), "--window", "1d",
                      "--until", "2026-11-02", "--format", "json"])  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert ([None, "app", "web"], 0.6) == (
        [item["application"] for item in report["applications"]],
        report["applications"][0]["ctr"],
    )


def test_the_text_table_writes_no_data_where_a_metric_has_none(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A metric without data reads "no data" in the text table."""
    assert 0 == main(["logs", "metrics", "--db", str(db), "--window", "1m",
                      "--until", "2026-11-01T00:00:31Z"])  # fmt: skip
    assert "no data" in capsys.readouterr().out


def test_a_bad_window_is_a_usage_error(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A window length that does not parse is exit 2 naming what is expected."""
    assert 2 == main(["logs", "metrics", "--db", str(db), "--window", "week"])
    assert "--window: expected a length such as 30m, 24h, 7d or 2w" in capsys.readouterr().err


def test_a_missing_database_names_the_command_that_makes_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Reading a database that does not exist says how to make it, exit 2."""
    assert 2 == main(["logs", "metrics", "--db", str(tmp_path / "none.duckdb")])
    assert "no traffic database there; `logs import` with `--db" in capsys.readouterr().err
