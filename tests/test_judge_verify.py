"""The verification sample: proportional strata of the judge's unverified grades, drawn per
seed, written blind, and graded back into the overlap the agreement reads."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pytest

from monitor.cli import main
from monitor.evalset import EvalSet
from monitor.judgments import add_layer
from monitor.judgments.todo import TODO_COLUMNS, write_todo
from monitor.judgments.verify import VerifySample, allocate, verify_sample
from monitor.records import Query
from monitor.store import JudgmentLayer, open_store
from tests.test_judge_agreement import write_config

JUDGE = "judge:llm:m:1"


@pytest.mark.parametrize(
    ("sizes", "share", "expected"),
    [
        ([50, 30, 20], 0.1, [5, 3, 2]),
        ([45, 45, 10], 0.1, [5, 4, 1]),  # 4.5, 4.5, 1: the first largest remainder rounds up
        ([97, 3], 0.1, [10, 1]),  # 9.7 rounds up, 0.3 down; the rare stratum still gets one
        ([200, 1, 0], 0.05, [10, 1, 0]),  # at least one per non-empty stratum, none from empty
        ([2, 1], 0.9, [2, 1]),  # never more than a stratum holds
    ],
)
def test_allocation_is_proportional_with_one_per_non_empty_stratum(
    sizes: list[int], share: float, expected: list[int]
) -> None:
    """round(share * N) split by largest remainder, then at least one per non-empty stratum."""
    assert expected == allocate(sizes, share)


def population(count: int = 100, segments: bool = False) -> tuple[EvalSet, list[JudgmentLayer]]:
    """Return a frozen set of 20 queries and a judge layer grading ``count`` pairs 0..2."""
    queries = [
        Query(f"q{i:02d}", f"query {i}", {"known": 1}, {"lang": "de" if i % 4 else "en"})
        for i in range(20)
    ]
    grades: dict[str, dict[str, int]] = {}
    for i in range(count):
        grades.setdefault(f"q{i % 20:02d}", {})[f"d{i}"] = (0, 0, 0, 1, 2)[i % 5]
    moment = datetime(2024, 5, 1, tzinfo=timezone.utc)
    layer = JudgmentLayer("s", JUDGE, "llm", "judge", moment, grades, layer_id=1)
    return EvalSet("s", queries), [layer]


def test_the_sample_is_stratified_by_the_judges_grade() -> None:
    """60 zeros, 20 ones, 20 twos at a share of 0.1 draw 6, 2 and 2 of them."""
    frozen, layers = population()
    sample = verify_sample(frozen, layers, JUDGE, share=0.1, seed=3)
    grade_of = {(q, d): g for q, docs in layers[0].grades.items() for d, g in docs.items()}
    drawn = Counter(grade_of[(item.query_id, item.doc_id)] for item in sample.items)
    assert ({0: 6, 1: 2, 2: 2}, [6, 2, 2]) == (dict(drawn), [s.drawn for s in sample.strata])


def test_a_segment_crosses_the_strata() -> None:
    """With a segment key, each (grade, segment value) is a stratum of its own."""
    frozen, layers = population()
    sample = verify_sample(frozen, layers, JUDGE, share=0.1, segment="lang")
    assert [
        (0, "lang=de", 45),
        (0, "lang=en", 15),
        (1, "lang=de", 15),
        (1, "lang=en", 5),
        (2, "lang=de", 15),
        (2, "lang=en", 5),
    ] == [(s.grade, s.segment, s.size) for s in sample.strata]


def ids(sample: VerifySample) -> list[tuple[str, str]]:
    return [(item.query_id, item.doc_id) for item in sample.items]


def test_the_same_seed_draws_the_same_sample_and_another_seed_another() -> None:
    """Seeded draws: two runs with seed 5 agree, seed 6 differs."""
    frozen, layers = population()
    first, again, other = (
        ids(verify_sample(frozen, layers, JUDGE, share=0.2, seed=seed)) for seed in (5, 5, 6)
    )
    assert (first, True) == (again, first != other)


def test_pairs_people_graded_are_not_drawn_again(tmp_path: Path) -> None:
    """A pair a human layer grades is verified already: it leaves the population."""
    frozen, layers = population(count=10)
    human = JudgmentLayer(
        "s", "review", "ann", "human", layers[0].created_at, {"q00": {"d0": 0}}, layer_id=2
    )
    sample = verify_sample(frozen, [*layers, human], JUDGE, share=0.5)
    assert (9, False) == (sample.population, ("q00", "d0") in ids(sample))


def test_the_written_sample_is_blind() -> None:
    """The CSV has the queue's columns, an empty grade everywhere, rows by query then doc."""
    frozen, layers = population()
    sample = verify_sample(frozen, layers, JUDGE, share=0.1, seed=1)
    rows = list(csv.DictReader(io.StringIO(write_todo(sample.items, "csv"))))
    keys = [(row["query_id"], row["doc_id"]) for row in rows]
    assert (list(TODO_COLUMNS), {""}, sorted(keys)) == (
        list(rows[0]),
        {row["grade"] for row in rows},
        keys,
    )


