"""A run's per-query outcomes kept as compressed columns, and the migration that converts
stores of one JSON row per query. SQLite always; PostgreSQL when it is reachable."""

from __future__ import annotations

import dataclasses
import math
import sqlite3
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from store_legacy import insert_legacy_run
from test_store import make_run

from monitor.errors import StoreError, StoreLookupError
from monitor.run import codec
from monitor.store import QueryRecord, SqlStore, columnar, open_store, schema
from monitor.store.records import QueryColumns


@pytest.fixture
def store(store_url: str) -> Iterator[SqlStore]:
    """Return an open store on an empty database."""
    with open_store(store_url) as opened:
        assert isinstance(opened, SqlStore)
        yield opened


ids = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=8)
value = st.floats(allow_nan=True, allow_infinity=True)
query = st.builds(
    QueryRecord,
    query_id=ids,
    values=st.dictionaries(st.sampled_from(["ndcg@10", "recall@5", "mrr"]), value, max_size=3),
    retrieved_ids=st.lists(ids, max_size=5).map(tuple),
    relevant_ids=st.lists(ids, max_size=3).map(tuple),
    latency_seconds=st.none() | st.floats(min_value=0, max_value=100),
    error_type=st.none() | st.sampled_from(["TimeoutError", "HTTPStatusError"]),
    error_message=st.none() | st.text(max_size=20),
)


def _same(a: tuple[QueryRecord, ...], b: tuple[QueryRecord, ...]) -> bool:
    """Return whether two query tuples are equal, NaN values counting as equal."""

    def key(q: QueryRecord) -> object:
        values = {k: ("nan" if math.isnan(v) else v) for k, v in q.values.items()}
        return dataclasses.replace(q, values={}), values

    return [key(q) for q in a] == [key(q) for q in b]


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.lists(query, max_size=80, unique_by=lambda q: q.query_id))
def test_columns_read_back_every_query_exactly(queries: list[QueryRecord]) -> None:
    """Encoding then decoding gives back every query field for field, floats bit for bit."""
    decoded = columnar.decode_queries(columnar.encode_queries(queries))
    assert _same(tuple(queries), decoded)


@pytest.mark.slow
def test_a_many_valued_metric_reads_back_bit_for_bit() -> None:
    """A metric with more distinct values than the dictionary takes keeps every bit."""
    rng = np.random.default_rng(7)
    floats = rng.random(70_000).tolist()
    queries = [QueryRecord(f"q{i}", {"ndcg@10": v}) for i, v in enumerate(floats)]
    arrays = columnar.decode_arrays(columnar.encode_queries(queries))
    assert floats == arrays.values["ndcg@10"].tolist()


def test_a_query_without_a_value_is_told_from_a_nan_value() -> None:
    """A metric a query lacks stays absent; a NaN value stays a NaN value."""
    queries = [QueryRecord("a", {"mrr": math.nan}), QueryRecord("b", {})]
    decoded = columnar.decode_queries(columnar.encode_queries(queries))
    assert (["mrr"], {}) == (list(decoded[0].values), dict(decoded[1].values))


@given(st.lists(query, max_size=40, unique_by=lambda q: q.query_id))
def test_answered_marks_the_queries_without_an_error_type(queries: list[QueryRecord]) -> None:
    """A query is answered when it has no error type, whatever its message; the mask is read
    only, so a reader cannot change what the next reader sees."""
    columns = QueryColumns.of(queries)
    expected = [query.error_type is None for query in queries]
    assert columns.answered().tolist() == expected
    assert columns.answered() is columns.answered()
    with pytest.raises(ValueError, match="read-only"):
        columns.answered()[:1] = False


