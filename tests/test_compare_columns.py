"""A comparison of runs read from the store reads their columns, and gives what the records
give, bit for bit: the match, the values, the answered and judged masks, and the overlap."""

from __future__ import annotations

import dataclasses
import math
from datetime import datetime, timezone

import numpy as np
import pytest

from monitor import texts
from monitor.compare.matched import Matched
from monitor.compare.overlap import jaccard, overlap_of, overlaps, rank_biased_overlap
from monitor.store import QueryRecord, RunRecord, columnar
from monitor.store.records import ColumnQueries

AT = datetime(2030, 1, 1, tzinfo=timezone.utc)
METRICS = ("ndcg@10", "recall@5", "mrr@10")


def _ranking(rng: np.random.Generator, pool: int) -> tuple[str, ...]:
    """Return a ranking of 0 to 14 ids drawn from a small pool (shared ids and repeats)."""
    size = int(rng.integers(0, 15))
    return tuple(f"d{x}" if x % 3 else f"{x:04x}é" for x in rng.integers(0, pool, size))


def _run(seed: int, n: int = 300) -> RunRecord:
    """Return a run of random queries: some failed, some without values or judgments."""
    rng = np.random.default_rng(seed)
    ids = [f"q{i}" for i in rng.permutation(n + 40)[:n]]
    queries = []
    for qid in ids:
        values = {
            m: float(v) for m, v in zip(METRICS, rng.random(3), strict=True) if rng.random() > 0.2
        }
        if rng.random() < 0.05:
            values["mrr@10"] = math.nan
        queries.append(
            QueryRecord(
                qid,
                values,
                _ranking(rng, 40),
                _ranking(rng, 40)[:3] if rng.random() > 0.2 else (),
                float(rng.random()),
                "TimeoutError" if rng.random() < 0.1 else None,
            )
        )
    return RunRecord("s", "p", AT, AT, queries=tuple(queries))


def _stored(run: RunRecord) -> RunRecord:
    """Return ``run`` as the store reads it back: columns, and queries built from them."""
    columns = columnar.decode_columns(columnar.encode_queries(run.queries))
    return dataclasses.replace(run, queries=ColumnQueries(columns))


def _bits(array: np.ndarray) -> bytes:
    """Return an array's bytes: equal bit for bit, NaN included."""
    return np.ascontiguousarray(array).tobytes()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_match_of_columns_is_the_match_of_records(seed: int) -> None:
    """Positions, answered masks, values, pairs, ids and left-out counts agree bit for bit."""
    before, after = _run(seed), _run(seed + 100)
    by_records = Matched.of(before, after)
    by_columns = Matched.of(_stored(before), _stored(after))
    assert _bits(by_records.position) == _bits(by_columns.position)
    assert _bits(by_records.answered_before) == _bits(by_columns.answered_before)
    assert _bits(by_records.answered_now) == _bits(by_columns.answered_now)
    for metric in (*METRICS, "map"):
        for side in (True, False):
            expected = [_bits(a) for a in by_records.column(metric, baseline=side)]
            assert expected == [_bits(a) for a in by_columns.column(metric, baseline=side)]
        expected_ids, *expected_values = by_records.aligned(metric)
        ids, *values = by_columns.aligned(metric)
        assert (expected_ids, [_bits(v) for v in expected_values]) == (
            ids,
            [_bits(v) for v in values],
        )
    for paired in (True, False):
        assert by_records.left_out(paired=paired) == by_columns.left_out(paired=paired)


def test_columns_match_without_building_a_record(monkeypatch: pytest.MonkeyPatch) -> None:
    """Matching and reading values of runs with columns builds no query record."""
    before, after = _stored(_run(4)), _stored(_run(5))
    monkeypatch.setattr(ColumnQueries, "records", _refuse)
    monkeypatch.setattr(ColumnQueries, "__getitem__", _refuse)
    matched = Matched.of(before, after)
    matched.aligned("ndcg@10")
    overlap_of(before, after, 10, matched=matched)
    assert 0 < matched.left_out()


def _refuse(*args: object) -> None:
    """Stand in for a method that builds query records, where none may be built."""
    raise AssertionError("query records built")


def test_a_repeated_baseline_id_matches_its_last_query_in_columns_too() -> None:
    """A baseline that repeats an id matches the last query of it, read either way."""
    queries = (QueryRecord("a", {"x": 1.0}), QueryRecord("b"), QueryRecord("a", {"x": 2.0}))
    before = RunRecord("s", "p", AT, AT, queries=queries)
    after = RunRecord("s", "p", AT, AT, queries=(QueryRecord("a", {"x": 3.0}),))
    expected = Matched.of(before, after).position.tolist()
    assert expected == Matched.of(_stored(before), _stored(after)).position.tolist()
    assert [2] == expected


