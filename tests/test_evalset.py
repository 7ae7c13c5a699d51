"""EvalSet in memory: building, indexing, qrels and the fingerprint."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from monitor.errors import InputError, UsageError
from monitor.evalset import EvalSet
from monitor.records import Query


def small() -> EvalSet:
    """Return a three-query eval set: graded, binary and unjudged."""
    evalset = EvalSet(name="small")
    evalset.add("q1", "refund window", relevant=["d1", "d2"], metadata={"kind": "policy"})
    evalset.add("q2", "store address", relevant={"d3": 2, "d4": 0})
    evalset.add("q3", "boats")
    return evalset


def test_add_takes_a_query_record() -> None:
    """A ready Query is added as it is."""
    evalset = EvalSet(name="x")
    query = Query("q1", "text", {"d1": 2}, {"kind": "a"})
    evalset.add(query)
    assert query == evalset["q1"]


def test_add_takes_a_list_of_relevant_ids_as_grade_one() -> None:
    """A list of relevant ids gives each a grade of 1."""
    evalset = EvalSet(name="x")
    evalset.add("q1", "text", relevant=["d1", "d2"])
    assert {"d1": 1, "d2": 1} == dict(evalset["q1"].judgments)


def test_add_takes_a_mapping_of_grades() -> None:
    """A mapping keeps each grade, including 0 and negative ones."""
    evalset = EvalSet(name="x")
    evalset.add("q1", "text", relevant={"d1": 2, "d2": 0, "d3": -1})
    assert {"d1": 2, "d2": 0, "d3": -1} == dict(evalset["q1"].judgments)


def test_add_returns_the_stored_query() -> None:
    """add() returns the query it stored."""
    evalset = EvalSet(name="x")
    query = evalset.add("q1", "text", relevant=["d1"], metadata={"kind": "a"})
    assert Query("q1", "text", {"d1": 1}, {"kind": "a"}) == query


def test_constructor_takes_queries() -> None:
    """EvalSet(name, queries) adds the queries in order."""
    evalset = EvalSet("x", [Query("b", "t"), Query("a", "t")])
    assert ("b", "a") == evalset.ids


def test_len_counts_queries() -> None:
    """len() is the number of queries."""
    assert 3 == len(small())


def test_index_by_position() -> None:
    """An int index picks by position, negative ones from the end."""
    evalset = small()
    assert ("q1", "q3") == (evalset[0].id, evalset[-1].id)


def test_index_by_id() -> None:
    """A string index picks by query id."""
    assert "store address" == small()["q2"].text


def test_unknown_id_raises_key_error() -> None:
    """A missing id raises KeyError naming it."""
    with pytest.raises(KeyError, match="q9"):
        small()["q9"]


def test_position_out_of_range_raises_index_error() -> None:
    """A position past the end raises IndexError."""
    with pytest.raises(IndexError):
        small()[3]


def test_iteration_follows_insertion_order() -> None:
    """Iterating yields the queries in the order they were added."""
    assert ["q1", "q2", "q3"] == [query.id for query in small()]


@pytest.mark.parametrize(
    ("item", "expected"),
    [("q1", True), ("q9", False), (Query("q3", "boats"), True), (Query("q3", "other"), False)],
)
def test_in_checks_ids_and_queries(item: object, expected: bool) -> None:
    """``in`` takes an id, or a Query that must match the stored one."""
    assert expected == (item in small())


def test_get_returns_default_for_unknown_id() -> None:
    """get() returns None (or the default) for an unknown id."""
    evalset = small()
    assert (None, evalset[0]) == (evalset.get("q9"), evalset.get("q9", evalset[0]))


def test_duplicate_id_raises_naming_it() -> None:
    """Adding a second query with the same id raises UsageError naming the id."""
    evalset = small()
    with pytest.raises(UsageError, match="'q2'"):
        evalset.add("q2", "again")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"relevant": {"d1": 1.5}}, "an integer grade at relevant\\['d1'\\]"),
        ({"relevant": {"d1": "high"}}, "an integer grade"),
        ({"relevant": {"d1": True}}, "an integer grade"),
        ({"relevant": "d1"}, "a list of document ids"),
        ({"relevant": ["d1", "d1"]}, "document ids listed once"),
        ({"relevant": [""]}, "a non-empty document id"),
        ({"metadata": {"tags": ["a"]}}, "a metadata value"),
        ({"metadata": {"score": float("nan")}}, "a finite number"),
    ],
)
def test_bad_parts_raise_usage_error(kwargs: Mapping[str, object], message: str) -> None:
    """A bad grade, relevant list or metadata value raises UsageError saying what is wrong."""
    with pytest.raises(UsageError, match=message):
        EvalSet(name="x").add("q1", "text", **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("query_id", ["", 7, None])
def test_bad_id_raises_usage_error(query_id: object) -> None:
    """A query id must be a non-empty string."""
    with pytest.raises(UsageError, match="query id"):
        EvalSet(name="x").add(query_id, "text")  # type: ignore[arg-type]


def test_query_and_parts_together_raise() -> None:
    """Giving a Query and also its parts is ambiguous."""
    with pytest.raises(UsageError):
        EvalSet(name="x").add(Query("q1", "t"), "other text")


def test_numpy_integer_grades_are_accepted() -> None:
    """Integer grades from numpy (as read by pandas) are stored as plain ints."""
    numpy = pytest.importorskip("numpy")
    evalset = EvalSet(name="x")
    evalset.add("q1", "t", relevant={"d1": numpy.int64(2)})
    assert int is type(evalset["q1"].judgments["d1"])


def test_qrels_lists_every_query_including_unjudged() -> None:
    """qrels() maps every query id to its judgments, with {} for an unjudged query."""
    expected = {"q1": {"d1": 1, "d2": 1}, "q2": {"d3": 2, "d4": 0}, "q3": {}}
    assert expected == small().qrels()


def test_qrels_cannot_change_the_eval_set() -> None:
    """The returned qrels are read-only, so no caller can change the set's grades."""
    evalset = small()
    with pytest.raises(TypeError):
        evalset.qrels()["q1"]["d9"] = 1  # type: ignore[index]
    assert {"d1": 1, "d2": 1} == dict(evalset["q1"].judgments)


