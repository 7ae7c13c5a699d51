"""Coverage-aware verdicts: a drop caused by unjudged documents is ``unjudged``, not a
regression, while the same drop on judged documents still is one."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from monitor.compare import compare_runs
from monitor.compare.coverage import coverage_change, judged_at, judged_only_means
from monitor.config import Check, RuleConfig, SignificanceConfig
from monitor.config.model import CoverageConfig
from monitor.gate.records import gate_verdict
from monitor.metrics.evaluation import evaluate
from monitor.metrics.spec import parse_metric
from monitor.store.records import QueryRecord, RunRecord

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
FAST = SignificanceConfig(iterations=2000, seed=1)
QUERIES = 40
MOVED = 30


def qrels() -> dict[str, dict[str, int]]:
    """Return one relevant and nine judged non-relevant documents per query."""
    return {f"q{i:02d}": {f"r{i}": 1, **{f"n{i}-{j}": 0 for j in range(9)}} for i in range(QUERIES)}


def baseline_ranking(i: int) -> list[str]:
    """Return query ``i``'s baseline: the relevant document first, then the judged rest."""
    return [f"r{i}", *(f"n{i}-{j}" for j in range(9))]


def unjudged_ranking(i: int) -> list[str]:
    """Return query ``i`` with two documents nobody judged put above the relevant one."""
    return [f"u{i}-a", f"u{i}-b", *baseline_ranking(i)][:10]


def judged_ranking(i: int) -> list[str]:
    """Return query ``i`` with two judged non-relevant documents put above the relevant one."""
    rest = baseline_ranking(i)
    return [rest[1], rest[2], rest[0], *rest[3:]]


def record(rankings: dict[str, list[str]], run_id: int) -> RunRecord:
    """Score ``rankings`` on mrr@10 and store them as a run."""
    judgments = qrels()
    result = evaluate(judgments, rankings, ["mrr@10"])
    queries = tuple(
        QueryRecord(
            query_id=qid,
            values={"mrr@10": result.value("mrr@10", qid)},
            retrieved_ids=tuple(ranking),
            relevant_ids=tuple(doc for doc, grade in judgments[qid].items() if grade > 0),
        )
        for qid, ranking in rankings.items()
    )
    return RunRecord(
        suite="s",
        pipeline="p",
        started_at=T0,
        finished_at=T0,
        evalset_fingerprint="sha256:a",
        means=result.means,
        queries=queries,
        run_id=run_id,
    )


def runs(change: str) -> tuple[RunRecord, RunRecord]:
    """Return the baseline and a current run where ``MOVED`` queries changed as ``change``."""
    pick = {"unjudged": unjudged_ranking, "judged": judged_ranking}[change]
    before = {f"q{i:02d}": baseline_ranking(i) for i in range(QUERIES)}
    after = {f"q{i:02d}": (pick(i) if i < MOVED else baseline_ranking(i)) for i in range(QUERIES)}
    return record(before, 1), record(after, 2)


RULE = RuleConfig(Check.MAX_DROP, 0.05, parse_metric("mrr@10"))


def test_a_drop_from_unjudged_documents_is_held_as_unjudged() -> None:
    """Unjudged documents pushing the relevant one down give the verdict unjudged."""
    baseline, current = runs("unjudged")
    comparison = compare_runs(current, baseline, [RULE], significance=FAST, qrels=qrels())
    assert ("unjudged", "unjudged") == (comparison.verdict, comparison.rules[0].status)
    assert not comparison.regression


def test_the_same_drop_on_judged_documents_is_a_regression() -> None:
    """Judged non-relevant documents pushing the relevant one down still breach the rule."""
    baseline, current = runs("judged")
    comparison = compare_runs(current, baseline, [RULE], significance=FAST, qrels=qrels())
    assert ("regression", "breach") == (comparison.verdict, comparison.rules[0].status)


