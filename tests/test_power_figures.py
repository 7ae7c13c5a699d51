"""The power figures of drop rules: the normal-approximation MDE of the paired deltas."""

from __future__ import annotations

import math
from datetime import datetime, timezone
from statistics import NormalDist

import numpy as np
import pytest

from monitor.compare.matched import Matched
from monitor.compare.power import rule_power, rule_powers
from monitor.config.model import Check, RuleConfig
from monitor.metrics.spec import parse_metric
from monitor.store import QueryRecord, RunRecord

WHEN = datetime(2026, 1, 1, tzinfo=timezone.utc)
BEFORE = {"q1": 0.5, "q2": 0.25, "q3": 1.0, "q4": 0.0, "q5": 0.75}
NOW = {"q2": 0.5, "q3": 0.5, "q4": 0.25, "q5": 1.0, "q9": 0.0}
RULES = [
    RuleConfig(Check.MAX_DROP, 0.05, parse_metric("ndcg@10")),
    RuleConfig(Check.MAX_RELATIVE_DROP, 0.1, parse_metric("ndcg@10")),
    RuleConfig(Check.MIN_OVERLAP, 0.5),
]


def record(run_id: int, values: dict[str, float]) -> RunRecord:
    """Return a stored run whose queries have ``values`` of ndcg@10."""
    queries = tuple(QueryRecord(qid, {"ndcg@10": value}) for qid, value in values.items())
    mean = sum(values.values()) / len(values)
    return RunRecord("s", "default", WHEN, WHEN, means={"ndcg@10": mean}, queries=queries,
                     run_id=run_id)  # fmt: skip


def expected_drop(values: list[float], alpha: float) -> float:
    """Return (z_{1-alpha} + z_{0.8}) * sd / sqrt(n), sd with ddof=1."""
    z = NormalDist()
    sd = float(np.std(values, ddof=1))
    return (z.inv_cdf(1 - alpha) + z.inv_cdf(0.8)) * sd / math.sqrt(len(values))


def test_the_figures_of_a_run_come_from_its_paired_deltas() -> None:
    """The absolute rule's drop is the MDE of the deltas of the queries both runs hold."""
    baseline = record(1, BEFORE)
    figures = rule_powers(RULES, baseline, record(2, NOW), 0.05)
    deltas = [NOW[qid] - BEFORE[qid] for qid in ("q2", "q3", "q4", "q5")]
    assert ["ndcg@10 max_drop", "ndcg@10 max_relative_drop"] == list(figures)
    absolute, relative = figures.values()
    assert ("paired deltas", 4) == (absolute.source, absolute.n)
    assert expected_drop(deltas, 0.05) == pytest.approx(absolute.drop, rel=1e-12)
    assert absolute.drop / baseline.means["ndcg@10"] == relative.drop


def test_without_a_latest_run_the_figures_come_from_the_baseline_values() -> None:
    """With no run beside the baseline, its own values give the spread."""
    (figure,) = rule_powers(RULES[:1], record(1, BEFORE), None, 0.05).values()
    assert ("baseline values", 5) == (figure.source, figure.n)
    assert expected_drop(list(BEFORE.values()), 0.05) == pytest.approx(figure.drop, rel=1e-12)


def test_one_rule_gives_the_figure_that_all_rules_give_it() -> None:
    """rule_power of one rule is the figure rule_powers gives for it."""
    baseline, latest = record(1, BEFORE), record(2, NOW)
    figures = rule_powers(RULES, baseline, latest, 0.05)
    assert figures["ndcg@10 max_relative_drop"] == rule_power(RULES[1], baseline, latest, 0.05)


def test_the_rules_of_one_metric_read_its_columns_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A max_drop and a max_relative_drop rule of one metric read each run's column once."""
    reads: list[tuple[str, bool]] = []
    column = Matched.column

    def counted(self: Matched, metric: str, *, baseline: bool) -> object:
        reads.append((metric, baseline))
        return column(self, metric, baseline=baseline)

    monkeypatch.setattr(Matched, "column", counted)
    rule_powers(RULES, record(1, BEFORE), record(2, NOW), 0.05)
    assert [("ndcg@10", False), ("ndcg@10", True)] == reads