def test_qrels_are_built_once_until_a_query_is_added() -> None:
    """A second call returns the same qrels; an added query is in the next call's."""
    evalset = small()
    first = evalset.qrels()
    assert first is evalset.qrels()
    evalset.add("q9", "new", relevant={"d7": 3})
    assert {"d7": 3} == evalset.qrels()["q9"]


def test_from_qrels_round_trips_qrels() -> None:
    """from_qrels(qrels, texts) rebuilds the same queries."""
    original = small()
    texts = {query.id: query.text for query in original}
    rebuilt = EvalSet.from_qrels(original.qrels(), texts, name="small")
    assert original.fingerprint == rebuilt.fingerprint


def test_from_qrels_without_texts_uses_empty_texts() -> None:
    """Without texts every query text is empty."""
    evalset = EvalSet.from_qrels({"q1": {"d1": 1}})
    assert "" == evalset["q1"].text


def test_from_qrels_keeps_queries_only_in_texts() -> None:
    """A query with a text but no judgment is kept, after the judged ones."""
    evalset = EvalSet.from_qrels({"q1": {"d1": 1}}, {"q2": "b", "q1": "a"})
    assert (("q1", "q2"), {}) == (evalset.ids, dict(evalset["q2"].judgments))


def test_from_qrels_requires_a_text_for_each_judged_query() -> None:
    """With texts given, a judged query without a text raises UsageError naming it."""
    with pytest.raises(UsageError, match="'q1'"):
        EvalSet.from_qrels({"q1": {"d1": 1}}, {"q2": "b"})


def test_equality_compares_name_and_queries_in_order() -> None:
    """Two eval sets are equal when name and queries (in order) are equal."""
    assert (small(), small()) == (small(), small())
    reordered = EvalSet("small", reversed(small().queries))
    assert small() != reordered


# --- fingerprint ---------------------------------------------------------------------------


def test_fingerprint_has_the_sha256_form() -> None:
    """The fingerprint is "sha256:" and 64 hex digits."""
    fingerprint = small().fingerprint
    assert ("sha256:", 64) == (fingerprint[:7], len(fingerprint[7:]))
    int(fingerprint[7:], 16)


def test_fingerprint_matches_the_documented_canonical_form() -> None:
    """The fingerprint is the SHA-256 of the canonical JSON the docstring describes."""
    import hashlib

    evalset = EvalSet("x")
    evalset.add("b", "é", relevant={"z": 1, "a": 0})
    evalset.add("a", "t")
    canonical = '[["a","t",[]],["b","é",[["a",0],["z",1]]]]'
    expected = "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
    assert expected == evalset.fingerprint


