"""Exact semantics of each measure on one-query examples (trec_eval's definitions).

Each case names one rule: how short runs, repeated ids, score ties, graded and negative
judgments and cutoffs are handled. Values are worked out by hand in the comments.
"""

from __future__ import annotations

import math

import pytest
from metric_cases import mean

LOG2_3 = math.log2(3)


def test_precision_divides_by_k_for_a_short_run() -> None:
    """precision@k divides by k even when the run returned fewer than k documents."""
    # 1 relevant retrieved / k = 10 (not / 2 retrieved)
    assert 1 / 10 == mean({"q": {"r": 1}}, {"q": ["r", "n"]}, "precision@10")


@pytest.mark.parametrize(
    ("run", "metric", "expected"),
    [
        # the copy of "r" at rank 3 is dropped: 1 relevant in the top 3, not 2
        (["r", "n", "r"], "precision@3", 1 / 3),
        # the copy of "n" is dropped, so "r" moves up from rank 3 to rank 2
        (["n", "n", "r"], "mrr", 1 / 2),
        (["n", "n", "r"], "precision@2", 1 / 2),
        # "r" keeps its best position, rank 1
        (["r", "r", "n"], "mrr", 1.0),
    ],
)
def test_repeated_id_counts_once_at_its_best_position(
    run: list[str], metric: str, expected: float
) -> None:
    """A repeated doc id counts once, at its first position, and the documents below move up."""
    assert expected == pytest.approx(mean({"q": {"r": 1}}, {"q": run}, metric))


@pytest.mark.parametrize(
    ("scores", "relevant", "expected_rank"),
    [
        ({"a": 1.0, "b": 1.0}, "b", 1),  # "b" > "a"
        ({"a": 1.0, "b": 1.0}, "a", 2),
        ({"d10": 1.0, "d9": 1.0}, "d9", 1),  # compared as strings, not numbers: "d9" > "d10"
        ({"Z": 1.0, "a": 1.0}, "a", 1),  # byte order: "Z" (0x5a) < "a" (0x61)
        ({"doc-e": 1.0, "doc-é": 1.0}, "doc-é", 1),  # UTF-8 bytes: 0xc3 > "e" (0x65)
        ({"a": 2.0, "b": 1.0}, "a", 1),  # the score decides before the id
        ({"a": 0.5, "b": 0.5, "c": 0.5, "z": 2.0}, "a", 4),  # "z" by score, then "c", "b"
    ],
)
def test_score_ties_are_broken_by_doc_id_descending(
    scores: dict[str, float], relevant: str, expected_rank: int
) -> None:
    """A {doc: score} run is ranked by score descending, then doc id descending (trec_eval)."""
    assert 1 / expected_rank == mean({"q": {relevant: 1}}, {"q": scores}, "mrr")


@pytest.mark.parametrize("metric", ["mrr", "ndcg", "map", "precision@3", "recall@3"])
def test_negative_grade_is_not_relevant(metric: str) -> None:
    """A document judged with a negative grade counts as non-relevant, like grade 0."""
    negative = mean({"q": {"bad": -2, "r": 1}}, {"q": ["bad", "r"]}, metric)
    zero = mean({"q": {"bad": 0, "r": 1}}, {"q": ["bad", "r"]}, metric)
    assert zero == negative


def test_negative_grade_gains_nothing() -> None:
    """A negative grade adds no negative gain to DCG: nDCG is that of the relevant doc alone."""
    # DCG = 0 (grade -2 at rank 1, gain 0, not -2) + 1/log2(3) ; IDCG = 1
    assert 1 / LOG2_3 == pytest.approx(
        mean({"q": {"bad": -2, "r": 1}}, {"q": ["bad", "r"]}, "ndcg")
    )


def test_ndcg_ideal_uses_every_judged_relevant_document() -> None:
    """The ideal ranking of nDCG holds every judged grade > 0, retrieved or not."""
    qrels = {"q": {"a": 3, "b": 1}}
    # DCG = 1/log2(2) = 1 ; IDCG = 3/log2(2) + 1/log2(3) = 3.6309 (not 1, from "b" alone)
    assert 1 / (3 + 1 / LOG2_3) == pytest.approx(mean(qrels, {"q": ["b"]}, "ndcg"))


def test_ndcg_at_k_cuts_the_ideal_ranking_at_k() -> None:
    """nDCG@k divides by the ideal DCG of the k best judged grades."""
    qrels = {"q": {"a": 3, "b": 2, "c": 1}}
    # DCG@1 = 2 ("b") ; IDCG@1 = 3 ("a")
    assert 2 / 3 == pytest.approx(mean(qrels, {"q": ["b", "a", "c"]}, "ndcg@1"))


