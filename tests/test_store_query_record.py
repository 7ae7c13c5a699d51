"""One query of a stored run, read alone: ``Store.query_record``. SQLite always; PostgreSQL
when it is reachable."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from test_store import make_run

from monitor.errors import StoreLookupError
from monitor.store import QueryRecord, Store, open_store


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.service)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """Return an open store on an empty database."""
    url = f"sqlite:///{tmp_path}/monitor.db"
    if request.param == "postgresql":
        url = request.getfixturevalue("postgres_schema_url")
    with open_store(url) as opened:
        yield opened


@pytest.mark.parametrize("query_id", ["q1", "q2", "q0"])
def test_a_query_read_alone_equals_the_one_in_the_whole_run(store: Store, query_id: str) -> None:
    """Each query's record, its error and latency included, equals get_run's."""
    run_id = store.save_run(make_run())
    whole = next(q for q in store.get_run(run_id).queries if q.query_id == query_id)
    assert whole == store.query_record(run_id, query_id)


def test_a_query_missing_some_values_keeps_only_those_it_has(store: Store) -> None:
    """A query measured on fewer metrics than the others reads back without the others."""
    queries = (
        QueryRecord("a", {"ndcg@10": 0.25, "recall@10": 0.5}, ("d1",)),
        QueryRecord("b", {"recall@10": 0.75}, ("d2", "d3"), ("d3",)),
        QueryRecord("c", {"ndcg@10": 1.0, "recall@10": 1.0}, ("d3",)),
    )
    run_id = store.save_run(make_run(queries=queries))
    assert queries[1] == store.query_record(run_id, "b")
    assert queries[2] == store.query_record(run_id, "c")


def test_a_query_the_run_lacks_is_none(store: Store) -> None:
    """An id the run did not send reads as None, not an error."""
    run_id = store.save_run(make_run())
    assert None is store.query_record(run_id, "nope")


def test_a_query_of_an_unknown_run_raises(store: Store) -> None:
    """A run id the store does not hold raises StoreLookupError."""
    with pytest.raises(StoreLookupError):
        store.query_record(99, "q1")
