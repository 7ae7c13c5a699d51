"""Queries built column by column from checked parts: the same records Query(...) builds."""

from __future__ import annotations

import dataclasses

import pytest

from monitor.records import MetaValue, Query, owned_queries, owned_query


def test_owned_queries_equal_the_queries_the_constructor_builds() -> None:
    """Each column's values land in their own field, query by query, in order."""
    judgments: list[dict[str, int]] = [{"d1": 2}, {}]
    metadata: list[dict[str, MetaValue]] = [{"kind": "a"}, {}]
    built = owned_queries(["q1", "q2"], ["one", "two"], judgments, metadata)
    expected = [Query("q1", "one", {"d1": 2}, {"kind": "a"}), Query("q2", "two")]
    assert (expected, [hash(q) for q in expected]) == (built, [hash(q) for q in built])


def test_owned_queries_are_frozen() -> None:
    """A query built from columns refuses a new field value and a change to its judgments."""
    query = owned_query("q1", "text", {"d1": 1}, {})
    with pytest.raises(dataclasses.FrozenInstanceError):
        query.id = "q2"  # type: ignore[misc]
    with pytest.raises(TypeError):
        query.judgments["d1"] = 3  # type: ignore[index]
    assert {"d1": 1} == dict(query.judgments)


def test_owned_queries_refuse_columns_of_different_lengths() -> None:
    """Columns that do not line up raise ValueError rather than build half a query."""
    with pytest.raises(ValueError, match="one length"):
        owned_queries(["q1", "q2"], ["one"], [{}, {}], [{}, {}])
