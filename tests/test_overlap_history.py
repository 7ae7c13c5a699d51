"""Each run's overlap with its baseline is kept with the run, so the report's trends chart
the mean rank-biased overlap and Jaccard of the top k over time."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor.alerts.testing import RecordingReceiver
from monitor.cli import main
from monitor.compare.history import OVERLAP_STATE
from monitor.compare.overlap import rank_biased_overlap
from monitor.config import load_config
from monitor.store import open_store
from tests.test_coverage_alerts import pin_baseline, unjudged_ranking, write
from tests.test_coverage_verdict import QUERIES, baseline_ranking


@pytest.fixture
def receiver() -> Iterator[RecordingReceiver]:
    with RecordingReceiver() as running:
        yield running


def moved_rbo() -> float:
    """Return the mean RBO@10 of the unjudged rankings (30 of 40 queries moved)."""
    return (30 * rank_biased_overlap(baseline_ranking(0), unjudged_ranking(0), 10) + 10) / QUERIES


def report_trends(tmp_path: Path, config: Path) -> dict[str, list[float]]:
    """Return each trend's values, by figure, of the report composed from the store."""
    from monitor.report.compose import compose_report

    with open_store(tmp_path / "m.db") as store:
        report = compose_report(store, load_config(config).suite("nightly"))
    return {trend.figure: [point.value for point in trend.points] for trend in report.trends}


@pytest.mark.slow
def test_a_compared_run_keeps_its_mean_overlap_with_the_baseline(
    tmp_path: Path, receiver: RecordingReceiver
) -> None:
    """The second run's stored overlap is the mean RBO and Jaccard of its top 10."""
    pin_baseline(tmp_path, receiver)
    main(["run", "--config", str(write(tmp_path, receiver, "unjudged")), "--no-progress"])
    with open_store(tmp_path / "m.db") as store:
        kept = store.get_state(OVERLAP_STATE, "nightly/2")
    assert kept is not None
    assert (10, 40, moved_rbo(), (30 * 8 / 12 + 10) / 40) == pytest.approx(
        (kept["k"], kept["n"], kept["rbo"], kept["jaccard"])
    )


def test_a_run_without_a_baseline_keeps_no_overlap(
    tmp_path: Path, receiver: RecordingReceiver
) -> None:
    """The first run of a suite has nothing to overlap with: nothing is kept."""
    main(["run", "--config", str(write(tmp_path, receiver, "baseline")), "--no-progress"])
    with open_store(tmp_path / "m.db") as store:
        assert None is store.get_state(OVERLAP_STATE, "nightly/1")


@pytest.mark.slow
def test_the_report_charts_overlap_over_the_runs(
    tmp_path: Path, receiver: RecordingReceiver
) -> None:
    """The trends hold rbo@10 and jaccard@10: NaN for the first run, then each run's mean."""
    pin_baseline(tmp_path, receiver)
    main(["run", "--config", str(write(tmp_path, receiver, "unjudged")), "--no-progress"])
    config = write(tmp_path, receiver, "baseline")
    main(["run", "--config", str(config), "--no-progress"])
    trends = report_trends(tmp_path, config)
    first, *rest = trends["rbo@10"]
    assert (True, [moved_rbo(), 1.0]) == (math.isnan(first), pytest.approx(rest))
    assert [1.0] == trends["jaccard@10"][2:]


@pytest.mark.slow
def test_the_overlap_trend_marks_the_min_overlap_floor(
    tmp_path: Path, receiver: RecordingReceiver
) -> None:
    """With a min_overlap rule, the rbo@10 chart draws its threshold as the alert line."""
    from monitor.report.compose import compose_report

    pin_baseline(tmp_path, receiver)
    config = write(tmp_path, receiver, "unjudged")
    config.write_text(
        config.read_text().replace(
            "rules: [{metric: mrr@10, max_drop: 0.05}]",
            "rules: [{metric: mrr@10, max_drop: 0.05}, {min_overlap: 0.6}]",
        )
    )
    main(["run", "--config", str(config), "--no-progress"])
    with open_store(tmp_path / "m.db") as store:
        report = compose_report(store, load_config(config).suite("nightly"))
    (trend,) = [trend for trend in report.trends if trend.figure == "rbo@10"]
    assert 0.6 == trend.alert_below


@pytest.mark.slow
def test_the_html_report_shows_the_overlap_chart(
    tmp_path: Path, receiver: RecordingReceiver
) -> None:
    """`report --format html` has a chart captioned rbo@10 after a compared run."""
    pin_baseline(tmp_path, receiver)
    config = write(tmp_path, receiver, "unjudged")
    main(["run", "--config", str(config), "--no-progress"])
    out = tmp_path / "report.html"
    main(["report", "--config", str(config), "--suite", "nightly", "--format", "html",
          "--output", str(out)])  # fmt: skip
    assert "<b>rbo@10</b>" in out.read_text()
