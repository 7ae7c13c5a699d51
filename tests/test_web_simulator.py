"""The simulator: a hand-edited ranking scored by `evaluate`'s engine, with its arithmetic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monitor.cli import main
from monitor.errors import UsageError
from monitor.metrics.spec import MEASURES
from monitor.web.simulate import Simulation, metrics_at, parse_simulation, simulate

SEED = {
    "docs": [
        {"id": "a", "grade": 1},
        {"id": "b", "grade": 0},
        {"id": "c", "grade": 1},
        {"id": "d", "grade": 0},
        {"id": "e", "grade": 1},
    ],
    "k": 5,
    "relevant_in_collection": 3,
}


def test_average_precision_shows_the_precisions_it_averages() -> None:
    """AP of relevant ranks 1, 3, 5 of 3 relevant reads (1+0.667+0.6)/3 beside its value."""
    result = simulate(parse_simulation(SEED))
    assert pytest.approx((1 + 2 / 3 + 3 / 5) / 3) == result["metrics"]["map@5"]
    assert "0.756 = (1+0.667+0.6)/3" == result["explain"]["map@5"]["worked"]


def test_ndcg_shows_dcg_over_idcg() -> None:
    """nDCG's worked line gives DCG and IDCG, whose ratio is the value."""
    result = simulate(parse_simulation({**SEED, "docs": [{"id": "x", "grade": 0}, *SEED["docs"]]}))
    worked = result["explain"]["ndcg@5"]["worked"]
    dcg, idcg = (float(part.split()[1]) for part in worked.split(" = ")[1].split(" / "))
    assert pytest.approx(result["metrics"]["ndcg@5"], abs=2e-3) == dcg / idcg


def test_every_measure_the_engine_offers_is_computed() -> None:
    """The simulator reports one figure per measure of the engine, at the chosen k."""
    result = simulate(parse_simulation(SEED))
    assert [str(m) for m in metrics_at(5)] == list(result["metrics"])
    assert len(MEASURES) == len(result["metrics"])


def test_figures_equal_evaluate_on_the_same_ranking(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A graded ranking with relevant documents it missed scores as `evaluate` scores it."""
    docs = [("d3", 0), ("d1", 2), ("d9", 0), ("d2", 3), ("d4", 1)]
    simulation = Simulation(docs=tuple(docs), k=3, relevant_in_collection=5)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(
        "".join(f"q 0 {doc} {grade}\n" for doc, grade in docs) + "q 0 m1 1\nq 0 m2 1\n"
    )
    run = tmp_path / "run.json"
    run.write_text(json.dumps({"q": [doc for doc, _ in docs]}))
    names = ",".join(str(m) for m in metrics_at(3))
    assert 0 == main(
        [
            "evaluate",
            "--qrels",
            str(qrels),
            "--run",
            str(run),
            "--metrics",
            names,
            "--format",
            "json",
        ]
    )
    expected = json.loads(capsys.readouterr().out)["metrics"]
    assert pytest.approx(expected, abs=1e-12) == simulate(simulation)["metrics"]


def test_moving_the_relevant_document_to_the_top_makes_reciprocal_rank_one() -> None:
    """A reorder changes the figures: the relevant document at rank 1 gives mrr@10 = 1."""
    before = simulate(Simulation(docs=(("x", 0), ("y", 1)), k=10, relevant_in_collection=1))
    after = simulate(Simulation(docs=(("y", 1), ("x", 0)), k=10, relevant_in_collection=1))
    assert (0.5, 1.0) == (before["metrics"]["mrr@10"], after["metrics"]["mrr@10"])


def test_a_blank_list_scores_zero() -> None:
    """No documents and no relevant ones: every figure is 0."""
    result = simulate(parse_simulation({"docs": [], "k": 10}))
    assert {0.0} == set(result["metrics"].values())


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {**SEED, "relevant_in_collection": 2},
            "relevant_in_collection: expected an integer from the 3",
        ),
        ({**SEED, "k": 0}, "k: expected an integer from 1"),
        ({**SEED, "k": "5"}, "k: expected an integer, got '5'"),
        (
            {**SEED, "docs": [{"id": "a", "grade": 4}]},
            "docs[1] (a): grade expected one of 0, 1, 2, 3",
        ),
        ({**SEED, "docs": [{"id": "a"}, {"id": "a"}]}, "docs[2]: doc id 'a' is listed twice"),
        ({**SEED, "sort": True}, "unknown key 'sort'"),
        ([], "expected a JSON object"),
    ],
)
def test_a_bad_request_is_refused_naming_its_key(body: object, message: str) -> None:
    """Each malformed simulation is refused with the key and what was expected."""
    with pytest.raises(UsageError) as caught:
        parse_simulation(body)
    assert message in str(caught.value)
