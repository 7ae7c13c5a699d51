"""The ``drift_checks`` table: each query drift check of a suite, its verdict and figures.

A row holds the check's ``name`` (its alert's rule, its gauges' ``check`` label), the
verdict (``ok``, ``drift``, ``no data``), the two windows compared, each statistic by name
(empty for ``no data``) and the rest of the result as ``detail`` (sizes, reasons, settings).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any

from monitor.store.dialect import dump_json
from monitor.store.records import utc
from monitor.store.sql import Transaction


@dataclass(frozen=True, slots=True)
class DriftRecord:
    """One stored drift check of a suite."""

    suite: str
    name: str
    status: str
    reference: str
    current: str
    statistics: Mapping[str, float] = field(default_factory=dict)
    detail: Mapping[str, Any] = field(default_factory=dict)
    checked_at: datetime | None = None
    check_id: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "statistics", MappingProxyType(dict(self.statistics)))
        object.__setattr__(self, "detail", MappingProxyType(dict(self.detail)))
        if self.checked_at is not None:
            object.__setattr__(self, "checked_at", utc(self.checked_at, "checked_at"))


def insert_drift(tx: Transaction, record: DriftRecord, now: datetime) -> int:
    """Store ``record`` (checked at ``now`` unless it says when); return its id."""
    check_id = tx.scalar(
        "INSERT INTO drift_checks (suite, name, status, reference, current, statistics, detail,"
        " checked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING check_id",
        (
            record.suite,
            record.name,
            record.status,
            record.reference,
            record.current,
            dump_json(dict(record.statistics)),
            dump_json(dict(record.detail)),
            tx.dialect.timestamp(record.checked_at or now),
        ),
    )
    return int(check_id)


def list_drift(tx: Transaction, suite: str, limit: int) -> list[DriftRecord]:
    """Return up to ``limit`` drift checks of ``suite``, newest first."""
    rows = tx.all(
        "SELECT check_id, name, status, reference, current, statistics, detail, checked_at"
        " FROM drift_checks WHERE suite = ? ORDER BY checked_at DESC, check_id DESC LIMIT ?",
        (suite, limit),
    )
    return [
        DriftRecord(
            suite=suite,
            name=str(name),
            status=str(status),
            reference=str(reference),
            current=str(current),
            statistics=dict(tx.dialect.read_json(statistics)),
            detail=dict(tx.dialect.read_json(detail)),
            checked_at=tx.dialect.read_timestamp(checked_at),
            check_id=int(check_id),
        )
        for check_id, name, status, reference, current, statistics, detail, checked_at in rows
    ]