def test_ndcg_burges_gain_is_two_to_the_grade_minus_one() -> None:
    """ndcg_burges uses the gain 2**grade - 1, ndcg the grade itself."""
    qrels = {"q": {"a": 1, "b": 3}}
    run = {"q": ["a", "b"]}
    # DCG  = (2**1 - 1)/log2(2) + (2**3 - 1)/log2(3) = 1 + 7/1.585
    # IDCG = (2**3 - 1)/log2(2) + (2**1 - 1)/log2(3) = 7 + 1/1.585
    assert (1 + 7 / LOG2_3) / (7 + 1 / LOG2_3) == pytest.approx(mean(qrels, run, "ndcg_burges"))


def test_ndcg_gain_is_the_grade() -> None:
    """ndcg uses the grade as gain (trec_eval's ndcg)."""
    qrels = {"q": {"a": 1, "b": 3}}
    run = {"q": ["a", "b"]}
    # DCG = 1/log2(2) + 3/log2(3) ; IDCG = 3/log2(2) + 1/log2(3)
    assert (1 + 3 / LOG2_3) / (3 + 1 / LOG2_3) == pytest.approx(mean(qrels, run, "ndcg"))


def test_average_precision_divides_by_all_relevant_judgments() -> None:
    """AP divides by R, the relevant judgments, not by the relevant documents retrieved."""
    # precision@1 = 1 for "a"; "b" never retrieved: (1 + 0) / R = 1/2, not 1/1
    assert 1 / 2 == mean({"q": {"a": 1, "b": 1}}, {"q": ["a", "n"]}, "map")


def test_average_precision_at_k_ignores_ranks_below_k() -> None:
    """map@k sums precision only at relevant ranks <= k, still dividing by R."""
    # "a" at rank 1 (P = 1) counts, "b" at rank 3 (P = 2/3) is below k = 2: (1 + 0) / 2
    assert 1 / 2 == mean({"q": {"a": 1, "b": 1}}, {"q": ["a", "n", "b"]}, "map@2")


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        # P@5 = 1/5, R@5 = 1/2: 2 * 0.2 * 0.5 / 0.7 = 2/7 = 2 * rel / (k + R)
        (["a", "n1", "n2", "n3", "n4"], 2 / 7),
        # P@5 = 2/5, R@5 = 2/2: 2 * 0.4 * 1 / 1.4 = 4/7
        (["a", "b", "n1", "n2", "n3"], 4 / 7),
        # nothing relevant retrieved: 0, not 0/0
        (["n1", "n2"], 0.0),
    ],
)
def test_f1_is_the_harmonic_mean_of_precision_and_recall(run: list[str], expected: float) -> None:
    """f1@k is 2 P@k R@k / (P@k + R@k), 0 when nothing relevant is retrieved."""
    assert expected == pytest.approx(mean({"q": {"a": 1, "b": 1}}, {"q": run}, "f1@5"))


def test_r_precision_is_precision_at_rank_r() -> None:
    """r_precision is the share of relevant documents in the top R, R the relevant judgments."""
    # R = 2; top 2 = ["a", "n"]: 1 relevant / 2
    assert 1 / 2 == mean({"q": {"a": 1, "b": 1}}, {"q": ["a", "n", "b"]}, "r_precision")


@pytest.mark.parametrize(("metric", "expected"), [("mrr", 1 / 4), ("mrr@3", 0.0), ("mrr@4", 1 / 4)])
def test_mrr_cutoff_drops_a_first_relevant_below_k(metric: str, expected: float) -> None:
    """mrr has no cutoff; mrr@k is 0 when the first relevant document sits below rank k."""
    assert expected == mean({"q": {"r": 1}}, {"q": ["n1", "n2", "n3", "r"]}, metric)


@pytest.mark.parametrize(("k", "expected"), [(2, 0.0), (3, 1.0)])
def test_hit_rate_counts_a_relevant_document_at_rank_k(k: int, expected: float) -> None:
    """hit_rate@k is 1 when a relevant document sits at rank k or above, else 0."""
    assert expected == mean({"q": {"r": 1}}, {"q": ["n1", "n2", "r"]}, f"hit_rate@{k}")


@pytest.mark.parametrize("grade", [1, 2, 5])
def test_any_positive_grade_is_relevant(grade: int) -> None:
    """Binary measures count every grade >= 1 as relevant."""
    assert 1.0 == mean({"q": {"r": grade}}, {"q": ["r"]}, "recall@1")


def test_unjudged_document_is_not_relevant() -> None:
    """A retrieved document without a judgment counts as non-relevant."""
    assert 1 / 2 == mean({"q": {"r": 1}}, {"q": ["unjudged", "r"]}, "mrr")
