"""Judgment layers: grades added on top of a frozen eval set, with provenance.

The labeling queue (:func:`todo_items`) lists what the runs retrieved that nobody judged;
:func:`add_layer` stores filled-in grades as a layer; :func:`effective_evalset` gives the
judgments in force; :func:`align_baseline` re-scores a baseline measured with other labels.
Judges (:mod:`monitor.judgments.judges`) fill label holes automatically.
"""

from __future__ import annotations

from monitor.judgments.errors import JudgmentConflictError, UnknownQueriesError
from monitor.judgments.layers import (
    LABEL_VIEWS,
    LabelView,
    add_layer,
    effective_evalset,
    merged_grades,
    view_layers,
)
from monitor.judgments.merge import (
    Conflict,
    judgments_version,
    labels_of,
    merged,
    queries_fingerprint,
)
from monitor.judgments.rescore import Aligned, align_baseline, rescore
from monitor.judgments.todo import DocText, TodoItem, todo_items, write_todo

__all__ = [
    "LABEL_VIEWS",
    "Aligned",
    "Conflict",
    "DocText",
    "JudgmentConflictError",
    "LabelView",
    "TodoItem",
    "UnknownQueriesError",
    "add_layer",
    "align_baseline",
    "effective_evalset",
    "judgments_version",
    "labels_of",
    "merged",
    "merged_grades",
    "queries_fingerprint",
    "rescore",
    "todo_items",
    "view_layers",
    "write_todo",
]
