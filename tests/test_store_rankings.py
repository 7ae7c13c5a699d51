"""The store's columns with rankings held as arrays: encoded byte for byte as tuples are, and
read back as arrays."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_store import make_run

from monitor import texts
from monitor.run.rankings import Rankings
from monitor.store import QueryRecord, columnar, open_store
from monitor.store.records import ColumnQueries, QueryColumns

doc_ids = st.sampled_from(["d1", "d2", "café", "日本", "00ff", "ab12cd", "", "D9"]) | st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=5
)
query = st.builds(
    QueryRecord,
    query_id=st.text(min_size=1, max_size=6),
    values=st.dictionaries(st.sampled_from(["ndcg@10", "recall@5"]), st.floats(), max_size=2),
    retrieved_ids=st.lists(doc_ids, max_size=5).map(tuple),
    relevant_ids=st.lists(doc_ids, max_size=3).map(tuple),
    latency_seconds=st.none() | st.floats(min_value=0, max_value=10),
    error_type=st.none() | st.just("TimeoutError"),
)

CASES = {
    "empty run": [],
    "empty rankings": [QueryRecord("q1"), QueryRecord("q2")],
    "non-ASCII": [
        QueryRecord("q1", retrieved_ids=("café", "日本語", "a"), relevant_ids=("a",)),
        QueryRecord("q2", retrieved_ids=("a",), relevant_ids=("ü", "café")),
    ],
    "hex-like": [
        QueryRecord("q1", retrieved_ids=("d9a5bd8ea531", "00ff"), relevant_ids=("b47e",)),
        QueryRecord("q2", retrieved_ids=("b47e",), relevant_ids=("00ff", "abcd")),
    ],
    "hex, one odd": [QueryRecord("q1", retrieved_ids=("abc", "d1"), relevant_ids=("ab",))],
    "upper-case hex": [QueryRecord("q1", retrieved_ids=("D9A5",), relevant_ids=("d9a5",))],
    "empty id": [QueryRecord("q1", retrieved_ids=("ab", ""), relevant_ids=("",))],
}


def _as_rankings(queries: list[QueryRecord], *, which: str = "both") -> columnar.QueryColumns:
    """Return the columns of ``queries`` with their rankings (or one of them) as Rankings over
    a dictionary of their own."""
    columns = QueryColumns.of(queries)
    changes: dict[str, Rankings] = {}
    if which in ("both", "retrieved"):
        changes["retrieved_ids"] = Rankings.of(list(columns.retrieved_ids))
    if which in ("both", "relevant"):
        changes["relevant_ids"] = Rankings.of(list(columns.relevant_ids))
    return dataclasses.replace(columns, **changes)


@pytest.mark.parametrize("queries", list(CASES.values()), ids=list(CASES))
@pytest.mark.parametrize("which", ["both", "retrieved", "relevant"])
def test_rankings_encode_as_the_same_tuples(queries: list[QueryRecord], which: str) -> None:
    """Columns whose rankings are Rankings give the blobs of the same queries' tuples."""
    expected = columnar.encode_queries(queries)
    assert expected == columnar.encode_columns(_as_rankings(queries, which=which))


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.lists(query, max_size=30, unique_by=lambda q: q.query_id))
def test_any_rankings_encode_as_the_same_tuples(queries: list[QueryRecord]) -> None:
    """Any queries' rankings as Rankings are saved byte for byte as their tuples are."""
    assert columnar.encode_queries(queries) == columnar.encode_columns(_as_rankings(queries))


def test_rankings_from_words_encode_as_the_same_tuples() -> None:
    """Rankings built from packed words (as a replayed run has them) encode as tuples do."""
    queries = CASES["hex-like"]
    flat = [d for q in queries for d in q.retrieved_ids]
    words = np.frombuffer(b"".join(d.encode().ljust(16, b"\0") for d in flat), ">u8")
    built = Rankings.from_words(
        np.array([len(q.retrieved_ids) for q in queries], np.int32),
        words.astype(np.uint64).reshape(len(flat), 2),
    )
    columns = dataclasses.replace(QueryColumns.of(queries), retrieved_ids=built)
    assert columnar.encode_queries(queries) == columnar.encode_columns(columns)


@given(st.lists(st.lists(st.sampled_from(["a", "b", "c", "dé"]), max_size=6), max_size=8))
def test_repeated_marks_each_later_copy_of_an_id_within_its_ranking(
    rankings: list[list[str]],
) -> None:
    """An entry is repeated when its ranking holds its id earlier; the same id in another
    ranking is not a repeat."""
    expected = [doc in ranking[:i] for ranking in rankings for i, doc in enumerate(ranking)]
    assert Rankings.of(rankings).repeated().tolist() == expected


def test_ids_of_one_content_hash_are_still_told_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """Should every id hash alike, merging the dictionaries still keeps distinct ids apart."""
    monkeypatch.setattr(texts, "hashes", lambda lengths, data: np.zeros(lengths.size, np.uint64))
    queries = CASES["non-ASCII"]
    assert columnar.encode_queries(queries) == columnar.encode_columns(_as_rankings(queries))


# Reading the columns back ----------------------------------------------------------------------


