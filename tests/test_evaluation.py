"""evaluate(): which queries are evaluated, what is counted aside, and the shape of the result."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from monitor.errors import InputError
from monitor.metrics import ranks
from monitor.metrics.evaluation import EvaluationResult, evaluate

# q1 found at rank 1; q2 has no relevant judgment; q3 is judged but absent from the run;
# "extra" is in the run but not judged.
QRELS = {"q1": {"r": 1}, "q2": {"n": 0, "neg": -1}, "q3": {"r": 1}}
RUN = {"q1": ["r"], "q2": ["n"], "extra": ["r"]}


@pytest.fixture
def result() -> EvaluationResult:
    """The evaluation of RUN against QRELS on recall@1."""
    return evaluate(QRELS, RUN, ["recall@1"])


def test_query_without_relevant_judgment_is_skipped(result: EvaluationResult) -> None:
    """A judged query with no grade >= 1 is left out of the means."""
    assert ("q1", "q3") == result.query_ids


def test_skipped_queries_are_counted(result: EvaluationResult) -> None:
    """The queries without a relevant judgment are counted as skipped_no_relevant."""
    assert 1 == result.counts.skipped_no_relevant


def test_include_no_relevant_scores_those_queries_zero() -> None:
    """With include_no_relevant, a query with no relevant judgment is evaluated and scores 0."""
    included = evaluate(QRELS, RUN, ["recall@1"], include_no_relevant=True)
    assert {"q1": 1.0, "q2": 0.0, "q3": 0.0} == included.per_query["recall@1"].to_dict()


def test_include_no_relevant_lowers_the_mean() -> None:
    """The zeros of the included queries enter the mean."""
    included = evaluate(QRELS, RUN, ["recall@1"], include_no_relevant=True)
    assert (1 + 0 + 0) / 3 == included.means["recall@1"]


def test_judged_query_missing_from_run_scores_zero(result: EvaluationResult) -> None:
    """A judged query absent from the run is evaluated and scores 0."""
    assert 0.0 == result.value("recall@1", "q3")


def test_missing_queries_are_counted(result: EvaluationResult) -> None:
    """The judged queries absent from the run are counted as missing_from_run."""
    assert 1 == result.counts.missing_from_run


def test_run_query_without_judgments_is_ignored(result: EvaluationResult) -> None:
    """A run query with no judgment is not evaluated."""
    assert "extra" not in result.query_ids


def test_run_queries_without_judgments_are_counted(result: EvaluationResult) -> None:
    """The run queries with no judgment are counted as not_judged."""
    assert 1 == result.counts.not_judged


def test_mean_is_over_evaluated_queries(result: EvaluationResult) -> None:
    """The mean is over the evaluated queries: q1 (1) and q3 (0)."""
    assert (1 + 0) / 2 == result.means["recall@1"]


def test_duplicates_are_counted() -> None:
    """The result reports how many repeated ids were dropped and in how many queries."""
    run = {"q1": ["a", "a", "r", "a"], "q3": ["r", "b", "r"]}
    result = evaluate(QRELS, run, ["mrr"])
    assert (3, 2) == (result.duplicates, result.queries_with_duplicates)


def test_result_dict_has_means_and_counts(result: EvaluationResult) -> None:
    """to_dict() gives the means under "metrics" and the query counts under "queries"."""
    expected = {
        "metrics": {"recall@1": 0.5},
        "queries": {
            "evaluated": 2,
            "skipped_no_relevant": 1,
            "missing_from_run": 1,
            "not_judged": 1,
        },
    }
    assert expected == result.to_dict()


def test_result_dict_per_query(result: EvaluationResult) -> None:
    """to_dict(per_query=True) adds each evaluated query's values."""
    assert {"q1": {"recall@1": 1.0}, "q3": {"recall@1": 0.0}} == result.to_dict(per_query=True)[
        "per_query"
    ]


