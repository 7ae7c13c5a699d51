"""Eval set files: every format loads, saves and round-trips; malformed files name file and line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from monitor.errors import InputError, UsageError
from monitor.evalset import FORMATS, EvalSet
from monitor.records import MetaValue

DATA = Path(__file__).parent / "data" / "evalset"
GOOD = DATA / "good"
BAD = DATA / "bad"
SUFFIX = {"jsonl": ".jsonl", "json": ".json", "csv": ".csv", "yaml": ".yaml", "trec": ".qrels"}


def sample() -> EvalSet:
    """Return an eval set that every format can hold exactly (string metadata only)."""
    evalset = EvalSet(name="sample")
    evalset.add("q1", "How long is the refund window?", relevant=["d1", "d2"])
    evalset.add("q2", 'Où est le "magasin", s\'il vous plaît ?', relevant={"d3": 2, "d4": 0})
    evalset.add("q3", "Do you sell boats?")
    evalset.add("q4", "Negative grades, too", relevant={"d:5": -1, "d6": 3})
    return evalset


def save_and_load(evalset: EvalSet, folder: Path, fmt: str) -> EvalSet:
    """Save ``evalset`` in ``fmt`` under ``folder`` and load it back."""
    path = folder / f"set{SUFFIX[fmt]}"
    queries = folder / "set.tsv" if fmt == "trec" else None
    evalset.save(path, queries=queries)
    return EvalSet.load(path, queries=queries, name=evalset.name)


# --- round trips ---------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_round_trip_keeps_queries_and_fingerprint(fmt: str, tmp_path: Path) -> None:
    """Saving then loading gives the same ids, texts, judgments and fingerprint."""
    original = sample()
    loaded = save_and_load(original, tmp_path, fmt)
    assert original.queries == loaded.queries
    assert original.fingerprint == loaded.fingerprint


@pytest.mark.parametrize("fmt", ["jsonl", "json", "yaml"])
def test_round_trip_keeps_typed_metadata(fmt: str, tmp_path: Path) -> None:
    """JSONL, JSON and YAML keep metadata types: strings, numbers, booleans and null."""
    original = EvalSet(name="typed")
    metadata: dict[str, MetaValue] = {
        "kind": "a",
        "n": 3,
        "weight": 0.5,
        "hard": True,
        "note": None,
        "code": "007",
    }
    original.add("q1", "text", relevant=["d1"], metadata=metadata)
    assert original == save_and_load(original, tmp_path, fmt)


def test_csv_round_trip_keeps_string_metadata(tmp_path: Path) -> None:
    """CSV keeps string metadata, and a query without a value stays without it."""
    original = EvalSet(name="sample")
    original.add("q1", "a", relevant=["d1"], metadata={"kind": "x", "lang": "en"})
    original.add("q2", "b", metadata={"kind": "y"})
    assert original.queries == save_and_load(original, tmp_path, "csv").queries


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_json_and_yaml_keep_the_name(fmt: str, tmp_path: Path) -> None:
    """JSON and YAML store the set's name; loading without name= restores it."""
    path = tmp_path / f"file{SUFFIX[fmt]}"
    sample().save(path)
    assert "sample" == EvalSet.load(path).name


def test_name_defaults_to_the_file_stem(tmp_path: Path) -> None:
    """Formats without a name take the file stem."""
    path = tmp_path / "nightly.jsonl"
    sample().save(path)
    assert "nightly" == EvalSet.load(path).name


def test_trec_without_queries_file_keeps_judgments_only(tmp_path: Path) -> None:
    """TREC qrels alone keep judged queries, with empty texts."""
    path = tmp_path / "set.qrels"
    sample().save(path)
    loaded = EvalSet.load(path)
    assert (("q1", "q2", "q4"), "") == (loaded.ids, loaded["q1"].text)


def test_trec_keeps_unjudged_queries_from_the_queries_file() -> None:
    """A query listed in the TSV without judgments is kept, with no relevant documents."""
    loaded = EvalSet.load(GOOD / "small.qrels", queries=GOOD / "small.tsv")
    assert ({}, "Do you sell boats?") == (dict(loaded["q3"].judgments), loaded["q3"].text)


