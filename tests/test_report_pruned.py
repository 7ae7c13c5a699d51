"""A run whose per-query detail retention dropped keeps the verdict measured when it ran."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monitor.cli import main
from monitor.config import load_config
from monitor.report.compose import compose_report
from monitor.store import open_store

CONFIG = """\
store: {path: m.db, retention: {per_query: 1}}
suites:
  nightly:
    evalset: {bundled: larkfield}
    search: {kind: replay, bundled: larkfield/keyword}
    baseline: {bundled_run: larkfield/rerank}
    rules:
      - {metric: mrr@10, max_drop: 0.05}
      - latency_p95_seconds_max: 0.2
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """Return a config whose suite regressed on mrr@10 in three runs, the first two of them
    pruned by retention (runs 2 and 3; run 1 is the seeded baseline)."""
    path = tmp_path / "monitor.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    for _ in range(3):
        main(["run", "--config", str(path), "--suite", "nightly", "--no-progress"])
    return path


def _report(config: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    capsys.readouterr()
    args = ["report", "--config", str(config), "--suite", "nightly", "--run", "2", *extra]
    assert 0 == main(args)
    return capsys.readouterr().out


@pytest.mark.slow
def test_a_pruned_regression_still_reads_as_a_regression(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The text report of a pruned run gives the verdict measured when it ran, marked pruned."""
    out = _report(config, capsys)
    assert (
        "verdict: REGRESSION: a rule breached with significant evidence "
        "(pruned: as measured when the run ran)"
    ) == out.splitlines()[1]


@pytest.mark.slow
def test_a_pruned_run_keeps_its_rule_outcomes(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The JSON report of a pruned run gives each rule's stored status and figures."""
    doc = json.loads(_report(config, capsys, "--format", "json"))
    rules = {rule["rule"]: rule["status"] for rule in doc["rules"]}
    assert (True, "regression", {"mrr@10 max_drop": "breach"}) == (
        doc["pruned"],
        doc["verdict"],
        {name: status for name, status in rules.items() if name.startswith("mrr")},
    )


@pytest.mark.slow
def test_a_pruned_run_keeps_its_metric_changes(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The report of a pruned run lists the metric means against the baseline's, as measured."""
    row = next(line for line in _report(config, capsys).splitlines() if line.startswith("mrr@10"))
    assert ["mrr@10", "0.8399", "0.6622", "medium", "-0.1777"] == row.split()[:5]


@pytest.mark.slow
def test_a_pruned_run_never_says_no_query_was_answered(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pruned run says it was pruned, not that no query was answered."""
    out = _report(config, capsys)
    assert (False, True) == ("no query answered" in out, "run 2 was pruned on" in out)


@pytest.mark.slow
def test_the_html_report_of_a_pruned_run_says_pruned(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The HTML report's verdict of a pruned run is the stored one, marked pruned."""
    html = _report(config, capsys, "--format", "html")
    assert (True, True) == (
        'class="verdict v-regression"' in html,
        "Pruned: as measured when the run ran." in html,
    )


def test_a_run_pruned_before_verdicts_were_kept_claims_no_verdict(tmp_path: Path) -> None:
    """A run pruned with no kept comparison skips every rule instead of reading ``ok``."""
    path = tmp_path / "monitor.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    for _ in range(3):
        main(["run", "--config", str(path), "--suite", "nightly", "--no-progress"])
    config = load_config(path)
    with open_store(tmp_path / "m.db") as store:
        store.delete_state("verdict", "nightly/2")
        report = compose_report(store, config.suite("nightly"), run_id=2)
    assert ("insufficient_evidence", {"skipped"}) == (
        report.comparison.verdict,
        {rule.status for rule in report.comparison.rules},
    )


@pytest.mark.slow
def test_the_web_page_of_a_pruned_run_says_pruned(config: Path) -> None:
    """The web app's page of a pruned run gives its stored verdict, marked pruned."""
    from starlette.testclient import TestClient

    from monitor.web import WebSettings, create_app

    settings = WebSettings(
        config=load_config(config),
        store=lambda: open_store(config.parent / "m.db"),
        warm=False,
        refresh_seconds=None,
    )
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        page = client.get("/suites/nightly/runs/2").text
    assert (True, True) == (
        'class="badge v-regression"' in page,
        "(pruned: as measured when the run ran)" in page,
    )


@pytest.mark.slow
def test_a_pruned_run_keeps_its_trend_value_when_judgments_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trends show a pruned run's means as measured, not NaN, once new grades re-score the
    runs that still have their per-query detail."""
    from test_judgments_rescore import round_trip

    from monitor.config import default_config
    from monitor.store.retention import Retention

    monkeypatch.chdir(tmp_path)
    db = tmp_path / "monitor.db"
    for _ in range(2):
        assert 0 == main(["run", "--store", str(db), "--no-progress"])
    with open_store(db) as store:
        store.prune("larkfield", Retention(runs=1))
        measured = store.get_run(2).means["mrr@10"]
    round_trip(db)
    with open_store(db) as store:
        report = compose_report(store, default_config().suite("larkfield"))
    (trend,) = [t for t in report.trends if t.figure == "mrr@10"]
    assert pytest.approx(measured) == {p.run_id: p.value for p in trend.points}[2]


@pytest.mark.slow
def test_the_html_report_of_a_pruned_run_claims_no_query_got_worse(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pruned run's HTML report leaves the worse-queries table out rather than say none."""
    html = _report(config, capsys, "--format", "html")
    assert (False, True) == ('id="queries"' in html, "went with its per-query detail" in html)
