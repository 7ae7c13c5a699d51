"""``run --format json`` writes its report as ``json.dump(..., indent=2)`` does, byte for byte."""

from __future__ import annotations

import enum
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import monitor.cli.run
from monitor.cli.run import indented_json

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=6)
)
keys = st.text(max_size=4) | st.integers() | st.floats() | st.booleans() | st.none()
documents = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(keys, inner, max_size=4)
    ),
    max_leaves=20,
)


class Colour(enum.IntEnum):
    """An int subclass, which the standard encoder writes as its number."""

    RED = 1


@given(documents)
@settings(max_examples=400, deadline=None)
def test_any_document_is_written_as_json_dump_writes_it(document: object) -> None:
    """Nested dicts, lists and tuples of any scalars, non-string keys too, read the same."""
    assert json.dumps(document, indent=2) == "".join(indented_json(document))


def test_a_report_of_many_flat_rows_is_written_as_json_dump_writes_it() -> None:
    """A list of flat per-query rows, the bulk of a large report, is written alike."""
    rows = [
        {"query_id": f"q{i}", "rbo": i / 7, "jaccard": None, "ok": i % 2 == 0} for i in range(50)
    ]
    document = {"suites": [{"comparison": {"overlap": {"queries": rows, "n": 50}}, "e": []}]}
    assert json.dumps(document, indent=2) == "".join(indented_json(document))


def test_values_of_other_types_are_left_to_the_standard_encoder() -> None:
    """A subclass of int is written by the standard encoder, as json.dump writes it."""
    document = {"colour": Colour.RED, "rows": [{"c": Colour.RED}]}
    assert json.dumps(document, indent=2) == "".join(indented_json(document))


row_keys = st.lists(st.text(max_size=4), min_size=1, max_size=4, unique=True)


@given(
    row_keys.flatmap(
        lambda names: st.lists(
            st.fixed_dictionaries(dict.fromkeys(names, scalars)), min_size=1, max_size=6
        )
    )
)
@settings(max_examples=300, deadline=None)
def test_rows_of_one_key_set_are_written_as_json_dump_writes_them(rows: list[object]) -> None:
    """Flat rows sharing their keys, any scalars (newlines and quotes too), read the same."""
    document = {"overlap": {"queries": rows}}
    assert json.dumps(document, indent=2) == "".join(indented_json(document))


def test_rows_across_several_blocks_are_written_as_json_dump_writes_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A table longer than one block of rows joins its blocks as json.dump writes them."""
    monkeypatch.setattr(monitor.cli.run, "_TABLE_BLOCK", 2)
    rows = [{"query_id": f"q\n{i},", "rbo": i / 3, "jaccard": float("nan")} for i in range(5)]
    assert json.dumps([rows], indent=2) == "".join(indented_json([rows]))


def test_rows_whose_keys_differ_are_written_as_json_dump_writes_them() -> None:
    """Rows with other keys or another key order than the first are written alike."""
    rows = [{"a": 1, "b": 2}, {"b": 2, "a": 1}, {"a": 1}, {"a": [1, {"c": None}]}]
    assert json.dumps(rows, indent=2) == "".join(indented_json(rows))


@pytest.mark.parametrize("block", [1, 3, 4096])
@pytest.mark.parametrize("count", [0, 1, 7])
def test_rows_built_when_read_are_written_as_the_list_they_stand_for(
    block: int, count: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows read from columns (numpy numbers among them), each built when written, give the
    text of the list of dicts they stand for, across blocks; so does a document the
    standard encoder must write (a key that is not a string), rows included."""
    import numpy as np

    from monitor.records import DictRows

    monkeypatch.setattr(monitor.cli.run, "_TABLE_BLOCK", block)
    ids = [f'q{i}\n"' for i in range(count)]
    rbos = np.linspace(0.0, 1.0, count)
    lazy = DictRows(("query_id", "rbo", "jaccard"), (ids, rbos, rbos / 3))
    listed = [
        {"query_id": q, "rbo": float(r), "jaccard": float(r / 3)}
        for q, r in zip(ids, rbos, strict=True)
    ]
    assert listed == lazy[:] == list(lazy)
    expected = json.dumps({"overlap": {"queries": listed, "n": count}}, indent=2)
    assert expected == "".join(indented_json({"overlap": {"queries": lazy, "n": count}}))
    odd = {1: "a key the standard encoder writes", "rows": lazy}
    assert json.dumps({1: odd[1], "rows": listed}, indent=2) == "".join(indented_json(odd))
