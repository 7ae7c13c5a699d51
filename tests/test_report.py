"""`retrieval-monitor report`: each format, the run it picks, and its errors and exit codes.

The store is filled by running the embedded default suite (the bundled Larkfield set replayed
through its keyword run, against the seeded rerank baseline) through the job, as `run` does.
"""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from monitor.cli import main
from monitor.config import default_config, load_config
from monitor.errors import InputError
from monitor.evalset import EvalSet
from monitor.job import run_suite
from monitor.report import compose_report
from monitor.report.tables import CSV_COLUMNS
from monitor.store import QueryRecord, RunRecord, open_store

SUITE = "larkfield"
T0 = datetime(2024, 5, 1, tzinfo=timezone.utc)


def _fill(path: Path, runs: int) -> Path:
    suite = default_config().suite(SUITE)
    with open_store(path) as store:
        for _ in range(runs):
            run_suite(suite, store, progress=False)
    return path


def _fill_with(config: Path, path: Path, runs: int) -> Path:
    suite = load_config(config).suite(SUITE)
    with open_store(path) as store:
        for _ in range(runs):
            run_suite(suite, store, progress=False)
    return path


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding the seeded rerank baseline 1 and keyword runs 2 and 3."""
    return _fill(tmp_path_factory.mktemp("store") / "m.db", runs=2)


@pytest.fixture(autouse=True)
def _no_local_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The command reads ./config/monitor.yaml when present: run where there is none.
    monkeypatch.chdir(tmp_path)


def _report(store: Path, capsys: pytest.CaptureFixture[str], *options: str) -> tuple[int, str, str]:
    capsys.readouterr()  # drop what filling the store printed (the stdout notifier's alerts)
    code = main(["report", "--suite", SUITE, "--store", str(store), *options])
    out, err = capsys.readouterr()
    return code, out, err


def _json(text: str) -> dict[str, Any]:
    def refuse(name: str) -> None:
        raise ValueError(f"not JSON: {name}")

    data: dict[str, Any] = json.loads(text, parse_constant=refuse)
    return data


@pytest.mark.slow
def test_table_is_the_text_comparison(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The table format prints the text comparison of run 3 with baseline run 1."""
    code, out, _ = _report(store_path, capsys)
    assert 0 == code
    assert "suite larkfield: run 3 vs baseline run 1" == out.splitlines()[0]
    assert "verdict: REGRESSION" in out


