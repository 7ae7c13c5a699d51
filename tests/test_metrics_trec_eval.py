"""Differential tests: every measure with a trec_eval counterpart equals it (pytrec_eval).

The collections are generated with fixed seeds (tests/metric_cases.py): graded labels with 0
and negative grades, tied scores, short, empty and long runs, judged queries missing from the
run and run queries without judgments. Each query's value must equal trec_eval's to 1e-12.
trec_eval leaves out the judged queries missing from the run, where we expect 0.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from metric_cases import (
    FIVE_QUESTIONS_QRELS,
    FIVE_QUESTIONS_RUN,
    Case,
    Qrels,
    as_list_run,
    long_case,
    random_case,
)

from monitor.metrics import ranks
from monitor.metrics.evaluation import evaluate
from monitor.metrics.ranks import Run
from monitor.metrics.spec import parse_metric

pytrec_eval = pytest.importorskip("pytrec_eval")

#: The cutoffs trec_eval computes for P, recall, ndcg_cut and map_cut.
TREC_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)

#: Our metric name -> trec_eval's measure. mrr@k and f1@k have no trec_eval counterpart.
COUNTERPARTS: dict[str, str] = {
    **{f"precision@{k}": f"P_{k}" for k in TREC_CUTOFFS},
    **{f"recall@{k}": f"recall_{k}" for k in TREC_CUTOFFS},
    **{f"ndcg@{k}": f"ndcg_cut_{k}" for k in TREC_CUTOFFS},
    **{f"map@{k}": f"map_cut_{k}" for k in TREC_CUTOFFS},
    **{f"hit_rate@{k}": f"success_{k}" for k in (1, 5, 10)},
    "ndcg": "ndcg",
    "map": "map",
    "mrr": "recip_rank",
    "r_precision": "Rprec",
}

SEEDS = range(8)


def trec_eval_values(
    qrels: Qrels, run: Mapping[str, Mapping[str, float]]
) -> dict[str, dict[str, float]]:
    """Return trec_eval's per-query values of every counterpart measure."""
    # pytrec_eval-terrier 0.5.11 crashes (segmentation fault) on some qrels with negative
    # grades, so trec_eval gets them as 0: both mean "judged non-relevant", which is what the
    # engine must make of a negative grade.
    clamped = {
        qid: {doc: max(grade, 0) for doc, grade in docs.items()} for qid, docs in qrels.items()
    }
    evaluator = pytrec_eval.RelevanceEvaluator(clamped, set(COUNTERPARTS.values()))
    return evaluator.evaluate({qid: dict(ranking) for qid, ranking in run.items()})


def mismatches(case: Case, run: Run) -> list[tuple[str, str, float, float]]:
    """Return (query, metric, trec_eval's value, ours) wherever the two differ by > 1e-12."""
    expected = trec_eval_values(case.qrels, case.run)
    ours = evaluate(case.qrels, run, list(COUNTERPARTS), include_no_relevant=True)
    out = []
    for metric, measure in COUNTERPARTS.items():
        values = ours.values[parse_metric(metric)].tolist()
        for qid, value in zip(ours.query_ids, values, strict=True):
            reference = expected.get(qid, {}).get(measure, 0.0)
            if abs(reference - value) > 1e-12:
                out.append((qid, metric, reference, value))
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_score_run_matches_trec_eval(seed: int) -> None:
    """A {doc: score} run gives trec_eval's value for every query and measure."""
    case = random_case(seed)
    assert [] == mismatches(case, case.run)


@pytest.mark.parametrize("seed", SEEDS)
def test_list_run_matches_trec_eval(seed: int) -> None:
    """The same run as ranked lists in trec_eval's order gives trec_eval's values."""
    case = random_case(seed)
    assert [] == mismatches(case, as_list_run(case.run))


@pytest.mark.parametrize("seed", range(2))
def test_runs_longer_than_every_cutoff_match_trec_eval(seed: int) -> None:
    """Runs of 1200 documents with 400 judgments match trec_eval up to cutoff 1000."""
    case = long_case(seed)
    assert [] == mismatches(case, case.run)


@pytest.mark.parametrize("seed", range(3))
def test_small_comparison_blocks_match_trec_eval(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ranking scores in many small blocks, or by sorting one query, gives the same values."""
    # The resolver bounds each broadcast comparison and sorts a query too big for one block;
    # a tiny bound sends every collection through both paths.
    monkeypatch.setattr(ranks, "_BLOCK_CELLS", 50)
    case = random_case(seed) if seed else long_case(seed, n_queries=2)
    assert [] == mismatches(case, case.run)


def test_worked_example_matches_trec_eval() -> None:
    """The hand-computed five-question example of test_metrics_golden.py is trec_eval's too."""
    # Scores 5, 4, ... 1 down each list rank the documents in the order given.
    run = {
        qid: {doc: float(len(docs) - i) for i, doc in enumerate(docs)}
        for qid, docs in FIVE_QUESTIONS_RUN.items()
    }
    assert [] == mismatches(Case(FIVE_QUESTIONS_QRELS, run), FIVE_QUESTIONS_RUN)


def test_every_query_is_evaluated_when_no_relevant_ones_are_included() -> None:
    """With include_no_relevant every judged query gets a value (trec_eval's -c)."""
    case = random_case(0)
    result = evaluate(case.qrels, case.run, ["mrr"], include_no_relevant=True)
    assert list(case.qrels) == list(result.query_ids)


def test_generated_cases_hold_every_awkward_query() -> None:
    """The generated collections contain each kind of query the comparison must cover."""
    case = random_case(0)
    kinds = {
        "missing from run": any(qid not in case.run for qid in case.qrels),
        "empty run": any(not case.run[qid] for qid in case.qrels if qid in case.run),
        "not judged": any(qid not in case.qrels for qid in case.run),
        "no relevant": any(max(docs.values()) < 1 for docs in case.qrels.values()),
        "negative grade": any(min(docs.values()) < 0 for docs in case.qrels.values()),
        "tied scores": any(len(set(r.values())) < len(r) for r in case.run.values()),
    }
    assert dict.fromkeys(kinds, True) == kinds
