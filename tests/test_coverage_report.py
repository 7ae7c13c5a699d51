"""Reports of a run held as unjudged: judged-only figures, coverage, overlap and the chart."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.alerts.testing import RecordingReceiver
from monitor.cli import main
from tests.test_coverage_alerts import pin_baseline, write

pytestmark = pytest.mark.slow


@pytest.fixture
def held(tmp_path: Path) -> Path:
    """Return the config of a suite whose latest run is held as unjudged."""
    with RecordingReceiver() as receiver:
        pin_baseline(tmp_path, receiver)
        config = write(tmp_path, receiver, "unjudged")
        assert 0 == main(["run", "--config", str(config), "--no-progress"])
    return config


def report(config: Path, capsys: pytest.CaptureFixture[str], *options: str) -> str:
    """Return what ``report`` prints for the suite."""
    capsys.readouterr()
    assert 0 == main(["report", "--config", str(config), "--suite", "nightly", *options])
    return capsys.readouterr().out


def test_the_text_report_shows_the_judged_only_value_beside_each_figure(
    held: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """mrr@10 fell, but judged-only it is 1.0000 in both runs: the drop came from unjudged."""
    line = next(x for x in report(held, capsys).splitlines() if x.startswith("mrr@10 "))
    assert ["1.0000", "1.0000"] == line.split()[5:7]


def test_the_text_report_names_the_verdict_coverage_and_labeling_command(
    held: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The verdict is unjudged; coverage says what came in; the todo command is printed."""
    out = report(held, capsys)
    assert "verdict: unjudged: labels needed" in out
    assert "60 unjudged documents entered the top 10 in 30 of 40 queries  <- labels needed" in out
    assert (
        f"label them: retrieval-monitor judgments todo --config {held} --suite nightly --run 2"
        in out
    )


def test_the_text_report_gives_the_overlap_with_the_baseline(
    held: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The overlap line gives RBO with its persistence and Jaccard@10 (8 of 12 shared in 30
    queries, all 10 in the others: 0.75) over 40 queries."""
    out = report(held, capsys)
    assert "rank-biased overlap (p = 0.9)" in out
    assert "Jaccard@10 0.7500 over 40 queries" in out


def test_the_json_report_carries_coverage_overlap_and_judged_only(
    held: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """JSON gives the verdict, coverage, overlap and each metric's judged-only means."""
    import json

    data = json.loads(report(held, capsys, "--format", "json"))
    mrr = next(m for m in data["metrics"] if m["metric"] == "mrr@10")
    assert ("unjudged", 1.0, 40) == (
        data["verdict"],
        mrr["judged_only_current"],
        data["overlap"]["n"],
    )
    assert 60 == data["coverage"][0]["unjudged_added"]


def test_the_html_report_has_coverage_overlap_and_a_judged_chart(
    held: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The HTML page has the coverage and overlap sections and charts judged@10."""
    out = tmp_path / "report.html"
    report(held, capsys, "--format", "html", "--output", str(out))
    page = out.read_text()
    for part in ('id="coverage"', 'id="overlap"', "judged-only current", "<b>judged@10</b>"):
        assert part in page, part