def test_fingerprint_ignores_order_name_and_metadata() -> None:
    """Reordering queries or judgments, renaming, or editing metadata keeps the fingerprint."""
    other = EvalSet("renamed")
    other.add("q3", "boats", metadata={"kind": "unanswerable"})
    other.add("q2", "store address", relevant={"d4": 0, "d3": 2})
    other.add("q1", "refund window", relevant={"d2": 1, "d1": 1}, metadata={"kind": "fixed"})
    assert small().fingerprint == other.fingerprint


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(("q1", "refund window!", {"d1": 1, "d2": 1}), id="text"),
        pytest.param(("q1", "refund window", {"d1": 2, "d2": 1}), id="grade"),
        pytest.param(("q1", "refund window", {"d1": 1}), id="removed judgment"),
        pytest.param(("q1", "refund window", {"d1": 1, "d2": 1, "d9": 0}), id="zero judgment"),
        pytest.param(("q1b", "refund window", {"d1": 1, "d2": 1}), id="id"),
    ],
)
def test_fingerprint_changes_with_text_judgments_or_ids(
    change: tuple[str, str, dict[str, int]],
) -> None:
    """Changing a text, a grade, a judgment or an id changes the fingerprint."""
    query_id, text, judgments = change
    changed = EvalSet("small")
    changed.add(query_id, text, relevant=judgments)
    for query in small().queries[1:]:
        changed.add(query)
    assert small().fingerprint != changed.fingerprint


def test_fingerprint_follows_additions() -> None:
    """Adding a query after reading the fingerprint gives a new fingerprint."""
    evalset = small()
    before = evalset.fingerprint
    evalset.add("q4", "new")
    assert before != evalset.fingerprint


def test_parse_reads_an_eval_set_from_text() -> None:
    """EvalSet.parse builds the set held in a text, named as the caller says."""
    text = '{"id": "q1", "query": "refund window", "relevant": ["d1"]}\n'
    expected = EvalSet(name="memo", queries=[Query("q1", "refund window", {"d1": 1})])
    assert expected == EvalSet.parse(text, "jsonl", "memo.jsonl", name="memo")


def test_parse_names_the_source_of_a_bad_line() -> None:
    """EvalSet.parse raises an InputError naming the source and the line."""
    with pytest.raises(InputError, match=r"^memo\.jsonl:2: "):
        EvalSet.parse(
            '{"id": "q1", "query": "a"}\n{"id": "q1", "query": "b"}\n', "jsonl", "memo.jsonl"
        )


def test_a_loaded_set_refuses_a_repeated_id_on_add(tmp_path: Path) -> None:
    """A set read from a file knows its ids: adding one of them again raises UsageError."""
    path = tmp_path / "set.jsonl"
    path.write_text('{"id": "q1", "query": "a"}\n{"id": "q2", "query": "b"}\n', encoding="utf-8")
    evalset = EvalSet.load(path)
    with pytest.raises(UsageError, match="already has a query with id 'q2'"):
        evalset.add("q2", "again")
    assert (("q1", "q2"), True, "b") == (evalset.ids, "q1" in evalset, evalset["q2"].text)


def test_fingerprint_is_the_same_with_and_without_orjson(monkeypatch: pytest.MonkeyPatch) -> None:
    """The standard encoder and orjson give one fingerprint for a set with every kind of text."""
    evalset = EvalSet(name="x")
    text = 'caf\u00e9 "\\/\t\x00\x7f\U0001f600'
    evalset.add("q\x01\u2028", text, relevant={"d\n": -(2**63), "e": 2})
    evalset.add("a", "", relevant=["z", "b"])
    with_orjson = evalset.fingerprint
    monkeypatch.setitem(sys.modules, "orjson", None)  # import orjson raises ImportError
    assert with_orjson == EvalSet(name="x", queries=evalset.queries).fingerprint


@pytest.mark.parametrize("block", [1, 2, 3, 4096])
def test_fingerprint_is_the_same_whatever_block_of_rows_it_hashes_at_once(
    block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hashing the canonical rows a few queries at a time gives the documented digest."""
    import hashlib
    import json

    from monitor.evalset import model

    evalset = EvalSet("x")
    for number in (3, 1, 2):
        evalset.add(f"q{number}", f"text {number}", relevant={f"d{number}": number, "a": 0})
    rows = sorted([q.id, q.text, sorted(q.judgments.items())] for q in evalset)
    canonical = json.dumps(rows, ensure_ascii=False, separators=(",", ":"))
    monkeypatch.setattr(model, "_FINGERPRINT_BLOCK", block)
    assert "sha256:" + hashlib.sha256(canonical.encode()).hexdigest() == evalset.fingerprint
