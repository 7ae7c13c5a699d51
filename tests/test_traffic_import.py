"""``logs import``: UBI query and event logs, in every format, into the traffic database."""

from __future__ import annotations

import gzip
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("duckdb")

from monitor.cli import main
from monitor.errors import InputError, UsageError
from monitor.traffic import query_key
from monitor.traffic.engine import connect
from monitor.traffic.importer import ImportSummary, import_logs
from tests.traffic_logs import click, search, write_csv, write_ndjson, write_parquet

Writer = Callable[[Path, Any], Path]

QUERIES = [search(f"q{n}", "Café  Menu" if n % 2 else "café menu", ["d1", "d2"],
                  client=f"c{n}") for n in range(5)]  # fmt: skip
EVENTS = [click("q1", "d2", 2), click("q3", "d1", 1)]


def imported(tmp_path: Path, queries: Path, events: Path, **options: Any) -> ImportSummary:
    connection = connect(tmp_path / "traffic.duckdb")
    try:
        return import_logs(connection, [queries], [events], **options)
    finally:
        connection.close()


def stored(tmp_path: Path, statement: str) -> list[tuple[Any, ...]]:
    connection = connect(tmp_path / "traffic.duckdb", read_only=True)
    try:
        return [tuple(row) for row in connection.execute(statement).fetchall()]
    finally:
        connection.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("suffix", "writer"),
    [
        (".ndjson", write_ndjson),
        (".ndjson.gz", write_ndjson),
        (".parquet", write_parquet),
        (".csv", write_csv),
        (".jsonl", lambda path, rows: write_ndjson(path, rows)),
    ],
)
def test_every_format_stores_the_same_searches_and_clicks(
    tmp_path: Path, suffix: str, writer: Writer
) -> None:
    """NDJSON, gzip NDJSON, Parquet and flat CSV logs import to the same rows."""
    writer(tmp_path / f"q{suffix}", QUERIES)
    writer(tmp_path / f"e{suffix}", EVENTS)
    imported(tmp_path, tmp_path / f"q{suffix}", tmp_path / f"e{suffix}")
    assert [("q1", 2, "d2"), ("q3", 1, "d1")] == stored(
        tmp_path, "SELECT query_id, position, object_id FROM events ORDER BY query_id"
    )


def test_flat_jsonl_with_dotted_keys_reads_as_nested_ndjson(tmp_path: Path) -> None:
    """A flat JSONL event with ``object.object_id`` keys is the nested event."""
    write_ndjson(tmp_path / "q.ndjson", QUERIES)
    write_ndjson(tmp_path / "e.jsonl", [{"action_name": "click", "query_id": "q1",
                 "object.object_id": "d2", "event_attributes.position.ordinal": 2,
                 "timestamp": "2026-11-01T00:00:00Z"}])  # fmt: skip
    imported(tmp_path, tmp_path / "q.ndjson", tmp_path / "e.jsonl")
    assert [("q1", 2, "d2")] == stored(tmp_path, "SELECT query_id, position, object_id FROM events")


def test_queries_are_grouped_by_their_normalised_key_with_the_raw_text_kept(
    tmp_path: Path,
) -> None:
    """Case, NFKC forms and runs of spaces meet in one key; each raw text stays."""
    write_ndjson(tmp_path / "q.ndjson", QUERIES)
    write_ndjson(tmp_path / "e.ndjson", EVENTS)
    imported(tmp_path, tmp_path / "q.ndjson", tmp_path / "e.ndjson")
    assert [("café menu", 2)] == stored(
        tmp_path, "SELECT query_key, count(DISTINCT user_query) FROM queries GROUP BY ALL"
    )


@pytest.mark.parametrize(
    ("text", "key"),
    [("Café  Menu", "café menu"), ("  STRASSE ", "strasse"), ("Straße", "strasse"),
     ("ﬁle\tname", "file name")],
)  # fmt: skip
def test_the_query_key_is_nfkc_casefolded_with_spaces_collapsed(text: str, key: str) -> None:
    """The key folds compatibility forms, case and white space."""
    assert key == query_key(text)


def test_a_query_fewer_distinct_clients_issued_than_the_floor_is_dropped(tmp_path: Path) -> None:
    """Below min_distinct_clients a query is not stored, nor its clicks."""
    rare = [search("r1", "my home address", ["d1"], client="c1"),
            search("r2", "My home address", ["d1"], client="c1")]  # fmt: skip
    write_ndjson(tmp_path / "q.ndjson", QUERIES + rare)
    write_ndjson(tmp_path / "e.ndjson", [*EVENTS, click("r1", "d1", 1)])
    summary = imported(tmp_path, tmp_path / "q.ndjson", tmp_path / "e.ndjson")
    assert (5, 1, 2, 1) == (
        summary.searches_stored,
        summary.rare_queries,
        summary.rare_searches,
        summary.events_left_out,
    )


