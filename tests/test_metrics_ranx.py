"""Differential tests against ranx for the measures trec_eval lacks (f1@k, ndcg_burges, dcg).

ranx 0.3.21 defines these as the engine does (ranx/metrics/f1.py, ndcg.py, hits.py, common.py):

- ``f1@k``: P@k = hits/k with k the cutoff asked, even past the end of a short run; R@k =
  hits/R with R the judgments of grade >= 1 (``rel_lvl=1``); 2PR/(P+R), 0 when both are 0.
- ``ndcg_burges@k``: gains 2**grade - 1 of the documents of grade >= 1 in the top min(k, run
  length); the ideal ranking is every judgment of grade >= 1, by grade descending, cut at k;
  0 when the ideal DCG is 0. ``k = 0`` means no cutoff, our ``ndcg_burges``.

- ``dcg@k``, ``dcg_burges@k``: the same sums, not normalised; ``hits@k`` is ``num_rel_ret@k``.
- ``rank_biased_precision`` weighs each document by its grade where trec_eval (and the
  engine) weighs grade / the query's highest grade: the two agree on 0/1 judgments, so rbp
  is compared on binary copies of the collections.

ranx's bpref is not compared: it differs from trec_eval's, which the engine follows.

Where ranx differs, the difference is kept out of the comparison rather than asserted: its
``Run`` ranks tied scores with an unstable argsort (no doc id tie-break) and hashes doc ids.
So ranx's metric functions get each run already ranked in trec_eval's order, with integer
ids, and read it in the order given. Queries missing from the run get an empty ranking.
"""

from __future__ import annotations

import functools
import importlib
import os
from typing import Any

import numpy as np
import pytest
from metric_cases import Case, random_case, trec_order

from monitor.metrics.evaluation import evaluate


@functools.cache
def peer(name: str) -> Any:
    """Import ranx's or numba's module ``name`` when a test first needs it, not while the
    suite is collected (importing ranx takes seconds, in every worker); skip without it,
    except in ``.ci/run``, which installs the bench extra."""
    if os.environ.get("MONITOR_REQUIRE_SERVICES") == "1":
        return importlib.import_module(name)
    return pytest.importorskip(name)


pytestmark = [
    # numba compiles ranx's functions on the first call when its cache is cold (~10 s).
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaTypeSafetyWarning"),
]

CUTOFFS = (1, 3, 5, 10, 20, 50)


def as_ranx_lists(case: Case) -> tuple[object, object]:
    """Return ranx's typed lists of [doc number, value] rows for the judged queries.

    Judgments are sorted by grade descending (ranx's ideal ranking reads them in order); run
    rows follow trec_eval's order, their value column being unused by the measures compared.
    """
    numbers: dict[str, int] = {}

    def rows(pairs: list[tuple[str, float]]) -> np.ndarray:
        table = [[float(numbers.setdefault(doc, len(numbers))), value] for doc, value in pairs]
        return np.array(table, dtype=np.float64).reshape(-1, 2)

    qrels, run = peer("numba.typed").List(), peer("numba.typed").List()
    for qid, judged in case.qrels.items():
        by_grade = sorted(judged.items(), key=lambda item: -item[1])
        qrels.append(rows([(doc, float(grade)) for doc, grade in by_grade]))
        ranked = trec_order(case.run.get(qid, {}))
        run.append(rows([(doc, float(-rank)) for rank, doc in enumerate(ranked)]))
    return qrels, run


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("measure", ["f1", "ndcg_burges"])
@pytest.mark.parametrize("k", CUTOFFS)
def test_matches_ranx(measure: str, k: int, seed: int) -> None:
    """f1@k and ndcg_burges@k equal ranx's per-query values to 1e-12."""
    case = random_case(seed)
    metric = f"{measure}@{k}"
    ours = evaluate(case.qrels, case.run, [metric], include_no_relevant=True)
    expected = getattr(peer("ranx.metrics"), measure)(*as_ranx_lists(case), k)
    np.testing.assert_allclose(expected, ours.per_query[metric].to_numpy(), rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_ndcg_burges_without_cutoff_matches_ranx(seed: int) -> None:
    """ndcg_burges without a cutoff equals ranx's ndcg_burges with k = 0 (the whole run)."""
    case = random_case(seed)
    ours = evaluate(case.qrels, case.run, ["ndcg_burges"], include_no_relevant=True)
    expected = peer("ranx.metrics").ndcg_burges(*as_ranx_lists(case), 0)
    np.testing.assert_allclose(
        expected, ours.per_query["ndcg_burges"].to_numpy(), rtol=0, atol=1e-12
    )


def binary(case: Case) -> Case:
    """Return ``case`` with every positive grade written as 1 (ranx's rbp weighs by grade)."""
    return Case(
        {q: {d: min(g, 1) for d, g in docs.items()} for q, docs in case.qrels.items()}, case.run
    )


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(
    ("ours_name", "ranx_name"),
    [("dcg", "dcg"), ("dcg_burges", "dcg_burges"), ("num_rel_ret", "hits")],
)
@pytest.mark.parametrize("k", CUTOFFS)
def test_dcg_and_hits_match_ranx(ours_name: str, ranx_name: str, k: int, seed: int) -> None:
    """dcg@k, dcg_burges@k and num_rel_ret@k equal ranx's dcg, dcg_burges and hits at k."""
    case = random_case(seed)
    metric = f"{ours_name}@{k}"
    ours = evaluate(case.qrels, case.run, [metric], include_no_relevant=True)
    expected = getattr(peer("ranx.metrics"), ranx_name)(*as_ranx_lists(case), k)
    np.testing.assert_allclose(expected, ours.per_query[metric].to_numpy(), rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(
    ("metric", "persistence"),
    [("rbp", 0.9), ("rbp_50", 0.5), ("rbp_80", 0.8), ("rbp_95", 0.95), ("rbp_99", 0.99)],
)
def test_rbp_matches_ranx_on_binary_judgments(metric: str, persistence: float, seed: int) -> None:
    """rbp at each persistence equals ranx's rank_biased_precision when grades are 0 or 1."""
    case = binary(random_case(seed))
    ours = evaluate(case.qrels, case.run, [metric], include_no_relevant=True)
    expected = peer("ranx.metrics").rank_biased_precision(*as_ranx_lists(case), persistence)
    np.testing.assert_allclose(expected, ours.per_query[metric].to_numpy(), rtol=0, atol=1e-12)


def test_ranx_rbp_is_another_measure_on_graded_qrels() -> None:
    """ranx's rbp at 0.8 gains the raw grade, 0.2 (1 + 3 x 0.8) = 0.68, where rbp_80 gains
    grade / highest grade, 0.2 (1/3 + 0.8): why its RBP names are refused here."""
    case = Case({"q": {"a": 3, "b": 1}}, {"q": {"b": 3.0, "a": 2.0}})
    theirs = peer("ranx.metrics").rank_biased_precision(*as_ranx_lists(case), 0.8)
    ours = evaluate(case.qrels, case.run, ["rbp_80"]).means["rbp_80"]
    assert (0.68, round(0.2 * (1 / 3 + 0.8), 12)) == (round(theirs[0], 12), round(ours, 12))