def test_good_fixtures_share_one_fingerprint() -> None:
    """The same content in every format and order has the same fingerprint."""
    paths = sorted(p for p in GOOD.iterdir() if p.suffix != ".tsv")
    fingerprints = {
        path.name: EvalSet.load(
            path, queries=GOOD / "small.tsv" if path.suffix == ".qrels" else None
        ).fingerprint
        for path in paths
    }
    expected = EvalSet.load(GOOD / "small.jsonl").fingerprint
    assert dict.fromkeys(fingerprints, expected) == fingerprints


def test_jsonl_fixture_reads_as_written() -> None:
    """The JSONL fixture gives the queries, grades and metadata it spells out."""
    evalset = EvalSet.load(GOOD / "small.jsonl")
    assert {"q1": {"d1": 1, "d2": 1}, "q2": {"d3": 2, "d4": 0}, "q3": {}} == evalset.qrels()
    assert {"kind": "store", "language": "fr"} == dict(evalset["q2"].metadata)


def test_csv_fixture_reads_metadata_columns() -> None:
    """Extra CSV columns become string metadata; an empty cell gives no value."""
    evalset = EvalSet.load(GOOD / "small.csv")
    assert ({"kind": "policy"}, {}) == (dict(evalset["q1"].metadata), dict(evalset["q3"].metadata))


def test_json_list_form_loads() -> None:
    """A JSON list of query objects is an eval set too."""
    assert ("q1", "q2", "q3") == EvalSet.load(GOOD / "small_list.json").ids


def test_byte_order_mark_is_ignored(tmp_path: Path) -> None:
    """A UTF-8 byte order mark (as spreadsheets write) is not part of the first id."""
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbfid,query,relevant\nq1,text,d1\n")
    assert ("q1",) == EvalSet.load(path).ids


def test_crlf_line_ends_are_accepted(tmp_path: Path) -> None:
    """Windows line ends read like Unix ones in line-based formats."""
    (tmp_path / "set.qrels").write_bytes(b"q1 0 d1 1\r\nq2 0 d2 0\r\n")
    (tmp_path / "set.tsv").write_bytes(b"q1\tfirst\r\nq2\tsecond\r\n")
    loaded = EvalSet.load(tmp_path / "set.qrels", queries=tmp_path / "set.tsv")
    assert ("first", "second") == (loaded["q1"].text, loaded["q2"].text)


# --- format choice -------------------------------------------------------------------------


def test_explicit_format_overrides_the_suffix(tmp_path: Path) -> None:
    """format= reads a file whatever its suffix."""
    path = tmp_path / "set.txt"
    sample().save(path, format="jsonl")
    assert sample().queries == EvalSet.load(path, format="jsonl").queries


def test_unknown_suffix_raises_usage_error_listing_formats(tmp_path: Path) -> None:
    """A suffix that names no format raises UsageError listing the known ones."""
    with pytest.raises(UsageError, match="jsonl, json, csv, yaml, trec"):
        EvalSet.load(tmp_path / "set.txt")


def test_unknown_format_raises_usage_error(tmp_path: Path) -> None:
    """An unknown format= raises UsageError naming it."""
    with pytest.raises(UsageError, match="'xml'"):
        sample().save(tmp_path / "set.jsonl", format="xml")


def test_queries_file_is_for_trec_only(tmp_path: Path) -> None:
    """queries= with a format other than trec raises UsageError."""
    with pytest.raises(UsageError, match="TREC"):
        EvalSet.load(GOOD / "small.jsonl", queries=GOOD / "small.tsv")


def test_missing_file_raises_input_error(tmp_path: Path) -> None:
    """A file that does not exist raises InputError naming it."""
    path = tmp_path / "absent.jsonl"
    with pytest.raises(InputError, match=r"absent\.jsonl"):
        EvalSet.load(path)


# --- saving --------------------------------------------------------------------------------


def test_save_replaces_the_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    """Saving over a file replaces it and leaves only the target in the folder."""
    path = tmp_path / "set.jsonl"
    path.write_text("old\n", encoding="utf-8")
    sample().save(path)
    assert (["set.jsonl"], sample().queries) == (
        os.listdir(tmp_path),
        EvalSet.load(path).queries,
    )


