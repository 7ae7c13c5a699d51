"""The attempts and parts of sharded runs, as a SQL store keeps them.

Each shard of a sharded run (:mod:`monitor.job.shards`) stores its outcomes as a *part* of
one *attempt*: rows of the ``shard_attempts`` and ``shard_parts`` tables. The part is written
in one transaction that first locks the attempt's row (``SELECT ... FOR UPDATE`` on
PostgreSQL; SQLite's write lock is the whole database), so exactly one shard sees the attempt
complete and turns it, in the same transaction, into a run (:meth:`ShardStore.save_part`). A
failed part, or a part still missing once the attempt's deadline has passed, turns the
attempt into a failed run instead, once. A part never counts alone: it is no run until every
part is in.

A part's run is kept as one JSON document: its figures, its table and its per-query scores in
the run's one codec (:mod:`monitor.run.codec`), no row per query.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from monitor.errors import SearchBackendError, ShardMismatchError, StoreError, UsageError
from monitor.metrics.evaluation import EvaluationResult, QueryCounts
from monitor.metrics.spec import parse_metrics
from monitor.records import MetaValue
from monitor.run import codec
from monitor.runner.result import RunResult
from monitor.store.dialect import dump_json
from monitor.store.runs import insert_run
from monitor.store.sqlstore import SqlStore

if TYPE_CHECKING:
    from monitor.store import Store
    from monitor.store.records import RunRecord
    from monitor.store.sql import Database, Transaction


#: What saving a part did to its attempt.
PartResult = Literal["waiting", "finalised", "failed", "closed"]


@dataclass(frozen=True, slots=True)
class Part:
    """One shard's stored outcomes: the run of its slice and its scores (the per-query values
    the whole run joins), or the error that failed it."""

    index: int
    result: RunResult | None
    evaluation: EvaluationResult | None = None
    error: str | None = None

    def __post_init__(self) -> None:
        if (self.result is None) != (self.evaluation is None):
            raise UsageError(f"part {self.index}: a run of a slice is stored with its scores")


@dataclass(frozen=True, slots=True)
class Attempt:
    """One attempt of a sharded run as the store holds it."""

    suite: str
    attempt: str
    count: int
    config_hash: str
    evalset_fingerprint: str
    status: str
    opened_at: datetime
    deadline_at: datetime
    run_id: int | None = None
    error: str | None = None
    parts: tuple[int, ...] = field(default=())

    @property
    def missing(self) -> tuple[int, ...]:
        """Return the shard indices with no part stored yet."""
        return tuple(index for index in range(self.count) if index not in self.parts)


@dataclass(frozen=True, slots=True)
class Saved:
    """What saving a part did: the attempt after it, and the run it made (if any)."""

    result: PartResult
    attempt: Attempt
    run_id: int | None = None


#: Builds the run of a completed attempt from its parts, in shard order (inside the
#: transaction that stores the last part).
Finaliser = Callable[[Sequence[Part]], "RunRecord"]


#: Builds the failed run of an attempt from the reason it failed.
Failer = Callable[[str, datetime], "RunRecord"]


class ShardStore:
    """The attempts and parts of sharded runs, in a SQL store's database."""

    def __init__(self, store: Store) -> None:
        if not isinstance(store, SqlStore):
            raise UsageError(
                f"sharded runs need a SQL store (SQLite or PostgreSQL), not {store.location!r}"
            )
        self._db: Database = store.database
        self._store = store
        self.location = store.location

    def open(
        self,
        suite: str,
        attempt: str,
        count: int,
        *,
        config_hash: str,
        evalset_fingerprint: str,
        deadline_seconds: float,
        now: datetime,
    ) -> Attempt:
        """Return the attempt, opening it for ``count`` shards when this is its first shard.

        Raise ShardMismatchError when the attempt exists with another shard count, config or
        eval set: the shards of one attempt must run the same suite the same way.
        """
        with self._db.transaction(write=True, doing=f"opening attempt {attempt!r}") as tx:
            tx.execute(
                "INSERT INTO shard_attempts (suite, attempt, shard_count, config_hash,"
                " evalset_fingerprint, status, opened_at, deadline_at)"
                " VALUES (?, ?, ?, ?, ?, 'open', ?, ?) ON CONFLICT (suite, attempt) DO NOTHING",
                (
                    suite,
                    attempt,
                    count,
                    config_hash,
                    evalset_fingerprint,
                    tx.dialect.timestamp(now),
                    tx.dialect.timestamp(now + timedelta(seconds=deadline_seconds)),
                ),
            )
            found = _attempt(tx, suite, attempt, lock=False)
        if found is None:  # pragma: no cover - the insert above guarantees a row
            raise UsageError(f"attempt {attempt!r} of suite {suite!r} could not be opened")
        for what, have, want in (
            ("shard count", found.count, count),
            ("config hash", found.config_hash, config_hash),
            ("eval set fingerprint", found.evalset_fingerprint, evalset_fingerprint),
        ):
            if have != want:
                raise ShardMismatchError(
                    f"{self.location}: attempt {attempt!r} of suite {suite!r} has {what} "
                    f"{have}, this shard {want}: every shard of an attempt runs the same suite"
                )
        return found

    def get(self, suite: str, attempt: str) -> Attempt | None:
        """Return the attempt with its stored part indices, or None."""
        with self._db.transaction(write=False, doing=f"reading attempt {attempt!r}") as tx:
            return _attempt(tx, suite, attempt, lock=False)

    def save_part(
        self,
        suite: str,
        attempt: str,
        part: Part,
        *,
        now: datetime,
        finalise: Finaliser,
        fail: Failer,
    ) -> Saved:
        """Store ``part`` and, in the same transaction, close the attempt if this decides it.

        Under the attempt's row lock: the part is stored (a second part of the same shard,
        a retried pod, replaces the first while the attempt is open). Then, if the attempt is
        still open: a failed part, or a deadline passed, fails it (``fail`` builds the
        failed run); the last part finalises it (``finalise`` builds the run from every
        part, or raises a SearchBackendError when they measured too little, which fails it).
        Either run is inserted in this transaction, so it happens exactly once.
        """
        doing = f"storing part {part.index} of attempt {attempt!r}"
        # A part is read only by the shard that completes the attempt, and that shard's own
        # part is taken as it is in memory: it is encoded only when others may still come,
        # before the lock, so that they wait less for it. Parts are only ever added, so a
        # part that completes the attempt read unlocked completes it under the lock too.
        seen = self.get(suite, attempt)
        last = seen is not None and len({*seen.parts, part.index}) == seen.count
        doc = None if last else encode_part(part)
        with self._db.transaction(write=True, doing=doing) as tx:
            saved, run = _store_part(tx, suite, attempt, part, doc, now, finalise, fail)
        if run is not None and saved.run_id is not None:  # committed: the job reads it back
            self._store.saved_by_stage(saved.run_id, run)
        return saved

    def expire(self, suite: str, *, now: datetime, fail: Failer) -> list[Attempt]:
        """Fail every open attempt of ``suite`` whose deadline has passed; return them.

        Each is failed under its row lock, once: a shard that meets it first does it.
        """
        with self._db.transaction(write=False, doing=f"reading attempts of {suite!r}") as tx:
            rows = tx.all(
                "SELECT attempt, deadline_at FROM shard_attempts"
                " WHERE suite = ? AND status = 'open'",
                (suite,),
            )
            due = [name for name, deadline in rows if tx.dialect.read_timestamp(deadline) < now]
        failed = (self.fail_open(suite, name, None, now=now, fail=fail) for name in due)
        return [attempt for attempt in failed if attempt is not None]

    def fail_open(
        self, suite: str, attempt: str, reason: str | None, *, now: datetime, fail: Failer
    ) -> Attempt | None:
        """Fail ``attempt`` for ``reason`` if it is still open, once, under its row lock;
        return it failed (None when it was not open). Without a ``reason`` it fails only
        past its deadline, for the parts still missing."""
        with self._db.transaction(write=True, doing=f"failing attempt {attempt!r}") as tx:
            found = _attempt(tx, suite, attempt, lock=True)
            if found is None or found.status != "open":
                return None
            if reason is None:
                if found.deadline_at >= now:
                    return None
                missing = ", ".join(f"{i}/{found.count}" for i in found.missing)
                reason = f"the attempt passed its deadline without shard(s) {missing}"
            run_id = insert_run(tx, fail(reason, now), now)
            _close(tx, suite, attempt, "failed", now, run_id, reason)
            return _replace(found, "failed", found.parts, run_id, reason)


