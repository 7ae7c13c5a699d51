"""A loaded eval set holds repeated metadata once, and every query's metadata as written."""

from __future__ import annotations

import pytest

from monitor.evalset.formats import parse_evalset

pytest.importorskip("orjson")


def _metadata(*written: str) -> list[dict[str, object]]:
    """Return the metadata of queries whose metadata objects are ``written``, in order."""
    lines = [f'{{"id": "q{i}", "query": "t", "metadata": {m}}}' for i, m in enumerate(written)]
    contents = parse_evalset("\n".join(lines), "jsonl", "set.jsonl")
    return [dict(query.metadata) for query in contents.queries]


def test_queries_with_metadata_written_alike_share_its_values() -> None:
    """Two queries of one category hold one string for it, not a copy each."""
    text = '{"id": "q1", "query": "a", "metadata": {"kind": "howto"}}\n'
    text += '{"id": "q2", "query": "b", "metadata": {"kind": "howto"}}\n'
    first, second = parse_evalset(text, "jsonl", "set.jsonl").queries
    assert first.metadata["kind"] is second.metadata["kind"]


def test_equal_numbers_of_other_types_keep_their_types() -> None:
    """1, 1.0 and true are equal in Python, yet each query keeps the type it was written with."""
    read = _metadata('{"n": 1}', '{"n": 1.0}', '{"n": true}', '{"n": 1}')
    assert [int, float, bool, int] == [type(meta["n"]) for meta in read]


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        (('{"a": "x", "b": null}', '{"b": null, "a": "x"}'), [["a", "b"], ["b", "a"]]),
        (("{}", '{"a": "x"}', "{}"), [[], ["a"], []]),
    ],
)
def test_each_query_keeps_its_own_keys_in_order(
    written: tuple[str, ...], expected: list[list[str]]
) -> None:
    """Metadata of the same items in another order keeps that order."""
    assert expected == [list(meta) for meta in _metadata(*written)]
