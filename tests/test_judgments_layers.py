"""Judgment layers: grades on top of the frozen eval set, conflicts, versions."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from monitor.errors import UsageError
from monitor.evalset import EvalSet
from monitor.judgments import (
    JudgmentConflictError,
    UnknownQueriesError,
    add_layer,
    effective_evalset,
    judgments_version,
    merged,
    queries_fingerprint,
)
from monitor.store import JudgmentLayer, SqlStore, open_store

T0 = datetime(2024, 5, 1, 3, 0, tzinfo=timezone.utc)


def frozen() -> EvalSet:
    evalset = EvalSet("s")
    evalset.add("q1", "first question", relevant={"d1": 1})
    evalset.add("q2", "second question", relevant={"d2": 2})
    return evalset


@pytest.fixture
def store(tmp_path: Path) -> SqlStore:
    opened = open_store(tmp_path / "monitor.db")
    assert isinstance(opened, SqlStore)
    return opened


def test_a_layer_adds_grades_to_the_effective_judgments(store: SqlStore) -> None:
    """The effective set is the frozen grades plus the layer's."""
    add_layer(store, "s", {"q1": {"d9": 2}}, frozen=frozen(), source="todo.csv", who="alice")
    assert {"d1": 1, "d9": 2} == dict(effective_evalset(store, "s", frozen())["q1"].judgments)


def test_adding_a_layer_never_changes_the_frozen_set(store: SqlStore) -> None:
    """The frozen eval set keeps its own grades; only the effective one changes."""
    base = frozen()
    add_layer(store, "s", {"q1": {"d9": 2}}, frozen=base, source="todo.csv")
    assert {"d1": 1} == dict(base["q1"].judgments)


def test_a_conflicting_grade_is_an_error_naming_both_sources(store: SqlStore) -> None:
    """Grading a judged pair differently names the frozen set and the new file."""
    with pytest.raises(JudgmentConflictError) as caught:
        add_layer(store, "s", {"q1": {"d1": 0}}, frozen=frozen(), source="mine.csv")
    message = str(caught.value)
    assert ("the frozen eval set" in message, "mine.csv" in message) == (True, True)


def test_a_conflict_with_an_earlier_layer_names_that_layer(store: SqlStore) -> None:
    """A grade that differs from a layer's names that layer's source."""
    add_layer(store, "s", {"q1": {"d9": 2}}, frozen=frozen(), source="first.csv")
    with pytest.raises(JudgmentConflictError, match=r"layer 1 \(first.csv\)"):
        add_layer(store, "s", {"q1": {"d9": 0}}, frozen=frozen(), source="second.csv")


def test_override_replaces_a_conflicting_grade(store: SqlStore) -> None:
    """With override the new grade is the one in force."""
    add_layer(store, "s", {"q1": {"d1": 0}}, frozen=frozen(), source="fix.csv", override=True)
    assert 0 == effective_evalset(store, "s", frozen())["q1"].judgments["d1"]


def test_a_grade_for_an_unknown_query_is_refused(store: SqlStore) -> None:
    """A layer adds grades, never queries: an unknown query id is an error naming it."""
    with pytest.raises(UnknownQueriesError, match="'q7'"):
        add_layer(store, "s", {"q7": {"d1": 1}}, frozen=frozen(), source="x.csv")


@pytest.mark.parametrize("grade", [2**63, -(2**63) - 1, 2**70])
def test_a_grade_past_64_bits_is_refused_at_the_door(store: SqlStore, grade: int) -> None:
    """No layer stores a grade the eval set could not hold; the error names query and doc."""
    with pytest.raises(UsageError, match=r"x\.csv: expected a grade from .* query 'q1' doc 'd1'"):
        add_layer(store, "s", {"q1": {"d1": grade}}, frozen=frozen(), source="x.csv")


def test_an_equal_grade_is_no_conflict(store: SqlStore) -> None:
    """Repeating a grade already in force is accepted."""
    layer = add_layer(store, "s", {"q1": {"d1": 1}}, frozen=frozen(), source="same.csv")
    assert 1 == layer.layer_id


def test_a_layer_changes_the_judgments_version_but_not_the_queries_fingerprint(
    store: SqlStore,
) -> None:
    """New grades make a new judgments version; the queries stay the same."""
    before = frozen()
    add_layer(store, "s", {"q2": {"d5": 1}}, frozen=before, source="todo.csv")
    after = effective_evalset(store, "s", before)
    assert (queries_fingerprint(before), False) == (
        queries_fingerprint(after),
        judgments_version(before) == judgments_version(after),
    )


def test_without_layers_the_fingerprint_is_the_frozen_sets() -> None:
    """A suite with no layers keeps the eval-set fingerprint it always had."""
    assert frozen().fingerprint == merged(frozen(), []).fingerprint


def test_a_judge_layer_fills_holes_but_never_replaces_a_human_grade() -> None:
    """A judge's grade counts only where nobody judged the pair."""
    judge = JudgmentLayer(
        suite="s",
        source="judge:j:m:0",
        who="j",
        kind="judge",
        created_at=T0,
        grades={"q1": {"d1": 0, "d8": 1}},
    )
    assert {"d1": 1, "d8": 1} == dict(merged(frozen(), [judge])["q1"].judgments)


def test_the_human_view_leaves_judge_layers_out(store: SqlStore) -> None:
    """Judge grades appear only in the ``all`` view, under the judge's current source."""
    add_layer(store, "s", {"q1": {"d8": 1}}, frozen=frozen(), source="judge:j:m:0", kind="judge")
    views = [
        dict(effective_evalset(store, "s", frozen(), view=view, judge_source=src)["q1"].judgments)
        for view, src in (("human", "judge:j:m:0"), ("all", "judge:j:m:0"), ("all", "judge:j:m:1"))
    ]
    assert [{"d1": 1}, {"d1": 1, "d8": 1}, {"d1": 1}] == views


def test_a_suite_without_layers_uses_its_frozen_set_as_it_is(store: SqlStore) -> None:
    """With no layer, the effective set is the frozen set itself: nothing is copied."""
    evalset = frozen()
    assert evalset is effective_evalset(store, "s", evalset)
