"""Add judgment layers to a suite and read its effective judgments.

:func:`add_layer` is the one way grades get into the store (the command line, judges and
the web app call it); :func:`effective_evalset` is the one way a stage reads the judgments
in force.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import replace
from datetime import datetime, timezone
from typing import Literal

from monitor.errors import LayersChangedError, UsageError
from monitor.evalset import EvalSet
from monitor.evalset._checks import GRADE_MAX, GRADE_MIN
from monitor.judgments.errors import JudgmentConflictError, UnknownQueriesError
from monitor.judgments.merge import conflicts, grade_sources, merged
from monitor.store import JudgmentLayer, LayerKind, Store
from monitor.store.layers import Grades

#: Which labels a view of the judgments holds: people's only, or people's and the judge's.
LabelView = Literal["human", "all"]

LABEL_VIEWS: tuple[LabelView, ...] = ("human", "all")

#: How many times :func:`add_layer` reads and checks again when layers land meanwhile.
ADD_ATTEMPTS = 5


def _now() -> datetime:
    return datetime.now(timezone.utc)


def add_layer(
    store: Store,
    suite: str,
    grades: Grades,
    *,
    frozen: EvalSet,
    source: str,
    who: str = "",
    override: bool = False,
    kind: LayerKind = "human",
    clock: Callable[[], datetime] = _now,
) -> JudgmentLayer:
    """Store ``grades`` as a new layer of ``suite`` on top of its ``frozen`` eval set.

    Raise UsageError when a grade is not an integer of 64 bits (the eval set could not hold
    it), UnknownQueriesError when a grade names a query the set does not hold, and
    JudgmentConflictError (naming both sources) when a grade differs from one in force,
    unless ``override``. The check and the write are one compare-and-set: a layer added
    by another writer in between makes this one read and check again (LayersChangedError
    after :data:`ADD_ATTEMPTS` tries). The frozen file is never written. Return the
    stored layer.
    """
    for qid, docs in grades.items():
        for doc, grade in docs.items():
            if isinstance(grade, bool) or not isinstance(grade, int):
                raise UsageError(
                    f"{source}: expected an integer grade for query {qid!r} doc {doc!r}"
                )
            if not GRADE_MIN <= grade <= GRADE_MAX:
                raise UsageError(
                    f"{source}: expected a grade from {GRADE_MIN} to {GRADE_MAX} for query "
                    f"{qid!r} doc {doc!r}, found an integer of {grade.bit_length()} bits"
                )
    unknown = [qid for qid in grades if qid not in frozen]
    if unknown:
        raise UnknownQueriesError(suite, source, unknown)
    if not any(grades.values()):
        raise UsageError(f"{source}: expected at least one grade, found none")
    layer = JudgmentLayer(
        suite=suite,
        source=source,
        who=who,
        kind=kind,
        created_at=clock(),
        grades=grades,
        override=override,
    )
    for _ in range(ADD_ATTEMPTS - 1):
        with suppress(LayersChangedError):
            return _add_checked(store, layer, frozen)
    return _add_checked(store, layer, frozen)


def _add_checked(store: Store, layer: JudgmentLayer, frozen: EvalSet) -> JudgmentLayer:
    """Check ``layer`` against the layers in force and add it, unless a layer landed since
    they were read (LayersChangedError): two writers grading one document differently at
    once then leave one grade, and the other sees it on its next read."""
    existing = store.layers(layer.suite)
    if not layer.override:
        effective = merged(frozen, [x for x in existing if x.kind == "human"])
        found = conflicts(effective, grade_sources(existing), layer.grades, layer.source)
        if found:
            raise JudgmentConflictError(layer.suite, found)
    newest = max((x.layer_id or 0 for x in existing), default=0)
    return replace(layer, layer_id=store.add_layer(layer, after=newest))


def view_layers(
    layers: Sequence[JudgmentLayer], view: LabelView, judge_source: str | None = None
) -> list[JudgmentLayer]:
    """Return the layers a view holds: human ones, plus (``all``) the current judge's.

    A judge's layers count only under the source of the judge as configured now, so grades
    of another model or prompt are never reused.
    """
    if view not in LABEL_VIEWS:
        raise UsageError(f"unknown label view {view!r}; known: {', '.join(LABEL_VIEWS)}")
    return [
        layer
        for layer in layers
        if layer.kind == "human"
        or (view == "all" and judge_source is not None and layer.source == judge_source)
    ]


def effective_evalset(
    store: Store,
    suite: str,
    frozen: EvalSet,
    *,
    view: LabelView = "human",
    judge_source: str | None = None,
) -> EvalSet:
    """Return ``frozen`` with the suite's layers of ``view`` applied (see :func:`merged`)."""
    return merged(frozen, view_layers(store.layers(suite), view, judge_source))


def merged_grades(evalset: EvalSet) -> Mapping[str, Mapping[str, int]]:
    """Return the judged queries' grades, query -> doc -> grade, in eval-set order."""
    return {query.id: dict(query.judgments) for query in evalset if query.judgments}
