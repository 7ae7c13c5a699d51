"""bpref, judged@k and the judged-only option on one-query examples worked out by hand."""

from __future__ import annotations

import pytest

from monitor.metrics.evaluation import evaluate

#: Two relevant (a, c), one judged non-relevant (b), one judged "in the pool, unjudged" (d).
QRELS = {"q": {"a": 1, "b": 0, "c": 2, "d": -1}}


def value(run: list[str], metric: str, **options: object) -> float:
    """Return the one query's value of ``metric``."""
    return evaluate(QRELS, {"q": run}, [metric], **options).means[metric]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        (["a", "c", "b"], 1.0),  # no judged non-relevant above either relevant
        (["b", "a", "c"], 0.0),  # R = 2, N = 1: each loses min(1, 2) / min(1, 2)
        (["a", "b", "c"], 0.5),  # c loses 1, a keeps 1: (1 + 0) / 2
        (["x", "d", "a"], 0.5),  # unjudged x and negative d are skipped; c never retrieved
        ([], 0.0),
    ],
)
def test_bpref_penalises_judged_non_relevant_ranked_above(run: list[str], expected: float) -> None:
    """bpref counts, per relevant document, the judged non-relevant ones above it."""
    assert expected == pytest.approx(value(run, "bpref"))


def test_bpref_bounds_the_penalty_by_the_number_of_relevant() -> None:
    """With more judged non-relevant than relevant, the penalty is min(n, R) / R."""
    qrels = {"q": {"a": 1, "n1": 0, "n2": 0, "n3": 0}}
    # R = 1, N = 3: the one relevant has 2 non-relevant above, 1 - min(2, 1) / min(3, 1) = 0
    assert 0.0 == evaluate(qrels, {"q": ["n1", "n2", "a"]}, ["bpref"]).means["bpref"]


@pytest.mark.parametrize(
    ("run", "metric", "expected"),
    [
        (["a", "x", "b", "y"], "judged@2", 1 / 2),
        (["a", "x", "b", "y"], "judged@4", 2 / 4),
        (["d", "b"], "judged@10", 1.0),  # a negative grade is a judgment; 2 shown, not 10
        (["x", "y"], "judged@1", 0.0),
    ],
)
def test_judged_at_k_is_the_share_of_the_top_k_with_a_judgment(
    run: list[str], metric: str, expected: float
) -> None:
    """judged@k divides the judged documents of the top k by min(k, retrieved)."""
    assert expected == pytest.approx(value(run, metric))


def test_judged_at_k_of_an_empty_ranking_is_zero() -> None:
    """A query that retrieved nothing has judged@k = 0."""
    assert 0.0 == value([], "judged@5")


@pytest.mark.parametrize(
    ("metric", "plain", "judged_only"),
    [
        ("precision@2", 0 / 2, 1 / 2),  # x, d, y removed: a, b, c move to ranks 1, 2, 3
        ("mrr", 1 / 4, 1.0),
        ("num_ret", 6.0, 3.0),  # d (grade -1) is removed too, as trec_eval -J does
        ("judged@3", 1 / 3, 1.0),  # d (grade -1) is a judgment for judged@k
    ],
)
def test_judged_only_removes_unjudged_documents_before_scoring(
    metric: str, plain: float, judged_only: float
) -> None:
    """judged_only drops documents without a grade >= 0 judgment from the ranking."""
    run = ["x", "d", "y", "a", "b", "c"]
    assert (plain, judged_only) == pytest.approx(
        (value(run, metric), value(run, metric, judged_only=True))
    )


def test_infap_is_ap_when_every_pool_document_is_judged() -> None:
    """With no negative grade, inferred AP is AP up to trec_eval's epsilon terms."""
    qrels = {"q": {"a": 1, "b": 0, "c": 1}}
    run = {"q": ["b", "a", "x", "c"]}
    result = evaluate(qrels, run, ["infap", "map"])
    assert result.means["map"] == pytest.approx(result.means["infap"], abs=1e-4)


def test_infap_infers_precision_from_the_judged_share_above() -> None:
    """A relevant document below a sampled-out one gets the judged share's precision."""
    # R = 1; "a" at rank 3 under "s" (grade -1, pooled unjudged) and "n" (judged non-relevant):
    # 1/3 + (2/3) * (2 pooled / 2) * ((0 + e) / (1 + 2e))
    e = 0.00001
    expected = 1 / 3 + (2 / 3) * 1.0 * (e / (1 + 2 * e))
    value = evaluate({"q": {"a": 1, "n": 0, "s": -1}}, {"q": ["s", "n", "a"]}, ["infap"])
    assert expected == pytest.approx(value.means["infap"], abs=1e-12)
