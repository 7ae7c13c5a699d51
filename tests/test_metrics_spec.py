"""Metric names: one canonical spelling that parses and prints back the same, clear errors."""

from __future__ import annotations

import pytest

from monitor.errors import MetricError, UnknownMetricError, UsageError
from monitor.metrics.evaluation import evaluate
from monitor.metrics.spec import MEASURES, Metric, parse_metric, parse_metrics

CANONICAL_NAMES = [
    "hit_rate@1",
    "precision@5",
    "recall@10",
    "f1@3",
    "mrr",
    "mrr@10",
    "ndcg",
    "ndcg@10",
    "ndcg_burges",
    "ndcg_burges@20",
    "map",
    "map@100",
    "r_precision",
    "bpref",
    "infap",
    "judged@10",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "num_rel_ret@5",
    "set_precision",
    "set_recall",
    "set_f1",
    "dcg",
    "dcg@10",
    "dcg_burges@10",
    "err@20",
    "err",
    "rbp",
    "rbp@10",
    "rbp_50",
    "rbp_80",
    "rbp_95",
    "rbp_99",
]


@pytest.mark.parametrize("name", CANONICAL_NAMES)
def test_name_round_trips(name: str) -> None:
    """A canonical metric name parses to a spec that prints back as the same name."""
    assert name == str(parse_metric(name))


def test_every_measure_has_a_round_tripping_name() -> None:
    """The round-trip list above covers every measure the engine offers."""
    assert set(MEASURES) == {str(parse_metric(name)).split("@")[0] for name in CANONICAL_NAMES}


def test_name_parses_to_measure_and_cutoff() -> None:
    """``ndcg@10`` is the measure ``ndcg`` at cutoff 10."""
    assert Metric("ndcg", 10) == parse_metric("ndcg@10")


def test_unknown_measure_lists_the_known_ones() -> None:
    """An unknown measure raises an error that names it and lists every known measure."""
    with pytest.raises(UnknownMetricError) as caught:
        parse_metric("ndgc@10")
    message = str(caught.value)
    assert "ndgc" in message
    assert all(measure in message for measure in MEASURES)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("judged", "needs a cutoff"),
        ("hit_rate", "needs a cutoff"),
        ("r_precision@5", "takes no cutoff"),
        ("recall@0", "positive integer"),
        ("recall@-1", "positive integer"),
        ("recall@x", "positive integer"),
        ("recall@", "positive integer"),
    ],
)
def test_invalid_name_says_why(name: str, reason: str) -> None:
    """A name with a missing, forbidden or non-positive cutoff raises a MetricError saying why."""
    with pytest.raises(MetricError, match=reason) as caught:
        parse_metric(name)
    assert name in str(caught.value)


def test_metric_error_is_a_usage_error() -> None:
    """A bad metric name is the caller's mistake: a UsageError for the CLI's exit-code table."""
    with pytest.raises(UsageError):
        parse_metric("hit_rate")


def test_metric_list_keeps_order_and_drops_repeats() -> None:
    """A comma-separated list parses in order, each metric once."""
    expected = (Metric("ndcg", 10), Metric("map"), Metric("recall", 5))
    assert expected == parse_metrics("ndcg@10, map,recall@5,ndcg@10")


def test_evaluate_rejects_an_unknown_metric() -> None:
    """evaluate() refuses an unknown metric before computing anything."""
    with pytest.raises(UnknownMetricError):
        evaluate({"q": {"d": 1}}, {"q": ["d"]}, ["recal@5"])


@pytest.mark.parametrize("name", ["recall@05", "recall@+5", "ndcg@010"])
def test_only_the_canonical_cutoff_spelling_parses(name: str) -> None:
    """A cutoff written with a sign or leading zeros is refused, so names round-trip."""
    with pytest.raises(MetricError, match="written plainly"):
        parse_metric(name)
