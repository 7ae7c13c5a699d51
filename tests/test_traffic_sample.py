"""Eval sets sampled from traffic: exact sizes, each method's inclusion odds, kept versions."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("duckdb")

from monitor.cli import main
from monitor.config.windows import EVERYTHING
from monitor.errors import UsageError
from monitor.evalset.model import EvalSet
from monitor.traffic.engine import connect
from monitor.traffic.importer import import_logs
from monitor.traffic.sample import (
    Population,
    draw,
    population,
    pps_probabilities,
    query_id,
    strata_of,
    weighted_mean,
)
from tests.traffic_logs import T0, search, write_ndjson

#: Searches per key: a head of two big keys, a torso, and a long tail.
FREQUENCIES = {
    "alpha": 40,
    "beta": 30,
    "gamma": 12,
    "delta": 8,
    "eps": 5,
    **{f"tail{i}": 1 + i % 3 for i in range(15)},
}


def _population(frequencies: dict[str, int] = FREQUENCIES) -> Population:
    ordered = sorted(frequencies.items(), key=lambda item: (-item[1], item[0]))
    return Population(
        keys=tuple(key for key, _ in ordered),
        texts=tuple(key.upper() for key, _ in ordered),
        searches=np.asarray([n for _, n in ordered], dtype=np.int64),
    )


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A traffic database whose keys have FREQUENCIES searches (and mixed-case texts)."""
    folder = tmp_path_factory.mktemp("sample")
    rows = []
    for key, n in FREQUENCIES.items():
        for j in range(n):
            text = key if j % 3 else key.title()  # the lower-case text is the most frequent
            rows.append(
                search(f"{key}-{j}", text, "ab", client=f"c{j}", at=T0 + timedelta(minutes=j))
            )
    path = folder / "logs.duckdb"
    connection = connect(path)
    try:
        import_logs(
            connection, [write_ndjson(folder / "q.ndjson", rows)], [], min_distinct_clients=1
        )
    finally:
        connection.close()
    return path


@pytest.mark.slow
def test_population_counts_searches_per_key_with_the_most_frequent_text(logs: Path) -> None:
    """The population holds each key once, most searched first, with its commonest text."""
    connection = connect(logs, read_only=True, create=False)
    try:
        pop = population(connection, EVERYTHING)
    finally:
        connection.close()
    assert ("alpha", "beta", "gamma") == pop.keys[:3]
    assert [40, 30, 12] == pop.searches[:3].tolist()
    assert "alpha" == pop.texts[0]
    assert sum(FREQUENCIES.values()) == int(pop.searches.sum())


@pytest.mark.parametrize("method", ["topn", "random", "pps", "stratified"])
def test_a_sample_has_exactly_the_size_asked_for(method: str) -> None:
    """Each method draws exactly --size distinct keys when the window has that many."""
    sample = draw(_population(), method, 7, seed=3)
    assert 7 == len(set(sample.chosen.tolist()))
    assert 7 == len(sample.queries())


@pytest.mark.parametrize("method", ["topn", "random", "pps", "stratified"])
def test_a_size_beyond_the_population_takes_every_key_with_probability_one(method: str) -> None:
    """Asking for more keys than exist takes them all, each surely included."""
    sample = draw(_population(), method, 500, seed=1)
    assert len(FREQUENCIES) == len(sample.chosen)
    assert [1.0] * len(FREQUENCIES) == sample.probabilities.tolist()


def test_topn_takes_the_most_searched_keys() -> None:
    """topn is the head of the traffic, in order."""
    sample = draw(_population(), "topn", 3, seed=0)
    assert ["ALPHA", "BETA", "GAMMA"] == [q.text for q in sample.queries()]


def test_one_seed_gives_one_sample() -> None:
    """The same seed draws the same keys; another seed draws others."""
    pop = _population()
    first = draw(pop, "pps", 6, seed=11).chosen.tolist()
    assert first == draw(pop, "pps", 6, seed=11).chosen.tolist()
    assert any(draw(pop, "pps", 6, seed=s).chosen.tolist() != first for s in range(12, 20))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("method", "tolerance"), [("random", 0.03), ("pps", 0.03), ("stratified", 0.03)]
)
def test_sampling_frequencies_match_the_stored_inclusion_probabilities(
    method: str, tolerance: float
) -> None:
    """Over many seeds each key is drawn as often as its stored probability says."""
    pop = _population()
    seeds = 3000
    drawn = np.zeros(len(pop))
    stored = np.zeros(len(pop))
    for seed in range(seeds):
        sample = draw(pop, method, 6, seed=seed)
        drawn[sample.chosen] += 1
        stored[sample.chosen] = sample.probabilities
    # Every key was drawn at least once, so each has its stored probability.
    assert (drawn > 0).all()
    assert np.abs(drawn / seeds - stored).max() < tolerance


def test_pps_probabilities_sum_to_the_size_and_grow_with_frequency() -> None:
    """Rosén's probabilities add up to the sample size and rank keys by their traffic."""
    weights = _population().searches.astype(np.float64)
    odds = pps_probabilities(weights, 6)
    assert 6.0 == pytest.approx(float(odds.sum()), abs=1e-9)
    assert (np.diff(odds) <= 1e-12).all()  # the weights are sorted most first
    assert ((odds > 0) & (odds < 1)).all()


def test_strata_cut_the_traffic_at_half_and_four_fifths() -> None:
    """head holds the keys of the first half of the searches, torso to 80%, tail the rest."""
    # Shares of the searches before each key: 0, 0.5, 0.7, 0.9.
    assert ["head", "torso", "torso", "tail"] == strata_of(np.asarray([50, 20, 20, 10]))


