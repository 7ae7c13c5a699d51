"""ir_measures' and ranx's RBP names are refused, saying why: on graded qrels they are other
measures than this project's rbp (grade / the query's highest grade): see
``test_metrics_ranx.py`` for ranx's value on graded qrels."""

from __future__ import annotations

import pytest

from monitor.errors import MetricError
from monitor.metrics.spec import parse_metric


@pytest.mark.parametrize(
    ("name", "instead"),
    [
        ("RBP", "rbp_80"),
        ("RBP@10", "rbp_80@10"),
        ("RBP(p=0.9)", "rbp"),
        ("RBP(p=0.95)", "rbp_95"),
        ("RBP(rel=2)", "rbp_80"),
        ("rbp.8", "rbp_80"),
        ("rbp.95", "rbp_95"),
        ("rbp.99@20", "rbp_99@20"),
    ],
)
def test_another_tools_rbp_is_refused_naming_the_measure_to_ask_for(
    name: str, instead: str
) -> None:
    """The error says the measures agree on binary qrels only and names the canonical one."""
    expected = rf"binary qrels only; on binary qrels ask for {instead}$"
    with pytest.raises(MetricError, match=expected):
        parse_metric(name)


def test_a_persistence_without_a_canonical_rbp_is_refused_saying_so() -> None:
    """An RBP at a persistence no canonical rbp has is refused naming the ones there are."""
    with pytest.raises(MetricError, match=r"no rbp here has persistence 0\.7"):
        parse_metric("rbp.7")


@pytest.mark.parametrize("name", ["rbp", "rbp@10", "rbp_80", "Rbp"])
def test_trec_eval_and_canonical_rbp_names_still_resolve(name: str) -> None:
    """trec_eval's rbp and the canonical names are read as before."""
    assert name.lower() == str(parse_metric(name))