def test_per_query_frame_is_indexed_by_query_id() -> None:
    """per_query has one row per evaluated query (index query_id) and one column per metric."""
    frame = evaluate(QRELS, RUN, ["recall@1", "mrr"]).per_query
    assert (["q1", "q3"], "query_id", ["recall@1", "mrr"]) == (
        frame.index.tolist(),
        frame.index.name,
        frame.columns.tolist(),
    )


def test_means_keep_the_order_of_the_metrics_asked() -> None:
    """The means are listed in the order the metrics were asked for."""
    names = ["ndcg@10", "map", "hit_rate@1", "mrr@5"]
    assert names == list(evaluate(QRELS, RUN, names).means)


def test_default_metrics() -> None:
    """Without metrics, evaluate() computes six measures at cutoffs 1, 3, 5 and 10."""
    expected = [
        f"{measure}@{k}"
        for measure in ("hit_rate", "recall", "precision", "mrr", "ndcg", "map")
        for k in (1, 3, 5, 10)
    ]
    assert expected == list(evaluate(QRELS, RUN).means)


def test_means_are_nan_without_evaluated_queries() -> None:
    """With no query to evaluate, each mean is NaN rather than a misleading 0."""
    means = evaluate({"q": {"n": 0}}, {"q": ["n"]}, ["mrr"]).means
    assert math.isnan(means["mrr"])


def test_score_run_and_list_run_agree() -> None:
    """A {doc: score} run scores the same as its documents listed in trec_eval's order."""
    qrels = {"q": {"a": 2, "c": 1}}
    scores = {"q": {"a": 0.5, "b": 0.5, "c": 0.9, "d": 0.1}}
    ranked = {"q": ["c", "b", "a", "d"]}  # 0.9, then the 0.5 tie by id descending, then 0.1
    names = ["ndcg@3", "map", "mrr", "precision@2"]
    assert evaluate(qrels, ranked, names).means == evaluate(qrels, scores, names).means


def _scored_runs(seed: int) -> tuple[dict, dict, dict]:
    """Return judgments, {doc: score} runs of many lengths (empty ones too) with tied and
    infinite scores, and the same runs as lists in trec_eval's order."""
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    scores: dict[str, dict[str, float]] = {}
    for q in range(120):
        docs = [f"d{i:03d}" for i in range(rng.choice([0, 1, 2, 7, 40, 130]))]
        levels = [-math.inf, 0.5, 1.0, math.inf]
        scores[f"q{q}"] = {d: rng.choice([*levels, rng.random(), rng.random()]) for d in docs}
        judged = [*rng.sample(docs, min(len(docs), 4)), f"missing{q}"]
        qrels[f"q{q}"] = {d: rng.choice([0, 1, 2]) for d in judged}
    ranked = {
        q: sorted(run, key=lambda d, run=run: (run[d], d), reverse=True)
        for q, run in scores.items()
    }
    return qrels, scores, ranked