def test_json_is_one_object_with_the_regression(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The JSON object holds the verdict, the runs, rules, metrics, diffs and segments."""
    code, out, _ = _report(store_path, capsys, "--format", "json")
    data = _json(out)
    assert 0 == code
    assert "regression" == data["verdict"]
    assert (3, 1) == (data["run_id"], data["baseline_run_id"])
    assert {"run", "baseline", "rules", "metrics", "worse_queries", "segments", "warnings"} <= set(
        data
    )
    assert "larkfield/rerank" == data["baseline"]["pipeline"]


def test_json_rules_carry_p_values_and_intervals(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The breached mrr@10 rule has a p-value and an interval of the delta below zero."""
    _, out, _ = _report(store_path, capsys, "--format", "json")
    rules = {rule["rule"]: rule for rule in _json(out)["rules"]}
    rule = rules["mrr@10 max_drop"]
    assert "breach" == rule["status"]
    assert rule["p_value"] < 0.05
    assert rule["ci_low"] < rule["ci_high"] < 0


def test_json_worse_queries_show_expected_and_retrieved_ids(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each worse query names its text, expected ids and both rankings."""
    _, out, _ = _report(store_path, capsys, "--format", "json")
    first = _json(out)["worse_queries"][0]
    assert {"Q34", "lost_hit"} == {first["query_id"], first["change"]}
    assert "How long is the warranty on a garden sprinkler?" == first["query"]
    assert first["expected_ids"][0] == first["baseline_ids"][0]


def test_csv_has_a_row_per_metric_with_rule_status(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CSV has the documented header, a row per metric and per rule figure, and rule statuses."""
    _, out, _ = _report(store_path, capsys, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    by_metric = {row["metric"]: row for row in rows}
    assert list(CSV_COLUMNS) == list(rows[0])
    assert 24 + 1 + 3 == len(rows)  # the default metrics, judged@10, latency p95, two rates
    assert "breach" == by_metric["mrr@10"]["status"]
    assert "insufficient_evidence" == by_metric["recall@5"]["status"]
    assert "" == by_metric["map@10"]["status"]
    assert "ok" == by_metric["latency_p95_seconds"]["status"]


def test_csv_deltas_are_current_minus_baseline(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A metric row's delta is its current mean minus its baseline mean, inside its interval."""
    _, out, _ = _report(store_path, capsys, "--format", "csv")
    row = next(row for row in csv.DictReader(io.StringIO(out)) if row["metric"] == "ndcg@10")
    baseline, current, delta = (float(row[name]) for name in ("baseline", "current", "delta"))
    assert pytest.approx(current - baseline) == delta
    assert float(row["ci_low"]) < delta < float(row["ci_high"])


def test_html_has_the_trend_charts(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The page charts the three rule metrics, coverage, the overlap with the baseline and
    latency p95 as inline SVG."""
    _, out, _ = _report(store_path, capsys, "--format", "html")
    assert 7 == out.count('<svg class="chart"')
    charted = ("recall@5", "mrr@10", "ndcg@10", "judged@10", "rbo@10", "jaccard@10", "latency p95")
    for label in charted:
        assert f"<title>{label} across runs</title>" in out


def test_html_shows_the_verdict_rules_queries_and_segments(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The page holds the verdict, the rule outcomes, the worse queries and both segment keys."""
    _, out, _ = _report(store_path, capsys, "--format", "html")
    assert '<section class="verdict v-regression"' in out
    assert "mrr@10 max_drop" in out
    for query_id in ("Q34", "Q37", "Q63"):
        assert f'<div class="qid id">{query_id}</div>' in out
    assert "by <code>kind</code>" in out
    assert "by <code>language</code>" in out


def test_html_fetches_nothing(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The page has no script and references no http(s) resource."""
    _, out, _ = _report(store_path, capsys, "--format", "html")
    assert [] == re.findall(r"https?://", out)
    assert "<script" not in out
    assert "<link" not in out


def test_output_writes_the_file_and_prints_nothing(
    store_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With --output the report goes to the file and stdout stays empty."""
    target = tmp_path / "out" / "report.html"
    code, out, _ = _report(store_path, capsys, "--format", "html", "--output", str(target))
    assert (0, "") == (code, out)
    assert target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_run_picks_an_older_run(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--run 2 reports the first keyword run against the same baseline."""
    _, out, _ = _report(store_path, capsys, "--format", "json", "--run", "2")
    data = _json(out)
    assert (2, 1, "regression") == (data["run_id"], data["baseline_run_id"], data["verdict"])


def test_after_one_run_the_report_is_of_that_run_not_the_seeded_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The seeded baseline is stored before the first run, and the report shows that run."""
    store = _fill(tmp_path / "one.db", runs=1)
    _, out, _ = _report(store, capsys, "--format", "json")
    assert (2, 1) == (_json(out)["run_id"], _json(out)["baseline_run_id"])


def test_an_eval_set_that_cannot_be_loaded_leaves_a_warning(
    store_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the eval set the report still compares, without texts or segments, and says so."""

    def missing(config: object) -> EvalSet:
        raise InputError("gone.jsonl", "an existing file")

    monkeypatch.setattr("monitor.evalset.suite.load_evalset", missing)
    _, out, _ = _report(store_path, capsys, "--format", "json")
    data = _json(out)
    assert "regression" == data["verdict"]
    assert [] == data["segments"]
    assert "" == data["worse_queries"][0]["query"]
    assert any("eval set could not be loaded" in w for w in data["warnings"])


def test_no_run_yet_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An empty store exits 2 and says how to make a first run."""
    with open_store(tmp_path / "empty.db"):
        pass
    code, out, err = _report(tmp_path / "empty.db", capsys)
    assert (2, "") == (code, out)
    assert (
        "retrieval-monitor: error: no run of suite larkfield yet; "
        "run `retrieval-monitor run --suite larkfield` first\n"
    ) == err


@pytest.mark.slow
def test_a_missing_store_file_is_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A store path that does not exist reads as no run yet, and no database is created."""
    code, _, err = _report(tmp_path / "nowhere.db", capsys)
    assert 2 == code
    assert "no run of suite larkfield yet" in err
    assert not (tmp_path / "nowhere.db").exists()


def test_only_failed_runs_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A suite whose only run failed exits 2 and names the failure."""
    with open_store(tmp_path / "failed.db") as store:
        store.save_run(RunRecord(SUITE, "p", T0, T0, status="failed", error="backend down"))
    code, _, err = _report(tmp_path / "failed.db", capsys)
    assert 2 == code
    assert "no successful run of suite 'larkfield' yet: run 1 failed (backend down)" in err


def test_unknown_suite_is_the_config_usage_error(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unknown suite exits 2 and lists the config's suites."""
    code = main(["report", "--suite", "nope", "--store", str(store_path)])
    assert 2 == code
    assert "no suite 'nope' in <default config>; suites: larkfield" in capsys.readouterr().err


def test_an_unknown_run_is_a_usage_error(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--run with an id the store does not hold exits 2 and names the id."""
    code, _, err = _report(store_path, capsys, "--run", "99")
    assert 2 == code
    assert "no run 99 in the store" in err


def test_another_suites_run_is_a_usage_error(
    store_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--run naming a run of another suite exits 2 and names both suites."""
    config = tmp_path / "two.yaml"
    config.write_text(
        "suites:\n"
        "  larkfield: {evalset: {bundled: larkfield}, search: {kind: replay, bundled: "
        "larkfield/keyword}}\n"
        "  other: {evalset: {bundled: larkfield}, search: {kind: replay, bundled: "
        "larkfield/keyword}}\n",
        encoding="utf-8",
    )
    store = str(store_path)
    code = main(
        ["report", "--config", str(config), "--store", store, "--suite", "other", "--run", "3"]
    )
    assert 2 == code
    assert "run 3 belongs to suite 'larkfield', not 'other'" in capsys.readouterr().err


def test_the_baseline_run_is_compared_with_itself_with_a_warning(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--run naming the baseline reports it, verdict ok, and says it is the baseline."""
    _, out, _ = _report(store_path, capsys, "--format", "json", "--run", "1")
    data = _json(out)
    assert "ok" == data["verdict"]
    assert "run 1 is the suite's baseline: it is compared with itself" in data["warnings"]


def test_query_texts_from_the_eval_set_are_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A query text and ids holding markup reach the page as text, never as markup."""
    hostile = "<script>alert(1)</script>"
    evalset = EvalSet("hostile")
    evalset.add('q"1', hostile, relevant=["d<1>"], metadata={"team": "<b>ops</b>"})
    evalset.add("q2", "plain", relevant=["d2"], metadata={"team": "web"})
    evalset.save(tmp_path / "hostile.jsonl")
    (tmp_path / "run.json").write_text('{"q2": ["d2"]}', encoding="utf-8")
    config = tmp_path / "monitor.yaml"
    config.write_text(
        "store: {path: m.db}\n"
        "suites:\n"
        "  hostile:\n"
        "    evalset: {path: hostile.jsonl}\n"
        "    search: {kind: replay, path: run.json}\n"
        "    metrics: [recall@5]\n"
        "    rules: [{metric: recall@5, max_drop: 0.05}]\n"
        "    segments: [team]\n",
        encoding="utf-8",
    )

    def run(ids: tuple[str, ...], value: float) -> RunRecord:
        queries = (
            QueryRecord('q"1', {"recall@5": value}, ids, ("d<1>",)),
            QueryRecord("q2", {"recall@5": 1.0}, ("d2",), ("d2",)),
        )
        return RunRecord(
            "hostile",
            "<i>pipe</i>",
            T0,
            T0,
            evalset_fingerprint=evalset.fingerprint,
            means={"recall@5": (value + 1) / 2},
            queries=queries,
        )

    with open_store(tmp_path / "m.db") as store:
        store.set_baseline("hostile", store.save_run(run(("d<1>",), 1.0)))
        store.save_run(run(("<img src=x onerror=alert(1)>",), 0.0))
    code = main(["report", "--config", str(config), "--suite", "hostile", "--format", "html"])
    out = capsys.readouterr().out
    assert 0 == code
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in out
    assert "q&quot;1" in out
    assert "&lt;img src=x onerror=alert(1)&gt;" in out
    for raw in ("<script", "<img", "<b>ops", "<i>pipe", "d<1>"):
        assert raw not in out


PERSISTENT = """
suites:
  larkfield:
    evalset: {bundled: larkfield}
    search: {kind: replay, bundled: larkfield/keyword}
    baseline: {bundled_run: larkfield/rerank}
    metrics: [mrr@10]
    rules: [{metric: mrr@10, max_drop: 0.05}]
    significance: {iterations: 1000, persistence: {breaches: 2, runs: 3}}
"""


@pytest.mark.slow
def test_persistence_is_judged_as_the_job_judged_the_latest_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With persistence the latest run's rule reads as the job saw it: pending, then breach."""
    config = tmp_path / "persistent.yaml"
    config.write_text(PERSISTENT, encoding="utf-8")
    options = ("--config", str(config), "--format", "json")
    seen = []
    for _ in range(2):
        job = _fill_with(config, tmp_path / "p.db", runs=1)
        _, out, _ = _report(job, capsys, *options)
        seen.append(_json(out)["rules"][0]["status"])
    assert ["pending", "breach"] == seen


def test_an_older_run_is_judged_with_the_history_before_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With persistence, the first of two breaching runs still reads as pending."""
    config = tmp_path / "persistent.yaml"
    config.write_text(PERSISTENT, encoding="utf-8")
    store = _fill_with(config, tmp_path / "p.db", runs=2)
    _, out, _ = _report(store, capsys, "--config", str(config), "--format", "json", "--run", "2")
    assert "pending" == _json(out)["rules"][0]["status"]


def test_compose_report_returns_the_record_the_renderers_read(store_path: Path) -> None:
    """compose_report gives the latest run against its baseline, stamped with the given time."""
    with open_store(store_path) as store:
        report = compose_report(store, default_config().suite(SUITE), now=T0)
    assert (3, 1, T0) == (report.run.run_id, report.comparison.baseline_run_id, report.generated_at)
