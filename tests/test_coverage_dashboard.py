"""The dashboard and the Prometheus rules know coverage, overlap and labels needed."""

from __future__ import annotations

import pytest

from tests.test_alerts_data import alerting_rules, dashboard_queries


@pytest.mark.parametrize(
    "gauge",
    [
        "retrieval_judged_ratio",
        "retrieval_rank_biased_overlap_ratio",
        "retrieval_jaccard_ratio",
    ],
)
def test_the_dashboard_plots_coverage_and_overlap(gauge: str) -> None:
    """A panel queries each coverage and overlap gauge."""
    assert any(gauge in expr for _, expr in dashboard_queries())


def test_prometheus_raises_labels_needed_from_its_gauge() -> None:
    """RetrievalLabelsNeeded fires on retrieval_labels_needed == 1."""
    exprs = {rule["alert"]: rule["expr"] for rule in alerting_rules()}
    assert "retrieval_labels_needed == 1" == exprs["RetrievalLabelsNeeded"]
