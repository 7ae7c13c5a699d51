"""A search that answers in bulk: the same outcomes, figures and metrics as query by query."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from monitor import evaluate
from monitor.errors import RunTerminated
from monitor.evalset.columns import EvalColumns
from monitor.records import Query, relevant_columns
from monitor.run import RunTable
from monitor.run.answers import Answers
from monitor.runner import RunResult, run_queries
from monitor.search.answers import answers_in_bulk
from monitor.search.replay import ReplaySearch

#: Ties, a repeated id (d2 of q1 twice), a non-ASCII id, a long id, a query with no line.
RUN = """\
q1 Q0 d1 1 0.5 tag
q1 Q0 d3 2 0.9 tag
q1 Q0 d2 3 0.5 tag
q1 Q0 d2 4 0.4 tag
q1 Q0 d9 5 0.3 tag
q2 Q0 dé 1 2.0 tag
q2 Q0 a-document-id-longer-than-sixteen-bytes 2 1.0 tag
q4 Q0 x 1 1.0 tag
"""


class OneByOne:
    """The same replay, without its bulk answer: the runner asks it query by query."""

    takes_query = True
    in_memory = True

    def __init__(self, replay: ReplaySearch) -> None:
        self.replay = replay

    def __call__(self, query: Query, k: int) -> object:
        return self.replay(query, k)


@pytest.fixture
def replay(tmp_path: Path) -> ReplaySearch:
    path = tmp_path / "run.trec"
    path.write_text(RUN, encoding="utf-8")
    return ReplaySearch.from_file(path, "trec")


@pytest.fixture
def queries() -> list[Query]:
    return [
        Query("q1", "one", {"d2": 1, "d9": 2, "d7": 0}),
        Query("q2", "two", {"dé": 1, "a-document-id-longer-than-sixteen-bytes": 3}),
        Query("q3", "three", {"d1": 1}),
        Query("q4", "four", {}),
    ]


@pytest.mark.parametrize("k", [1, 2, 3, 4, 10])
def test_bulk_outcomes_equal_those_asked_one_by_one(
    replay: ReplaySearch, queries: list[Query], k: int
) -> None:
    """Hits (cut to k, repeated ids dropped), duplicates and relevant ids are the same."""
    bulk = run_queries(queries, replay, k=k)
    single = run_queries(queries, OneByOne(replay), k=k)
    for mine, theirs in zip(bulk.outcomes, single.outcomes, strict=True):
        assert (theirs.query_id, theirs.hits, theirs.duplicates, theirs.relevant_ids) == (
            mine.query_id,
            mine.hits,
            mine.duplicates,
            mine.relevant_ids,
        )
    assert (single.empty, single.duplicates, single.failed, single.mean_top1_score) == (
        bulk.empty,
        bulk.duplicates,
        bulk.failed,
        bulk.mean_top1_score,
    )


def test_bulk_metrics_equal_those_of_the_outcomes(
    replay: ReplaySearch, queries: list[Query]
) -> None:
    """The metric engine reads a bulk run's columns and gives the values of its rankings."""
    metrics = ["ndcg@3", "recall@2", "mrr@10", "map", "judged@3"]
    qrels = {q.id: dict(q.judgments) for q in queries}
    bulk = run_queries(queries, replay, k=3)
    by_columns = evaluate(qrels, bulk, metrics, exclude_failed=True)
    by_rankings = evaluate(qrels, bulk.as_run(), metrics)
    assert by_rankings.query_ids == by_columns.query_ids
    for metric in by_rankings.metrics:
        assert by_rankings.values[metric].tolist() == by_columns.values[metric].tolist()


def test_outcomes_read_by_index_slice_and_iteration_agree(
    replay: ReplaySearch, queries: list[Query]
) -> None:
    """An outcome table is a sequence: an index, a negative index and a slice read alike."""
    outcomes = run_queries(queries, replay, k=5).outcomes
    assert isinstance(outcomes, RunTable)
    listed = list(outcomes)
    assert (listed[-1], tuple(listed[1:3])) == (outcomes[-1], outcomes[1:3])
    assert tuple(listed) == outcomes
    with pytest.raises(IndexError):
        outcomes[len(listed)]


def test_a_cancelled_run_answers_nothing_in_bulk(
    replay: ReplaySearch, queries: list[Query]
) -> None:
    """A run cancelled before it starts raises RunTerminated, as a run one by one does."""
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(RunTerminated):
        run_queries(queries, replay, cancel=cancel)


class Failing(OneByOne):
    """A replay whose bulk answer raises: the queries are then asked one by one."""

    def answer_all(self, queries: EvalColumns, k: int) -> Answers:
        raise RuntimeError("the bulk answer broke")


def test_a_bulk_answer_that_raises_falls_back_to_one_by_one(
    replay: ReplaySearch, queries: list[Query]
) -> None:
    """Nothing is lost when the bulk call fails: every query is asked and answered."""
    search = Failing(replay)
    assert answers_in_bulk(search) is search
    result: RunResult = run_queries(queries, search, k=3)
    assert [3, 2, 0, 1] == [len(o.hits) for o in result.outcomes]