@pytest.mark.parametrize(
    ("before_ids", "after_ids", "expected"),
    [
        (["a", "b", "c"], ["a", "b", "c"], [0, 1, 2]),  # one eval set's order
        (["a", "b", "a"], ["a", "b", "a"], [2, 1, 2]),  # the same order, an id repeated
        (["a", "b", "c"], ["c", "a", "d"], [2, 0, -1]),
    ],
)
def test_runs_of_one_order_match_query_by_query_unless_an_id_repeats(
    before_ids: list[str], after_ids: list[str], expected: list[int]
) -> None:
    """Runs holding the same ids in the same order match position by position, read from
    records or columns; an id held twice still matches the last query of it."""
    before = RunRecord("s", "p", AT, AT, queries=tuple(QueryRecord(q) for q in before_ids))
    after = RunRecord("s", "p", AT, AT, queries=tuple(QueryRecord(q) for q in after_ids))
    assert expected == Matched.of(before, after).position.tolist()
    assert expected == Matched.of(_stored(before), _stored(after)).position.tolist()


@pytest.mark.parametrize("k", [1, 5, 10, 20])
@pytest.mark.parametrize("seed", [7, 8])
def test_the_overlap_of_columns_is_the_overlap_of_records(k: int, seed: int) -> None:
    """overlap_of gives the same per-query floats and means from columns as from records."""
    before, after = _run(seed), _run(seed + 50)
    expected = overlap_of(before, after, k)
    assert expected.to_dict() == overlap_of(_stored(before), _stored(after), k).to_dict()


@pytest.mark.parametrize("k", [3, 10])
def test_overlaps_of_rankings_are_the_scalar_measures(k: int) -> None:
    """Each pair of Rankings scores the float rank_biased_overlap and jaccard give it."""
    rng = np.random.default_rng(11)
    first = [_ranking(rng, 25) for _ in range(500)]
    second = [_ranking(rng, 25) for _ in range(500)]
    rbos, jaccards = overlaps(first, second, k)
    assert [
        rank_biased_overlap(a, b, k) for a, b in zip(first, second, strict=True)
    ] == rbos.tolist()
    assert [jaccard(a, b, k) for a, b in zip(first, second, strict=True)] == jaccards.tolist()


def test_overlaps_of_rankings_survive_colliding_hashes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Should every id hash alike, the overlaps are still the scalar measures' floats."""
    monkeypatch.setattr(texts, "hashes", lambda lengths, data: np.ones(lengths.size, np.uint64))
    rng = np.random.default_rng(12)
    first = [_ranking(rng, 20) for _ in range(50)]
    second = [_ranking(rng, 20) for _ in range(50)]
    rbos, jaccards = overlaps(first, second, 10)
    assert [
        rank_biased_overlap(a, b, 10) for a, b in zip(first, second, strict=True)
    ] == rbos.tolist()
    assert [jaccard(a, b, 10) for a, b in zip(first, second, strict=True)] == jaccards.tolist()


def test_overlaps_of_long_rankings_cut_short_are_the_scalar_measures() -> None:
    """Rankings mostly below the cutoff (few of their ids hashed) score the scalar floats."""
    rng = np.random.default_rng(13)
    first = [tuple(f"a{q}-{x}" for x in rng.integers(0, 30, 20)) for q in range(200)]
    second = [tuple(f"a{q}-{x}" for x in rng.integers(0, 30, 20)) for q in range(200)]
    rbos, jaccards = overlaps(first, second, 2)
    pairs = list(zip(first, second, strict=True))
    assert [rank_biased_overlap(a, b, 2) for a, b in pairs] == rbos.tolist()
    assert [jaccard(a, b, 2) for a, b in pairs] == jaccards.tolist()


def test_coverage_read_from_the_columns_is_the_engines_on_dicts() -> None:
    """judged@k of each stored query, scored from the run's columns, equals the engine's
    score of the same rankings given as dicts (an independent path through the engine)."""
    from monitor.compare.coverage import judged_at
    from monitor.metrics.evaluation import evaluate
    from monitor.store import QueryRecord, RunRecord

    at = datetime(2030, 1, 1, tzinfo=timezone.utc)
    queries = (
        QueryRecord("a", {"ndcg@10": 0.5}, ("d1", "d2", "d9", "d1"), ("d1",)),
        QueryRecord("b", {"ndcg@10": 0.0}, ("x", "y"), ("z",)),
        QueryRecord("c", {}, ("d1",), ()),  # not evaluated: left out
        QueryRecord("d", {"ndcg@10": 1.0}, ("q",), ("q",), error_type="TimeoutError"),
    )
    run = RunRecord("s", "p", at, at, queries=queries)
    qrels = {"a": {"d1": 1, "d2": 0}, "b": {"z": 1, "y": 0}, "c": {"d1": 1}, "d": {"q": 1}}
    expected = evaluate(
        {q: qrels[q] for q in ("a", "b")},
        {"a": ["d1", "d2", "d9", "d1"], "b": ["x", "y"]},
        ["judged@3"],
    )
    values = expected.values[expected.metrics[0]].tolist()
    assert dict(zip(expected.query_ids, values, strict=True)) == judged_at(run, qrels, 3)
