"""Every interval the text and HTML reports show names the method that computed it.

A drop rule's interval is a percentile bootstrap of the mean delta; a ``min`` rule's is a t
interval of the current mean; the metric table's is a paired t interval of the mean delta.
Two different figures for one delta must never both read as just "95% CI".
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

import pytest

from monitor.compare.records import Comparison, MetricChange, RuleOutcome
from monitor.report import Report, render_comparison, render_html
from monitor.store import RunRecord

T0 = datetime(2024, 5, 1, tzinfo=timezone.utc)

DROP = RuleOutcome(
    "mrr@10 max_drop",
    "max_drop",
    "mrr@10",
    0.05,
    "critical",
    "breach",
    current=0.6622,
    baseline=0.8399,
    delta=-0.1777,
    p_value=0.0001,
    ci_low=-0.2647,
    ci_high=-0.0969,
    quality=True,
    message="mrr@10 0.8399 -> 0.6622 (-0.1777; allowed drop 0.05); p = 0.0001",
)
FLOOR = RuleOutcome(
    "mrr@10 min",
    "min",
    "mrr@10",
    0.5,
    "warning",
    "ok",
    current=0.6622,
    ci_low=0.5712,
    ci_high=0.7532,
    quality=True,
    message="mrr@10 0.6622 >= floor 0.5",
)
CHANGE = MetricChange("mrr@10", 0.8399, 0.6622, -0.1777, -0.2639, -0.0915, 59)


def _report(*rules: RuleOutcome) -> Report:
    comparison = Comparison(
        "nightly", 2, 1, "regression", rules=rules, metrics=(CHANGE,), primary_metric="mrr@10"
    )
    run = RunRecord("nightly", "bm25", T0, T0, means={"mrr@10": 0.6622}, run_id=2)
    baseline = RunRecord("nightly", "bm25", T0, T0, means={"mrr@10": 0.8399}, run_id=1)
    return Report(comparison, run, baseline)


def _text(report: Report) -> str:
    return render_comparison(report.comparison, report.run.means)


def test_the_text_metric_table_names_its_t_interval() -> None:
    """The metric table's interval column reads "t 95% CI of delta"."""
    header = next(line for line in _text(_report()).splitlines() if line.startswith("metric"))
    assert "t 95% CI of delta" == header.split("  ")[-1].strip()


@pytest.mark.parametrize(
    ("rule", "shown"),
    [
        (DROP, "bootstrap 95% CI of delta [-0.2647, -0.0969]"),
        (FLOOR, "t 95% CI of mean [0.5712, 0.7532]"),
    ],
)
def test_a_text_rule_line_shows_its_interval_by_method(rule: RuleOutcome, shown: str) -> None:
    """A quality rule's line ends with its interval, labelled by method and by what it bounds."""
    line = next(line for line in _text(_report(rule)).splitlines() if rule.rule in line)
    assert shown == line.rpartition("; ")[2]


def test_text_shows_no_bare_ci_label() -> None:
    """Every "95% CI" in the text is preceded by its method."""
    text = _text(_report(DROP, FLOOR))
    assert [] == re.findall(r"(?<!bootstrap )(?<!t )95% CI", text)


def test_html_labels_each_rule_interval_by_method() -> None:
    """In the rules table the drop rule's interval is the bootstrap one, the floor's the t one."""
    page = render_html(_report(DROP, FLOOR))
    rules = page[page.index('id="rules"') : page.index('id="metrics"')]
    cells = re.findall(r'<td class="num" title="([^"]+)">([^<]*)</td>', rules)
    assert [
        ("bootstrap 95% CI of delta", "bootstrap [-0.2647, -0.0969]"),
        ("t 95% CI of mean", "t [+0.5712, +0.7532]"),
    ] == cells


def test_html_metric_table_names_its_t_interval() -> None:
    """The metrics table's interval column is headed "t 95% CI of delta"."""
    page = render_html(_report())
    metrics = page[page.index('id="metrics"') :]
    assert '<th class="num">t 95% CI of delta</th>' in metrics


def test_html_shows_no_bare_ci_label() -> None:
    """Every "95% CI" on the page is preceded by its method."""
    page = render_html(_report(DROP, FLOOR))
    assert [] == re.findall(r"(?<!bootstrap )(?<!t )95% CI", page)
