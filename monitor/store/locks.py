"""Run locks: one row per locked suite in the ``locks`` table.

A lock names its holder (host, pid), when it was taken and when it expires. Taking a held
lock fails unless it has expired, in which case the holder is presumed dead and the lock is
taken over, or unless its holder is a process of this host that no longer exists (a run
killed by the OOM killer or ``kill -9`` need not block its suite until the lock expires).
Each holder gets a token, so a holder whose lock was taken over cannot release its
successor's lock. Times come from the clock of the process taking the lock.
"""

from __future__ import annotations

import os
import socket
import uuid
from datetime import datetime, timedelta

from monitor.errors import StoreLockedError
from monitor.store.records import LockHolder
from monitor.store.sql import Transaction


def acquire(tx: Transaction, suite: str, ttl_seconds: float, now: datetime) -> LockHolder:
    """Take the suite's lock for ``ttl_seconds``; raise StoreLockedError while another holds it."""
    d = tx.dialect
    holder = LockHolder(
        suite=suite,
        host=socket.gethostname(),
        pid=os.getpid(),
        since=now,
        expires_at=now + timedelta(seconds=ttl_seconds),
        token=uuid.uuid4().hex,
    )
    values = (
        holder.host,
        holder.pid,
        holder.token,
        d.timestamp(holder.since),
        d.timestamp(holder.expires_at),
    )
    # Three tries: a lock released between our statements lets the next try insert it.
    for _ in range(3):
        if _insert(tx, suite, values) or _take_over_expired(tx, suite, values, now):
            return holder
        row = tx.one("SELECT host, pid, acquired_at FROM locks WHERE suite = ?", (suite,))
        if row is not None:
            host, pid, since = row
            if _dead_here(host, int(pid)) and _take_over(tx, suite, values, host, int(pid)):
                return holder
            raise StoreLockedError(tx.location, suite, host, int(pid), d.read_timestamp(since))
    raise StoreLockedError(tx.location, suite, "an unknown host", 0, now)


def _insert(tx: Transaction, suite: str, values: tuple[object, ...]) -> bool:
    return (
        tx.execute(
            "INSERT INTO locks (host, pid, token, acquired_at, expires_at, suite)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (suite) DO NOTHING",
            (*values, suite),
        )
        > 0
    )


def _take_over_expired(
    tx: Transaction, suite: str, values: tuple[object, ...], now: datetime
) -> bool:
    # The UPDATE checks the expiry itself, so of two processes that both saw the lock
    # expired only one takes it.
    return (
        tx.execute(
            "UPDATE locks SET host = ?, pid = ?, token = ?, acquired_at = ?, expires_at = ?"
            " WHERE suite = ? AND expires_at < ?",
            (*values, suite, tx.dialect.timestamp(now)),
        )
        > 0
    )


def _dead_here(host: str, pid: int) -> bool:
    """Return whether ``pid`` names a process of this host that has ended."""
    if host != socket.gethostname() or pid == os.getpid() or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, owned by another user
        return False
    return False


def _take_over(
    tx: Transaction, suite: str, values: tuple[object, ...], host: str, pid: int
) -> bool:
    # Conditional on the holder seen, so two processes cannot both take the lock over.
    return (
        tx.execute(
            "UPDATE locks SET host = ?, pid = ?, token = ?, acquired_at = ?, expires_at = ?"
            " WHERE suite = ? AND host = ? AND pid = ?",
            (*values, suite, host, pid),
        )
        > 0
    )


def release(tx: Transaction, holder: LockHolder) -> bool:
    """Release a lock taken by ``acquire``; return False when it had been taken over."""
    changed = tx.execute(
        "DELETE FROM locks WHERE suite = ? AND token = ?", (holder.suite, holder.token)
    )
    return changed > 0