def encode_part(part: Part) -> dict[str, Any]:
    """Return a part's run JSON-ready: its figures, its table as the run's one codec writes it
    (:func:`monitor.run.codec.encode_table`, base64; query texts and judgments are the eval
    set's) and its scores (:func:`encode_evaluation`), both at the codec's transient level (a
    part lives only until its run is made)."""
    result, evaluation = part.result, part.evaluation
    if result is None or evaluation is None:  # a failed shard: its error is its part
        return {}
    return {
        "k": result.k,
        "started_at": result.started_at.isoformat(),
        "finished_at": result.finished_at.isoformat(),
        "duration_seconds": result.duration_seconds,
        "queries_per_second": result.queries_per_second,
        "warmup": result.warmup,
        "retries": result.retries,
        "search_stats": dict(result.search_stats),
        "label": result.label,
        "codec": codec.CODEC,
        "table": _base64(codec.encode_table(result.outcomes, codec.TRANSIENT_LEVEL)),
        "evaluation": encode_evaluation(evaluation),
    }


def _base64(blob: bytes) -> str:
    return base64.b64encode(blob).decode("ascii")


def decode_part(index: int, doc: Mapping[str, Any], error: str | None, location: str) -> Part:
    """Return the part :func:`encode_part` wrote: its outcomes without query texts or
    judgments, which :func:`~monitor.job.shards.merge` takes from the eval set, and without a
    latency summary, which it makes over every part. A part in another codec, or without
    scores (written by another version), is a StoreError naming ``location``."""
    if not doc:
        return Part(index, None, None, error)
    if doc.get("codec") != codec.CODEC or "evaluation" not in doc:
        raise StoreError(
            location,
            f"a shard's part is in codec {doc.get('codec')!r}"
            f"{'' if 'evaluation' in doc else ' without scores'}, expected {codec.CODEC!r}:"
            " another version of retrieval-monitor wrote it; run the attempt again",
        )
    stats: dict[str, MetaValue] = dict(doc["search_stats"])
    result = RunResult(
        outcomes=codec.decode_table(base64.b64decode(doc["table"])),
        k=int(doc["k"]),
        started_at=datetime.fromisoformat(doc["started_at"]).astimezone(timezone.utc),
        finished_at=datetime.fromisoformat(doc["finished_at"]).astimezone(timezone.utc),
        duration_seconds=float(doc["duration_seconds"]),
        queries_per_second=doc["queries_per_second"],
        warmup=int(doc["warmup"]),
        retries=int(doc["retries"]),
        search_stats=stats,
        label=doc["label"],
    )
    return Part(index, result, decode_evaluation(doc["evaluation"]), error)