class Recording(OneByOne):
    """A replay that keeps the ids of every bulk call it was given."""

    def __init__(self, replay: ReplaySearch) -> None:
        super().__init__(replay)
        self.calls: list[tuple[str, ...]] = []

    def answer_all(self, queries: EvalColumns, k: int) -> Answers | None:
        self.calls.append(tuple(queries.ids))
        return self.replay.answer_all(queries, k)


def test_a_bulk_search_is_given_the_columns_of_the_warmup_and_of_the_run(
    replay: ReplaySearch, queries: list[Query]
) -> None:
    """The warm-up call holds the first queries, the measured one all of them, in order."""
    search = Recording(replay)
    result = run_queries(queries, search, k=3, warmup=2)
    ids = tuple(query.id for query in queries)
    assert [ids[:2], ids] == search.calls
    assert [3, 2, 0, 1] == [len(o.hits) for o in result.outcomes]


def test_a_run_read_into_mappings_is_asked_one_by_one(queries: list[Query]) -> None:
    """A replay of rankings held as mappings declines the bulk answer."""
    replay = ReplaySearch({"q1": ["d2", "d9"]})
    result = run_queries(queries, replay, k=3)
    assert ("d2", "d9") == result.outcomes[0].retrieved_ids


def test_bulk_latency_is_the_call_shared_by_every_query(
    replay: ReplaySearch, queries: list[Query]
) -> None:
    """Each query is given the same share of the one call's time."""
    result = run_queries(queries, replay, k=3, warmup=2)
    latencies = {o.latency_seconds for o in result.outcomes}
    assert 1 == len(latencies)
    assert (4, 2) == (result.latency.count, result.warmup)


@pytest.mark.slow
@given(
    st.lists(
        st.dictionaries(st.sampled_from(["a", "b", "c", "dé"]), st.integers(-1, 3)), max_size=6
    )
)
def test_relevant_columns_are_each_querys_relevant_ids(grades: list[dict[str, int]]) -> None:
    """Counts and ids, read in bulk, are the queries' relevant ids in judgment order."""
    queries = [Query(f"q{i}", "", judged) for i, judged in enumerate(grades)]
    counts, ids = relevant_columns(queries)
    assert [len(q.relevant_ids) for q in queries] == counts
    assert [doc for q in queries for doc in q.relevant_ids] == ids


def test_bulk_metrics_do_not_depend_on_the_judgments_order(
    replay: ReplaySearch, queries: list[Query]
) -> None:
    """Judgments in the run's order (read by position) and in another (looked up by id)
    give each query the same values."""
    metrics = ["ndcg@3", "recall@2", "judged@3"]
    bulk = run_queries(queries, replay, k=3)
    in_order = {q.id: dict(q.judgments) for q in queries}
    shuffled = {q.id: dict(q.judgments) for q in reversed(queries)}
    first = evaluate(in_order, bulk, metrics, exclude_failed=True)
    second = evaluate(shuffled, bulk, metrics, exclude_failed=True)
    for metric in first.metrics:
        by_id = dict(zip(second.query_ids, second.values[metric].tolist(), strict=True))
        assert [by_id[q] for q in first.query_ids] == first.values[metric].tolist()


def test_bulk_answers_do_not_depend_on_the_query_order(replay: ReplaySearch) -> None:
    """Queries in the run file's order (read by position) and in another (looked up by id)
    get the same rankings."""
    in_order = [Query(q, q) for q in ("q1", "q2", "q4")]
    reordered = list(reversed(in_order))
    first = {o.query_id: o.hits for o in run_queries(in_order, replay, k=4).outcomes}
    second = {o.query_id: o.hits for o in run_queries(reordered, replay, k=4).outcomes}
    assert first == second
    assert ("d3", "d2", "d1") == tuple(hit.id for hit in first["q1"])  # cut to 4, copy dropped


def test_a_closed_replay_lets_go_of_its_run_but_not_of_its_answers(
    replay: ReplaySearch, queries: list[Query]
) -> None:
    """The outcomes answered before the close still read; the closed replay answers no more."""
    from monitor.search import close_search

    result = run_queries(queries, replay, k=3)
    close_search(replay)
    assert ("d3", "d2", "d1") == result.outcomes[0].retrieved_ids
    assert 3 == replay.stats()["replay_queries"]  # q1, q2 and q4, as before the close
    with pytest.raises(RuntimeError, match="closed"):
        replay(queries[0], 3)
    with pytest.raises(RuntimeError, match="closed"):
        replay.answer_all(EvalColumns.of(queries), 3)


def test_an_eval_set_is_sent_from_its_columns_without_a_record_per_query(
    replay: ReplaySearch, queries: list[Query], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An eval set given to the runner hands over its columns: its outcomes are those of its
    queries given as records, and no Query record of the set is built to send them."""
    from monitor.evalset.model import EvalSet

    evalset = EvalSet("set", queries)
    expected = run_queries(queries, replay, k=3)

    def refuse(self: EvalSet) -> object:
        raise AssertionError("the eval set was read as records")

    monkeypatch.setattr(EvalSet, "__iter__", refuse)
    result = run_queries(evalset, replay, k=3)
    assert [o.retrieved_ids for o in expected.outcomes] == [
        o.retrieved_ids for o in result.outcomes
    ]
    assert [o.query_id for o in expected.outcomes] == [o.query_id for o in result.outcomes]
