"""Building alerts from a comparison: one per breached rule, each with its own metric's evidence."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone

import pytest

from monitor.alerts.build import evidence, regression_alert, regression_alerts
from monitor.alerts.model import Alert, RegressionDetails
from monitor.alerts.testing import breach, segment, worse
from monitor.compare.records import Comparison, QueryDiff, RuleOutcome
from monitor.config.model import Check

T0 = datetime(2030, 1, 1, 9, 0, tzinfo=timezone.utc)

NDCG = breach("ndcg@10", 0.55, 0.70, threshold=0.05, severity="critical", p_value=0.001)
MRR = breach("mrr@10", 0.40, 0.65, threshold=0.05, p_value=0.004)
ERRORS = breach("error_rate", 0.08, None, check=Check.ERROR_RATE_MAX, threshold=0.01)
HOLDS = replace(breach("recall@5", 0.80, 0.81), status="ok")

#: The segment that drove ndcg@10's drop, and one that lost less.
NDCG_FR = segment("language", "fr", 12, 0.80, 0.55, metric="ndcg@10", contribution=-0.10)
NDCG_EN = segment("language", "en", 30, 0.70, 0.69, metric="ndcg@10", contribution=-0.01)
#: mrr@10's driving segment: it lost more than any segment of ndcg@10.
MRR_MOBILE = segment("device", "mobile", 7, 0.90, 0.30, metric="mrr@10", contribution=-0.30)


def diff(query_id: str, metric: str) -> QueryDiff:
    """Return a query that lost its hit on ``metric``."""
    return worse(query_id, f"text of {query_id}", 1.0, 0.0, ("d1",), ("d7",), metric=metric)


def comparison(*rules: RuleOutcome, primary: str = "mrr@10") -> Comparison:
    """Return run 8 compared with run 5: diffs and segments for ndcg@10 and mrr@10.

    The primary metric is mrr@10, so an alert that took the primary metric's evidence instead
    of its own would show mrr@10's figures.
    """
    return Comparison(
        suite="nightly",
        run_id=8,
        baseline_run_id=5,
        verdict="regression",
        rules=rules or (NDCG, MRR),
        worse_queries=(
            diff("q1", "ndcg@10"),
            diff("q2", "mrr@10"),
            diff("q3", "ndcg@10"),
            diff("q4", "ndcg@10"),
        ),
        segments=(NDCG_EN, MRR_MOBILE, NDCG_FR),
        primary_metric=primary,
    )


def alerts(*rules: RuleOutcome, **options: object) -> dict[str, Alert]:
    """Return the alerts of :func:`comparison`'s breaches by rule name."""
    built = regression_alerts("nightly", comparison(*rules), at=T0, **options)  # type: ignore[arg-type]
    return {alert.rule: alert for alert in built}


def test_one_alert_per_breached_rule() -> None:
    """Breached rules each give an alert; a rule that holds gives none."""
    assert ["ndcg@10 max_drop", "mrr@10 max_drop"] == [
        alert.rule for alert in regression_alerts("nightly", comparison(NDCG, HOLDS, MRR), at=T0)
    ]


@pytest.mark.parametrize(
    ("rule", "driving"),
    [("ndcg@10 max_drop", NDCG_FR), ("mrr@10 max_drop", MRR_MOBILE)],
)
def test_each_alert_carries_its_own_metrics_driving_segment(rule: str, driving: object) -> None:
    """The segment of an alert is the one that drove its own metric, not the primary one's."""
    assert driving == alerts()[rule].details.segment  # type: ignore[union-attr]


def test_the_ndcg_alert_quotes_the_ndcg_segment_figures() -> None:
    """The ndcg@10 alert's description gives ndcg@10's segment, not mrr@10's."""
    description = alerts()["ndcg@10 max_drop"].description
    assert (True, False) == (
        "Driven by language=fr: 0.8 -> 0.55 over 12 queries." in description,
        "device=mobile" in description,
    )


@pytest.mark.parametrize(
    ("rule", "queries"),
    [("ndcg@10 max_drop", ["q1", "q3", "q4"]), ("mrr@10 max_drop", ["q2"])],
)
def test_each_alert_carries_the_queries_that_got_worse_on_its_metric(
    rule: str, queries: list[str]
) -> None:
    """Worse queries of other metrics stay out of an alert."""
    details = alerts()[rule].details
    assert queries == [query.query_id for query in details.worse_queries]  # type: ignore[union-attr]


def test_worse_queries_are_cut_at_max_queries() -> None:
    """At most ``max_queries`` worse queries are kept, in the comparison's order."""
    details = alerts(max_queries=2)["ndcg@10 max_drop"].details
    assert ["q1", "q3"] == [query.query_id for query in details.worse_queries]  # type: ignore[union-attr]


def test_the_evidence_holds_the_outcome_segment_confidence_and_runs() -> None:
    """The alert's details are the comparison's own records and run ids."""
    assert (
        RegressionDetails(
            outcome=NDCG,
            segment=NDCG_FR,
            worse_queries=(diff("q1", "ndcg@10"), diff("q3", "ndcg@10"), diff("q4", "ndcg@10")),
            confidence=0.95,
            run_id=8,
            baseline_run_id=5,
        )
        == alerts(confidence=0.95)["ndcg@10 max_drop"].details
    )


def test_an_operational_rule_has_no_segment_no_queries_and_no_metric_identity() -> None:
    """An error-rate breach compares whole runs: no segment, no worse queries, no metric."""
    alert = alerts(ERRORS)["error_rate_max"]
    assert (None, (), None) == (
        alert.details.segment,  # type: ignore[union-attr]
        alert.details.worse_queries,  # type: ignore[union-attr]
        alert.identity.metric,
    )


def test_a_quality_rule_has_its_metric_in_the_identity() -> None:
    """A quality rule's alert is identified by its metric as well as its name."""
    assert "ndcg@10" == alerts()["ndcg@10 max_drop"].identity.metric


def test_a_metric_whose_segments_all_gained_has_no_driving_segment() -> None:
    """Without a segment that lost, the evidence names none."""
    gained = segment("language", "fr", 12, 0.5, 0.6, metric="ndcg@10")
    found = replace(comparison(), segments=(gained,))
    assert None is evidence(found, NDCG).segment


def test_the_alert_takes_name_severity_and_summary_from_the_outcome() -> None:
    """Rule name, severity and summary of a regression come from its rule outcome."""
    alert = regression_alert("nightly", RegressionDetails(NDCG), at=T0, pipeline="bm25")
    assert (
        "ndcg@10 max_drop",
        "critical",
        "nightly: ndcg@10 dropped from 0.7 to 0.55 (more than the allowed 0.05)",
        "bm25",
    ) == (alert.rule, alert.severity, alert.summary, alert.label_set()["pipeline"])
