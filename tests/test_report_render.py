"""The report renderers on hand-built records: escaping, links, charts, trends and tables."""

from __future__ import annotations

import json
import math
import re
from datetime import datetime, timedelta, timezone

import pandas as pd
import pytest

from monitor.compare.records import Comparison, QueryDiff, RuleOutcome, SegmentChange
from monitor.config.model import Check, RuleConfig
from monitor.metrics.spec import parse_metric
from monitor.records import LatencySummary
from monitor.report.history import build_trends, chart_metrics
from monitor.report.html import render_html
from monitor.report.records import Report, Trend, TrendPoint
from monitor.report.svg import trend_chart
from monitor.report.tables import render_csv, render_json
from monitor.store import RunFigures, RunRecord

T0 = datetime(2024, 5, 1, 3, 0, tzinfo=timezone.utc)
SCRIPT = "<script>alert(1)</script>"


def _run(run_id: int, pipeline: str = "bm25", **means: float) -> RunRecord:
    return RunRecord(
        "nightly",
        pipeline,
        T0,
        T0,
        means={name.replace("_at_", "@"): value for name, value in means.items()},
        figures=RunFigures(latency=LatencySummary(count=1, p95=0.01), error_rate=0.0),
        run_id=run_id,
    )


def _hostile() -> Report:
    diff = QueryDiff(
        query_id='q"<1>',
        query=SCRIPT,
        metric="recall@5",
        baseline=1.0,
        current=0.0,
        change="lost_hit",
        expected_ids=("<d1>",),
        baseline_ids=("<d1>", "d&2"),
        current_ids=("<img src=x onerror=alert(2)>",),
        baseline_first_rank=1,
        current_first_rank=None,
    )
    comparison = Comparison(
        suite="nightly",
        run_id=2,
        baseline_run_id=1,
        verdict="regression",
        rules=(
            RuleOutcome(
                "recall@5 max_drop",
                "max_drop",
                "recall@5",
                0.05,
                "warning",
                "breach",
                message=f"dropped {SCRIPT}",
            ),
        ),
        worse_queries=(diff,),
        segments=(SegmentChange("<team>", "<b>ops</b>", "recall@5", 1, 1.0, 0.0, -1.0, -0.5),),
        warnings=(f"warning {SCRIPT}",),
        primary_metric="recall@5",
    )
    return Report(
        comparison,
        _run(2, pipeline=f"<i>{SCRIPT}</i>", recall_at_5=0.5),
        _run(1, recall_at_5=1.0),
        links={"dashboard": "https://grafana.example.com/d?a=1&b=<2>", "runbook": "javascript:x"},
    )


def test_every_outside_string_is_escaped() -> None:
    """Query texts, ids, segment values, messages and pipeline names reach the page as text."""
    page = render_html(_hostile())
    assert "<script" not in page
    assert "<img" not in page
    assert "<b>ops" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "q&quot;&lt;1&gt;" in page
    assert "&lt;img src=x onerror=alert(2)&gt;" in page


def test_web_links_become_anchors_and_others_stay_text() -> None:
    """An https link from the config is an escaped anchor; a javascript: URL is plain text."""
    page = render_html(_hostile())
    assert (
        '<a href="https://grafana.example.com/d?a=1&amp;b=&lt;2&gt;" '
        'rel="noopener noreferrer">dashboard</a>'
    ) in page
    assert 'href="javascript' not in page
    assert ["https://"] == re.findall(r"https?://", page)


def test_the_page_forbids_scripts_and_remote_loads() -> None:
    """A Content-Security-Policy allows the inline style and nothing else."""
    page = render_html(_hostile())
    assert "content=\"default-src 'none'; style-src 'unsafe-inline'\"" in page


def test_a_report_without_baseline_renders_the_current_values() -> None:
    """With no baseline the verdict says so and the metrics show current values only."""
    comparison = Comparison("nightly", 1, None, "no_baseline")
    page = render_html(Report(comparison, _run(1, ndcg_at_10=0.5)))
    assert '<section class="verdict v-no_baseline"' in page
    assert "0.5000" in page
    assert 'id="queries"' not in page


def _points(*values: float, failed: tuple[int, ...] = ()) -> tuple[TrendPoint, ...]:
    return tuple(
        TrendPoint(
            run_id=index + 1,
            started_at=T0 + timedelta(hours=index),
            status="failed" if index in failed else "ok",
            value=math.nan if index in failed else value,
            error="backend <down>" if index in failed else None,
        )
        for index, value in enumerate(values)
    )


