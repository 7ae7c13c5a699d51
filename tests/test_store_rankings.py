"""The store's columns with rankings held as arrays: encoded byte for byte as tuples are, and
read back as arrays."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.store import QueryRecord, columnar, texts
from monitor.store.rankings import Rankings

doc_ids = st.sampled_from(["d1", "d2", "café", "日本", "00ff", "ab12cd", "", "D9"]) | st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=5
)
query = st.builds(
    QueryRecord,
    query_id=st.text(min_size=1, max_size=6),
    values=st.dictionaries(st.sampled_from(["ndcg@10", "recall@5"]), st.floats(), max_size=2),
    retrieved_ids=st.lists(doc_ids, max_size=5).map(tuple),
    relevant_ids=st.lists(doc_ids, max_size=3).map(tuple),
    latency_seconds=st.none() | st.floats(min_value=0, max_value=10),
    error_type=st.none() | st.just("TimeoutError"),
)

CASES = {
    "empty run": [],
    "empty rankings": [QueryRecord("q1"), QueryRecord("q2")],
    "non-ASCII": [
        QueryRecord("q1", retrieved_ids=("café", "日本語", "a"), relevant_ids=("a",)),
        QueryRecord("q2", retrieved_ids=("a",), relevant_ids=("ü", "café")),
    ],
    "hex-like": [
        QueryRecord("q1", retrieved_ids=("d9a5bd8ea531", "00ff"), relevant_ids=("b47e",)),
        QueryRecord("q2", retrieved_ids=("b47e",), relevant_ids=("00ff", "abcd")),
    ],
    "hex, one odd": [QueryRecord("q1", retrieved_ids=("abc", "d1"), relevant_ids=("ab",))],
    "upper-case hex": [QueryRecord("q1", retrieved_ids=("D9A5",), relevant_ids=("d9a5",))],
    "empty id": [QueryRecord("q1", retrieved_ids=("ab", ""), relevant_ids=("",))],
}


def _as_rankings(queries: list[QueryRecord], *, which: str = "both") -> columnar.QueryColumns:
    """Return the columns of ``queries`` with their rankings (or one of them) as Rankings."""
    columns = columnar.columns_of(queries)
    changes: dict[str, Rankings] = {}
    if which in ("both", "retrieved"):
        changes["retrieved_ids"] = Rankings.of(columns.retrieved_ids)
    if which in ("both", "relevant"):
        changes["relevant_ids"] = Rankings.of(columns.relevant_ids)
    return dataclasses.replace(columns, **changes)


@pytest.mark.parametrize("queries", list(CASES.values()), ids=list(CASES))
@pytest.mark.parametrize("which", ["both", "retrieved", "relevant"])
def test_rankings_encode_as_the_same_tuples(queries: list[QueryRecord], which: str) -> None:
    """Columns whose rankings are Rankings give the blobs of the same queries' tuples."""
    expected = columnar.encode_queries(queries)
    assert expected == columnar.encode_columns(_as_rankings(queries, which=which))


@settings(max_examples=150, deadline=None)
@given(st.lists(query, max_size=30, unique_by=lambda q: q.query_id))
def test_any_rankings_encode_as_the_same_tuples(queries: list[QueryRecord]) -> None:
    """Any queries' rankings as Rankings are saved byte for byte as their tuples are."""
    assert columnar.encode_queries(queries) == columnar.encode_columns(_as_rankings(queries))


def test_rankings_from_words_encode_as_the_same_tuples() -> None:
    """Rankings built from packed words (as a replayed run has them) encode as tuples do."""
    queries = CASES["hex-like"]
    flat = [d for q in queries for d in q.retrieved_ids]
    words = np.frombuffer(b"".join(d.encode().ljust(16, b"\0") for d in flat), ">u8")
    built = Rankings.from_words(
        np.array([len(q.retrieved_ids) for q in queries], np.int32),
        words.astype(np.uint64).reshape(len(flat), 2),
    )
    columns = dataclasses.replace(columnar.columns_of(queries), retrieved_ids=built)
    assert columnar.encode_queries(queries) == columnar.encode_columns(columns)


def test_ids_of_one_content_hash_are_still_told_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """Should every id hash alike, merging the dictionaries still keeps distinct ids apart."""
    monkeypatch.setattr(texts, "hashes", lambda lengths, data: np.zeros(lengths.size, np.uint64))
    queries = CASES["non-ASCII"]
    assert columnar.encode_queries(queries) == columnar.encode_columns(_as_rankings(queries))
