"""evaluate() on a runner result: failed queries score 0, or are left out when asked."""

from __future__ import annotations

from monitor.errors import SearchCallError
from monitor.metrics.evaluation import evaluate
from monitor.runner import RunResult, run_queries
from monitor.testing import FakeSearch, sample_queries

QUERIES = sample_queries(4)
QRELS = {q.id: dict.fromkeys(q.relevant_ids, 1) for q in QUERIES}


def second_fails() -> RunResult:
    """Return a run answering every query perfectly except the second, an HTTP 500."""
    search = FakeSearch(
        {q.id: list(q.relevant_ids) for q in QUERIES},
        failures={QUERIES[1].id: SearchCallError("HTTPStatusError 500", "server error")},
    )
    return run_queries(QUERIES, search, retries=0)


def test_evaluate_leaves_failed_queries_out_of_the_means_when_asked() -> None:
    """With exclude_failed, a failed query has no value and the means are over the answered."""
    result = second_fails()
    evaluation = evaluate(QRELS, result, ["mrr@10"], exclude_failed=True)
    assert (QUERIES[0].id, QUERIES[2].id, QUERIES[3].id) == evaluation.query_ids
    assert {"mrr@10": 1.0} == evaluation.means


def test_evaluate_still_scores_failed_queries_zero_by_default() -> None:
    """Without exclude_failed, a failed query ranks nothing and scores 0, like trec_eval -c."""
    result = second_fails()
    assert {"mrr@10": 0.75} == evaluate(QRELS, result, ["mrr@10"]).means