def test_per_query_values_are_arrays_in_run_order(store: SqlStore) -> None:
    """per_query_values gives the query ids in run order, a float column per metric with NaN
    where a query has no value, and which queries failed."""
    run = make_run(
        queries=(
            QueryRecord("q2", {"ndcg@10": 0.5}),
            QueryRecord("q1", {}, error_type="TimeoutError"),
            QueryRecord("q3", {"ndcg@10": 1.0, "mrr": 0.25}),
        )
    )
    arrays = store.per_query_values(store.save_run(run))
    assert ("q2", "q1", "q3") == arrays.query_ids
    assert [0.5, None, 1.0] == [None if math.isnan(v) else v for v in arrays.values["ndcg@10"]]
    assert ["ndcg@10", "mrr"] == list(arrays.values)
    assert [False, True, False] == arrays.failed.tolist()


def test_per_query_values_of_an_unknown_run_raise(store: SqlStore) -> None:
    """Asking for the values of a run that does not exist names it."""
    with pytest.raises(StoreLookupError, match="run 99"):
        store.per_query_values(99)


def test_a_run_without_queries_has_no_columns(store: SqlStore) -> None:
    """A run saved without queries reads back without queries and with empty arrays."""
    run_id = store.save_run(make_run(queries=()))
    assert ((), ()) == (store.get_run(run_id).queries, store.per_query_values(run_id).query_ids)


def test_a_run_is_a_few_rows_whatever_its_size(store: SqlStore) -> None:
    """A 2,000-query run with two metrics is ten rows: eight fields and one per metric."""
    queries = tuple(QueryRecord(f"q{i}", {"ndcg@10": i / 2000, "mrr": 1.0}) for i in range(2000))
    run_id = store.save_run(make_run(queries=queries))
    with store._db.transaction(write=False) as tx:
        rows = tx.scalar("SELECT COUNT(*) FROM run_blobs WHERE run_id = ?", (run_id,))
    assert 10 == rows


def test_a_blob_of_an_unknown_codec_is_refused(store: SqlStore) -> None:
    """A column written by a newer version names the run, the field and the codec."""
    run_id = store.save_run(make_run())
    with store._db.transaction(write=True) as tx:
        tx.execute("UPDATE run_blobs SET codec = 'zstd-9' WHERE field = 'latency'")
    with pytest.raises(StoreError, match=f"run {run_id}, field 'latency': unknown codec 'zstd-9'"):
        store.get_run(run_id)


def test_a_repeated_query_id_is_refused_by_name(store: SqlStore) -> None:
    """Saving a run with a query id twice fails naming the id, and leaves nothing behind."""
    twice = (QueryRecord("q7"), QueryRecord("q7"))
    with pytest.raises(StoreError, match="query id 'q7' appears twice"):
        store.save_run(make_run(queries=twice))
    assert [] == store.list_runs()


# The migration ------------------------------------------------------------------------------


def _legacy_store(url: str, monkeypatch: pytest.MonkeyPatch, *runs_: object) -> list[int]:
    """Create a store at schema version 3 holding ``runs_`` as JSON rows; return their ids."""
    monkeypatch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:3])
    with open_store(url) as old:
        assert isinstance(old, SqlStore)
        found = [insert_legacy_run(old, run) for run in runs_]  # type: ignore[arg-type]
    monkeypatch.undo()
    return found


