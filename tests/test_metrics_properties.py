"""Invariants every measure keeps, on judgments and runs drawn by hypothesis."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from metric_cases import trec_order

from monitor.metrics.evaluation import evaluate
from monitor.metrics.spec import MEASURES, UNBOUNDED, Cutoff

pytestmark = pytest.mark.slow

CUTOFFS = (1, 2, 3, 5, 10)
AT_K = tuple(name for name, rule in MEASURES.items() if rule is not Cutoff.NONE)
EVERY_METRIC = [
    *(f"{name}@{k}" for name in AT_K for k in CUTOFFS),
    *(name for name, rule in MEASURES.items() if rule is not Cutoff.REQUIRED),
]

DOCS = [f"d{i}" for i in range(12)]
doc_ids = st.sampled_from(DOCS)
grades = st.integers(min_value=-2, max_value=3)
judgments = st.dictionaries(doc_ids, grades, min_size=1, max_size=8)
# A small score set makes ties common; any float, including -0.0 and infinities, may come.
scores = st.sampled_from([0.0, 0.5, 1.0]) | st.floats(allow_nan=False)
unique_lists = st.lists(doc_ids, unique=True, max_size=12)
rankings = st.lists(doc_ids, max_size=16) | st.dictionaries(doc_ids, scores, max_size=12)
query_ids = st.sampled_from(["q1", "q2", "q3"])
qrels_sets = st.dictionaries(query_ids, judgments, min_size=1)
runs = st.dictionaries(query_ids, rankings)

# Evaluating builds numpy arrays: the first example pays for warm-up, so no per-example deadline.
no_deadline = settings(deadline=None)


def per_query(qrels: dict, run: dict, metrics: list[str]) -> dict[str, list[float]]:
    """Return each metric's values over every judged query."""
    result = evaluate(qrels, run, metrics, include_no_relevant=True)
    return {str(metric): values.tolist() for metric, values in result.values.items()}


@st.composite
def perfect_rankings(draw: st.DrawFn) -> tuple[dict[str, int], list[str]]:
    """Draw judgments with a relevant document and a run ranking them ideally."""
    judged = draw(judgments.filter(lambda docs: max(docs.values()) >= 1))
    relevant = [doc for doc, grade in judged.items() if grade >= 1]
    best_first = sorted(relevant, key=judged.__getitem__, reverse=True)
    others = draw(st.permutations([doc for doc in DOCS if judged.get(doc, 0) < 1]))
    return judged, [*best_first, *others[: draw(st.integers(0, len(others)))]]


@no_deadline
@given(qrels=qrels_sets, run=runs)
def test_every_value_is_between_0_and_1(qrels: dict, run: dict) -> None:
    """Every ratio measure (not a count, not DCG) gives each query a value in [0, 1]."""
    values = per_query(qrels, run, EVERY_METRIC)
    outside = {
        name: v
        for name, column in values.items()
        for v in column
        if not 0 <= v <= 1 and name.split("@")[0] not in UNBOUNDED
    }
    assert {} == outside


@no_deadline
@given(case=perfect_rankings(), k=st.sampled_from(CUTOFFS))
def test_perfect_ranking_scores_1(case: tuple[dict[str, int], list[str]], k: int) -> None:
    """Relevant documents first, by grade descending, score 1 on the rank-sensitive measures."""
    judged, ranked = case
    n_relevant = sum(grade >= 1 for grade in judged.values())
    metrics = [
        "ndcg",
        f"ndcg@{k}",
        "ndcg_burges",
        f"ndcg_burges@{k}",
        "map",
        "mrr",
        f"mrr@{k}",
        f"recall@{n_relevant}",
        "r_precision",
        f"hit_rate@{k}",
    ]
    values = per_query({"q": judged}, {"q": ranked}, metrics)
    assert {metric: [1.0] for metric in metrics} == values


@no_deadline
@given(judged=judgments, ranked=unique_lists, k=st.sampled_from(CUTOFFS), data=st.data())
def test_shuffling_below_the_cutoff_changes_nothing_at_k(
    judged: dict[str, int], ranked: list[str], k: int, data: st.DataObject
) -> None:
    """Reordering the documents below rank k leaves every @k measure unchanged."""
    shuffled = [*ranked[:k], *data.draw(st.permutations(ranked[k:]))]
    metrics = [f"{name}@{k}" for name in AT_K]
    before = per_query({"q": judged}, {"q": ranked}, metrics)
    assert before == per_query({"q": judged}, {"q": shuffled}, metrics)


@no_deadline
@given(judged=judgments, ranked=unique_lists.filter(bool), data=st.data())
def test_appending_a_non_relevant_document_changes_nothing(
    judged: dict[str, int], ranked: list[str], data: st.DataObject
) -> None:
    """A non-relevant document added at the end changes no measure at a cutoff within the run."""
    extra = data.draw(
        st.sampled_from(
            [doc for doc in [*DOCS, "unjudged"] if doc not in ranked and judged.get(doc, 0) < 1]
        )
    )
    k = data.draw(st.integers(min_value=1, max_value=len(ranked)))
    metrics = [*(f"{name}@{k}" for name in AT_K), "mrr", "ndcg", "map", "r_precision"]
    before = per_query({"q": judged}, {"q": ranked}, metrics)
    assert before == per_query({"q": judged}, {"q": [*ranked, extra]}, metrics)


@no_deadline
@given(qrels=qrels_sets, run=st.dictionaries(query_ids, st.lists(doc_ids, max_size=16)))
def test_repeated_ids_score_as_the_deduplicated_list(qrels: dict, run: dict) -> None:
    """A list run with repeated ids scores as the same list keeping each id's first copy."""
    deduplicated = {qid: list(dict.fromkeys(ranked)) for qid, ranked in run.items()}
    assert per_query(qrels, deduplicated, EVERY_METRIC) == per_query(qrels, run, EVERY_METRIC)


@no_deadline
@given(
    qrels=qrels_sets,
    run=st.dictionaries(query_ids, st.dictionaries(doc_ids, scores, max_size=12)),
)
def test_score_run_scores_as_its_trec_eval_order(qrels: dict, run: dict) -> None:
    """A {doc: score} run scores as its ids listed by score, then doc id, descending."""
    ranked = {qid: trec_order(ranking) for qid, ranking in run.items()}
    assert per_query(qrels, ranked, EVERY_METRIC) == per_query(qrels, run, EVERY_METRIC)