def encode_evaluation(evaluation: EvaluationResult) -> dict[str, Any]:
    """Return a part's scores JSON-ready: the metrics' names, the query counts, and the
    evaluated queries' ids and each metric's values in the run's one codec (floats bit for
    bit)."""
    arrays = [
        *codec.strings(list(evaluation.query_ids)),
        *(evaluation.values[metric] for metric in evaluation.metrics),
    ]
    return {
        "metrics": [str(metric) for metric in evaluation.metrics],
        "counts": evaluation.counts.to_dict(),
        "duplicates": evaluation.duplicates,
        "queries_with_duplicates": evaluation.queries_with_duplicates,
        "values": _base64(codec.pack(arrays, codec.TRANSIENT_LEVEL)),
    }


def decode_evaluation(doc: Mapping[str, Any]) -> EvaluationResult:
    """Return the scores :func:`encode_evaluation` wrote."""
    metrics = parse_metrics(doc["metrics"])
    arrays = codec.unpack(base64.b64decode(doc["values"]))
    split = len(arrays) - len(metrics)  # the ids are two or three arrays, then the values
    ids, values = arrays[:split], arrays[split:]
    return EvaluationResult(
        metrics=metrics,
        query_ids=tuple(codec.texts_of(ids)),
        values={m: np.asarray(v, dtype=np.float64) for m, v in zip(metrics, values, strict=True)},
        counts=QueryCounts(**doc["counts"]),
        duplicates=int(doc["duplicates"]),
        queries_with_duplicates=int(doc["queries_with_duplicates"]),
    )


