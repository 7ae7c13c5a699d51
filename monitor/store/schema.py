"""The store's schema as an ordered list of migrations, applied when a store opens.

``schema_version`` holds one row per applied step. Opening applies the steps the database
lacks in order, each in its own transaction, and refuses a database whose version is newer
than the last step here. Steps are never edited once released: a change to the schema is a
new step at the end of :data:`MIGRATIONS`. A step may convert data in place (``convert``,
run in the step's transaction after its statements) and ask for the database to be compacted
once it is applied (``compacts``: SQLite rewrites the file, so the space it freed is returned).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from monitor.errors import StoreSchemaError
from monitor.store.runs import convert_run_queries
from monitor.store.sql import Database, Transaction


@dataclass(frozen=True, slots=True)
class Migration:
    """One schema step: its version, what it does, its statements (see ``Dialect.ddl``), an
    optional conversion of existing rows, and whether the database is compacted after it."""

    version: int
    description: str
    statements: tuple[str, ...]
    convert: Callable[[Transaction], None] | None = None
    compacts: bool = False


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
    Migration(
        5,
        "per-query outcomes as compressed columns, one row per run and field; retention",
        (
            # One row per run and field (see monitor.store.columnar): a 100,000-query run is
            # a few dozen rows, not 100,000, and reads back without parsing JSON per query.
            """CREATE TABLE run_blobs (
                run_id {bigint} NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
                field TEXT NOT NULL,
                codec TEXT NOT NULL,
                data {blob} NOT NULL,
                PRIMARY KEY (run_id, field)
            )""",
            # Kept on the run, so a run whose detail retention dropped still counts its queries.
            "ALTER TABLE runs ADD COLUMN query_count INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE runs ADD COLUMN per_query_pruned_at {ts}",
        ),
        convert=convert_run_queries,
        compacts=True,
    ),
    Migration(
        6,
        "sharded run attempts and their parts",
        (
            # One row per attempt of a sharded run: the shards agree on it by its name, and
            # the row is the lock the shard that completes (or fails) the attempt takes.
            """CREATE TABLE shard_attempts (
                suite TEXT NOT NULL,
                attempt TEXT NOT NULL,
                shard_count INTEGER NOT NULL,
                config_hash TEXT NOT NULL,
                evalset_fingerprint TEXT NOT NULL,
                status TEXT NOT NULL CHECK (status IN ('open', 'finalised', 'failed')),
                opened_at {ts} NOT NULL,
                deadline_at {ts} NOT NULL,
                closed_at {ts},
                run_id {bigint} REFERENCES runs (run_id) ON DELETE SET NULL,
                error TEXT,
                PRIMARY KEY (suite, attempt)
            )""",
            "CREATE INDEX shard_attempts_open ON shard_attempts (suite, status)",
            # A part holds one shard's outcomes as one JSON document of parallel arrays.
            """CREATE TABLE shard_parts (
                suite TEXT NOT NULL,
                attempt TEXT NOT NULL,
                shard_index INTEGER NOT NULL,
                status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
                outcomes {json} NOT NULL,
                error TEXT,
                saved_at {ts} NOT NULL,
                PRIMARY KEY (suite, attempt, shard_index),
                FOREIGN KEY (suite, attempt) REFERENCES shard_attempts (suite, attempt)
                    ON DELETE CASCADE
            )""",
        ),
    ),
    Migration(
        7,
        "the corpus fingerprint each on_change suite last saw",
        (
            # One row per suite, replaced as the corpus changes: the daemon compares its
            # first poll with it, so a change made while it was down is noticed.
            """CREATE TABLE corpus_fingerprints (
                suite TEXT PRIMARY KEY,
                fingerprint TEXT NOT NULL,
                detail {json} NOT NULL,
                seen_at {ts} NOT NULL
            )""",
        ),
    ),
    Migration(
        8,
        "the query drift checks of each suite",
        (
            # One row per check: its verdict, the windows compared and each statistic, so
            # the latest figures can be exported and a history charted.
            """CREATE TABLE drift_checks (
                check_id {id},
                suite TEXT NOT NULL,
                name TEXT NOT NULL,
                status TEXT NOT NULL CHECK (status IN ('ok', 'drift', 'no data')),
                reference TEXT NOT NULL,
                current TEXT NOT NULL,
                statistics {json} NOT NULL,
                detail {json} NOT NULL,
                checked_at {ts} NOT NULL
            )""",
            "CREATE INDEX drift_checks_by_suite ON drift_checks (suite, name, checked_at)",
        ),
    ),
    Migration(
        9,
        "online suites' measured windows and pinned baseline windows",
        (
            """CREATE TABLE online_windows (
                window_id {id},
                suite TEXT NOT NULL,
                start_at {ts} NOT NULL,
                end_at {ts} NOT NULL,
                status TEXT NOT NULL CHECK (status IN ('ok', 'no_data')),
                searches {bigint} NOT NULL,
                figures {json} NOT NULL,
                saved_at {ts} NOT NULL
            )""",
            "CREATE INDEX online_windows_by_suite ON online_windows (suite, saved_at)",
            """CREATE TABLE online_pins (
                suite TEXT PRIMARY KEY,
                window_id {bigint} NOT NULL REFERENCES online_windows (window_id),
                pinned_at {ts} NOT NULL
            )""",
        ),
    ),
    Migration(
        10,
        "each run's comparison with its baseline, as the job computed it",
        (
            # One row per run (see monitor.store.comparisons): the key says what the
            # comparison was computed from, so a reader uses it only when it would compute
            # the same; runs saved before this step have none and are compared as before.
            """CREATE TABLE run_comparisons (
                run_id {bigint} PRIMARY KEY REFERENCES runs (run_id) ON DELETE CASCADE,
                baseline_run_id {bigint},
                judgments_version TEXT,
                basis TEXT NOT NULL,
                codec TEXT NOT NULL,
                data {blob} NOT NULL,
                saved_at {ts} NOT NULL
            )""",
        ),
    ),
)

#: The schema version this code writes.
SCHEMA_VERSION = MIGRATIONS[-1].version

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
    return the version it is at.

    Versions ascend but need not be contiguous: each step the database has not recorded is
    applied, in order, so a step numbered below one already applied is applied too.
    """
    if migrations is None:
        migrations = MIGRATIONS
    for before, step in itertools.pairwise(migrations):
        if step.version <= before.version:
            raise ValueError(f"migration {step.version} is out of order (after {before.version})")
    last = migrations[-1].version if migrations else 0
    with db.transaction(write=True, doing="creating the schema_version table") as tx:
        for statement in db.dialect.create_lock:
            tx.execute(statement)
        tx.execute(db.dialect.ddl(_VERSION_TABLE))
        applied = {int(row[0]) for row in tx.all("SELECT version FROM schema_version")}
    current = max(applied, default=0)
    if current > last:
        raise StoreSchemaError(db.location, current, last)
    compact = False
    for step in migrations:
        if step.version in applied:
            continue
        doing = f"migrating to schema version {step.version}"
        if step.version in applied:
            continue
        with db.transaction(write=True, doing=doing) as tx:
            for statement in db.dialect.migration_lock:
                tx.execute(statement)
            # Another process may have applied this step while we waited for the lock.
            if tx.scalar("SELECT version FROM schema_version WHERE version = ?", (step.version,)):
                continue
            for statement in step.statements:
                tx.execute(db.dialect.ddl(statement))
            if step.convert is not None:
                step.convert(tx)
            tx.execute(
                "INSERT INTO schema_version (version, description, applied_at) VALUES (?, ?, ?)",
                (step.version, step.description, db.dialect.timestamp(now())),
            )
        compact = compact or step.compacts
    if compact and db.dialect.compact:
        db.execute_outside(db.dialect.compact, "compacting the database after migrating")
    return max(current, last)