def test_the_floor_is_five_distinct_clients_by_default(tmp_path: Path) -> None:
    """Four distinct clients are too few unless told otherwise."""
    write_ndjson(tmp_path / "q.ndjson", QUERIES[:4])
    write_ndjson(tmp_path / "e.ndjson", EVENTS)
    assert 0 == imported(tmp_path, tmp_path / "q.ndjson", tmp_path / "e.ndjson").searches_stored


def test_a_file_imported_before_is_refused(tmp_path: Path) -> None:
    """Importing the same bytes again is an error, so no click counts twice."""
    write_ndjson(tmp_path / "q.ndjson", QUERIES)
    write_ndjson(tmp_path / "e.ndjson", EVENTS)
    imported(tmp_path, tmp_path / "q.ndjson", tmp_path / "e.ndjson")
    with pytest.raises(UsageError, match=r"q\.ndjson: already imported"):
        imported(tmp_path, tmp_path / "q.ndjson", tmp_path / "e.ndjson")


BAD_QUERIES = [
    ({"user_query": None}, "user_query as a string, found 'nothing'"),
    ({"timestamp": "yesterday"}, "timestamp as an ISO 8601 time, found 'yesterday'"),
    ({"query_response_hit_ids": "[1,"}, "query_response_hit_ids as a JSON list"),
    ({"client_id": ["c"]}, "client_id as a string, found ['c']"),
    ({"query_id": "q0"}, "query_id as an id not logged before, found 'q0'"),
]


@pytest.mark.parametrize(("change", "expected"), BAD_QUERIES)
def test_a_bad_query_row_names_the_file_and_line(
    tmp_path: Path, change: dict[str, Any], expected: str
) -> None:
    """The first bad row is an error naming file:line and what was expected there."""
    bad = {key: value for key, value in {**QUERIES[1], **change}.items() if value is not None}
    write_ndjson(tmp_path / "q.ndjson", [QUERIES[0], bad])
    write_ndjson(tmp_path / "e.ndjson", EVENTS)
    with pytest.raises(InputError) as caught:
        imported(tmp_path, tmp_path / "q.ndjson", tmp_path / "e.ndjson")
    assert f"{tmp_path / 'q.ndjson'}:2: expected {expected}" in str(caught.value)


def test_a_bad_csv_event_names_its_line(tmp_path: Path) -> None:
    """A negative ordinal in a CSV event log names the CSV line (the header is line 1)."""
    write_ndjson(tmp_path / "q.ndjson", QUERIES)
    write_csv(tmp_path / "e.csv", [EVENTS[0], click("q3", "d1", -1)])
    with pytest.raises(InputError, match=r"e\.csv:3: expected event_attributes\.position"):
        imported(tmp_path, tmp_path / "q.ndjson", tmp_path / "e.csv")


def test_skip_bad_counts_and_skips_bad_rows_up_to_its_cap(tmp_path: Path) -> None:
    """Under --skip-bad N, up to N bad rows are skipped and counted."""
    write_ndjson(tmp_path / "q.ndjson", QUERIES)
    (tmp_path / "e.ndjson").write_text(write_ndjson(tmp_path / "x", EVENTS).read_text() + "{\n")
    summary = imported(tmp_path, tmp_path / "q.ndjson", tmp_path / "e.ndjson", skip_bad=1)
    assert (1, 2) == (summary.bad_rows_skipped, summary.events_stored)


def test_the_summary_names_the_first_skipped_row(tmp_path: Path) -> None:
    """What ``logs import`` prints under --skip-bad says where the first skipped row was."""
    write_ndjson(tmp_path / "q.ndjson", QUERIES)
    (tmp_path / "e.ndjson").write_text("[]\n")
    summary = imported(tmp_path, tmp_path / "q.ndjson", tmp_path / "e.ndjson", skip_bad=1)
    assert (
        f"bad rows skipped: 1 (the first: {tmp_path / 'e.ndjson'}:1: expected a JSON"
        in (summary.lines()[-1])
    )


def test_more_bad_rows_than_the_cap_is_an_error_naming_the_first(tmp_path: Path) -> None:
    """Past the cap the import stops, naming the cap and the first bad row."""
    write_ndjson(tmp_path / "q.ndjson", QUERIES)
    (tmp_path / "e.ndjson").write_text("{\n[]\n")
    with pytest.raises(UsageError, match=r"more than 1 bad rows .*e\.ndjson:1: expected a JSON"):
        imported(tmp_path, tmp_path / "q.ndjson", tmp_path / "e.ndjson", skip_bad=1)


def test_a_bad_row_on_the_command_line_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command prints file:line and what was expected, no traceback, and exits 2."""
    write_ndjson(tmp_path / "q.ndjson", [{**QUERIES[0], "timestamp": 5}])
    code = main(["logs", "import", "--queries", str(tmp_path / "q.ndjson"),
                 "--db", str(tmp_path / "t.duckdb")])  # fmt: skip
    err = capsys.readouterr().err
    assert (2, 1) == (code, len(err.strip().splitlines()))
    assert f"{tmp_path / 'q.ndjson'}:1: expected timestamp as an ISO 8601 time" in err


def test_the_command_prints_what_it_stored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``logs import`` says how many searches and events it read and stored."""
    write_ndjson(tmp_path / "q.ndjson", QUERIES)
    write_ndjson(tmp_path / "e.ndjson", EVENTS)
    logs = ["--queries", str(tmp_path / "q.ndjson"), "--events", str(tmp_path / "e.ndjson")]
    assert 0 == main(["logs", "import", *logs, "--db", str(tmp_path / "t.db")])
    out = capsys.readouterr().out
    assert "searches: 5 read, 5 stored" in out
    assert "events: 2 read, 2 stored" in out


