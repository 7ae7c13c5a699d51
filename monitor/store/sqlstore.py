"""The :class:`Store` over a SQL database: SQLite or PostgreSQL, one set of queries."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, suppress
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, cast

from monitor.errors import (
    BaselineError,
    LayersChangedError,
    StoreError,
    StoreLookupError,
    UsageError,
)
from monitor.logs import get_logger
from monitor.records import MetaValue
from monitor.store import (
    columnar,
    comparisons,
    drift,
    fingerprints,
    frames,
    kv,
    layers,
    locks,
    online,
    retention,
    runs,
)
from monitor.store.base import DEFAULT_LOCK_TTL_SECONDS
from monitor.store.columnar import QueryArrays
from monitor.store.comparisons import StoredComparison
from monitor.store.drift import DriftRecord
from monitor.store.fingerprints import KnownCorpus
from monitor.store.layers import JudgmentLayer, RunLabels
from monitor.store.online import StoredWindow
from monitor.store.records import (
    Baseline,
    ColumnQueries,
    LockHolder,
    OutboxMessage,
    QueryRecord,
    RunRecord,
    RunSummary,
)
from monitor.store.schema import migrate, schema_version
from monitor.store.sql import Database, Transaction

if TYPE_CHECKING:
    import pandas as pd

log = get_logger(__name__)

#: Pages handed back per step by :meth:`SqlStore.reclaim_space` (4 MiB of 4 KiB pages).
RECLAIM_STEP_PAGES = 1024


def _known_after_save(run_id: int, run: RunRecord) -> tuple[int, ColumnQueries] | None:
    """Return the queries a read of the run just saved may return instead of reading them
    again from its columns, or None when they would not read back as they are."""
    if not run.queries or not columnar.columns_read_back_as_given(run.columns):
        return None
    return run_id, cast("ColumnQueries", run.queries)


def utcnow() -> datetime:
    """Return the current time in UTC."""
    return datetime.now(timezone.utc)


class SqlStore:
    """A :class:`~monitor.store.base.Store` kept in a SQL database.

    Opening migrates the schema to the current version. ``clock`` gives the times the store
    records itself (when a run was saved, a baseline pinned, a lock taken).
    """

    def __init__(self, db: Database, *, clock: Callable[[], datetime] = utcnow) -> None:
        self._db = db
        self._clock = clock
        self.location = db.location
        self._advisory: set[str] = set()
        #: The run locks this store holds, by suite: the runs saved under one are fenced.
        self._held: dict[str, LockHolder] = {}
        # The last run this store saved, by id, with its queries: the job reads that run
        # back at once (to compare it, to report it) and need not decode its columns again.
        self._saved: tuple[int, ColumnQueries] | None = None
        migrate(db, clock)

    def schema_version(self) -> int:
        """Return the version of the database's schema."""
        return schema_version(self._db)

    @property
    def database(self) -> Database:
        """Return the connection, for a stage that keeps tables of its own (sharded runs)."""
        return self._db

    @property
    def dialect(self) -> str:
        """Return the name of the database's SQL dialect (``sqlite``, ``postgresql``)."""
        return self._db.dialect.name

    # Runs ---------------------------------------------------------------------------------

    def save_run(self, run: RunRecord) -> int:
        """Save ``run`` in one transaction; return the id it was given."""
        self._saved = None
        held = self._held.get(run.suite)
        with self._write(f"saving a run of {run.suite!r}") as tx:
            if held is not None:  # fenced: a run whose lock was taken over is not stored
                locks.check_held(tx, held)
            run_id = runs.insert_run(tx, run, self._clock())
        self._saved = _known_after_save(run_id, run)
        return run_id

    def saved_by_stage(self, run_id: int, run: RunRecord) -> None:
        """Note that ``run`` was saved as ``run_id`` in a stage's own transaction (a sharded
        run's finisher, :mod:`monitor.store.shards`), once it committed: reading it back is
        then as cheap as after :meth:`save_run`."""
        self._saved = _known_after_save(run_id, run)

    def _known(self, run_id: int) -> ColumnQueries | None:
        """Return the queries this store saved run ``run_id`` with, when it was the last."""
        saved = self._saved
        return saved[1] if saved is not None and saved[0] == run_id else None

    def get_run(self, run_id: int) -> RunRecord:
        """Return the run with this id; raise StoreLookupError when there is none."""
        with self._read("reading a run") as tx:
            run = runs.load_run(tx, run_id, self._known(run_id))
        if run is None:
            raise StoreLookupError(self.location, "run", run_id)
        return run

    def latest_run(self, suite: str, status: str | None = "ok") -> RunRecord | None:
        """Return the suite's most recently started run of ``status`` (any if None)."""
        with self._read("reading the latest run") as tx:
            run_id = runs.latest_run_id(tx, suite, status)
            return None if run_id is None else runs.load_run(tx, run_id, self._known(run_id))

    def list_runs(self, suite: str | None = None, limit: int = 50) -> list[RunSummary]:
        """Return up to ``limit`` runs, newest first."""
        if limit < 0:
            raise UsageError(f"limit must be 0 or more, not {limit}")
        with self._read("listing runs") as tx:
            return runs.list_runs(tx, suite, limit)

    def history(self, suite: str, metrics: Iterable[str] | None = None) -> pd.DataFrame:
        """Return one row per run of the suite, oldest first (see ``Store.history``)."""
        with self._read("reading the history") as tx:
            rows = runs.history_rows(tx, suite)
        return frames.history_frame(rows, self._db.dialect, metrics)

    def per_query_frame(self, run_id: int) -> pd.DataFrame:
        """Return one row per query of the run (see ``Store.per_query_frame``)."""
        return frames.per_query_frame(self.get_run(run_id))

    def per_query_values(self, run_id: int) -> QueryArrays:
        """Return the run's query ids and per-query metric values as arrays (see
        ``Store.per_query_values``)."""
        with self._read("reading per-query values") as tx:
            if tx.scalar("SELECT run_id FROM runs WHERE run_id = ?", (run_id,)) is None:
                raise StoreLookupError(self.location, "run", run_id)
            return runs.load_arrays(tx, run_id)

    def query_record(self, run_id: int, query_id: str) -> QueryRecord | None:
        """Return one query of the run (see ``Store.query_record``)."""
        with self._read("reading a query of a run") as tx:
            if tx.scalar("SELECT run_id FROM runs WHERE run_id = ?", (run_id,)) is None:
                raise StoreLookupError(self.location, "run", run_id)
            return runs.load_query(tx, run_id, query_id)

    # Retention ----------------------------------------------------------------------------

    def prune(
        self, suite: str, policy: retention.Retention, *, dry_run: bool = False
    ) -> retention.PruneResult:
        """Drop the per-query detail of the suite's runs past ``policy`` (see ``Store.prune``)."""
        now = self._clock()
        if dry_run:
            with self._read(f"listing the runs of {suite!r} to prune") as tx:
                found = retention.prunable(tx, suite, policy, now)
            return retention.PruneResult(suite, policy, tuple(found), dry_run=True)
        with self._write(f"pruning the per-query detail of {suite!r}") as tx:
            found = retention.prunable(tx, suite, policy, now)
            retention.drop_detail(tx, found, now)
        returned: int | None = None  # a backend without reclaim steps measures nothing here
        if self._db.dialect.reclaim_step:
            returned = self.reclaim_space() if found else 0
        return retention.PruneResult(suite, policy, tuple(found), bytes_returned=returned)

    def reclaim_space(self, step_pages: int = RECLAIM_STEP_PAGES) -> int:
        """Hand free pages back to the operating system in steps of ``step_pages``, each its
        own short write transaction so a running suite waits at most one step; return the
        bytes returned (0 where the database does this itself)."""
        steps = self._db.dialect.reclaim_step
        if not steps:
            return 0
        # Only SQLite has reclaim steps, so the pragmas below are SQLite's.
        with self._read("reading the free space") as tx:
            page_size = int(tx.scalar("PRAGMA page_size"))
            before = int(tx.scalar("PRAGMA freelist_count"))
        left = before
        while left > 0:
            with self._write("returning free space") as tx:
                for statement in steps:
                    tx.all(statement.format(pages=step_pages))
                now_free = int(tx.scalar("PRAGMA freelist_count"))
            if now_free >= left:  # auto_vacuum is off: nothing to hand back step by step
                break
            left = now_free
        self._db.execute_outside(
            ("PRAGMA wal_checkpoint(PASSIVE)",), "checkpointing after returning free space"
        )
        return (before - left) * page_size

    # Baselines ----------------------------------------------------------------------------

    def set_baseline(self, suite: str, run_id: int) -> Baseline:
        """Pin an ok run of the suite that measured something as its baseline."""
        with self._write(f"pinning the baseline of {suite!r}") as tx:
            row = tx.one("SELECT suite, status FROM runs WHERE run_id = ?", (run_id,))
            if row is None:
                raise BaselineError(self.location, suite, run_id, "there is no such run")
            if row[0] != suite:
                raise BaselineError(self.location, suite, run_id, f"it is a run of {row[0]!r}")
            if row[1] != "ok":
                raise BaselineError(self.location, suite, run_id, f"the run is {row[1]}")
            measured = tx.scalar(
                "SELECT count(*) FROM run_figures"
                " WHERE run_id = ? AND family = 'mean' AND value IS NOT NULL",
                (run_id,),
            )
            if not measured:
                reason = "it measured nothing (no answered query has a metric value)"
                raise BaselineError(self.location, suite, run_id, reason)
            baseline = Baseline(suite=suite, run_id=run_id, pinned_at=self._clock())
            tx.execute(
                "INSERT INTO baselines (suite, run_id, pinned_at) VALUES (?, ?, ?)"
                " ON CONFLICT (suite)"
                " DO UPDATE SET run_id = excluded.run_id, pinned_at = excluded.pinned_at",
                (suite, run_id, tx.dialect.timestamp(baseline.pinned_at)),
            )
        return baseline

    def get_baseline(self, suite: str) -> RunRecord | None:
        """Return the run pinned as the suite's baseline, or None."""
        with self._read("reading a baseline") as tx:
            run_id = tx.scalar("SELECT run_id FROM baselines WHERE suite = ?", (suite,))
            return (
                None if run_id is None else runs.load_run(tx, int(run_id), self._known(int(run_id)))
            )

    def list_baselines(self) -> list[Baseline]:
        """Return every suite's baseline, by suite name."""
        with self._read("listing baselines") as tx:
            rows = tx.all("SELECT suite, run_id, pinned_at FROM baselines ORDER BY suite")
            return [
                Baseline(suite, int(run_id), tx.dialect.read_timestamp(pinned))
                for suite, run_id, pinned in rows
            ]

    # Judgment layers ----------------------------------------------------------------------

    def add_layer(self, layer: JudgmentLayer, *, after: int | None = None) -> int:
        """Save a judgment layer; return the id it was given (the record's own is ignored).

        With ``after`` (a layer id, 0 for none), save it only if the suite's newest layer
        is still that one, and raise LayersChangedError otherwise: a compare-and-set, so
        that what a caller checked on the layers it read still holds when its layer lands.
        """
        with self._write(f"adding a judgment layer to {layer.suite!r}") as tx:
            if after is not None:
                newest = layers.newest_layer_id(tx, layer.suite)
                if newest != after:
                    raise LayersChangedError(self.location, layer.suite, after, newest)
            return layers.insert_layer(tx, layer)

    def layers(self, suite: str) -> list[JudgmentLayer]:
        """Return the suite's judgment layers in the order they were added."""
        with self._read("reading judgment layers") as tx:
            return layers.load_layers(tx, suite)

    def set_run_labels(self, run_id: int, labels: RunLabels) -> None:
        """Record which queries and judgments run ``run_id`` was scored with."""
        with self._write("recording a run's labels") as tx:
            if tx.scalar("SELECT run_id FROM runs WHERE run_id = ?", (run_id,)) is None:
                raise StoreLookupError(self.location, "run", run_id)
            layers.put_run_labels(tx, run_id, labels)

    def run_labels(self, run_id: int) -> RunLabels | None:
        """Return the labels run ``run_id`` was scored with; None for a run saved without."""
        with self._read("reading a run's labels") as tx:
            return layers.get_run_labels(tx, run_id)

    def layer_ids(self, suite: str) -> tuple[int, ...]:
        """Return the ids of the suite's judgment layers, oldest first."""
        with self._read("reading judgment layer ids") as tx:
            return layers.layer_ids(tx, suite)

    # Comparisons --------------------------------------------------------------------------

    def save_comparison(self, stored: StoredComparison) -> None:
        """Keep ``stored`` as its run's comparison, in one transaction."""
        run_id = stored.key.run_id
        with self._write(f"storing the comparison of run {run_id}") as tx:
            if tx.scalar("SELECT run_id FROM runs WHERE run_id = ?", (run_id,)) is None:
                raise StoreLookupError(self.location, "run", run_id)
            comparisons.put_comparison(tx, stored, self._clock())

    def stored_comparison(self, run_id: int) -> StoredComparison | None:
        """Return the comparison kept for run ``run_id``, or None."""
        with self._read("reading a stored comparison") as tx:
            return comparisons.get_comparison(tx, run_id)

    # State and outbox ---------------------------------------------------------------------

    def get_state(self, namespace: str, key: str) -> dict[str, Any] | None:
        """Return the document under ``namespace``/``key``, or None."""
        with self._read("reading state") as tx:
            return kv.get_state(tx, namespace, key)

    def put_state(self, namespace: str, key: str, value: Mapping[str, object]) -> None:
        """Store a JSON document under ``namespace``/``key``."""
        with self._write("writing state") as tx:
            kv.put_state(tx, namespace, key, value, self._clock())

    def delete_state(self, namespace: str, key: str) -> bool:
        """Delete the document under ``namespace``/``key``; return whether there was one."""
        with self._write("deleting state") as tx:
            return kv.delete_state(tx, namespace, key)

    def known_corpus(self, suite: str) -> KnownCorpus | None:
        """Return the corpus fingerprint last stored for ``suite``, or None."""
        with self._read("reading a corpus fingerprint") as tx:
            return fingerprints.get_corpus(tx, suite)

    def set_known_corpus(
        self, suite: str, fingerprint: str, detail: Mapping[str, MetaValue]
    ) -> None:
        """Store ``fingerprint`` (the digest of ``detail``) as the suite's corpus."""
        with self._write("storing a corpus fingerprint") as tx:
            fingerprints.put_corpus(tx, suite, fingerprint, detail, self._clock())

    def add_drift_check(self, record: DriftRecord) -> int:
        """Store a query drift check of a suite; return its id."""
        with self._write("storing a drift check") as tx:
            return drift.insert_drift(tx, record, self._clock())

    def drift_checks(self, suite: str, limit: int = 50) -> list[DriftRecord]:
        """Return up to ``limit`` drift checks of ``suite``, newest first."""
        with self._read("reading drift checks") as tx:
            return drift.list_drift(tx, suite, limit)

    # Online windows ------------------------------------------------------------------------

    def save_online_window(self, window: StoredWindow) -> int:
        """Store a measured window of an online suite; return its id."""
        with self._write("storing an online window") as tx:
            return online.save_window(tx, window, self._clock())

    def online_window(self, window_id: int) -> StoredWindow:
        """Return the stored online window ``window_id``."""
        with self._read("reading an online window") as tx:
            return online.get_window(tx, window_id)

    def latest_online_window(self, suite: str, status: str | None = "ok") -> StoredWindow | None:
        """Return the suite's latest stored window (of ``status`` unless None), or None."""
        with self._read("reading an online window") as tx:
            return online.latest_window(tx, suite, status)

    def pin_online_window(self, suite: str, window_id: int) -> None:
        """Pin the stored window ``window_id`` as the online suite's baseline."""
        with self._write("pinning an online window") as tx:
            online.pin_window(tx, suite, window_id, self._clock())

    def pinned_online_window(self, suite: str) -> StoredWindow | None:
        """Return the window pinned for the online suite, or None."""
        with self._read("reading a pinned online window") as tx:
            return online.pinned_window(tx, suite)

    def enqueue(self, kind: str, key: str, payload: Mapping[str, object]) -> int:
        """Put a notification in the outbox (replacing an undelivered twin); return its id."""
        with self._write("enqueueing a notification") as tx:
            return kv.enqueue(tx, kind, key, payload, self._clock())

    def pending(self, kind: str | None = None) -> list[OutboxMessage]:
        """Return the undelivered messages, oldest first."""
        with self._read("reading the outbox") as tx:
            return kv.pending(tx, kind)

    def mark_delivered(self, message_id: int) -> None:
        """Record that the message was delivered."""
        with self._write("marking a notification delivered") as tx:
            found = kv.mark_delivered(tx, message_id, self._clock())
        if not found:
            raise StoreLookupError(self.location, "outbox message", message_id)

    def abandon(self, message_id: int, reason: str) -> None:
        """Give up on a waiting message: it leaves the outbox, with ``reason`` kept."""
        with self._write("giving up a notification") as tx:
            found = kv.abandon(tx, message_id, reason, self._clock())
        if not found:
            raise StoreLookupError(self.location, "outbox message", message_id)

    def attempt_failed(self, message_id: int, error: str) -> None:
        """Record a failed delivery of the message."""
        with self._write("recording a failed delivery") as tx:
            found = kv.attempt_failed(tx, message_id, error, self._clock())
        if not found:
            raise StoreLookupError(self.location, "outbox message", message_id)

    # Locks --------------------------------------------------------------------------------

    @contextmanager
    def lock(
        self,
        suite: str,
        ttl_seconds: float = DEFAULT_LOCK_TTL_SECONDS,
        renew_seconds: float | None = None,
    ) -> Iterator[LockHolder]:
        """Hold the suite's run lock for the block, renewing its lease (see ``Store.lock``)."""
        _check_seconds("ttl_seconds", ttl_seconds)
        every = ttl_seconds / 4 if renew_seconds is None else renew_seconds
        _check_seconds("renew_seconds", every)
        # A second lock of the same suite on this connection must not count the session's
        # own advisory lock as a sign that the holder is gone.
        advisory = False
        try:
            with self._write(f"locking {suite!r}") as tx:
                advisory = suite not in self._advisory and locks.try_advisory(tx, suite)
                holder = locks.acquire(tx, suite, ttl_seconds, self._clock(), session=advisory)
        except BaseException:
            if advisory:
                self._release_advisory(suite)
            raise
        if advisory:
            self._advisory.add(suite)
        renewer = _LeaseRenewer(self._db, holder, ttl_seconds, every, self._clock)
        renewer.start()
        failed = False
        outer = self._held.get(suite)
        self._held[suite] = holder
        try:
            yield holder
        except BaseException:
            failed = True
            raise
        finally:
            if outer is None:
                self._held.pop(suite, None)
            else:
                self._held[suite] = outer
            renewer.stop()
            try:
                with self._write(f"unlocking {suite!r}") as tx:
                    locks.release(tx, holder)
            except StoreError as error:
                if not failed:
                    raise
                # The run's own error is the one to report; the lease expires by itself.
                log.warning("lock_release_failed", suite=suite, error=str(error))
            finally:
                if advisory:
                    self._advisory.discard(suite)
                    self._release_advisory(suite)

    def _release_advisory(self, suite: str) -> None:
        # The server releases it anyway when the connection ends; a failure here is not
        # worth more than the error already on its way.
        with suppress(StoreError), self._write(f"releasing the advisory lock of {suite!r}") as tx:
            locks.release_advisory(tx, suite)

    # Lifecycle ----------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection, and let go of the run saved last."""
        self._saved = None
        with self._db.errors("closing"):
            self._db.close()

    def __enter__(self) -> SqlStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SqlStore({self.location!r})"

    def _write(self, doing: str) -> AbstractContextManager[Transaction]:
        return self._db.transaction(write=True, doing=doing)

    def _read(self, doing: str) -> AbstractContextManager[Transaction]:
        return self._db.transaction(write=False, doing=doing)


