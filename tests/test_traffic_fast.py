"""The fast path of ``logs import`` (DuckDB's readers, checks in SQL) stores what the row reader
stores, and leaves every file it cannot vouch for to the row reader."""

from __future__ import annotations

import gzip
import json
import tempfile
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("duckdb")

from monitor.errors import InputError, UsageError
from monitor.traffic import fast
from monitor.traffic.engine import connect
from monitor.traffic.importer import ImportSummary, import_logs
from tests.traffic_logs import T0, click, generate, search, write_csv, write_ndjson, write_parquet

Writer = Callable[[Path, Sequence[dict[str, Any]]], Path]
Stored = tuple[ImportSummary, dict[str, list[tuple[Any, ...]]]]

TABLES = {
    "queries": "SELECT * FROM queries ORDER BY query_id",
    "impressions": "SELECT * FROM impressions ORDER BY query_id, rank",
    "events": "SELECT * FROM events ORDER BY query_id, ts, object_id, position, action_name",
    "imported_files": "SELECT * FROM imported_files ORDER BY path",
}
ODD_TEXTS = [
    "Café  Menu", "café menu", "CAFE\u0301 MENU", "Straße", "STRASSE", "ﬁle\tname", "  x  ",
    'say "hi", \\ then', "emoji 😀 ok", "nan", "Ǆ multi\u00a0space", "名前",
]  # fmt: skip


def odd_logs() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Return generated logs with odd texts, missing optional fields and listed-twice docs."""
    planted = generate(seed=3, n_queries=6, searches_per_query=12, clients=6)
    queries = [dict(row) for row in planted.queries]
    events = [dict(row) for row in planted.events]
    for number, row in enumerate(queries):
        row["user_query"] = ODD_TEXTS[number % len(ODD_TEXTS)]
        if number % 5 == 0:
            del row["application"]
        if number % 7 == 0:
            row["query_response_hit_ids"] = [*row["query_response_hit_ids"][:3], row[
                "query_response_hit_ids"][0]]  # fmt: skip
        if number % 11 == 0:
            row["query_response_hit_ids"] = []
    for number, row in enumerate(events):
        if number % 4 == 0:
            row.pop("event_attributes", None)
        if number % 6 == 0:
            del row["object"]
    events.append({"action_name": "view", "timestamp": "2026-11-02T00:00:00Z"})
    return queries, events


def store(tmp_path: Path, name: str, queries: Sequence[Path], events: Sequence[Path],
          **options: Any) -> Stored:  # fmt: skip
    """Import the files into a new database ``name``; return the summary and every table."""
    connection = connect(tmp_path / name)
    try:
        summary = import_logs(connection, queries, events, clock=lambda: T0, **options)
        tables = {
            table: [tuple(row) for row in connection.execute(statement).fetchall()]
            for table, statement in TABLES.items()
        }
    finally:
        connection.close()
    return summary, tables


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Record, for every file staged, whether the fast path took it."""
    record: list[bool] = []
    for name in ("stage_queries", "stage_events"):
        real = getattr(fast, name)

        def spy(connection: Any, path: Path, *rest: Any, real: Any = real) -> Any:
            result = real(connection, path, *rest)
            record.append(result is not None)
            return result

        monkeypatch.setattr(fast, name, spy)
    return record


