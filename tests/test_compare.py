"""Comparing a run with its baseline: rules, significance, verdicts, diffs and segments."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from monitor.compare import compare_runs
from monitor.config import Check, PersistenceConfig, RuleConfig, SignificanceConfig
from monitor.metrics.spec import parse_metric
from monitor.records import LatencySummary
from monitor.store.records import QueryRecord, RunFigures, RunRecord

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
FAST = SignificanceConfig(iterations=2000, seed=1)


def run(
    values: list[float],
    *,
    fingerprint: str = "sha256:a",
    metric: str = "recall@5",
    latency_p95: float = 0.05,
    rates: dict[str, float] | None = None,
    retrieved: list[tuple[str, ...]] | None = None,
    run_id: int = 1,
) -> RunRecord:
    """Build a stored run with one metric's per-query values."""
    queries = tuple(
        QueryRecord(
            query_id=f"q{i:03d}",
            values={metric: v},
            retrieved_ids=retrieved[i] if retrieved else (),
            relevant_ids=("rel",),
        )
        for i, v in enumerate(values)
    )
    return RunRecord(
        suite="s",
        pipeline="p",
        started_at=T0,
        finished_at=T0,
        evalset_fingerprint=fingerprint,
        means={metric: sum(values) / len(values)},
        figures=RunFigures(
            latency=LatencySummary(count=len(values), p95=latency_p95),
            **{"error_rate": 0.0, "zero_result_rate": 0.0, **(rates or {})},  # type: ignore[arg-type]
        ),
        queries=queries,
        run_id=run_id,
    )


def drop_rule(threshold: float = 0.05) -> RuleConfig:
    return RuleConfig(Check.MAX_DROP, threshold, parse_metric("recall@5"))


def test_a_large_consistent_drop_is_a_significant_breach() -> None:
    """Forty of a hundred queries losing their hit breaches a 0.05 max_drop rule."""
    before = run([1.0] * 100, run_id=1)
    after = run([0.0] * 40 + [1.0] * 60, run_id=2)
    comparison = compare_runs(after, before, [drop_rule()], significance=FAST)
    (rule,) = comparison.rules
    assert "regression" == comparison.verdict
    assert "breach" == rule.status
    assert pytest.approx(-0.4) == rule.delta
    assert rule.p_value is not None
    assert rule.p_value < 0.001


def test_a_drop_over_threshold_within_noise_is_insufficient_evidence() -> None:
    """A drop past the threshold made of a few queries moving both ways is not alerted."""
    before = run([1.0, 0.0] * 20, run_id=1)
    after = run([0.0, 1.0] * 17 + [0.0, 0.0] * 3, run_id=2)
    comparison = compare_runs(after, before, [drop_rule()], significance=FAST)
    assert "insufficient_evidence" == comparison.rules[0].status
    assert "insufficient_evidence" == comparison.verdict
    assert not comparison.regression


def test_a_small_drop_under_threshold_is_ok() -> None:
    """A drop smaller than the threshold passes without a test."""
    before = run([1.0] * 100, run_id=1)
    after = run([0.0] * 3 + [1.0] * 97, run_id=2)
    comparison = compare_runs(after, before, [drop_rule()], significance=FAST)
    assert "ok" == comparison.verdict
    assert comparison.rules[0].p_value is None


def test_a_changed_eval_set_is_never_compared_on_quality() -> None:
    """Different fingerprints give the evalset_changed verdict and skip quality rules."""
    before = run([1.0] * 100, fingerprint="sha256:a", run_id=1)
    after = run([0.0] * 100, fingerprint="sha256:b", run_id=2)
    comparison = compare_runs(after, before, [drop_rule()], significance=FAST)
    assert "evalset_changed" == comparison.verdict
    assert "skipped" == comparison.rules[0].status
    assert () == comparison.worse_queries


def test_without_a_baseline_absolute_rules_still_apply() -> None:
    """With no baseline, a latency ceiling is checked and a drop rule is skipped."""
    current = run([1.0] * 40, latency_p95=0.5)
    latency = RuleConfig(Check.LATENCY_P95_SECONDS_MAX, 0.2)
    comparison = compare_runs(current, None, [drop_rule(), latency], significance=FAST)
    assert ["skipped", "breach"] == [r.status for r in comparison.rules]
    assert "regression" == comparison.verdict


def test_a_floor_fires_only_when_the_interval_is_below_it() -> None:
    """A `min` rule breaches when the whole confidence interval of the mean is under it."""
    floor = RuleConfig(Check.MIN, 0.9, parse_metric("recall@5"))
    clearly_under = run([0.5] * 50 + [0.6] * 50)
    barely_under = run([1.0] * 89 + [0.0] * 11)
    assert "breach" == compare_runs(clearly_under, None, [floor]).rules[0].status
    assert "insufficient_evidence" == compare_runs(barely_under, None, [floor]).rules[0].status


@pytest.mark.parametrize(
    ("check", "threshold", "figures", "status"),
    [
        (Check.ERROR_RATE_MAX, 0.05, {"error_rate": 0.10}, "breach"),
        (Check.ERROR_RATE_MAX, 0.05, {"error_rate": 0.01}, "ok"),
        (Check.ZERO_RESULT_RATE_MAX, 0.05, {"zero_result_rate": 0.2}, "breach"),
        (Check.TOP1_SCORE_MAX_RELATIVE_DROP, 0.1, {"mean_top1_score": 0.5}, "breach"),
        (Check.TOP1_SCORE_MAX_RELATIVE_DROP, 0.1, {"mean_top1_score": 0.95}, "ok"),
    ],
)
def test_operational_rules(
    check: Check, threshold: float, figures: dict[str, float], status: str
) -> None:
    """Rate ceilings read the current run; relative rules compare with the baseline."""
    before = run([1.0] * 40, rates={"mean_top1_score": 1.0}, run_id=1)
    after = run([1.0] * 40, rates=figures, run_id=2)
    (outcome,) = compare_runs(after, before, [RuleConfig(check, threshold)]).rules
    assert status == outcome.status


