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
from typing import TYPE_CHECKING, Any, TypeAlias

from monitor.errors import UsageError

if TYPE_CHECKING:
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


#: Record a label in the store (the suite's judgment layer).
LabelSink: TypeAlias = Callable[["Store", Label], None]


def default_sink() -> LabelSink | None:
    """Return the sink writing to the store's judgment layers, or None without them."""
    try:
        judgments = importlib.import_module("monitor.judgments")
    except ImportError:
        return None
    add_layer = getattr(judgments, "add_layer", None)
    if add_layer is None:
        return None

    def sink(store: Store, label: Label) -> None:
        grades: Mapping[str, Mapping[str, int]] = {label.query_id: {label.doc_id: label.grade}}
        options: dict[str, Any] = {"source": "web", "who": label.who, "override": False}
        add_layer(store, label.suite, grades, **options)

    return sink


UNAVAILABLE = (
    "labeling needs the judgment layers of the store (monitor.judgments.add_layer), "
    "which this installation does not have"
)