def _store_part(
    tx: Transaction,
    suite: str,
    attempt: str,
    part: Part,
    doc: Mapping[str, Any] | None,
    now: datetime,
    finalise: Finaliser,
    fail: Failer,
) -> tuple[Saved, RunRecord | None]:
    """Do :meth:`ShardStore.save_part`'s work under the attempt's row lock; return what it did
    and the run it finalised (None when it made none, or a failed one)."""
    found = _attempt(tx, suite, attempt, lock=True)
    if found is None:
        raise UsageError(f"attempt {attempt!r} of suite {suite!r} was never opened")
    if not 0 <= part.index < found.count:
        raise UsageError(
            f"part {part.index} of attempt {attempt!r}: expected an index below {found.count}"
        )
    if found.status != "open":
        return Saved("closed", found, found.run_id), None
    parts = tuple(sorted({*found.parts, part.index}))
    completes = len(parts) == found.count
    # The part that completes the attempt is read by no one: its run is the attempt's run.
    _write_part(tx, suite, attempt, part, None if completes else doc, now)
    if part.result is None:
        reason = f"shard {part.index}/{found.count} failed: {part.error}"
    elif now > found.deadline_at and not completes:
        left = (i for i in range(found.count) if i not in parts)
        missing = ", ".join(f"{i}/{found.count}" for i in left)
        reason = f"the attempt passed its deadline without shard(s) {missing}"
    elif completes:
        try:
            run = finalise(_parts(tx, suite, attempt, part))
        except SearchBackendError as error:  # the parts together measured too little
            reason = f"{type(error).__name__}: {error}"
        else:
            run_id = insert_run(tx, run, now)
            _close(tx, suite, attempt, "finalised", now, run_id, None)
            finalised = _replace(found, "finalised", parts, run_id)
            return Saved("finalised", finalised, run_id), run
    else:
        return Saved("waiting", _replace(found, "open", parts, None)), None
    run_id = insert_run(tx, fail(reason, now), now)
    _close(tx, suite, attempt, "failed", now, run_id, reason)
    return Saved("failed", _replace(found, "failed", parts, run_id, reason), run_id), None


def _attempt(tx: Transaction, suite: str, attempt: str, *, lock: bool) -> Attempt | None:
    """Read the attempt's row (locking it for the transaction when ``lock``) and parts."""
    statement = (
        "SELECT shard_count, config_hash, evalset_fingerprint, status, opened_at, deadline_at,"
        " run_id, error FROM shard_attempts WHERE suite = ? AND attempt = ?"
    )
    if lock and tx.dialect.name == "postgresql":
        statement += " FOR UPDATE"
    row = tx.one(statement, (suite, attempt))
    if row is None:
        return None
    count, config_hash, fingerprint, status, opened, deadline, run_id, error = row
    indices = tx.all(
        "SELECT shard_index FROM shard_parts WHERE suite = ? AND attempt = ? ORDER BY shard_index",
        (suite, attempt),
    )
    return Attempt(
        suite=suite,
        attempt=attempt,
        count=int(count),
        config_hash=str(config_hash),
        evalset_fingerprint=str(fingerprint),
        status=str(status),
        opened_at=tx.dialect.read_timestamp(opened),
        deadline_at=tx.dialect.read_timestamp(deadline),
        run_id=None if run_id is None else int(run_id),
        error=error,
        parts=tuple(int(index) for (index,) in indices),
    )


def _parts(tx: Transaction, suite: str, attempt: str, own: Part) -> list[Part]:
    """Return the attempt's parts in shard order; ``own``, the part this shard has just
    written, is taken as it is in memory, not read back."""
    rows = tx.all(
        "SELECT shard_index, status, outcomes, error FROM shard_parts"
        " WHERE suite = ? AND attempt = ? AND shard_index <> ? ORDER BY shard_index",
        (suite, attempt, own.index),
    )
    others = [
        decode_part(
            int(index), tx.dialect.read_json(raw) if status == "ok" else {}, error, tx.location
        )
        for index, status, raw, error in rows
    ]
    return sorted([*others, own], key=lambda part: part.index)


def _write_part(
    tx: Transaction,
    suite: str,
    attempt: str,
    part: Part,
    doc: Mapping[str, Any] | None,
    now: datetime,
) -> None:
    """Write the part's row: its encoded run (``doc``; None for the part that completes the
    attempt, whose run is the attempt's run from then on), or its error."""
    failed = part.result is None
    tx.execute(
        "INSERT INTO shard_parts (suite, attempt, shard_index, status, outcomes, error, saved_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (suite, attempt, shard_index) DO UPDATE SET"
        " status = excluded.status, outcomes = excluded.outcomes, error = excluded.error,"
        " saved_at = excluded.saved_at",
        (
            suite,
            attempt,
            part.index,
            "failed" if failed else "ok",
            dump_json({} if doc is None else doc),
            part.error,
            tx.dialect.timestamp(now),
        ),
    )


def _close(
    tx: Transaction,
    suite: str,
    attempt: str,
    status: str,
    now: datetime,
    run_id: int,
    error: str | None,
) -> None:
    tx.execute(
        "UPDATE shard_attempts SET status = ?, closed_at = ?, run_id = ?, error = ?"
        " WHERE suite = ? AND attempt = ?",
        (status, tx.dialect.timestamp(now), run_id, error, suite, attempt),
    )


def _replace(
    found: Attempt,
    status: str,
    parts: tuple[int, ...],
    run_id: int | None,
    error: str | None = None,
) -> Attempt:
    return replace(found, status=status, parts=parts, run_id=run_id, error=error)