def test_failed_save_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When the final rename fails, the old file is untouched and the temporary is removed."""
    path = tmp_path / "set.jsonl"
    path.write_text("old\n", encoding="utf-8")

    def fail(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        sample().save(path)
    assert (["set.jsonl"], "old\n") == (os.listdir(tmp_path), path.read_text(encoding="utf-8"))


def test_saving_an_empty_set_raises(tmp_path: Path) -> None:
    """An eval set with no query cannot be saved (no format could load it back)."""
    with pytest.raises(UsageError, match="no query"):
        EvalSet(name="x").save(tmp_path / "set.jsonl")


@pytest.mark.parametrize(
    ("fmt", "query_id", "text", "relevant", "message"),
    [
        ("trec", "q 1", "t", ["d1"], "whitespace"),
        ("trec", "q1", "t", ["doc 1"], "whitespace"),
        ("trec", "q1", "t", [], "no query has a judgment"),
        ("csv", "q1", "t", ["a;b"], "';'"),
    ],
)
def test_unwritable_content_raises_usage_error(
    fmt: str, query_id: str, text: str, relevant: list[str], message: str, tmp_path: Path
) -> None:
    """Content a format cannot hold raises UsageError before anything is written."""
    evalset = EvalSet(name="x")
    evalset.add(query_id, text, relevant=relevant)
    with pytest.raises(UsageError, match=message):
        evalset.save(tmp_path / f"set{SUFFIX[fmt]}")
    assert [] == os.listdir(tmp_path)


def test_trec_queries_file_refuses_line_breaks(tmp_path: Path) -> None:
    """A text with a line break cannot go to the queries TSV."""
    evalset = EvalSet(name="x")
    evalset.add("q1", "two\nlines", relevant=["d1"])
    with pytest.raises(UsageError, match="line break"):
        evalset.save(tmp_path / "set.qrels", queries=tmp_path / "set.tsv")


# --- malformed files -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "line", "expected"),
    [
        ("empty.jsonl", 1, "at least one query (the file is empty)"),
        ("blank.jsonl", 1, "at least one query (the file is empty)"),
        ("not_utf8.jsonl", 2, "UTF-8 text"),
        ("syntax.jsonl", 3, "one JSON object per line"),
        ("grade_float.jsonl", 2, "an integer grade at relevant['d2'], found 1.5"),
        ("grade_word.jsonl", 1, "an integer grade at relevant['d1'], found 'high'"),
        ("grade_bool.jsonl", 3, "an integer grade at relevant['d1'], found True"),
        ("unknown_key.jsonl", 1, "one of the keys id, query, relevant, metadata, found 'qrels'"),
        ("missing_query.jsonl", 2, "a 'query' key"),
        ("not_object.jsonl", 1, "a query object"),
        ("duplicate_id.jsonl", 4, "a unique query id (first on line 1), found 'q1'"),
        ("repeated_doc.jsonl", 1, "document ids listed once"),
        ("grade_float.json", 10, "an integer grade at queries[1].relevant['d2'], found 1.5"),
        ("duplicate_id.json", 4, "a unique query id (first on line 2), found 'q1'"),
        ("syntax.json", 4, "valid JSON"),
        ("top_key.json", 3, "one of the top-level keys name, queries, found 'version'"),
        ("grade_word.yaml", 7, "an integer grade at queries[0].relevant['d2'], found 'high'"),
        ("syntax.yaml", 6, "valid YAML (while scanning a quoted scalar on line 4"),
        ("duplicate_id.yaml", 4, "a unique query id (first on line 2), found 'q1'"),
        ("number_id.yaml", 4, "a query id that is a string at queries[1].id, found 2"),
        ("empty.yaml", 1, "at least one query"),
        ("missing_column.csv", 1, "a header with the columns id, query, relevant"),
        ("field_count.csv", 3, "3 fields as in the header, found 4"),
        ("grade_float.csv", 3, "an integer grade in column 'relevant' for document 'd2'"),
        ("duplicate_id.csv", 4, "a unique query id (first on line 2), found 'q1'"),
        ("quote.csv", 2, "valid CSV"),
        ("not_utf8.csv", 3, "UTF-8 text"),
        ("short_line.qrels", 2, "4 whitespace-separated fields: qid iter docno rel"),
        (
            "grade_float.qrels",
            2,
            "an integer grade (a fractional one is read with --grades truncate) in field 4 (rel)",
        ),
        ("grade_word.qrels", 2, "an integer grade in field 4 (rel), found 'high'"),
        ("duplicate_pair.qrels", 4, "one judgment per query and document (first on line 2)"),
        ("empty.qrels", 1, "at least one qrels line"),
        ("not_utf8.qrels", 2, "UTF-8 text"),
    ],
)
def test_malformed_file_names_file_and_line(name: str, line: int, expected: str) -> None:
    """Each malformed file raises InputError with ``file:line: expected ...``."""
    path = BAD / name
    with pytest.raises(InputError) as caught:
        EvalSet.load(path)
    assert (str(path), line) == (caught.value.source, caught.value.line)
    assert str(caught.value).startswith(f"{path}:{line}: expected ")
    assert expected in str(caught.value)


@pytest.mark.parametrize(
    ("name", "line", "expected"),
    [
        ("missing_tab.tsv", 2, "a line 'qid<TAB>text'"),
        ("duplicate.tsv", 3, "each query id once (first on line 1), found 'q1'"),
    ],
)
def test_malformed_queries_file_names_file_and_line(name: str, line: int, expected: str) -> None:
    """A malformed queries TSV raises InputError naming the TSV and the line."""
    path = BAD / name
    with pytest.raises(InputError) as caught:
        EvalSet.load(GOOD / "small.qrels", queries=path)
    assert str(caught.value).startswith(f"{path}:{line}: expected {expected}")


def test_judged_query_missing_from_queries_file_names_qrels_line() -> None:
    """A judged query absent from the TSV raises InputError at its first qrels line."""
    qrels = GOOD / "small.qrels"
    with pytest.raises(InputError) as caught:
        EvalSet.load(qrels, queries=BAD / "partial.tsv")
    assert f"{qrels}:4: expected a query id listed in" in str(caught.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"id": "q1", "id": "q2", "query": "x"}\n', "keys given once, found 'id'"),
        ('{"id": "q1", "query": "x", "relevant": {"d1": NaN}}\n', "an integer grade"),
        ('{"id": "q1", "query": "x", "metadata": {"n": Infinity}}\n', "a finite number"),
        ('{"id": "q1", "query": "x", "metadata": {"n": [1]}}\n', "a metadata value"),
        ('{"id": "", "query": "x"}\n', "a non-empty query id"),
        ('{"id": "q1", "query": 5}\n', "a query text that is a string"),
        ('{"id": "q1", "query": "\\ud800"}\n', "valid Unicode"),
        ('{"id": "q1", "query": "x", "relevant": {"d1": 2.0}}\n', "an integer grade"),
    ],
)
def test_jsonl_rejects_bad_values(text: str, expected: str, tmp_path: Path) -> None:
    """JSONL values that no eval set can hold raise InputError at line 1."""
    path = tmp_path / "set.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=r"set\.jsonl:1: expected ") as caught:
        EvalSet.load(path)
    assert expected in str(caught.value)


@pytest.mark.parametrize(
    ("text", "line", "expected"),
    [
        ("queries:\n  - id: q1\n    query: x\n    id: q2\n", 4, "keys given once"),
        ("- id: q1\n  query: x\n  relevant: {d1: 1.5}\n", 3, "an integer grade"),
        ("- id: q1\n  query: x\n  metadata: {day: 2024-01-01}\n", 3, "a metadata value"),
        ("--- [{id: q1, query: x}]\n--- []\n", 2, "valid YAML"),
        ("name: [x]\nqueries: []\n", 1, "a name that is a string"),
        ("queries: []\n", 1, "at least one query"),
        ("just text\n", 1, "a list of query objects"),
    ],
)
def test_yaml_rejects_bad_documents(text: str, line: int, expected: str, tmp_path: Path) -> None:
    """Bad YAML documents raise InputError with the line of the offending value."""
    path = tmp_path / "set.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        EvalSet.load(path)
    assert str(caught.value).startswith(f"{path}:{line}: expected {expected}")
