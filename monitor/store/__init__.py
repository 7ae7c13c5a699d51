"""Keep every run, the baselines and the stages' state in a database.

``open_store(url_or_path)`` opens SQLite (a path or ``sqlite:////abs/path.db``, the embedded
default) or PostgreSQL (``postgresql://user@host:port/db``, with the ``postgres`` extra) and
brings its schema up to date. Both speak one set of SQL queries; what differs between them
is in :mod:`monitor.store.dialect`.
"""

from __future__ import annotations

from monitor.store.backends import open_store
from monitor.store.base import DEFAULT_LOCK_TTL_SECONDS, Store
from monitor.store.drift import DriftRecord
from monitor.store.fingerprints import KnownCorpus
from monitor.store.layers import JudgmentLayer, LayerKind, RunLabels
from monitor.store.records import (
    Baseline,
    LockHolder,
    OutboxMessage,
    QueryColumns,
    QueryRecord,
    RunFigures,
    RunRecord,
    RunStatus,
    RunSummary,
)
from monitor.store.schema import SCHEMA_VERSION
from monitor.store.sqlstore import SqlStore

__all__ = [
    "DEFAULT_LOCK_TTL_SECONDS",
    "SCHEMA_VERSION",
    "Baseline",
    "DriftRecord",
    "JudgmentLayer",
    "KnownCorpus",
    "LayerKind",
    "LockHolder",
    "OutboxMessage",
    "QueryColumns",
    "QueryRecord",
    "RunFigures",
    "RunLabels",
    "RunRecord",
    "RunStatus",
    "RunSummary",
    "SqlStore",
    "Store",
    "open_store",
]