@pytest.fixture
def by_rows(monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """Return a switch that sends every file to the row reader (the fast path declines)."""

    def switch() -> None:
        monkeypatch.setattr(fast, "stage_queries", lambda connection, path, *rest: None)
        monkeypatch.setattr(fast, "stage_events", lambda connection, path, *rest: None)

    return switch


def csv_gz(path: Path, rows: Sequence[dict[str, Any]]) -> Path:
    plain = write_csv(path.with_suffix(""), rows)
    path.write_bytes(gzip.compress(plain.read_bytes(), mtime=0))
    return path


FORMATS: list[tuple[str, Writer]] = [
    (".ndjson", write_ndjson),
    (".ndjson.gz", write_ndjson),
    (".jsonl", write_ndjson),
    (".parquet", write_parquet),
    (".csv", write_csv),
    (".csv.gz", csv_gz),
]


@pytest.mark.slow
@pytest.mark.parametrize(("suffix", "writer"), FORMATS)
def test_the_fast_path_stores_the_tables_the_row_reader_stores(
    tmp_path: Path, suffix: str, writer: Writer, taken: list[bool], by_rows: Callable[[], None]
) -> None:
    """On odd texts, missing optional fields and listed-twice docs both paths store alike."""
    queries, events = odd_logs()
    files = ([writer(tmp_path / f"q{suffix}", queries)], [writer(tmp_path / f"e{suffix}", events)])
    fast_stored = store(tmp_path, "fast.duckdb", *files, min_distinct_clients=2)
    by_rows()
    assert store(tmp_path, "rows.duckdb", *files, min_distinct_clients=2) == fast_stored
    assert [True, True] == taken


def test_flat_dotted_jsonl_fields_read_alike(
    tmp_path: Path, taken: list[bool], by_rows: Callable[[], None]
) -> None:
    """``object.object_id`` keys, ordinals as text and as 2.0, integer ids, an empty text."""
    queries = [search(f"q{n}", "" if n else "Q", [1, "d2", 3], client=f"c{n}") | {"query_id": n}
               for n in range(3)]  # fmt: skip
    events = [
        {"action_name": "click", "query_id": 0, "object.object_id": 3,
         "event_attributes.position.ordinal": "3", "timestamp": "2026-11-01T00:00:00Z"},
        {"action_name": "click", "query_id": "1", "object.object_id": "d2",
         "event_attributes": {"position": {"ordinal": 2.0}}, "timestamp": "2026-11-01 01:00:00"},
        {"action_name": "click", "query_id": "2", "object.object_id": "", "object": {
            "object_id": "d9"}, "timestamp": "2026-11-01T00:00:00.5-08:00"},
    ]  # fmt: skip
    files = ([write_ndjson(tmp_path / "q.jsonl", queries)],
             [write_ndjson(tmp_path / "e.jsonl", events)])  # fmt: skip
    fast_stored = store(tmp_path, "fast.duckdb", *files, min_distinct_clients=1)
    by_rows()
    assert store(tmp_path, "rows.duckdb", *files, min_distinct_clients=1) == fast_stored
    assert [True, True] == taken


STAMPS = [
    "2026-11-01T00:00:00Z", "2026-11-01T10:00:00.123+05:30", "2026-11-01T10:00:00-0800",
    "2026-11-01 23:59:59.123456789", "2026-11-01T00:00:00.1Z", "2026-02-28T23:30:00-01:00",
]  # fmt: skip


def test_timestamps_in_every_zone_read_to_the_same_utc_instant(
    tmp_path: Path, taken: list[bool], by_rows: Callable[[], None]
) -> None:
    """Offsets, fractions beyond microseconds and a space for the T give the row reader's UTC."""
    queries = [{**search(f"q{n}", "q", ["d"], client=f"c{n}"), "timestamp": stamp}
               for n, stamp in enumerate(STAMPS)]  # fmt: skip
    files = ([write_csv(tmp_path / "q.csv", queries)], [])
    fast_stored = store(tmp_path, "fast.duckdb", *files, min_distinct_clients=1)
    by_rows()
    assert store(tmp_path, "rows.duckdb", *files, min_distinct_clients=1) == fast_stored
    assert [True] == taken


def test_parquet_timestamps_with_and_without_a_zone_read_alike(
    tmp_path: Path, taken: list[bool], by_rows: Callable[[], None]
) -> None:
    """A zoned Parquet timestamp is its UTC instant, one without a zone the time as written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    paris = timezone(timedelta(hours=1))
    moments = [datetime(2026, 11, 1, 12, 0, 0, 250, tzinfo=paris), datetime(2026, 11, 1, 8)]
    for number, kind in enumerate([pa.timestamp("ms", tz="Europe/Paris"), pa.timestamp("us")]):
        rows = [search(f"q{number}-{n}", "q", ["d", "e"], client=f"c{n}") for n in range(2)]
        table = pa.Table.from_pylist(rows).set_column(
            2, "timestamp", pa.array(moments if kind.tz else [m.replace(tzinfo=None)
                                                               for m in moments], kind)
        )  # fmt: skip
        pq.write_table(table, tmp_path / f"q{number}.parquet")
    files = ([tmp_path / "q0.parquet", tmp_path / "q1.parquet"], [])
    fast_stored = store(tmp_path, "fast.duckdb", *files, min_distinct_clients=1)
    by_rows()
    assert store(tmp_path, "rows.duckdb", *files, min_distinct_clients=1) == fast_stored
    assert [True, True] == taken


def test_csv_hit_lists_as_ids_with_commas_or_json_read_alike(
    tmp_path: Path, taken: list[bool], by_rows: Callable[[], None]
) -> None:
    """In CSV, ``a, b ,c``, ``["a", 2]``, an empty list and a quoted newline read alike."""
    rows = [
        {**search("q0", "x", []), "query_response_hit_ids": " a, b ,,c "},
        {**search("q1", "line one\nline two", []), "query_response_hit_ids": '["a", 2]'},
        {**search("q2", "x", []), "query_response_hit_ids": "[]"},
    ]
    path = tmp_path / "q.csv"
    path.write_text("".join(
        f'{r["query_id"]},"{r["user_query"]}",{r["timestamp"]},c,web,"{r["query_response_hit_ids"].replace(chr(34), chr(34) * 2)}"\n'  # noqa: E501
        for r in rows), encoding="utf-8")  # fmt: skip
    header = "query_id,user_query,timestamp,client_id,application,query_response_hit_ids\n"
    path.write_text(header + path.read_text(encoding="utf-8"), encoding="utf-8")
    fast_stored = store(tmp_path, "fast.duckdb", [path], [], min_distinct_clients=1)
    by_rows()
    assert store(tmp_path, "rows.duckdb", [path], [], min_distinct_clients=1) == fast_stored
    assert [True] == taken


def test_a_query_id_logged_in_an_earlier_file_is_the_row_readers_bad_row(
    tmp_path: Path, taken: list[bool]
) -> None:
    """A second file repeating an id the fast path staged is read by rows, naming the line."""
    first = write_ndjson(tmp_path / "a.ndjson", [search("q1", "x", ["d"])])
    second = write_ndjson(tmp_path / "b.ndjson", [search("q2", "x", ["d"]),
                                                  search("q1", "x", ["d"])])  # fmt: skip
    with pytest.raises(InputError, match=r"b\.ndjson:2: expected query_id as an id not logged"):
        store(tmp_path, "t.duckdb", [first, second], [])
    assert [True, False] == taken


@pytest.mark.slow
def test_skipped_rows_of_a_file_read_by_rows_count_beside_a_fast_file(
    tmp_path: Path, taken: list[bool], by_rows: Callable[[], None]
) -> None:
    """Under --skip-bad a file with duplicated ids and a clean file store as by rows alone."""
    queries, events = odd_logs()
    clean = write_parquet(tmp_path / "q.parquet", queries[:40])
    repeated = write_ndjson(tmp_path / "r.ndjson", queries[30:])
    event_file = write_ndjson(tmp_path / "e.ndjson", events)
    files = ([clean, repeated], [event_file])
    fast_stored = store(tmp_path, "fast.duckdb", *files, skip_bad=20, min_distinct_clients=2)
    by_rows()
    assert store(tmp_path, "rows.duckdb", *files, skip_bad=20,
                 min_distinct_clients=2) == fast_stored  # fmt: skip
    assert [True, False, True] == taken


LENIENT = [
    ('{"query_id": "q1", "user_query": "x", "timestamp": "2026-11-01T00:00:00Z", '
     '"client_id": "c", "query_response_hit_ids": ["d"],}', "a JSON object"),
    ('{"query_id": "q1", "user_query": "x", "timestamp": "2026-11-01T00:00:00Z", '
     '"client_id": "c", "query_response_hit_ids": ["d"], "score": nan}', "a JSON object"),
    ('{"query_id": "q1", "user_query": 5, "user_query": "x", "timestamp": '
     '"2026-11-01T00:00:00Z", "client_id": "c", "query_response_hit_ids": ["d"]}', None),
    ('\ufeff{"query_id": "q1", "user_query": "x", "timestamp": "2026-11-01T00:00:00Z", '
     '"client_id": "c", "query_response_hit_ids": ["d"]}', "a JSON object"),
    ('{"query_id": "q1", "user_query": "x", "timestamp": "2026-11-01T00:00:00Z",\r'
     '"client_id": "c", "query_response_hit_ids": ["d"]}', "a JSON object"),
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(("line", "expected"), LENIENT)
def test_json_duckdb_reads_and_python_refuses_or_reads_otherwise_goes_to_the_row_reader(
    tmp_path: Path, line: str, expected: str | None, taken: list[bool]
) -> None:
    """A trailing comma, nan, a key given twice, a byte-order mark or a lone CR: the row
    reader's verdict."""
    path = tmp_path / "q.ndjson"
    path.write_bytes((line + "\n").encode("utf-8"))
    if expected is None:  # Python keeps the last of a key given twice
        _, tables = store(tmp_path, "t.duckdb", [path], [], min_distinct_clients=1)
        assert [("q1", "x")] == [row[:2] for row in tables["queries"]]
    else:
        with pytest.raises(InputError, match=f"q.ndjson:1: expected {expected}"):
            store(tmp_path, "t.duckdb", [path], [], min_distinct_clients=1)
    assert [False] == taken


def test_a_quoted_crlf_in_a_csv_field_is_left_to_the_row_reader(
    tmp_path: Path, taken: list[bool], by_rows: Callable[[], None]
) -> None:
    """Python's universal newlines read CR LF in a quoted field as LF; DuckDB keeps the CR."""
    path = tmp_path / "q.csv"
    path.write_bytes(
        b"query_id,user_query,timestamp,client_id,query_response_hit_ids\r\n"
        b'q1,"two\r\nlines",2026-11-01T00:00:00Z,c,d\r\n'
    )
    fast_stored = store(tmp_path, "fast.duckdb", [path], [], min_distinct_clients=1)
    by_rows()
    assert store(tmp_path, "rows.duckdb", [path], [], min_distinct_clients=1) == fast_stored
    assert [False] == taken


def test_a_file_duckdb_cannot_read_is_the_row_readers_error(tmp_path: Path) -> None:
    """A truncated gzip is refused as a whole, with the row reader's message."""
    path = tmp_path / "q.ndjson.gz"
    line = json.dumps(search("q1", "x", ["d"])).encode("utf-8") + b"\n"
    path.write_bytes(gzip.compress(line + b"\n" * 5000, mtime=0)[:-12])
    with pytest.raises(UsageError, match=r"q\.ndjson\.gz: cannot read"):
        store(tmp_path, "t.duckdb", [path], [])


def test_a_search_event_without_a_query_id_is_counted_not_stored(
    tmp_path: Path, taken: list[bool]
) -> None:
    """The fast path counts events naming no search, as the row reader does."""
    queries = write_ndjson(tmp_path / "q.ndjson", [search("q1", "x", ["d"])])
    events = write_ndjson(tmp_path / "e.ndjson", [click("q1", "d", 1),
                                                  {**click("", "d"), "query_id": ""}])  # fmt: skip
    summary, _ = store(tmp_path, "t.duckdb", [queries], [events], min_distinct_clients=1)
    assert (1, 1) == (summary.events_stored, summary.events_without_query_id)
    assert [True, True] == taken


VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-2, 12), st.sampled_from([2.0, 2.5, -0.0]),
    st.sampled_from(["", "x", " 3", "7", "a,b", '["a", 2]', "[1,]", "2026-11-01T00:00:00Z",
                     "2026-11-01 00:00:00.5-02:00", "2026-11-01", "2026-13-01T00:00:00Z"]),
    st.lists(st.sampled_from(["a", "b", 1, None, True]), max_size=3),
)  # fmt: skip


