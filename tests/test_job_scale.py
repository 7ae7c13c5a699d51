"""The million-query job path: array-backed replay and work bounded by what is shown."""

from __future__ import annotations

import random
from datetime import datetime, timezone
from pathlib import Path

import pytest

from monitor.compare.diff import worse_queries
from monitor.errors import UsageError
from monitor.evalset import EvalSet
from monitor.records import Hit, Query
from monitor.search.replay import ReplaySearch
from monitor.search.saved import load_hits
from monitor.store.columnar import decode_queries, encode_queries
from monitor.store.records import QueryRecord, RunFigures, RunRecord

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _random_trec(path: Path, seed: int) -> Path:
    """Write a shuffled TREC run with tied scores, repeated ids and ids of mixed lengths."""
    rng = random.Random(seed)
    lines = []
    for q in range(30):
        for j in range(rng.randint(1, 25)):
            doc = f"doc-{rng.randint(0, 12)}{'é' * rng.randint(0, 9)}"
            lines.append(f"q{q} Q0 {doc} {j + 1} {rng.choice([0.5, 1.25, rng.random()])} t\n")
    rng.shuffle(lines)
    path.write_text("".join(lines), encoding="utf-8")
    return path


def test_replay_of_a_trec_file_answers_as_the_line_reader_ranks(tmp_path: Path) -> None:
    """Every query, at every cutoff, gets the hits the line reader gives, repeats included."""
    path = _random_trec(tmp_path / "run.trec", seed=3)
    replay = ReplaySearch.from_file(path, "trec")
    expected = load_hits(path, "trec")
    for qid, hits in expected.items():
        for k in (1, 5, 100):
            assert tuple(hits[:k]) == replay(Query(qid, "text"), k)


def test_replay_of_a_trec_file_answers_an_unknown_query_with_no_hits(tmp_path: Path) -> None:
    """A query the run does not hold retrieves nothing, and the stats count the run's queries."""
    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 d1 1 2.0 t\nq2 Q0 d2 1 1.0 t\n", encoding="utf-8")
    replay = ReplaySearch.from_file(path, "trec")
    assert () == replay(Query("q9", "text"), 10)
    assert (Hit("d1", 2.0),) == replay(Query("q1", "text"), 10)
    assert 2 == replay.stats()["replay_queries"]


def _run(values: dict[str, float]) -> RunRecord:
    queries = tuple(
        QueryRecord(qid, {"ndcg@10": v}, retrieved_ids=("a", "b"), relevant_ids=("a",))
        for qid, v in values.items()
    )
    return RunRecord(
        suite="s",
        pipeline="p",
        started_at=T0,
        finished_at=T0,
        evalset_fingerprint="sha256:a",
        figures=RunFigures(),
        queries=queries,
    )


def test_worse_queries_keep_the_largest_losses_with_ties_by_query_id() -> None:
    """The top losses come first; equal losses are ordered by query id."""
    before = _run({"q1": 1.0, "q2": 1.0, "q3": 1.0, "q4": 1.0, "q5": 0.5})
    after = _run({"q1": 0.5, "q2": 0.0, "q3": 0.5, "q4": 0.9, "q5": 0.6})
    found = worse_queries(before, after, "ndcg@10", top=3)
    assert ["q2", "q1", "q3"] == [d.query_id for d in found]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (Query("q1", "t", {"d1": True}), "an integer grade"),  # type: ignore[dict-item]
        (Query("q1", "t", {"": 1}), "a non-empty document id"),
        (Query("q1", "t", {"d\ud800": 1}), "valid Unicode"),
        (Query("q1", "t", {}, {"k": float("nan")}), "a finite number"),
        (Query("q1", "\ud800", {}), "valid Unicode"),
        (Query("q1", "t", {}, {"k": [1]}), "a metadata value"),  # type: ignore[dict-item]
    ],
)
def test_a_ready_query_with_a_bad_part_is_still_refused(query: Query, expected: str) -> None:
    """Adding a built Query runs the full checks on anything the quick test does not accept."""
    with pytest.raises(UsageError, match=expected):
        EvalSet("s").add(query)


def test_a_ready_valid_query_is_kept_as_given() -> None:
    """A valid built Query is added with its judgments and metadata unchanged."""
    query = Query("q1", "tëxt", {"d1": 2, "d2": 0, "d3": -1}, {"k": "v", "n": 1.5, "b": True})
    added = EvalSet("s").add(query)
    assert query == added
    assert {"d1": 2, "d2": 0, "d3": -1} == dict(added.judgments)
    assert {"k": "v", "n": 1.5, "b": True} == dict(added.metadata)


def test_the_store_columns_read_back_rankings_that_share_documents() -> None:
    """Rankings sharing ids, relevant-only ids and empty rankings read back as written."""
    queries = (
        QueryRecord("q1", {"m": 0.5}, retrieved_ids=("b", "a"), relevant_ids=("c",)),
        QueryRecord("q2", {}, retrieved_ids=(), relevant_ids=(), error_type="timeout"),
        QueryRecord("q3", {"m": 1.0}, retrieved_ids=("a", "é", "c"), relevant_ids=("a", "z")),
    )
    assert queries == decode_queries(encode_queries(queries))