@pytest.mark.slow
def test_a_sample_graded_back_is_the_agreements_overlap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """verify -> fill -> judgments add -> agreement: the overlap is the sample graded."""
    config = write_config(tmp_path)
    assert 0 == main(["run", "--config", str(config), "--no-progress"])
    sample = tmp_path / "sample.jsonl"
    options = ["--config", str(config), "--suite", "larkfield"]
    verify = ["judgments", "verify", *options, "--share", "0.25", "--seed", "2"]
    assert 0 == main([*verify, "--format", "jsonl", "--output", str(sample)])
    rows = [json.loads(line) for line in sample.read_text().splitlines()]
    filled = tmp_path / "filled.jsonl"
    filled.write_text("".join(json.dumps({**row, "grade": 1}) + "\n" for row in rows))
    assert 0 == main(["judgments", "add", *options, str(filled), "--who", "ann"])
    capsys.readouterr()
    assert 0 == main(["judgments", "agreement", *options, "--format", "json"])
    (judge,) = json.loads(capsys.readouterr().out)["judges"]
    assert (10, {None}, 10) == (len(rows), {row["grade"] for row in rows}, judge["pairs"])


@pytest.mark.slow
def test_verify_says_how_many_it_drew_from_which_strata(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command's standard error gives the sample size, the population and each stratum."""
    config = write_config(tmp_path)
    assert 0 == main(["run", "--config", str(config), "--no-progress"])
    capsys.readouterr()
    argv = ["judgments", "verify", "--config", str(config), "--suite", "larkfield"]
    assert 0 == main([*argv, "--output", str(tmp_path / "s.csv")])
    said = capsys.readouterr().err
    assert said.startswith("5 of 40 unverified judge grades drawn (seed 0): grade 0: ")


def test_verify_without_a_judge_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A suite with no judge has no grades to verify: exit 2 with the reason in one line."""
    config = tmp_path / "plain.yaml"
    config.write_text(write_config(tmp_path).read_text().split("    judge:")[0])
    argv = ["judgments", "verify", "--config", str(config), "--suite", "larkfield"]
    assert 2 == main(argv)
    assert "has no judge whose grades to verify" in capsys.readouterr().err


def test_the_store_layers_round_trip_keeps_the_sample(tmp_path: Path) -> None:
    """A sample drawn from layers read back from the store equals one drawn from memory."""
    frozen, layers = population()
    with open_store(tmp_path / "m.db") as store:
        add_layer(store, "s", layers[0].grades, frozen=frozen, source=JUDGE, kind="judge")
        stored = store.layers("s")
    assert ids(verify_sample(frozen, layers, JUDGE, seed=4)) == ids(
        verify_sample(frozen, stored, JUDGE, seed=4)
    )
