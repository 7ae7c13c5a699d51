"""The store's schema as an ordered list of migrations, applied when a store opens.

``schema_version`` holds one row per applied step. Opening applies the missing steps in
order, each in its own transaction, and refuses a database whose version is newer than the
last step here. Steps are never edited once released: a change to the schema is a new step
at the end of :data:`MIGRATIONS`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from monitor.errors import StoreSchemaError
from monitor.store.sql import Database


@dataclass(frozen=True, slots=True)
class Migration:
    """One schema step: its version, what it does, and its statements (see ``Dialect.ddl``)."""

    version: int
    description: str
    statements: tuple[str, ...]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "runs with their figures and per-query records; baselines",
        (
            """CREATE TABLE runs (
                run_id {id},
                suite TEXT NOT NULL,
                pipeline TEXT NOT NULL,
                status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
                started_at {ts} NOT NULL,
                finished_at {ts} NOT NULL,
                evalset_fingerprint TEXT NOT NULL,
                config_hash TEXT NOT NULL,
                stats {json} NOT NULL,
                error TEXT,
                saved_at {ts} NOT NULL
            )""",
            "CREATE INDEX runs_by_suite ON runs (suite, started_at)",
            # Means, latency and rates, one row each, so SQL dashboards can read them.
            """CREATE TABLE run_figures (
                run_id {bigint} NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
                family TEXT NOT NULL CHECK (family IN ('mean', 'latency', 'rate')),
                name TEXT NOT NULL,
                position INTEGER NOT NULL,
                value {float},
                PRIMARY KEY (run_id, family, name)
            )""",
            """CREATE TABLE run_queries (
                run_id {bigint} NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
                position INTEGER NOT NULL,
                query_id TEXT NOT NULL,
                metric_values {json} NOT NULL,
                retrieved_ids {json} NOT NULL,
                relevant_ids {json} NOT NULL,
                latency_seconds {float},
                error_type TEXT,
                error_message TEXT,
                PRIMARY KEY (run_id, query_id)
            )""",
            """CREATE TABLE baselines (
                suite TEXT PRIMARY KEY,
                run_id {bigint} NOT NULL REFERENCES runs (run_id),
                pinned_at {ts} NOT NULL
            )""",
        ),
    ),
    Migration(
        2,
        "key/value state, notification outbox, run locks",
        (
            """CREATE TABLE state (
                namespace TEXT NOT NULL,
                item_key TEXT NOT NULL,
                value {json} NOT NULL,
                updated_at {ts} NOT NULL,
                PRIMARY KEY (namespace, item_key)
            )""",
            """CREATE TABLE outbox (
                id {id},
                kind TEXT NOT NULL,
                item_key TEXT NOT NULL,
                payload {json} NOT NULL,
                created_at {ts} NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                last_error TEXT,
                last_attempt_at {ts},
                delivered_at {ts}
            )""",
            # At most one undelivered message per kind and key: enqueueing again replaces it.
            """CREATE UNIQUE INDEX outbox_undelivered ON outbox (kind, item_key)
                WHERE delivered_at IS NULL""",
            """CREATE TABLE locks (
                suite TEXT PRIMARY KEY,
                host TEXT NOT NULL,
                pid INTEGER NOT NULL,
                token TEXT NOT NULL,
                acquired_at {ts} NOT NULL,
                expires_at {ts} NOT NULL
            )""",
        ),
    ),
    Migration(
        3,
        "outbox messages given up on",
        # A given-up message counts as done (delivered_at set, so it leaves the unique index
        # of waiting messages) and says why it was given up.
        ("ALTER TABLE outbox ADD COLUMN abandoned_reason TEXT",),
    ),
    Migration(
        4,
        "judgment layers with provenance; the labels each run was measured with",
        (
            # A layer is added whole and never edited: its grades live beside its provenance.
            """CREATE TABLE judgment_layers (
                layer_id {id},
                suite TEXT NOT NULL,
                source TEXT NOT NULL,
                who TEXT NOT NULL,
                kind TEXT NOT NULL CHECK (kind IN ('human', 'judge')),
                override INTEGER NOT NULL,
                created_at {ts} NOT NULL,
                grades {json} NOT NULL
            )""",
            "CREATE INDEX judgment_layers_by_suite ON judgment_layers (suite, layer_id)",
            # Which queries and which judgments a run was scored with; runs saved before this
            # step have no row and keep comparing by their eval-set fingerprint alone.
            """CREATE TABLE run_labels (
                run_id {bigint} PRIMARY KEY REFERENCES runs (run_id) ON DELETE CASCADE,
                queries_fingerprint TEXT NOT NULL,
                judgments_version TEXT NOT NULL
            )""",
        ),
    ),
)

#: The schema version this code writes.
SCHEMA_VERSION = len(MIGRATIONS)

_VERSION_TABLE = """CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER PRIMARY KEY,
    description TEXT NOT NULL,
    applied_at {ts} NOT NULL
)"""


def schema_version(db: Database) -> int:
    """Return the database's schema version (0 for a database the store never opened)."""
    with db.transaction(write=False, doing="reading the schema version") as tx:
        return int(tx.scalar("SELECT MAX(version) FROM schema_version") or 0)


def migrate(
    db: Database,
    now: Callable[[], datetime],
    migrations: Sequence[Migration] | None = None,
) -> int:
    """Bring the database up to the last of ``migrations`` (default :data:`MIGRATIONS`);
    return the version it is at."""
    if migrations is None:
        migrations = MIGRATIONS
    for number, step in enumerate(migrations, start=1):
        if step.version != number:
            raise ValueError(f"migration {step.version} is out of order (expected {number})")
    with db.transaction(write=True, doing="creating the schema_version table") as tx:
        tx.execute(db.dialect.ddl(_VERSION_TABLE))
    current = schema_version(db)
    if current > len(migrations):
        raise StoreSchemaError(db.location, current, len(migrations))
    for step in migrations[current:]:
        doing = f"migrating to schema version {step.version}"
        with db.transaction(write=True, doing=doing) as tx:
            for statement in db.dialect.migration_lock:
                tx.execute(statement)
            # Another process may have applied this step while we waited for the lock.
            if int(tx.scalar("SELECT MAX(version) FROM schema_version") or 0) >= step.version:
                continue
            for statement in step.statements:
                tx.execute(db.dialect.ddl(statement))
            tx.execute(
                "INSERT INTO schema_version (version, description, applied_at) VALUES (?, ?, ?)",
                (step.version, step.description, db.dialect.timestamp(now())),
            )
    return max(current, len(migrations))
