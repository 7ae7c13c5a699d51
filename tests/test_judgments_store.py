"""The store keeps judgment layers with their provenance, and the labels each run used.

Every test runs on SQLite, and on PostgreSQL when it is reachable (as in test_store.py).
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from test_store import store

from monitor.errors import StoreLookupError, UsageError
from monitor.store import JudgmentLayer, RunLabels, RunRecord, SqlStore

T0 = datetime(2024, 5, 1, 3, 0, tzinfo=timezone.utc)

#: The store tests' fixture: an open store on each backend the store tests run on.
__all__ = ["store"]


def layer(suite: str = "s", **grades: dict[str, int]) -> JudgmentLayer:
    return JudgmentLayer(
        suite=suite, source="todo.csv", who="alice", kind="human", created_at=T0, grades=grades
    )


def test_a_layer_reads_back_with_its_grades_and_provenance(store: SqlStore) -> None:
    """A saved layer comes back with its id, grades, source, who, kind and time."""
    layer_id = store.add_layer(layer(q1={"d1": 2, "d2": 0}))
    (found,) = store.layers("s")
    assert (layer_id, {"q1": {"d1": 2, "d2": 0}}, "todo.csv", "alice", "human", T0) == (
        found.layer_id,
        {qid: dict(docs) for qid, docs in found.grades.items()},
        found.source,
        found.who,
        found.kind,
        found.created_at,
    )


def test_layers_come_back_in_the_order_they_were_added_per_suite(store: SqlStore) -> None:
    """Each suite sees only its own layers, oldest first."""
    first = store.add_layer(layer(q1={"d1": 1}))
    store.add_layer(layer("other", q1={"d1": 0}))
    second = store.add_layer(layer(q2={"d2": 1}))
    assert [first, second] == [found.layer_id for found in store.layers("s")]


def test_run_labels_read_back_and_are_none_for_a_run_saved_without(store: SqlStore) -> None:
    """The labels a run was scored with are kept by run id; a run without them has None."""
    run_id = store.save_run(RunRecord(suite="s", pipeline="p", started_at=T0, finished_at=T0))
    other = store.save_run(RunRecord(suite="s", pipeline="p", started_at=T0, finished_at=T0))
    store.set_run_labels(run_id, RunLabels("sha256:q", "sha256:j"))
    assert (RunLabels("sha256:q", "sha256:j"), None) == (
        store.run_labels(run_id),
        store.run_labels(other),
    )


def test_labels_of_a_run_that_is_not_there_are_refused(store: SqlStore) -> None:
    """Recording labels for an unknown run raises StoreLookupError."""
    with pytest.raises(StoreLookupError):
        store.set_run_labels(99, RunLabels("sha256:q", "sha256:j"))


def test_a_layer_of_an_unknown_kind_is_refused() -> None:
    """A layer is made by people or by a judge; any other kind is a usage error."""
    with pytest.raises(UsageError, match="layer kind"):
        JudgmentLayer(suite="s", source="x", who="", kind="robot", created_at=T0)  # type: ignore[arg-type]


def test_a_stored_grade_past_64_bits_is_left_out_and_the_rest_read(store: SqlStore) -> None:
    """A grade past 64 bits in a stored layer is skipped; the layer's other grades stay."""
    store.add_layer(layer(q1={"d1": 2**64, "d2": 1}, q2={"d3": -(2**63) - 1}))
    (found,) = store.layers("s")
    assert {"q1": {"d2": 1}, "q2": {}} == {qid: dict(docs) for qid, docs in found.grades.items()}