@pytest.mark.parametrize("block_cells", [1, 100, 1 << 18])
def test_score_runs_rank_as_their_ordered_lists_in_blocks_of_any_size(
    block_cells: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """{doc: score} runs of many lengths, ties and infinite scores among them, score per
    query as their docs listed in trec_eval's order, however the runs are cut into blocks."""
    monkeypatch.setattr(ranks, "_BLOCK_CELLS", block_cells)
    qrels, scores, ranked = _scored_runs(seed=7)
    names = ["ndcg@10", "map", "mrr", "precision@5", "recall@100", "bpref"]
    expected = evaluate(qrels, ranked, names).per_query
    assert expected.to_dict() == evaluate(qrels, scores, names).per_query.to_dict()


@pytest.mark.parametrize("grade", [1.5, "high"])
def test_non_integer_grade_is_an_input_error(grade: object) -> None:
    """A grade that is not an integer raises an InputError naming the qrels."""
    with pytest.raises(InputError, match=r"<qrels>.*integer grades"):
        evaluate({"q": {"d": grade}}, {"q": ["d"]}, ["mrr"])  # type: ignore[dict-item]


def test_nan_score_is_an_input_error() -> None:
    """A NaN score in a {doc: score} run raises an InputError naming the run."""
    with pytest.raises(InputError, match=r"<run>.*numeric scores"):
        evaluate({"q": {"d": 1}}, {"q": {"d": 1.0, "e": math.nan}}, ["mrr"])


def test_unsupported_run_type_is_an_input_error() -> None:
    """A run that is neither a mapping, a run result nor a path raises an InputError."""
    with pytest.raises(InputError, match="<run>"):
        evaluate({"q": {"d": 1}}, 42, ["mrr"])  # type: ignore[arg-type]


def test_a_string_ranking_is_refused() -> None:
    """A ranking given as one string (not a list of ids) is an input error naming the query."""
    with pytest.raises(InputError, match="'q1'"):
        evaluate({"q1": {"d1": 1}}, {"q1": "d1"}, ["mrr"])


def test_a_bad_qrels_file_is_named_before_a_bad_run_file(tmp_path: Path) -> None:
    """Both files bad: the judgments' fault is the one reported, as when they are read first
    (they are read while the run is)."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d2\n")
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 not-a-score tag\n")
    with pytest.raises(InputError) as caught:
        evaluate(qrels, run, ["recall@5"])
    assert (str(qrels), 2) == (caught.value.source, caught.value.line)


def test_a_path_pair_scores_as_the_mappings_do(tmp_path: Path) -> None:
    """Judgments and run given as files score as the same judgments and run in memory."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d3 2\nq2 0 d9 1\n")
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d3 1 2.0 t\nq1 Q0 d2 2 1.5 t\nq1 Q0 d1 3 1.0 t\nq2 Q0 d4 1 3.0 t\n")
    from_files = evaluate(qrels, run, ["ndcg@10", "recall@1"]).means
    in_memory = evaluate(
        {"q1": {"d1": 1, "d3": 2}, "q2": {"d9": 1}},
        {"q1": {"d3": 2.0, "d2": 1.5, "d1": 1.0}, "q2": {"d4": 3.0}},
        ["ndcg@10", "recall@1"],
    ).means
    assert in_memory == from_files


@pytest.mark.parametrize("average", ["answerable", "all", "trec_eval"])
def test_slices_scored_apart_and_joined_give_the_whole_evaluation(average: str) -> None:
    """A sharded run scores each slice of the eval set on its own and joins the values: the
    joined evaluation is the whole run's, value for value, order and counts included."""
    rng = random.Random(7)
    order = [f"q{i:03d}" for i in range(120)]
    qrels = {
        qid: {f"d{rng.randrange(40)}": rng.randrange(3) for _ in range(rng.randrange(4))}
        for qid in order
    }
    run = {
        qid: {f"d{rng.randrange(40)}": rng.random() for _ in range(rng.randrange(12))}
        for qid in order
        if rng.random() > 0.1  # some queries missing from the run
    }
    metrics = ["ndcg@10", "recall@5", "P@3", "mrr@10", "judged@10", "num_rel_ret"]
    whole = evaluate(qrels, run, metrics, average=average)
    slices = [order[start::3] for start in range(3)]
    parts = [
        evaluate(
            {qid: qrels[qid] for qid in ids},
            {qid: run[qid] for qid in ids if qid in run},
            metrics,
            average=average,
        )
        for ids in slices
    ]
    joined = EvaluationResult.joined(parts[::-1], order)
    assert joined.query_ids == whole.query_ids
    assert joined.counts == whole.counts
    assert (joined.duplicates, joined.queries_with_duplicates) == (
        whole.duplicates,
        whole.queries_with_duplicates,
    )
    for metric in whole.metrics:
        assert joined.values[metric].tobytes() == whole.values[metric].tobytes(), metric


def test_joining_refuses_a_query_in_two_parts() -> None:
    part = evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 1.0}}, ["P@1"])
    with pytest.raises(InputError, match="each in one part"):
        EvaluationResult.joined([part, part], ["q1"])


def test_joining_refuses_a_query_the_eval_set_does_not_hold() -> None:
    part = evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 1.0}}, ["P@1"])
    with pytest.raises(InputError, match="each in one part"):
        EvaluationResult.joined([part], ["q2"])