def test_the_migration_converts_every_run_in_place(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening a store of JSON rows per query converts each run to columns, queries equal."""
    first, second = make_run(), make_run(day=1, ndcg=0.75)
    ids = _legacy_store(store_url, monkeypatch, first, second)
    with open_store(store_url) as new:
        assert isinstance(new, SqlStore)
        read = [new.get_run(run_id) for run_id in ids]
        counts = [summary.query_count for summary in new.list_runs()]
    assert [first.queries, second.queries] == [run.queries for run in read]
    assert [3, 3] == counts


def test_the_migration_drops_the_table_of_json_rows(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the migration no ``run_queries`` table is left."""
    _legacy_store(store_url, monkeypatch, make_run())
    with (
        open_store(store_url) as new,
        pytest.raises(StoreError),
        new._db.transaction(  # type: ignore[attr-defined]
            write=False
        ) as tx,
    ):
        tx.scalar("SELECT COUNT(*) FROM run_queries")


def test_the_migration_turns_on_incremental_vacuum(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A SQLite file made before the migration is compacted into incremental auto-vacuum."""
    path = tmp_path / "old.db"
    monkeypatch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:3])
    with open_store(path) as old:
        assert isinstance(old, SqlStore)
        insert_legacy_run(old, make_run())
    # As files made before this release are: without auto-vacuum.
    with sqlite3.connect(path) as raw:
        raw.execute("PRAGMA auto_vacuum = NONE")
        raw.execute("VACUUM")
        assert 0 == raw.execute("PRAGMA auto_vacuum").fetchone()[0]
    monkeypatch.undo()
    open_store(path).close()
    with sqlite3.connect(path) as raw:
        assert 2 == raw.execute("PRAGMA auto_vacuum").fetchone()[0]  # 2: INCREMENTAL


def test_a_step_numbered_below_the_applied_ones_is_still_applied(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Versions need not be contiguous: a store past 4 that lacks step 4 gets step 4."""
    without_four = tuple(m for m in schema.MIGRATIONS if m.version != 4)
    four = schema.Migration(4, "a step released beside 5", ("CREATE TABLE four (x TEXT)",))
    monkeypatch.setattr(schema, "MIGRATIONS", without_four)
    open_store(store_url).close()
    monkeypatch.setattr(
        schema, "MIGRATIONS", tuple(sorted((*without_four, four), key=lambda m: m.version))
    )
    with open_store(store_url) as new, new._db.transaction(write=False) as tx:  # type: ignore[attr-defined]
        versions = [row[0] for row in tx.all("SELECT version FROM schema_version ORDER BY version")]
        tx.scalar("SELECT COUNT(*) FROM four")
    assert [m.version for m in schema.MIGRATIONS] == versions


@pytest.mark.parametrize(
    "doc_ids",
    [("d9a5bd8ea531", "00ff"), ("D9A5", "ab"), ("abc", "d1"), ("ab", "")],
    ids=["hex", "upper-case", "odd-length", "empty"],
)
def test_document_ids_read_back_as_written(doc_ids: tuple[str, ...]) -> None:
    """Hex ids packed to bytes and every other id read back exactly as written."""
    queries = [QueryRecord("q", retrieved_ids=doc_ids)]
    assert doc_ids == columnar.decode_queries(columnar.encode_queries(queries))[0].retrieved_ids


def test_hex_document_ids_take_half_their_text() -> None:
    """A dictionary of 12-hex-digit ids is stored in about 6 bytes an id, not 12."""
    rng = np.random.default_rng(3)
    docs = tuple(f"{x:012x}" for x in rng.integers(0, 16**12, 5000, dtype=np.int64))
    blob = columnar.encode_queries([QueryRecord("q", retrieved_ids=docs)])[columnar.DOC_IDS]
    assert 5000 * 6.5 > len(blob)


# Reading back the run just saved ------------------------------------------------------------


def _irregular() -> tuple[QueryRecord, ...]:
    """Return queries that read back otherwise than given: a NaN latency, metrics reordered."""
    return (
        QueryRecord("q1", {"ndcg@10": 0.5, "mrr": 1.0}, ("d1",), ("d1",), 0.01),
        QueryRecord("q2", {"mrr": 0.0, "ndcg@10": 0.0}, ("d2",), ("d1",), float("nan")),
    )


@pytest.mark.parametrize("queries", [None, _irregular()], ids=["regular", "irregular"])
def test_the_run_just_saved_reads_back_as_another_store_reads_it(
    store_url: str, queries: tuple[QueryRecord, ...] | None
) -> None:
    """The saving store returns the same queries, in the same metric order, as a store that
    decodes the run's columns."""
    with open_store(store_url) as saving, open_store(store_url) as other:
        run_id = saving.save_run(make_run(queries=queries))
        mine, theirs = saving.get_run(run_id).queries, other.get_run(run_id).queries
    order = [[list(q.values) for q in run] for run in (theirs, mine)]
    assert (_same(theirs, mine), order[0]) == (True, order[1])


def test_the_run_just_saved_is_not_decoded_again(store: SqlStore) -> None:
    """Reading the run the store has just saved gives back the saved query records."""
    run = make_run()
    run_id = store.save_run(run)
    read = store.get_run(run_id).queries
    assert [True] * len(run.queries) == [a is b for a, b in zip(run.queries, read, strict=True)]


def test_the_run_just_saved_reads_back_without_its_detail_once_pruned(store: SqlStore) -> None:
    """Retention that drops the detail of the run just saved leaves its read with no queries."""
    from monitor.store.retention import Retention

    first = store.save_run(make_run(day=0))
    store.save_run(make_run(day=1))
    latest = store.save_run(make_run(day=2))
    store.prune("nightly", Retention(runs=0, keep=()))
    assert ((), ()) == (store.get_run(latest).queries, store.get_run(first).queries)


@pytest.mark.slow
@given(st.lists(st.text(min_size=0, max_size=6) | st.none(), max_size=12))
@settings(max_examples=200, deadline=None)
def test_texts_read_back_as_written(texts: list[str | None]) -> None:
    """Any column of texts, NUL bytes, non-ASCII and missing ones included, reads back."""
    clean = [t if t is None else t.encode("utf-8", "replace").decode("utf-8") for t in texts]
    clean = [
        t if t is None or not any(0xD800 <= ord(c) <= 0xDFFF for c in t) else "x" for t in clean
    ]
    assert clean == codec.unstrings(codec.strings(clean))


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(st.lists(query, max_size=60, unique_by=lambda q: q.query_id))
def test_columns_encode_as_the_same_queries_as_records(queries: list[QueryRecord]) -> None:
    """A run's queries given as columns are saved byte for byte as the same records are."""
    expected = columnar.encode_queries(queries)
    assert expected == columnar.encode_columns(QueryColumns.of(queries))


def test_doc_ids_are_coded_in_order_of_first_appearance() -> None:
    """Document codes number the ids in the order they are first retrieved or judged."""
    queries = [
        QueryRecord("q1", retrieved_ids=("b", "a", "b")),
        QueryRecord("q2", relevant_ids=("c", "a")),
    ]
    blobs = columnar.encode_queries(queries)
    assert ["b", "a", "c"] == codec.texts_of(codec.unpack(blobs[columnar.DOC_IDS]))
    assert [0, 1, 0] == codec.unpack(blobs[columnar.RETRIEVED])[1].tolist()
    assert [2, 1] == codec.unpack(blobs[columnar.RELEVANT])[1].tolist()


T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)


class _SameHash(str):
    """A text whose hash is the same as every other's, to force a collision."""

    __slots__ = ()

    def __hash__(self) -> int:
        return 7


def test_ids_of_one_hash_still_get_codes_of_their_own() -> None:
    """Two distinct ids that hash alike are still two documents."""
    queries = [QueryRecord("q1", retrieved_ids=(_SameHash("x"), _SameHash("y"), _SameHash("x")))]
    decoded = columnar.decode_queries(columnar.encode_queries(queries))
    assert ("x", "y", "x") == decoded[0].retrieved_ids


@pytest.mark.parametrize("block", [1, 5, 1 << 22])
def test_a_blob_is_each_array_header_and_byte_planes_however_fed(
    block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A blob decompresses to each array's dtype and size, then its bytes one byte plane
    after another, whatever the blocks the planes reach the compressor in; and reads back."""
    import struct
    import zlib

    monkeypatch.setattr(codec, "_PLANE_BYTES", block)
    arrays = [
        np.arange(7, dtype=np.int32) * 70_000,
        np.array([0.5, -1.0, np.nan]),
        np.frombuffer(b"planes", np.uint8),
        np.zeros(0, np.int64),
    ]
    expected = b"".join(
        struct.pack("<4sQ", a.dtype.str.encode("ascii").ljust(4), a.size)
        + a.view(np.uint8).reshape(a.size, a.dtype.itemsize).T.tobytes()
        for a in arrays
    )
    blob = codec.pack(arrays)
    assert expected == zlib.decompress(blob)
    back = codec.unpack(blob)
    assert [a.dtype for a in arrays] == [b.dtype for b in back]
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(arrays, back, strict=True))