def test_without_judgments_a_breach_stays_a_regression() -> None:
    """A comparison given no judgments cannot measure coverage, so it holds nothing."""
    baseline, current = runs("unjudged")
    comparison = compare_runs(current, baseline, [RULE], significance=FAST)
    assert ("regression", ()) == (comparison.verdict, comparison.coverage)


def test_coverage_counts_the_unjudged_documents_that_came_in() -> None:
    """Two unjudged documents in each of 30 queries: 60 documents, coverage 1.0 -> 0.85."""
    baseline, current = runs("unjudged")
    change = coverage_change(baseline, current, qrels(), 10)
    assert change is not None
    assert (60, 30, 1.0, 0.85) == (
        change.unjudged_added,
        change.queries,
        change.baseline,
        pytest.approx(change.current),
    )


def test_a_fall_within_max_drop_is_not_held() -> None:
    """With coverage.max_drop above the fall (0.15), the breach is a regression."""
    baseline, current = runs("unjudged")
    comparison = compare_runs(
        current,
        baseline,
        [RULE],
        significance=FAST,
        qrels=qrels(),
        coverage=CoverageConfig(max_drop=0.2),
    )
    assert "regression" == comparison.verdict


def test_the_judged_only_figure_shows_the_drop_does_not_survive() -> None:
    """Removing the unjudged documents before scoring gives back mrr@10 = 1 in both runs."""
    baseline, current = runs("unjudged")
    comparison = compare_runs(current, baseline, [RULE], significance=FAST, qrels=qrels())
    (change,) = comparison.metrics
    assert (1.0, 1.0) == (change.judged_only_baseline, change.judged_only_current)
    assert change.current < 0.6


def test_judged_only_means_follow_trec_eval_minus_j() -> None:
    """An unjudged document above the relevant one is dropped: the relevant one ranks first."""
    run = record({"q00": ["x", "r0"]}, 1)
    assert {"mrr@10": 1.0} == judged_only_means(run, qrels(), ["mrr@10"])


def test_judged_at_k_is_the_engines_share_of_the_ranking() -> None:
    """Two judged documents of a three-long ranking give judged@10 = 2/3 (of what was shown)."""
    run = record({"q00": ["r0", "x", "n0-0"]}, 1)
    assert {"q00": pytest.approx(2 / 3)} == judged_at(run, qrels(), 10)


def test_an_unjudged_verdict_passes_the_gate_as_insufficient_evidence() -> None:
    """The gate cannot tell until the documents are labelled: insufficient evidence."""
    baseline, current = runs("unjudged")
    comparison = compare_runs(current, baseline, [RULE], significance=FAST, qrels=qrels())
    assert "insufficient_evidence" == gate_verdict(comparison)


def test_the_comparison_json_carries_coverage() -> None:
    """to_dict gives each coverage change with its metric name and counts."""
    baseline, current = runs("unjudged")
    data = compare_runs(current, baseline, [RULE], significance=FAST, qrels=qrels()).to_dict()
    (entry,) = data["coverage"]
    assert ("judged@10", 60, 30) == (entry["metric"], entry["unjudged_added"], entry["queries"])


def test_queries_judged_only_by_their_relevant_documents_hold_nothing() -> None:
    """Without a judged non-relevant document coverage is not measured: a breach alerts."""
    baseline, current = runs("unjudged")
    relevant_only = {qid: {f"r{int(qid[1:])}": 1} for qid in qrels()}
    comparison = compare_runs(current, baseline, [RULE], significance=FAST, qrels=relevant_only)
    assert ("regression", ()) == (comparison.verdict, comparison.coverage)


def test_a_held_rule_keeps_the_state_of_its_regression_alert() -> None:
    """A rule held as unjudged is not among the rules a run may resolve alerts of."""
    from monitor.alerts.build import checked_rules

    baseline, current = runs("unjudged")
    comparison = compare_runs(current, baseline, [RULE], significance=FAST, qrels=qrels())
    assert frozenset() == checked_rules(comparison)