def test_an_unknown_log_format_is_an_error_listing_the_known_ones(tmp_path: Path) -> None:
    """A suffix that names no format is refused with the known suffixes."""
    (tmp_path / "q.txt").write_text("x\n")
    write_ndjson(tmp_path / "e.ndjson", EVENTS)
    with pytest.raises(UsageError, match=r"unknown log format '\.txt'; known: .*\.parquet"):
        imported(tmp_path, tmp_path / "q.txt", tmp_path / "e.ndjson")


def test_without_duckdb_the_error_names_the_traffic_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A missing DuckDB is one line naming the extra to install, and exit 2."""
    real = importlib.import_module

    def without_duckdb(name: str, package: str | None = None) -> Any:
        if name == "duckdb":
            raise ImportError("No module named 'duckdb'")
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", without_duckdb)
    write_ndjson(tmp_path / "q.ndjson", QUERIES)
    code = main(["logs", "import", "--queries", str(tmp_path / "q.ndjson"),
                 "--db", str(tmp_path / "t.duckdb")])  # fmt: skip
    err = capsys.readouterr().err
    assert (2, 1) == (code, len(err.strip().splitlines()))
    assert "pip install 'retrieval-monitor[traffic]'" in err


def test_gzip_compressed_parquet_reads_as_parquet(tmp_path: Path) -> None:
    """A ``.parquet.gz`` log is decompressed and read as Parquet."""
    write_parquet(tmp_path / "q.parquet", QUERIES)
    (tmp_path / "q.parquet.gz").write_bytes(
        gzip.compress((tmp_path / "q.parquet").read_bytes(), mtime=0)
    )
    write_ndjson(tmp_path / "e.ndjson", EVENTS)
    assert 5 == imported(tmp_path, tmp_path / "q.parquet.gz", tmp_path / "e.ndjson").searches_stored


@pytest.mark.parametrize(
    ("name", "data", "expected"),
    [
        ("q.ndjson.gz", gzip.compress(b"\n" * 5000, mtime=0)[:-8], "cannot read"),
        ("q.ndjson", b'{"user_query": "caf\xe9"}\n', "expected UTF-8 text"),
        ("q.parquet", b"PAR1 not really", "expected a Parquet file"),
    ],
)
def test_a_file_that_cannot_be_read_whole_is_an_error_even_under_skip_bad(
    tmp_path: Path, name: str, data: bytes, expected: str
) -> None:
    """A truncated gzip, non-UTF-8 text or a broken Parquet file is never skipped as a row."""
    (tmp_path / name).write_bytes(data)
    write_ndjson(tmp_path / "e.ndjson", EVENTS)
    with pytest.raises(UsageError, match=f"{name}: {expected}"):
        imported(tmp_path, tmp_path / name, tmp_path / "e.ndjson", skip_bad=10)


def test_a_document_listed_twice_keeps_its_first_place_and_the_others_theirs(
    tmp_path: Path,
) -> None:
    """In a hit list a, b, a, c the document c was shown at rank 4, not 3."""
    write_ndjson(tmp_path / "q.ndjson", [{**row, "query_response_hit_ids": ["a", "b", "a", "c"]}
                                         for row in QUERIES])  # fmt: skip
    write_ndjson(tmp_path / "e.ndjson", EVENTS)
    imported(tmp_path, tmp_path / "q.ndjson", tmp_path / "e.ndjson")
    assert [(1, "a"), (2, "b"), (4, "c")] == stored(
        tmp_path, "SELECT rank, doc FROM impressions WHERE query_id = 'q0' ORDER BY rank"
    )


def test_a_float_ordinal_from_a_pandas_parquet_reads_as_a_whole_number_or_missing(
    tmp_path: Path,
) -> None:
    """Ordinals 2.0 and NaN (pandas' missing integer) read as 2 and as no position."""
    write_ndjson(tmp_path / "q.ndjson", QUERIES)
    write_parquet(tmp_path / "e.parquet", [
        {"action_name": "click", "query_id": "q1", "object.object_id": "d2",
         "event_attributes.position.ordinal": 2.0, "timestamp": "2026-11-01T00:00:00Z"},
        {"action_name": "click", "query_id": "q3", "object.object_id": "d1",
         "event_attributes.position.ordinal": float("nan"), "timestamp": "2026-11-01T00:00:00Z"},
    ])  # fmt: skip
    imported(tmp_path, tmp_path / "q.ndjson", tmp_path / "e.parquet")
    assert [("q1", 2), ("q3", None)] == stored(
        tmp_path, "SELECT query_id, position FROM events ORDER BY query_id"
    )
