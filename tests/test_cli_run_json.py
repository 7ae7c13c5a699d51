"""``run --format json`` writes its report as indented JSON that reads back as the report,
rows built when read (DictRows) written a block at a time."""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Sequence
from typing import overload

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import monitor.cli.json_out
from monitor.cli.json_out import json_pieces
from monitor.records import DictRows

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


def written(value: object) -> str:
    """Return what ``json.loads`` reads back from the pieces written for ``value``, written
    compactly: equal for equal values in equal order, NaN included."""
    return json.dumps(json.loads("".join(json_pieces(value))))


def dumped(value: object) -> str:
    """Return what ``json.loads`` reads back from ``json.dumps(value, indent=2)``, written
    compactly."""
    return json.dumps(json.loads(json.dumps(value, indent=2)))


@pytest.mark.slow
@given(documents)
@settings(max_examples=400, deadline=None)
def test_any_document_reads_back_as_json_dump_writes_it(document: object) -> None:
    """Nested dicts, lists and tuples of any scalars, non-string keys too, read the same."""
    assert dumped(document) == written(document)


@pytest.mark.slow
@given(
    st.lists(st.text(max_size=4), min_size=1, max_size=4, unique=True).flatmap(
        lambda names: st.lists(
            st.fixed_dictionaries(dict.fromkeys(names, scalars)), min_size=1, max_size=6
        )
    )
)
@settings(max_examples=300, deadline=None)
def test_rows_of_one_key_set_read_back_as_json_dump_writes_them(rows: list[object]) -> None:
    """Flat rows sharing their keys, any scalars (newlines, quotes and braces too), read the
    same."""
    document = {"overlap": {"queries": rows}}
    assert dumped(document) == written(document)


def test_a_report_of_many_flat_rows_reads_back_as_json_dump_writes_it() -> None:
    """A list of flat per-query rows, the bulk of a large report, reads the same."""
    rows = [
        {"query_id": f"q{i}", "rbo": i / 7, "jaccard": None, "ok": i % 2 == 0} for i in range(50)
    ]
    document = {"suites": [{"comparison": {"overlap": {"queries": rows, "n": 50}}, "e": []}]}
    assert dumped(document) == written(document)


def test_a_flat_row_is_written_on_one_line() -> None:
    """Each row of a list of flat rows is one line of the document."""
    rows = [{"query_id": "a", "rbo": 0.5}, {"query_id": "b}, {", "rbo": 1}]
    expected = ['    {"query_id": "a", "rbo": 0.5},', '    {"query_id": "b}, {", "rbo": 1}']
    assert expected == "".join(json_pieces({"queries": rows})).splitlines()[2:4]


def test_values_of_other_types_are_written_as_the_standard_encoder_writes_them() -> None:
    """A subclass of int, in a dict or in a row, is written as its number."""
    document = {"colour": Colour.RED, "rows": [{"c": Colour.RED}]}
    assert dumped(document) == written(document)


def test_a_value_the_standard_encoder_refuses_is_refused() -> None:
    """A value json.dumps cannot write raises its TypeError."""
    with pytest.raises(TypeError, match="set is not JSON serializable"):
        written({"rows": [{"a": {1}}]})


@pytest.mark.parametrize("rows", [[{"a": 1, "b": 2}, {"b": 2, "a": 1}, {"a": 1}, {}, {"a": [1]}]])
def test_rows_whose_keys_differ_read_back_as_json_dump_writes_them(rows: list[object]) -> None:
    """Rows with other keys, another key order, none or a nested value read the same."""
    assert dumped(rows) == written(rows)


def test_non_finite_numbers_are_written_as_json_dump_writes_them() -> None:
    """NaN and the infinities, as values and as keys, are written as json.dumps writes them."""
    document = {
        "means": {"rbo": math.nan, "up": math.inf},
        "rows": [{"rbo": -math.inf}],
        math.nan: [math.nan],
    }
    text = "".join(json_pieces(document))
    for expected in ('"rbo": NaN', '"up": Infinity', '"rbo": -Infinity', '"NaN": ['):
        assert expected in text
    assert dumped(document) == written(document)


class Column(Sequence[object]):
    """A column of values that records every read of it."""

    def __init__(self, values: list[object], reads: list[int | slice]) -> None:
        self.values = values
        self.reads = reads

    def __len__(self) -> int:
        return len(self.values)

    @overload
    def __getitem__(self, index: int) -> object: ...

    @overload
    def __getitem__(self, index: slice) -> list[object]: ...

    def __getitem__(self, index: int | slice) -> object:
        self.reads.append(index)
        return self.values[index]


@pytest.mark.parametrize("block", [1, 3, 4096])
@pytest.mark.parametrize("count", [0, 1, 7])
def test_rows_built_when_read_read_back_as_the_list_they_stand_for(
    block: int, count: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows read from columns (numpy numbers among them) read back as the list of dicts they
    stand for, across blocks, under a key that is not a string too."""
    import numpy as np

    monkeypatch.setattr(monitor.cli.json_out, "_BLOCK", block)
    ids = [f'q{i}\n"}}, {{' for i in range(count)]
    rbos = np.linspace(0.0, 1.0, count)
    lazy = DictRows(("query_id", "rbo", "jaccard"), (ids, rbos, rbos / 3))
    listed = [
        {"query_id": q, "rbo": float(r), "jaccard": float(r / 3)}
        for q, r in zip(ids, rbos, strict=True)
    ]
    assert listed == lazy[:]
    assert dumped({"overlap": {"queries": listed, "n": count}}) == written(
        {"overlap": {"queries": lazy, "n": count}}
    )
    assert dumped({1: "a key", "rows": listed}) == written({1: "a key", "rows": lazy})


def test_rows_built_when_read_are_read_a_block_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """DictRows are read a block of rows per read, each block once its piece is due."""
    monkeypatch.setattr(monitor.cli.json_out, "_BLOCK", 4)
    reads: list[int | slice] = []
    lazy = DictRows(("query_id",), (Column([f"q{i}" for i in range(10)], reads),))
    pieces = json_pieces({"queries": lazy})
    first = [next(pieces) for _ in range(3)]
    assert [slice(0, 4)] == reads
    assert {"queries": [{"query_id": f"q{i}"} for i in range(10)]} == json.loads(
        "".join(first + list(pieces))
    )
    assert [slice(0, 4), slice(4, 8), slice(8, 12)] == reads


def test_rows_of_a_block_with_nested_values_read_back_as_json_dump_writes_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A block whose rows hold lists is written row by row, still a block per read."""
    monkeypatch.setattr(monitor.cli.json_out, "_BLOCK", 2)
    lazy = DictRows(("id", "ranks"), ([f"q{i}" for i in range(3)], [[i, i + 1] for i in range(3)]))
    assert dumped({"rows": lazy[:]}) == written({"rows": lazy})
