"""The overlap of Rankings read as words: the scalar measures' floats whatever the ids."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor import texts
from monitor.compare import overlap as overlap_module
from monitor.compare.overlap import jaccard, overlap_of, overlaps, rank_biased_overlap
from monitor.run.rankings import Rankings
from monitor.store import QueryRecord, RunRecord, columnar
from monitor.store.records import ColumnQueries

AT = datetime(2030, 1, 1, tzinfo=timezone.utc)

#: Ids of many lengths: empty, one word, just past one, past the words read, non-ASCII,
#: with a NUL, and pairs that share their first 64 bytes.
POOL = (
    "",
    "a",
    "a\x00",
    "b",
    "x123456-7",
    "x123456-8",
    "é",
    "ééééé",
    "a" * 8,
    "a" * 9,
    "a" * 64 + "x",
    "a" * 64 + "y",
    "a" * 100,
    "日本語のid",
)

loose = st.lists(st.sampled_from(POOL), max_size=12)


def scalar(first: list[list[str]], second: list[list[str]], k: int) -> list[tuple[float, float]]:
    """Return each pair's rank_biased_overlap and jaccard, the floats to reproduce."""
    return [
        (rank_biased_overlap(a, b, k), jaccard(a, b, k)) for a, b in zip(first, second, strict=True)
    ]


def measured(first: list[list[str]], second: list[list[str]], k: int) -> list[tuple[float, float]]:
    """Return overlaps() of the pairs (read into Rankings), pair by pair."""
    rbos, jaccards = overlaps(first, second, k)
    return list(zip(rbos.tolist(), jaccards.tolist(), strict=True))


@pytest.mark.slow
@settings(max_examples=200)
@given(
    st.lists(st.tuples(loose, loose), min_size=1, max_size=10),
    st.integers(min_value=0, max_value=40),
)
def test_rankings_of_any_ids_score_the_scalar_floats(
    pairs: list[tuple[list[str], list[str]]], k: int
) -> None:
    """Ids of any length, repeated or not, score the floats of the scalar measures."""
    first, second = [a for a, _ in pairs], [b for _, b in pairs]
    assert scalar(first, second, k) == measured(first, second, k)


@pytest.mark.parametrize("k", [1, 3, 12, 20, 33, 50])
def test_k_below_and_beyond_the_lists_scores_the_scalar_floats(k: int) -> None:
    """A cutoff shorter or longer than the rankings (dense or sorted matching) changes nothing."""
    rng = np.random.default_rng(k)
    first = [[f"x{q}-{d}" for d in rng.permutation(40)[:20]] for q in range(300)]
    second = [[f"x{q}-{d}" for d in rng.permutation(40)[: rng.integers(0, 40)]] for q in range(300)]
    assert scalar(first, second, k) == measured(first, second, k)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ([[]], [[]]),
        ([[], []], [["a"], []]),
        ([["a", "b"]], [[]]),
        ([[""]], [[""]]),
        ([["", ""]], [[""]]),
    ],
)
def test_empty_rankings_and_empty_ids_score_the_scalar_floats(
    first: list[list[str]], second: list[list[str]]
) -> None:
    """Empty rankings, empty ids and runs of no ids at all score as the scalar measures say."""
    assert scalar(first, second, 10) == measured(first, second, 10)


@pytest.mark.parametrize("k", [5, 40])
def test_the_empty_id_beside_padding_is_shared(k: int) -> None:
    """The empty id, read as the padding's words, is still shared (dense and sorted matching)."""
    first, second = [["", "b"], ["a", ""]], [["c", ""], [""]]
    assert scalar(first, second, k) == measured(first, second, k)


def test_repeated_ids_within_a_top_k_count_once() -> None:
    """An id repeated within a top k counts once, at its first place, as the scalar measures."""
    first = [["a", "a", "b", "c"], ["x123456-7"] * 3]
    second = [["b", "a", "a", "d"], ["x123456-7"]]
    assert scalar(first, second, 3) == measured(first, second, 3)


@pytest.mark.parametrize("value", [7, 0, 1])
def test_colliding_hashes_do_not_make_ids_shared(
    monkeypatch: pytest.MonkeyPatch, value: int
) -> None:
    """Should every id hash alike (the padding's values too), the floats do not change."""
    monkeypatch.setattr(
        texts, "word_hashes", lambda words: np.full(words.shape[0], value, np.uint64)
    )
    rng = np.random.default_rng(value)
    first = [list(rng.choice(POOL, int(rng.integers(0, 8)))) for _ in range(60)]
    second = [list(rng.choice(POOL, int(rng.integers(0, 8)))) for _ in range(60)]
    assert scalar(first, second, 5) == measured(first, second, 5)


def test_ids_alike_in_their_first_64_bytes_are_told_apart_by_their_bytes() -> None:
    """Two long ids whose words read match are compared byte for byte beyond them."""
    long_x, long_y = "a" * 64 + "x", "a" * 64 + "y"
    assert [(0.0, 0.0), (1.0, 1.0)] == measured([[long_x], [long_y]], [[long_y], [long_y]], 5)