def varied(template: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Return rows of ``template`` with some fields replaced by values of any JSON type."""
    return st.dictionaries(st.sampled_from(sorted(template)), VALUES, max_size=2).map(
        lambda change: {
            key: value
            for key, value in {**template, **change}.items()
            if value is not None or key not in change
        }
    )


@pytest.mark.slow
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(varied(search("q1", "x", ["a", "b"])), min_size=1, max_size=3),
    st.lists(varied(click("q1", "a", 1)), max_size=3),
)
def test_any_rows_store_or_fail_alike_by_both_paths(
    queries: list[dict[str, Any]], events: list[dict[str, Any]]
) -> None:
    """Whatever the fields' types, both paths store the same tables or fail with one message."""
    outcomes = []
    with tempfile.TemporaryDirectory() as folder:
        files = ([write_ndjson(Path(folder) / "q.ndjson", [
            {**row, "query_id": f"{row.get('query_id')}-{n}"} for n, row in enumerate(queries)])],
            [write_ndjson(Path(folder) / "e.ndjson", events)])  # fmt: skip
        for name in ("fast", "rows"):
            with pytest.MonkeyPatch.context() as patch:
                if name == "rows":
                    patch.setattr(fast, "stage_queries", lambda connection, path, *rest: None)
                    patch.setattr(fast, "stage_events", lambda connection, path, *rest: None)
                try:
                    outcomes.append(store(Path(folder), f"{name}.duckdb", *files,
                                          min_distinct_clients=1, skip_bad=1))  # fmt: skip
                except (InputError, UsageError) as error:
                    outcomes.append(str(error))
    assert outcomes[1] == outcomes[0]