def test_a_failed_run_is_marked_with_its_error() -> None:
    """A failed run is drawn as a cross whose tooltip names the run and its escaped error."""
    trend = Trend("ndcg@10", "ndcg@10", _points(0.5, 0.0, 0.6, failed=(1,)))
    chart = trend_chart(trend)
    assert 1 == chart.count('<g class="failed">')
    assert "run 2 failed (2024-05-01 04:00 UTC): backend &lt;down&gt;" in chart


def test_the_line_breaks_at_a_failed_run() -> None:
    """The series is drawn in two pieces around a failed run, never across it."""
    chart = trend_chart(Trend("ndcg@10", "ndcg@10", _points(0.5, 0.0, 0.6, 0.7, failed=(1,))))
    path = re.search(r'<path d="([^"]+)" fill="none"', chart)
    assert path is not None
    assert 2 == path.group(1).count("M")


def test_the_baseline_is_a_reference_line_and_a_far_threshold_is_left_off() -> None:
    """The baseline value is drawn; a latency ceiling far above the data is not."""
    trend = Trend(
        "latency_p95_seconds",
        "latency p95",
        _points(2e-6, 3e-6, 4e-6),
        unit="seconds",
        baseline=2.5e-6,
        alert_above=0.2,
    )
    chart = trend_chart(trend)
    assert "<title>baseline: 2.5 µs</title>" in chart
    assert "<title>alert" not in chart


def _rules(*specs: tuple[str, Check, float]) -> tuple[RuleConfig, ...]:
    return tuple(
        RuleConfig(check, threshold, parse_metric(metric)) for metric, check, threshold in specs
    )


def test_charts_follow_the_rule_metrics_once_each() -> None:
    """The charted metrics are those the rules name, in rule order, without repeats."""
    rules = (
        *_rules(("mrr@10", Check.MAX_DROP, 0.05), ("ndcg@10", Check.MIN, 0.5)),
        *_rules(("mrr@10", Check.MIN, 0.4)),
        RuleConfig(Check.ERROR_RATE_MAX, 0.1),
    )
    assert ("mrr@10", "ndcg@10") == chart_metrics(rules, ["recall@5"])


def test_without_rules_the_first_measured_metrics_are_charted() -> None:
    """With no metric rule the first four measured metrics are charted."""
    assert ("a@1", "b@1", "c@1", "d@1") == chart_metrics((), ["a@1", "b@1", "c@1", "d@1", "e@1"])


def test_the_alert_line_is_the_strictest_rule() -> None:
    """A metric's alert line is the highest value under which any of its rules fires."""
    history = pd.DataFrame(
        {
            "run_id": [1, 2],
            "started_at": pd.to_datetime([T0, T0 + timedelta(hours=1)], utc=True),
            "finished_at": pd.to_datetime([T0, T0 + timedelta(hours=1)], utc=True),
            "status": ["ok", "failed"],
            "ndcg@10": [0.8, math.nan],
            "latency_p95": [0.01, math.nan],
        }
    )
    rules = _rules(
        ("ndcg@10", Check.MAX_DROP, 0.1),
        ("ndcg@10", Check.MAX_RELATIVE_DROP, 0.05),
        ("ndcg@10", Check.MIN, 0.5),
    )
    ndcg, latency = build_trends(
        history, ["ndcg@10"], baseline=_run(1, ndcg_at_10=0.8), rules=rules
    )
    assert pytest.approx(0.8 * 0.95) == ndcg.alert_below
    assert ("ok", "failed") == tuple(point.status for point in ndcg.points)
    assert 0.01 == latency.baseline


def test_json_turns_nan_into_null() -> None:
    """Figures that could not be computed are null, so the output is strict JSON."""
    data = json.loads(render_json(_hostile()))
    assert data["run"]["rates"]["mean_top1_score"] is None


def test_csv_without_a_baseline_has_current_values_only() -> None:
    """A metric the baseline lacks has an empty baseline, delta and interval."""
    comparison = Comparison("nightly", 1, None, "no_baseline")
    lines = render_csv(Report(comparison, _run(1, ndcg_at_10=0.5))).splitlines()
    assert ["metric,baseline,current,delta,ci_low,ci_high,rule,status", "ndcg@10,,0.5,,,,,"] == (
        lines
    )