def test_two_codes_of_one_id_are_the_same_document() -> None:
    """A dictionary that holds one id twice still shares it with the other run."""
    lengths, data = texts.layout_of(["ab", "ab", "c"])
    twice = Rankings(np.array([2], np.int32), np.array([0, 2], np.int32), lengths, data)
    other = Rankings(np.array([2], np.int32), np.array([1, 2], np.int32), lengths, data)
    rbos, jaccards = overlaps(twice, other, 5)
    assert [(1.0, 1.0)] == list(zip(rbos.tolist(), jaccards.tolist(), strict=True))


def test_the_last_ids_of_a_dictionary_are_read_whole() -> None:
    """Ids at the very end of the bytes (and a dictionary under 8 bytes) are read whole."""
    first = [["abc", "x"], ["longer-id-9", "é"]]
    second = [["x", "ab"], ["é", "longer-id-9"]]
    assert scalar(first, second, 5) == measured(first, second, 5)
    assert scalar([["a", "b"]], [["b"]], 5) == measured([["a", "b"]], [["b"]], 5)


def _stored(lists: dict[str, list[str]], run_id: int) -> RunRecord:
    """Return a run of ``lists`` as the store reads it back: its rankings as Rankings."""
    queries = tuple(QueryRecord(qid, {"recall@10": 1.0}, tuple(ids)) for qid, ids in lists.items())
    run = RunRecord("s", "p", AT, AT, queries=queries, run_id=run_id)
    columns = columnar.decode_columns(columnar.encode_queries(run.queries))
    return dataclasses.replace(run, queries=ColumnQueries(columns))


def test_overlap_of_stored_runs_in_other_orders_over_chunks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Runs holding their queries in other orders, measured a few queries a chunk, give the
    floats of their records."""
    monkeypatch.setattr(overlap_module, "CHUNK_QUERIES", 4)
    rng = np.random.default_rng(5)
    before = {f"q{q}": [f"x{q}-{d}" for d in rng.permutation(12)[:10]] for q in range(23)}
    after = {f"q{q}": [f"x{q}-{d}" for d in rng.permutation(12)[:10]] for q in rng.permutation(23)}
    baseline, current = _stored(before, 1), _stored(after, 2)
    assert isinstance(baseline.columns.retrieved_ids, Rankings)  # type: ignore[union-attr]
    expected = [
        (qid, rank_biased_overlap(before[qid], ids, 10), jaccard(before[qid], ids, 10))
        for qid, ids in after.items()
    ]
    result = overlap_of(baseline, current, 10)
    assert expected == [(q.query_id, q.rbo, q.jaccard) for q in result.queries]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, float("nan")]), max_size=30),
    st.integers(0, 12),
)
def test_the_queries_that_moved_most_read_alike_from_columns_and_records(
    rbos: list[float], count: int
) -> None:
    """The queries of lowest RBO below 1, lowest first and ties in query order, are the same
    read from the overlap's columns as sorted from its records; an unchanged top k (RBO 1)
    or an undefined one (NaN) never counts as moved."""
    from monitor.compare.overlap import Overlap, OverlapRows, QueryOverlap

    ids = [f"q{i}" for i in range(len(rbos))]
    values = np.array(rbos, dtype=np.float64)
    columns = OverlapRows(ids, values, values / 2)
    records = tuple(QueryOverlap(i, r, r / 2) for i, r in zip(ids, rbos, strict=True))
    moved = Overlap(10, 0.9, 0.5, 0.5, columns).moved_most(count)
    expected = sorted((q for q in records if q.rbo < 1.0), key=lambda q: q.rbo)[:count]
    assert [q.query_id for q in expected] == [q.query_id for q in moved]
    assert moved == Overlap(10, 0.9, 0.5, 0.5, OverlapRows.of(records)).moved_most(count)


def test_an_overlap_of_columns_gives_its_rows_built_when_read_or_as_a_list() -> None:
    """The JSON form's per-query rows, read from the columns one at a time or a block at a
    time, are the rows of the list form."""
    from monitor.compare.overlap import Overlap, OverlapRows

    rbos = np.array([0.5, 1.0, np.nan])
    overlap = Overlap(10, 0.9, 0.75, 0.5, OverlapRows(["a", "b", "c"], rbos, rbos / 2))
    listed, lazy = overlap.to_dict()["queries"], overlap.to_dict(lazy_rows=True)["queries"]
    assert isinstance(listed, list)
    assert not isinstance(lazy, list)
    assert listed[:2] == lazy[:2] == [lazy[0], lazy[1]]
    assert listed[2]["query_id"] == lazy[2]["query_id"] == "c"
    assert np.isnan(listed[2]["rbo"])
    assert np.isnan(lazy[2]["rbo"])
    assert len(listed) == len(lazy) == 3