def _key(q: QueryRecord) -> object:
    """Return a query's fields with NaN values made comparable."""
    values = {k: ("nan" if v != v else v) for k, v in q.values.items()}
    return dataclasses.replace(q, values={}), values


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(st.lists(query, max_size=30, unique_by=lambda q: q.query_id))
def test_a_query_indexed_reads_as_the_decoded_records(queries: list[QueryRecord]) -> None:
    """Each query built on its own from the columns equals the record decode_queries gives."""
    blobs = columnar.encode_queries(queries)
    lazy = ColumnQueries(columnar.decode_columns(blobs))
    decoded = columnar.decode_queries(blobs)
    assert [_key(q) for q in decoded] == [_key(lazy[i]) for i in range(len(lazy))]
    assert [_key(q) for q in queries] == [_key(q) for q in lazy]


def test_decoded_columns_hold_rankings_as_arrays() -> None:
    """The columns read back hold both rankings as Rankings over one dictionary of ids."""
    columns = columnar.decode_columns(columnar.encode_queries(CASES["hex-like"]))
    assert (True, True) == (
        isinstance(columns.retrieved_ids, Rankings),
        isinstance(columns.relevant_ids, Rankings),
    )
    assert [("d9a5bd8ea531", "00ff"), ("b47e",)] == list(columns.retrieved_ids)
    assert [("b47e",), ("00ff", "abcd")] == list(columns.relevant_ids)


def test_decoded_values_are_a_matrix_with_a_present_mask() -> None:
    """Metric values read back as queries x metrics, NaN and not present where a query has
    none."""
    queries = [QueryRecord("a", {"x": 1.0, "y": 2.0}), QueryRecord("b", {"y": 3.0})]
    columns = columnar.decode_columns(columnar.encode_queries(queries))
    assert ("x", "y") == columns.metrics
    assert [[True, True], [False, True]] == columns.present.tolist()
    assert [1.0, 2.0, 3.0] == columns.values[columns.present].tolist()
    assert np.isnan(columns.values[1, 0])


def test_a_run_read_from_the_store_carries_columns_and_lazy_queries(tmp_path: Path) -> None:
    """A run another store reads back holds its columns, and builds no record until asked."""
    with open_store(tmp_path / "m.db") as saving, open_store(tmp_path / "m.db") as other:
        run_id = saving.save_run(make_run())
        read = other.get_run(run_id)
        baseline = other.set_baseline("nightly", run_id) and other.get_baseline("nightly")
    assert isinstance(read.queries, ColumnQueries)
    assert isinstance(read.columns, QueryColumns)
    assert baseline is not None
    assert isinstance(baseline.columns, QueryColumns)
    assert isinstance(read.columns.retrieved_ids, Rankings)
    assert make_run().queries == tuple(read.queries)


def test_building_a_run_from_lazy_queries_builds_no_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading a run and copying its record leave the query records unbuilt."""
    with open_store(tmp_path / "m.db") as saving, open_store(tmp_path / "m.db") as other:
        run_id = saving.save_run(make_run())
        monkeypatch.setattr(ColumnQueries, "records", _refuse)
        read = other.get_run(run_id)
        copied = dataclasses.replace(read, config_hash="other")
    assert (3, read.columns) == (len(copied.queries), copied.columns)


def _refuse(self: ColumnQueries) -> tuple[QueryRecord, ...]:
    """Stand in for ColumnQueries.records where no record may be built."""
    raise AssertionError("query records built")


def test_runs_read_lazily_equal_the_same_runs_as_records(tmp_path: Path) -> None:
    """A run read from its columns equals the run the saving store returns as records."""
    with open_store(tmp_path / "m.db") as saving, open_store(tmp_path / "m.db") as other:
        run_id = saving.save_run(make_run())
        assert saving.get_run(run_id) == other.get_run(run_id)


def test_other_queries_replace_the_stored_columns(tmp_path: Path) -> None:
    """A stored run given other queries (re-scored, say) carries their columns, not the old."""
    with open_store(tmp_path / "m.db") as store:
        read = store.get_run(store.save_run(make_run()))
    rescored = dataclasses.replace(read, queries=tuple(read.queries)[:2])
    assert (["q1", "q2"], 2) == (list(rescored.columns.query_ids), len(rescored.queries))
    assert tuple(read.queries)[:2] == tuple(rescored.queries)


def test_a_run_saved_from_its_read_columns_saves_the_same_blobs(tmp_path: Path) -> None:
    """Saving a run read from the store writes its columns back byte for byte."""
    with open_store(tmp_path / "m.db") as store:
        first = store.save_run(make_run())
        again = store.save_run(dataclasses.replace(store.get_run(first), run_id=None))
    with sqlite3.connect(tmp_path / "m.db") as db:
        blobs = [
            db.execute(
                "SELECT field, data FROM run_blobs WHERE run_id = ? ORDER BY field", (run_id,)
            ).fetchall()
            for run_id in (first, again)
        ]
    assert blobs[0] == blobs[1]


def test_lazy_queries_print_as_the_tuple_of_their_records() -> None:
    """The repr of queries read from columns is that of the tuple of records they hold."""
    queries = tuple(CASES["non-ASCII"])
    lazy = ColumnQueries(columnar.decode_columns(columnar.encode_queries(queries)))
    assert repr(queries) == repr(lazy)
