"""err@k (expected reciprocal rank) as gdeval computes it, worked out by hand.

The collection is ir_measures' tests/test_gdeval.py's (the conformance case
``ir_measures/gdeval``). gdeval ranks by score descending, so query 0 reads D0 (0), D2 (1),
D3 (2), D1 (1), D4 (0), and query 1 reads D1 (unjudged), D3 (2), D2, D4. Each grade g stops
the user with probability (2**g - 1) / 16.
"""

from __future__ import annotations

import pytest

from monitor.metrics.evaluation import evaluate

QRELS = {
    "0": {"D0": 0, "D1": 1, "D2": 1, "D3": 2, "D4": 0},
    "1": {"D0": 1, "D3": 2, "D5": 2},
}
RUN = {
    "0": {"D0": 0.8, "D2": 0.7, "D1": 0.3, "D3": 0.4, "D4": 0.1},
    "1": {"D1": 0.8, "D3": 0.7, "D4": 0.3, "D2": 0.4},
}
# 1/2 * 1/16 + 1/3 * 3/16 * 15/16 + 1/4 * 1/16 * 15/16 * 13/16
ERR_Q0 = 1 / 32 + (3 / 16) * (15 / 16) / 3 + (1 / 16) * (15 / 16) * (13 / 16) / 4
ERR_Q1 = (3 / 16) / 2  # D3 at rank 2


@pytest.mark.parametrize(
    ("metric", "expected"),
    [("err@20", {"0": ERR_Q0, "1": ERR_Q1}), ("err@2", {"0": 1 / 32, "1": ERR_Q1})],
)
def test_err_follows_the_cascade_of_stop_probabilities(
    metric: str, expected: dict[str, float]
) -> None:
    """Each rank adds 1/r times the chance the user gets there and stops there."""
    result = evaluate(QRELS, RUN, [metric])
    assert expected == pytest.approx({qid: result.value(metric, qid) for qid in expected})


def test_err_counts_grades_above_4_as_4() -> None:
    """gdeval's scale ends at 4: a grade of 7 stops the user as often as a grade of 4."""
    four = evaluate({"q": {"a": 4}}, {"q": ["a"]}, ["err"]).means["err"]
    seven = evaluate({"q": {"a": 7}}, {"q": ["a"]}, ["err"]).means["err"]
    assert (15 / 16, 15 / 16) == pytest.approx((four, seven))


def test_err_of_a_query_with_nothing_relevant_retrieved_is_zero() -> None:
    """No graded document in the ranking means the user never stops: ERR is 0."""
    assert 0.0 == evaluate({"q": {"a": 2}}, {"q": ["x", "y"]}, ["err@10"]).means["err@10"]
