"""Worked examples: small collections whose values are computed by hand beside each case.

The expected values were computed by hand from the definitions in the family modules; the
arithmetic is written beside each one. test_metrics_trec_eval.py checks the five-question
example against trec_eval too, and every measure on generated collections.
"""

from __future__ import annotations

import math

import pytest
from metric_cases import FIVE_QUESTIONS_QRELS, FIVE_QUESTIONS_RUN, mean


# Five questions (metric_cases.py), five documents retrieved each. Relevant documents found:
# A one of one, at rank 1; B one of one, at rank 3; C two of two, at ranks 2 and 4;
# D none of one; E one of two, at rank 1.
@pytest.mark.parametrize(
    ("metric", "expected"),
    [
        # A, B, C and E have a relevant document in the top 5: 4/5 = 0.8
        ("hit_rate@5", (1 + 1 + 1 + 0 + 1) / 5),
        # A 1/1, B 1/1, C 2/2, D 0/1, E 1/2: 3.5/5 = 0.7
        ("recall@5", (1 + 1 + 1 + 0 + 0.5) / 5),
        # A 1/5, B 1/5, C 2/5, D 0/5, E 1/5: 1.0/5 = 0.2
        ("precision@5", (0.2 + 0.2 + 0.4 + 0 + 0.2) / 5),
        # A 1/1, B 1/3, C 1/2, D 0, E 1/1: (17/6)/5 = 17/30 = 0.567
        ("mrr@5", (1 + 1 / 3 + 1 / 2 + 0 + 1) / 5),
    ],
)
def test_five_questions(metric: str, expected: float) -> None:
    """The five-question example gives the hand-computed mean of each measure."""
    assert expected == pytest.approx(mean(FIVE_QUESTIONS_QRELS, FIVE_QUESTIONS_RUN, metric))


def test_five_questions_mrr_to_three_decimals() -> None:
    """The five-question MRR@5 reads 0.567 to three decimals."""
    assert 0.567 == round(mean(FIVE_QUESTIONS_QRELS, FIVE_QUESTIONS_RUN, "mrr@5"), 3)


# Three relevant among the five retrieved (ranks 1, 2, 4), six relevant judged in all.
SIX_RELEVANT_QRELS = {"q": {f"r{i}": 1 for i in range(6)}}
SIX_RELEVANT_RUN = {"q": ["r0", "r1", "n0", "r2", "n1"]}


@pytest.mark.parametrize(
    ("metric", "expected"),
    [
        ("precision@5", 3 / 5),  # 3 relevant of 5 retrieved = 0.6
        ("recall@5", 3 / 6),  # 3 relevant of 6 judged = 0.5
    ],
)
def test_three_of_five_retrieved_six_relevant(metric: str, expected: float) -> None:
    """Three relevant of five retrieved, six relevant in all: P@5 0.6, R@5 0.5."""
    assert expected == pytest.approx(mean(SIX_RELEVANT_QRELS, SIX_RELEVANT_RUN, metric))


def test_average_precision_of_ranks_1_3_5() -> None:
    """Relevant documents at ranks 1, 3 and 5 of three relevant give AP 0.756."""
    qrels = {"q": {"r1": 1, "r3": 1, "r5": 1}}
    run = {"q": ["r1", "n2", "r3", "n4", "r5"]}
    # (P@1 + P@3 + P@5) / R = (1/1 + 2/3 + 3/5) / 3 = 2.2667 / 3 = 0.756
    assert (1 / 1 + 2 / 3 + 3 / 5) / 3 == pytest.approx(mean(qrels, run, "map"))
    assert 0.756 == round(mean(qrels, run, "map"), 3)


def test_ndcg_of_grades_3_0_1() -> None:
    """Grades [3, 0, 1] down the ranking, judged grades {3, 1}, give nDCG@3 0.964."""
    qrels = {"q": {"a": 3, "b": 0, "c": 1}}
    run = {"q": ["a", "b", "c"]}
    # DCG  = 3/log2(2) + 0/log2(3) + 1/log2(4) = 3 + 0 + 0.5 = 3.5
    # IDCG = 3/log2(2) + 1/log2(3)             = 3 + 0.6309 = 3.6309
    # nDCG = 3.5 / 3.6309 = 0.964
    assert 3.5 / (3 + 1 / math.log2(3)) == pytest.approx(mean(qrels, run, "ndcg@3"))
    assert 0.964 == round(mean(qrels, run, "ndcg@3"), 3)
