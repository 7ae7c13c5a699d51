"""The run table: the one form of a run's outcomes, whichever way the search answered."""

from __future__ import annotations

import math

import numpy as np
import pytest

from monitor.errors import SearchOutputError, UsageError
from monitor.evalset.columns import EvalColumns
from monitor.records import Hit, Query, QueryOutcome
from monitor.run import Rankings, RunTable
from monitor.search.base import normalise_hits


def _outcomes() -> list[QueryOutcome]:
    return [
        QueryOutcome("q1", "one", (Hit("d1", 2.0, "first"), Hit("d2")), ("d2",), 0.5),
        QueryOutcome("q2", "two", (), ("d3",), None, "timeout", "no answer in 1 s"),
        QueryOutcome("q3", "three", (), (), 0.25),
        QueryOutcome("q4", "four", (Hit("dé", 1.0),), ("dé", "d9"), 0.75, None, None, 2),
    ]


def test_outcomes_read_back_as_they_were_given() -> None:
    """Every outcome, its hits' scores and texts, latency and error, reads back equal."""
    outcomes = _outcomes()
    table = RunTable.of(outcomes)
    assert outcomes == list(table)
    assert outcomes[3] == table[-1]
    assert tuple(outcomes[1:3]) == table[1:3]


def test_figures_are_counted_from_the_columns() -> None:
    """Failures, empty answers, duplicates, hits and the first hits' mean score."""
    table = RunTable.of(_outcomes())
    assert (1, 1, 2, 3) == (table.failed, table.empty, table.duplicates, table.hit_count)
    assert {"timeout": 1} == table.error_counts()
    assert ("q2",) == tuple(o.query_id for o in table.failures())
    assert 1.5 == table.mean_top1_score()
    assert 3 == table.latency().count
    assert [None, "timeout", None, None] == table.error_columns()[0]
    assert [0.5, None, 0.25, 0.75] == table.latency_list()
    assert {"d1": "first"} == table.hit_text_by_id()


def test_a_non_finite_first_score_gives_no_mean() -> None:
    """One infinite first score makes the mean no number: None, as the figure is defined."""
    table = RunTable.of([QueryOutcome("q", "t", (Hit("d", math.inf),))])
    assert table.mean_top1_score() is None


def test_take_and_concatenate_restore_the_whole() -> None:
    """Parts taken apart and put back together in another order give the outcomes back."""
    outcomes = _outcomes()
    table = RunTable.of(outcomes)
    odd, even = table.take([1, 3]), table.take([0, 2])
    joined = RunTable.concatenate([odd, even]).take([2, 0, 3, 1])
    assert outcomes == list(joined)
    assert {1: ("timeout", "no answer in 1 s")} == dict(joined.errors)


def test_rankings_hold_retrieved_and_relevant_ids() -> None:
    """The store's rankings are the outcomes' retrieved and relevant ids, in order."""
    outcomes = _outcomes()
    retrieved, relevant = RunTable.of(outcomes).rankings()
    assert Rankings.of([o.retrieved_ids for o in outcomes]) == retrieved
    assert [o.relevant_ids for o in outcomes] == list(relevant)


def test_ranking_columns_leave_failed_queries_out_when_asked() -> None:
    """Only the answered queries stand in the metric engine's columns with answered_only."""
    table = RunTable.of(_outcomes())
    assert ("q1", "q2", "q3", "q4") == table.ranking_columns().query_ids
    columns = table.ranking_columns(answered_only=True)
    assert ("q1", "q3", "q4") == columns.query_ids
    assert [2, 0, 1] == np.bincount(columns.query, minlength=3).tolist()


def test_a_table_refuses_misaligned_columns() -> None:
    """Queries, rankings and latencies must be one a query."""
    table = RunTable.of(_outcomes())
    with pytest.raises(UsageError, match="as many rankings and latencies"):
        RunTable(table.queries[:2], table.hits, table.latency_seconds)
    with pytest.raises(UsageError, match="outcomes for"):
        RunTable.of(_outcomes(), EvalColumns.of([Query("q1", "one")]))


def test_a_doc_id_holding_a_nul_is_refused_at_the_search_output() -> None:
    """An id the run's table cannot hold fails its query with a clear error."""
    with pytest.raises(SearchOutputError, match="without NUL"):
        normalise_hits(["d1", "d\0x"])


def test_a_table_reads_back_from_its_blob() -> None:
    """The codec writes every column of the table and reads it back equal (query texts and
    judgments aside: a reader gives back the eval set's)."""
    from monitor.run import codec

    outcomes = _outcomes()
    table = RunTable.of(outcomes)
    back = codec.decode_table(codec.encode_table(table)).take(range(4), table.queries)
    assert outcomes == list(back)
    assert {1: ("timeout", "no answer in 1 s")} == dict(back.errors)


def test_a_table_without_texts_or_failures_reads_back_from_its_blob() -> None:
    """A bulk answer's table (no hit text, no failure, hex ids) reads back equal."""
    from monitor.run import codec

    outcomes = [QueryOutcome("q1", "one", (Hit("00ff", 1.0), Hit("ab12")), (), 0.25)]
    table = RunTable.of(outcomes)
    back = codec.decode_table(codec.encode_table(table))
    assert (None, {}) == (back.hit_texts, dict(back.errors))
    assert outcomes == list(back.take([0], table.queries))


def test_checked_hits_holding_a_nul_fail_the_table_with_a_clear_error() -> None:
    """Hits a search declared checked are not checked again: the table names the fault."""
    with pytest.raises(UsageError, match="NUL"):
        RunTable.of([QueryOutcome("q", "t", (Hit("a\0b"),))])


def test_tables_of_column_queries_join_as_columns() -> None:
    """Parts over an eval set's columns join without a record per query, ids in order."""
    from monitor.evalset.columns import EvalColumns

    queries = [Query("q1", "one", {"d1": 1}), Query("q2", "two"), Query("q3", "three")]
    columns = EvalColumns.of(queries)
    table = RunTable.of([QueryOutcome(q.id, q.text, (Hit("d1"),)) for q in queries], columns)
    parts = [table.take([2], columns.take([2])), table.take([0, 1], columns.take([0, 1]))]
    joined = RunTable.concatenate(parts)
    assert isinstance(joined.queries, EvalColumns)
    assert ("q3", "q1", "q2") == tuple(joined.query_ids)