def test_persistence_holds_a_breach_until_enough_runs_saw_it() -> None:
    """With 2 of 3 runs required, a first breach is pending and a second one fires."""
    before = run([1.0] * 100, run_id=1)
    after = run([0.0] * 40 + [1.0] * 60, run_id=2)
    significance = SignificanceConfig(iterations=500, persistence=PersistenceConfig(2, 3))
    rule = drop_rule()
    first = compare_runs(after, before, [rule], significance=significance)
    second = compare_runs(
        after, before, [rule], significance=significance, history={rule.name: [True]}
    )
    assert "pending" == first.rules[0].status
    assert "breach" == second.rules[0].status


def test_worse_queries_name_what_was_lost() -> None:
    """A query whose only relevant document left the top k is listed as lost_hit."""
    before = run([1.0, 1.0], retrieved=[("rel", "x"), ("rel", "y")], run_id=1)
    after = run([0.0, 1.0], retrieved=[("x", "z"), ("rel", "y")], run_id=2)
    comparison = compare_runs(after, before, [drop_rule()], significance=FAST)
    (diff,) = comparison.worse_queries
    assert ("q000", "lost_hit", 1, None) == (
        diff.query_id,
        diff.change,
        diff.baseline_first_rank,
        diff.current_first_rank,
    )
    assert ("rel",) == diff.expected_ids
    assert ("x", "z") == diff.current_ids


def test_segments_add_up_to_the_overall_delta_and_name_the_driver() -> None:
    """Each key's contributions sum to the mean delta; the worst segment drove the drop."""
    before = run([1.0] * 40, run_id=1)
    after = run([0.0] * 10 + [1.0] * 30, run_id=2)
    metadata = {f"q{i:03d}": {"language": "fr" if i < 20 else "en"} for i in range(40)}
    comparison = compare_runs(
        after, before, [drop_rule()], significance=FAST, segments=["language"], metadata=metadata
    )
    total = sum(s.contribution for s in comparison.segments)
    driver = comparison.driving_segment("language")
    assert pytest.approx(-0.25) == total
    assert driver is not None
    assert "fr" == driver.value


def test_few_queries_warn_about_power() -> None:
    """Fewer than 30 answerable queries add a warning."""
    comparison = compare_runs(run([1.0] * 10, run_id=2), run([1.0] * 10, run_id=1), [])
    assert any("only 10 answerable queries" in w for w in comparison.warnings)


def _two_metric_run(recall: list[float], mrr: list[float], run_id: int) -> RunRecord:
    queries = tuple(
        QueryRecord(f"q{i:03d}", {"recall@5": r, "mrr@10": m}, relevant_ids=("rel",))
        for i, (r, m) in enumerate(zip(recall, mrr, strict=True))
    )
    return RunRecord(
        suite="s",
        pipeline="p",
        started_at=T0,
        finished_at=T0,
        means={"recall@5": sum(recall) / len(recall), "mrr@10": sum(mrr) / len(mrr)},
        queries=queries,
        run_id=run_id,
    )


def test_segments_and_worse_queries_are_given_for_every_watched_metric() -> None:
    """Each metric a quality rule watches has its own breakdown: French queries drove the
    recall drop, English ones the mrr drop."""
    before = _two_metric_run([1.0] * 40, [1.0] * 40, run_id=1)
    after = _two_metric_run([0.0] * 10 + [1.0] * 30, [1.0] * 30 + [0.0] * 10, run_id=2)
    metadata = {f"q{i:03d}": {"language": "fr" if i < 20 else "en"} for i in range(40)}
    rules = [drop_rule(), RuleConfig(Check.MAX_DROP, 0.05, parse_metric("mrr@10"))]
    comparison = compare_runs(
        after, before, rules, significance=FAST, segments=["language"], metadata=metadata
    )
    recall = comparison.driving_segment(metric="recall@5")
    mrr = comparison.driving_segment(metric="mrr@10")
    assert ("fr", "en") == (recall.value if recall else None, mrr.value if mrr else None)
    assert {"recall@5", "mrr@10"} == {s.metric for s in comparison.segments}
    assert {"q030"} <= {d.query_id for d in comparison.worse_for("mrr@10")}
    assert {"q000"} <= {d.query_id for d in comparison.worse_for("recall@5")}


#: Per-query values of a baseline whose queries all hit, two of them only at rank two.
NEARLY_PERFECT = [1.0] * 38 + [0.5] * 2


def test_the_interval_of_an_outages_mean_delta_stays_within_minus_one() -> None:
    """Every query losing its hit gives a delta interval that starts at -1, not below it."""
    before = run(NEARLY_PERFECT, run_id=1)
    after = run([0.0] * 40, run_id=2)
    (change,) = compare_runs(after, before, [drop_rule()], significance=FAST).metrics
    assert -1.0 == change.ci_low


def test_a_floors_interval_of_a_mean_near_one_ends_at_one() -> None:
    """A min rule on values nearly all 1 reports an interval of the mean that ends at 1."""
    floor = RuleConfig(Check.MIN, 0.5, parse_metric("recall@5"))
    (rule,) = compare_runs(run(NEARLY_PERFECT), None, [floor], significance=FAST).rules
    assert 1.0 == rule.ci_high
