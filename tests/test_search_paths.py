"""The path language that picks doc ids and scores out of a JSON response."""

from __future__ import annotations

import pytest

from monitor.errors import SearchOutputError
from monitor.search.paths import JsonPath

ELASTIC = {"hits": {"hits": [{"_id": "a", "_score": 2.0}, {"_id": "b", "_score": 1.0}]}}


@pytest.mark.parametrize(
    ("path", "document", "expected"),
    [
        ("results[*].id", {"results": [{"id": "a"}, {"id": "b"}]}, ["a", "b"]),
        ("hits.hits[*]._id", ELASTIC, ["a", "b"]),
        ("hits.hits[*]._score", ELASTIC, [2.0, 1.0]),
        ("ids", {"ids": ["a", "b"]}, ["a", "b"]),
        ("[*]", ["a", "b"], ["a", "b"]),
        ("[*].id", [{"id": "a"}], ["a"]),
        ("data[0].matches[*].id", {"data": [{"matches": [{"id": "a"}]}, {}]}, ["a"]),
        ("data[-1].ids", {"data": [{"ids": ["x"]}, {"ids": ["y"]}]}, ["y"]),
        ("groups[*].docs[*]", {"groups": [{"docs": ["a", "b"]}, {"docs": ["c"]}]}, ["a", "b", "c"]),
        ("results[*].id", {"results": []}, []),
    ],
    ids=[
        "results", "elastic-ids", "elastic-scores", "list-key", "top-list", "top-list-key",
        "index-then-all", "negative-index", "nested-all", "empty",
    ],
)  # fmt: skip
def test_values_follow_the_path(path: str, document: object, expected: list[object]) -> None:
    """A path picks the values it names, one per element under ``[*]``."""
    assert expected == JsonPath.parse(path).values(document)


@pytest.mark.parametrize("text", ["", ".a", "a.", "a..b", "a[x]", "a]", "a[0]b", "a[*"])
def test_parse_rejects_malformed_paths(text: str) -> None:
    """A malformed path is refused when parsed, naming it."""
    with pytest.raises(ValueError, match="path"):
        JsonPath.parse(text)


@pytest.mark.parametrize(
    ("path", "document", "where"),
    [
        ("results[*].id", {"data": []}, "no key 'results' at the top level"),
        ("results[*].id", {"results": [{"id": "a"}, {"name": "b"}]}, "no key 'id' at results[*]"),
        ("results[*].id", {"results": {"id": "a"}}, "a dict where a list was expected"),
        ("results[3].id", {"results": [{"id": "a"}]}, "no element [3] in a list of 1"),
        ("results.id", {"results": [{"id": "a"}]}, "no object to take 'id' from"),
        ("results", {"results": "a"}, "a str where a list was expected"),
    ],
    ids=["missing-key", "missing-in-element", "not-a-list", "index", "key-of-list", "not-list"],
)
def test_values_name_what_is_missing(path: str, document: object, where: str) -> None:
    """A response without the path raises SearchOutputError saying where it broke off."""
    with pytest.raises(SearchOutputError) as caught:
        JsonPath.parse(path).values(document)
    assert where in str(caught.value)
    assert path in str(caught.value)