def _check_seconds(name: str, value: float) -> None:
    if not (value > 0 and math.isfinite(value)):
        raise UsageError(f"{name} must be a positive number of seconds, not {value!r}")


class _LeaseRenewer:
    """Renew a run lock's lease from a daemon thread every ``every`` seconds until stopped.

    A renewal that fails (the store is unreachable for a moment) is logged and tried again
    at the next tick; one that finds the lock taken over (the lease ran out first) is logged
    and ends the renewals.
    """

    def __init__(
        self,
        db: Database,
        holder: LockHolder,
        ttl_seconds: float,
        every: float,
        clock: Callable[[], datetime],
    ) -> None:
        self._db = db
        self._holder = holder
        self._ttl = ttl_seconds
        self._every = every
        self._clock = clock
        self._stopped = threading.Event()
        self._thread = threading.Thread(
            target=self._loop, name=f"lock-lease-{holder.suite}", daemon=True
        )

    def start(self) -> None:
        """Start renewing."""
        self._thread.start()

    def stop(self) -> None:
        """Stop renewing and wait for a renewal in progress to end."""
        self._stopped.set()
        self._thread.join()

    def _loop(self) -> None:
        suite = self._holder.suite
        while not self._stopped.wait(self._every):
            try:
                with self._db.transaction(
                    write=True, doing=f"renewing the lock of {suite!r}"
                ) as tx:
                    held = locks.renew(tx, self._holder, self._ttl, self._clock())
            except StoreError as error:
                log.warning("lock_renewal_failed", suite=suite, error=str(error))
                continue
            if not held:
                log.error(
                    "lock_lost",
                    suite=suite,
                    reason="the lease ran out and another process took the lock over",
                )
                return
