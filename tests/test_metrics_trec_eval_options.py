"""Differential tests of the newer measures and of trec_eval's options (pytrec_eval).

The seeded collections of tests/metric_cases.py (graded and zero grades, ties, short, empty
and long runs, queries missing on either side) are scored by trec_eval through pytrec_eval
and by the engine with ``average="trec_eval"`` (trec_eval's queries: those in both), and each
query's value must agree to 1e-12: bpref, the counts and set measures, and every measure
again under ``relevance_level=2`` (``-l2``) and ``judged_only`` (``-J``). Negative grades are
given to both as 0 (pytrec_eval-terrier 0.5.11 can crash on them), so bpref's skipping of
negative grades is checked against trec_eval's own output in test_metrics_conformance.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from metric_cases import Qrels, as_list_run, long_case, random_case

from monitor.metrics.evaluation import evaluate
from monitor.metrics.spec import parse_metric

pytrec_eval = pytest.importorskip("pytrec_eval")

#: trec_eval measure -> our metric, for the measures new to the engine.
NEW = {
    "bpref": "bpref",
    "num_ret": "num_ret",
    "num_rel": "num_rel",
    "num_rel_ret": "num_rel_ret",
    "set_P": "set_precision",
    "set_recall": "set_recall",
    "set_F": "set_f1",
}
#: The measures re-checked under each option, new and old.
ALL = {
    **NEW,
    "P_5": "precision@5",
    "P_10": "precision@10",
    "recall_10": "recall@10",
    "map": "map",
    "map_cut_10": "map@10",
    "ndcg": "ndcg",
    "ndcg_cut_10": "ndcg@10",
    "recip_rank": "mrr",
    "Rprec": "r_precision",
    "success_5": "hit_rate@5",
}


def clamped(qrels: Qrels) -> dict[str, dict[str, int]]:
    """Return the judgments with negative grades written as 0."""
    return {q: {d: max(g, 0) for d, g in docs.items()} for q, docs in qrels.items()}


def mismatches(
    qrels: Qrels, run: Any, measures: dict[str, str], **options: Any
) -> list[tuple[str, str, float, float | None]]:
    """Return (query, measure, trec_eval's, ours) wherever the two differ by > 1e-12."""
    judged = clamped(qrels)
    trec_options = {
        "relevance_level": options.get("relevance_level", 1),
        "judged_docs_only_flag": options.get("judged_only", False),
    }
    scored = {q: dict(r) for q, r in run.items()}
    # One evaluator per measure: pytrec_eval-terrier 0.5.11 crashes (segmentation fault) when
    # bpref and num_ret are asked of one evaluator.
    want: dict[str, dict[str, float]] = {}
    for measure in measures:
        evaluator = pytrec_eval.RelevanceEvaluator(judged, {measure}, **trec_options)
        for qid, values in evaluator.evaluate(scored).items():
            want.setdefault(qid, {}).update(values)
    ours = evaluate(judged, run, list(measures.values()), average="trec_eval", **options)
    out = []
    for measure, metric in measures.items():
        got = dict(zip(ours.query_ids, ours.values[parse_metric(metric)].tolist(), strict=True))
        for qid, values in want.items():
            mine = got.get(qid)
            if mine is None or abs(values[measure] - mine) > 1e-12:
                out.append((qid, measure, values[measure], mine))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_new_measures_match_trec_eval(seed: int) -> None:
    """bpref, num_ret, num_rel, num_rel_ret, set_P, set_recall and set_F equal trec_eval's."""
    case = random_case(seed)
    assert [] == mismatches(case.qrels, case.run, NEW)


def test_new_measures_match_trec_eval_on_long_runs() -> None:
    """The same holds for runs of 1200 documents with 400 judgments."""
    case = long_case(0)
    assert [] == mismatches(case.qrels, case.run, NEW)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(
    "options",
    [{"relevance_level": 2}, {"judged_only": True}, {"relevance_level": 2, "judged_only": True}],
    ids=["l2", "J", "l2-J"],
)
def test_options_match_trec_evals(seed: int, options: dict[str, Any]) -> None:
    """relevance_level and judged_only score every measure as trec_eval's -l and -J."""
    case = random_case(seed)
    assert [] == mismatches(case.qrels, case.run, ALL, **options)


def test_options_match_trec_evals_on_a_list_run() -> None:
    """A run given as ranked lists goes through the same options identically."""
    case = random_case(7)
    qrels = clamped(case.qrels)
    for options in ({"relevance_level": 2}, {"judged_only": True}):
        scored = evaluate(qrels, case.run, list(ALL.values()), average="trec_eval", **options)
        listed = evaluate(
            qrels, as_list_run(case.run), list(ALL.values()), average="trec_eval", **options
        )
        assert scored.to_dict(per_query=True) == listed.to_dict(per_query=True)