def test_stratified_spreads_the_size_over_the_strata() -> None:
    """Each stratum gets its share of the size; a small stratum's excess goes to the others."""
    pop = _population()
    # 125 searches: alpha and beta start before 50% (head: 2 keys), the keys starting
    # before 80% are the torso (5 keys), the other 13 the tail.
    assert [2, 5, 13] == [strata_of(pop.searches).count(n) for n in ("head", "torso", "tail")]
    sample = draw(pop, "stratified", 9, seed=2)
    counts = {name: sample.strata.count(name) for name in ("head", "torso", "tail")}
    # 3 each, the head holding 2: its third goes to the next open stratum, the torso.
    assert {"head": 2, "torso": 4, "tail": 3} == counts
    assert [1.0, 1.0] == sample.probabilities[:2].tolist()


def test_weighted_mean_weighs_searches_over_inclusion_odds() -> None:
    """The Hájek mean counts each query for its searches divided by its probability."""
    meta = [
        {"traffic_searches": 10, "inclusion_probability": 1.0},
        {"traffic_searches": 1, "inclusion_probability": 0.1},
        {},
    ]
    assert (10 * 1.0 + 10 * 0.0) / 20 == weighted_mean([1.0, 0.0, 0.5], meta)
    assert weighted_mean([1.0], [{}]) is None


def test_an_unknown_method_and_a_zero_size_are_refused() -> None:
    """Bad arguments name the option."""
    with pytest.raises(UsageError, match="--method"):
        draw(_population(), "reservoir", 3, seed=0)
    with pytest.raises(UsageError, match="--size"):
        draw(_population(), "random", 0, seed=0)


def test_sample_command_writes_an_eval_set_and_keeps_the_earlier_version(
    logs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The file holds the sampled keys with their odds; running again keeps the first as v1."""
    output = tmp_path / "sets" / "traffic.jsonl"
    argv = [
        "evalset",
        "sample",
        "--from",
        str(logs),
        "--method",
        "pps",
        "--size",
        "5",
        "--output",
        str(output),
    ]
    assert 0 == main([*argv, "--seed", "1"])
    first = output.read_text(encoding="utf-8")
    assert 0 == main([*argv, "--seed", "2"])
    out = capsys.readouterr().out
    kept = tmp_path / "sets" / "traffic.v1.jsonl"
    assert first == kept.read_text(encoding="utf-8")
    assert f"the earlier version is kept as {kept}" in out
    evalset = EvalSet.load(output)
    assert 5 == len(evalset)
    query = next(iter(evalset))
    assert {"traffic_searches", "inclusion_probability", "stratum"} <= set(query.metadata)
    assert query.id == query_id(query.text.casefold())
    assert json.loads(first.splitlines()[0])["metadata"]["inclusion_probability"] > 0


def test_sample_command_of_an_empty_window_is_no_data(
    logs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A window without searches exits 5 and writes nothing."""
    output = tmp_path / "t.jsonl"
    code = main(
        [
            "evalset",
            "sample",
            "--from",
            str(logs),
            "--method",
            "random",
            "--size",
            "3",
            "--window",
            "1d",
            "--until",
            "2020-01-01T00:00:00Z",
            "--output",
            str(output),
        ]
    )
    assert 5 == code
    assert not output.exists()
    assert "2020" in capsys.readouterr().err


def test_sample_command_names_a_missing_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A --from that does not exist is a usage error naming it."""
    missing = tmp_path / "none.duckdb"
    code = main(
        [
            "evalset",
            "sample",
            "--from",
            str(missing),
            "--method",
            "topn",
            "--size",
            "2",
            "--output",
            str(tmp_path / "o.jsonl"),
        ]
    )
    assert 2 == code
    assert str(missing) in capsys.readouterr().err


def test_a_comparison_of_a_sampled_set_gives_its_traffic_weighted_means() -> None:
    """A run of a traffic sample is noted with its Hájek means beside the plain ones."""
    from datetime import datetime, timezone

    from monitor.compare import compare_runs
    from monitor.store import QueryRecord, RunRecord

    at = datetime(2030, 1, 1, tzinfo=timezone.utc)
    queries = (
        QueryRecord("a", {"recall@5": 1.0}, ("d1",), ("d1",), 0.1, None),
        QueryRecord("b", {"recall@5": 0.0}, ("d2",), ("d9",), 0.1, None),
    )
    run = RunRecord("s", "p", at, at, queries=queries, means={"recall@5": 0.5})
    metadata = {
        "a": {"traffic_searches": 30, "inclusion_probability": 1.0},
        "b": {"traffic_searches": 2, "inclusion_probability": 0.2},
    }
    comparison = compare_runs(run, None, (), metadata=metadata)
    # weights 30 and 10: (30 * 1 + 10 * 0) / 40
    assert (
        "traffic-weighted means (each query weighs its searches over its inclusion "
        "probability): recall@5 0.7500 (plain 0.5000)",
    ) == comparison.notes
    assert () == compare_runs(run, None, (), metadata={"a": {"kind": "x"}}).notes


def test_the_command_offers_every_sampling_method() -> None:
    """evalset sample's --method choices are the sampler's methods."""
    from monitor.traffic.sample import METHODS

    with pytest.raises(SystemExit):
        main(["evalset", "sample", "--method", "nope"])
    import monitor.cli.traffic as command

    assert '"topn", "random", "pps", "stratified"' in Path(command.__file__).read_text(
        encoding="utf-8"
    ).replace("'", '"')
    assert ("topn", "random", "pps", "stratified") == METHODS
