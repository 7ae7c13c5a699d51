"""Labeling: a grade given on a query page becomes a judgment of the suite's layer.

The page posts ``(query, document, grade)``; a :data:`LabelSink` records it with who gave it
and when. The sink is the seam to the judgment layers kept in the store: when this
installation has none (:func:`default_sink` returns None), labeling answers 501 and says so.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, TypeAlias

from monitor.errors import UsageError

if TYPE_CHECKING:
    from monitor.evalset import EvalSet
    from monitor.store import Store

#: The grades a labeler may give.
LABEL_GRADES = (0, 1, 2, 3)


@dataclass(frozen=True, slots=True)
class Label:
    """One grade given on a query page: which document, how relevant, by whom, when."""

    suite: str
    query_id: str
    doc_id: str
    grade: int
    who: str
    at: datetime

    def __post_init__(self) -> None:
        if self.grade not in LABEL_GRADES:
            raise UsageError(f"grade: expected one of 0, 1, 2, 3, got {self.grade!r}")
        for name in ("suite", "query_id", "doc_id", "who"):
            if not getattr(self, name):
                raise UsageError(f"{name}: expected a non-empty value")


class LabelConflictError(UsageError):
    """The document already has another grade in force: the label was not recorded.

    ``source`` says where the grade in force came from (a layer, the frozen eval set); the
    message, read by whoever pressed the button, says what happened and what to do.
    """

    def __init__(self, label: Label, grade: int, source: str) -> None:
        self.label, self.grade, self.source = label, grade, source
        super().__init__(
            f"{label.doc_id} already has grade {grade} for this query, so your grade "
            f"{label.grade} was not recorded; reload the page to see the grades in force"
        )


#: Record a label in the store (the suite's judgment layer).
LabelSink: TypeAlias = Callable[["Store", Label], None]

#: The frozen eval set of a suite (the layers' base), or None when it cannot be loaded.
FrozenOf: TypeAlias = Callable[[str], "EvalSet | None"]

#: Where the web app's layers say they come from.
SOURCE = "web"


def default_sink(frozen_of: FrozenOf) -> LabelSink | None:
    """Return the sink adding each label as a human layer of the suite, with who gave it
    and when (:func:`monitor.judgments.add_layer`), or None without judgment layers.

    A grade that differs from one in force is refused (LabelConflictError, saying so in
    words for the page), never silently replaced: a query page only offers grades for
    unjudged documents, and of two grades posted at once for one document the first stored
    wins (:func:`monitor.judgments.add_layer` checks and writes as one compare-and-set).
    """
    try:
        judgments = importlib.import_module("monitor.judgments")
    except ImportError:
        return None
    add_layer = getattr(judgments, "add_layer", None)
    if add_layer is None:
        return None
    from monitor.judgments.errors import JudgmentConflictError

    def sink(store: Store, label: Label) -> None:
        frozen = frozen_of(label.suite)
        if frozen is None:
            raise UsageError(f"suite {label.suite!r}: its eval set cannot be loaded to label it")
        grades: Mapping[str, Mapping[str, int]] = {label.query_id: {label.doc_id: label.grade}}
        try:
            add_layer(
                store,
                label.suite,
                grades,
                frozen=frozen,
                source=SOURCE,
                who=label.who,
                override=False,
                kind="human",
                clock=lambda: label.at,
            )
        except JudgmentConflictError as error:
            (found, *_) = error.conflicts
            raise LabelConflictError(label, found.other_grade, found.other_source) from None

    return sink


UNAVAILABLE = (
    "labeling needs the judgment layers of the store (monitor.judgments.add_layer), "
    "which this installation does not have"
)
