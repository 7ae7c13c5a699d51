"""Judgment layers and run labels: the ``judgment_layers`` and ``run_labels`` tables.

A layer is a set of grades added on top of a suite's frozen eval set, with its provenance
(source, who or which judge, when). Layers are only ever added, never edited, so the
effective judgments of any moment can be rebuilt. ``run_labels`` says which queries and which
judgments a run was scored with, so a later change of the judgments re-scores it instead of
ending comparison.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Literal

from monitor.errors import UsageError
from monitor.evalset._checks import GRADE_MAX, GRADE_MIN
from monitor.logs import get_logger
from monitor.store.dialect import dump_json
from monitor.store.records import utc
from monitor.store.sql import Transaction

log = get_logger(__name__)

#: Who made a layer's grades: people (a filled labeling queue) or a judge plug-in.
LayerKind = Literal["human", "judge"]

LAYER_KINDS: tuple[LayerKind, ...] = ("human", "judge")

#: Grades by query id, then doc id.
Grades = Mapping[str, Mapping[str, int]]


@dataclass(frozen=True, slots=True)
class JudgmentLayer:
    """One layer of grades with its provenance, as the store keeps it.

    ``source`` names where the grades came from (a file name, a judge's key), ``who`` the
    person or judge, ``override`` whether its grades replace conflicting earlier ones.
    ``layer_id`` is assigned by the store (``None`` until saved).
    """

    suite: str
    source: str
    who: str
    kind: LayerKind
    created_at: datetime
    grades: Grades = field(default_factory=dict)
    override: bool = False
    layer_id: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in LAYER_KINDS:
            raise UsageError(f"layer kind must be 'human' or 'judge', not {self.kind!r}")
        if not self.source:
            raise UsageError("a judgment layer needs a source")
        object.__setattr__(self, "created_at", utc(self.created_at, "created_at"))
        frozen = {
            str(qid): MappingProxyType({str(doc): int(g) for doc, g in docs.items()})
            for qid, docs in self.grades.items()
        }
        object.__setattr__(self, "grades", MappingProxyType(frozen))

    @property
    def size(self) -> int:
        """Return how many (query, doc) grades the layer holds."""
        return sum(len(docs) for docs in self.grades.values())


@dataclass(frozen=True, slots=True)
class RunLabels:
    """Which queries (ids and texts) and which judgments a run was scored with."""

    queries_fingerprint: str
    judgments_version: str


def insert_layer(tx: Transaction, layer: JudgmentLayer) -> int:
    """Insert ``layer``; return the id the database gave it."""
    grades = {qid: dict(docs) for qid, docs in layer.grades.items()}
    return int(
        tx.scalar(
            "INSERT INTO judgment_layers (suite, source, who, kind, override, created_at, grades)"
            " VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING layer_id",
            (
                layer.suite,
                layer.source,
                layer.who,
                layer.kind,
                int(layer.override),
                tx.dialect.timestamp(layer.created_at),
                dump_json(grades),
            ),
        )
    )


def newest_layer_id(tx: Transaction, suite: str) -> int:
    """Return the id of the suite's newest layer (0 when it has none).

    On PostgreSQL the table is first locked against other writers until the transaction
    ends, so that a layer added on what this read returns cannot race another; SQLite's
    write transactions already exclude each other.
    """
    if tx.dialect.name == "postgresql":
        tx.execute("LOCK TABLE judgment_layers IN SHARE ROW EXCLUSIVE MODE")
    return int(
        tx.scalar(
            "SELECT COALESCE(MAX(layer_id), 0) FROM judgment_layers WHERE suite = ?", (suite,)
        )
    )


def layer_ids(tx: Transaction, suite: str) -> tuple[int, ...]:
    """Return the ids of the suite's layers in the order they were added."""
    rows = tx.all(
        "SELECT layer_id FROM judgment_layers WHERE suite = ? ORDER BY layer_id", (suite,)
    )
    return tuple(int(row[0]) for row in rows)


def load_layers(tx: Transaction, suite: str) -> list[JudgmentLayer]:
    """Return the suite's layers in the order they were added."""
    rows = tx.all(
        "SELECT layer_id, suite, source, who, kind, override, created_at, grades"
        " FROM judgment_layers WHERE suite = ? ORDER BY layer_id",
        (suite,),
    )
    return [
        JudgmentLayer(
            suite=name,
            source=source,
            who=who,
            kind=kind,
            override=bool(override),
            created_at=tx.dialect.read_timestamp(created),
            grades=stored_grades(tx.dialect.read_json(grades), int(layer_id)),
            layer_id=int(layer_id),
        )
        for layer_id, name, source, who, kind, override, created, grades in rows
    ]


def stored_grades(raw: object, layer_id: int) -> dict[str, dict[str, int]]:
    """Return the grades of stored layer ``layer_id``, without any row that is no grade.

    A row that is not an integer of 64 bits (written before grades were checked at the
    door, or by hand) is logged with its layer, query and doc and left out, so that one bad
    row never stops a run or a report.
    """
    if not isinstance(raw, Mapping):
        log.warning("stored_layer_unreadable", layer_id=layer_id, found=type(raw).__name__)
        return {}
    out: dict[str, dict[str, int]] = {}
    for qid, docs in raw.items():
        if not isinstance(docs, Mapping):
            log.warning("stored_grade_skipped", layer_id=layer_id, query_id=str(qid))
            continue
        kept = out.setdefault(str(qid), {})
        for doc, grade in docs.items():
            if type(grade) is int and GRADE_MIN <= grade <= GRADE_MAX:
                kept[str(doc)] = grade
            else:
                log.warning(
                    "stored_grade_skipped",
                    layer_id=layer_id,
                    query_id=str(qid),
                    doc_id=str(doc),
                    expected=f"an integer grade from {GRADE_MIN} to {GRADE_MAX}",
                )
    return out


def put_run_labels(tx: Transaction, run_id: int, labels: RunLabels) -> None:
    """Record the labels run ``run_id`` was scored with, replacing any earlier record."""
    tx.execute(
        "INSERT INTO run_labels (run_id, queries_fingerprint, judgments_version) VALUES (?, ?, ?)"
        " ON CONFLICT (run_id) DO UPDATE SET queries_fingerprint = excluded.queries_fingerprint,"
        " judgments_version = excluded.judgments_version",
        (run_id, labels.queries_fingerprint, labels.judgments_version),
    )


def get_run_labels(tx: Transaction, run_id: int) -> RunLabels | None:
    """Return the labels run ``run_id`` was scored with, or None (saved before layers)."""
    row = tx.one(
        "SELECT queries_fingerprint, judgments_version FROM run_labels WHERE run_id = ?",
        (run_id,),
    )
    return None if row is None else RunLabels(str(row[0]), str(row[1]))
