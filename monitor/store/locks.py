"""Run locks as leases: one row per locked suite in the ``locks`` table.

A lock names its holder (host, pid), when it was taken and when its lease ends. The holder
renews the lease while it runs (:class:`~monitor.store.sqlstore.SqlStore` does so from a
background thread), so a lock whose lease has ended belongs to a holder that stopped
renewing it (killed, frozen, cut off from the store) and is taken over, whatever host it ran
on. A holder of this host whose process no longer exists is taken over at once.

The pid alone does not identify a process: a container restarted as PID 1 has the pid its
killed predecessor had. Each holder's token therefore starts with a token of the process
that took it (:func:`process_token`), and a holder with this process's pid but another
process's token is one that has ended. The token also keeps a holder whose lock was taken
over from releasing or renewing its successor's lock.

On PostgreSQL the holder also takes a session advisory lock (:func:`try_advisory`), which the
server releases when the holder's connection ends, and its token says so (it ends in
``.session``): a lock whose token says so but whose advisory lock is free belongs to a holder
that is gone, and is taken over at once. (A holder that took a lock over by its lease while a
frozen predecessor's session still held the advisory lock holds the lease alone.) Times come
from the clock of the process taking or renewing the lock.
"""

from __future__ import annotations

import functools
import hashlib
import os
import socket
import uuid
from datetime import datetime, timedelta

from monitor.errors import StoreLockedError
from monitor.store.records import LockHolder
from monitor.store.sql import Transaction

_POSTGRESQL = "postgresql"
#: The end of the token of a holder that holds the suite's session advisory lock.
_SESSION = ".session"


@functools.cache
def process_token() -> str:
    """Return a token unique to this process, made on first use."""
    return uuid.uuid4().hex


def try_advisory(tx: Transaction, suite: str) -> bool:
    """Take the suite's PostgreSQL session advisory lock if it is free; return whether taken.

    Always False on a database without advisory locks.
    """
    if tx.dialect.name != _POSTGRESQL:
        return False
    return bool(tx.scalar("SELECT pg_try_advisory_lock(?)", (advisory_key(suite),)))


def release_advisory(tx: Transaction, suite: str) -> None:
    """Release the suite's session advisory lock taken by :func:`try_advisory`."""
    if tx.dialect.name == _POSTGRESQL:
        tx.scalar("SELECT pg_advisory_unlock(?)", (advisory_key(suite),))


def advisory_key(suite: str) -> int:
    """Return the signed 64-bit advisory lock key of a suite."""
    digest = hashlib.sha256(f"retrieval-monitor lock {suite}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def acquire(
    tx: Transaction,
    suite: str,
    ttl_seconds: float,
    now: datetime,
    *,
    session: bool = False,
) -> LockHolder:
    """Take the suite's lock with a lease of ``ttl_seconds``; raise StoreLockedError while
    another holds it.

    ``session`` says that the caller holds the suite's session advisory lock: a holder that
    held it too is gone, so its lock is taken over whatever its lease.
    """
    d = tx.dialect
    holder = LockHolder(
        suite=suite,
        host=socket.gethostname(),
        pid=os.getpid(),
        since=now,
        expires_at=now + timedelta(seconds=ttl_seconds),
        token=f"{process_token()}.{uuid.uuid4().hex}" + (_SESSION if session else ""),
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
        row = tx.one("SELECT host, pid, token, acquired_at FROM locks WHERE suite = ?", (suite,))
        if row is not None:
            host, pid, token, since = row
            had_session = str(token).endswith(_SESSION)
            gone = (session and had_session) or _ended_here(str(host), int(pid), str(token))
            if gone and _take_over(tx, suite, values, str(token)):
                return holder
            raise StoreLockedError(tx.location, suite, host, int(pid), d.read_timestamp(since))
    raise StoreLockedError(tx.location, suite, "an unknown host", 0, now)


def renew(tx: Transaction, holder: LockHolder, ttl_seconds: float, now: datetime) -> bool:
    """Extend the holder's lease to ``ttl_seconds`` from ``now``; return False when the lock
    is no longer the holder's (it was taken over)."""
    expires = tx.dialect.timestamp(now + timedelta(seconds=ttl_seconds))
    changed = tx.execute(
        "UPDATE locks SET expires_at = ? WHERE suite = ? AND token = ?",
        (expires, holder.suite, holder.token),
    )
    return changed > 0


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


def _ended_here(host: str, pid: int, token: str) -> bool:
    """Return whether the holder was a process of this host that has ended."""
    if host != socket.gethostname() or pid <= 0:
        return False
    if pid == os.getpid():
        # Our pid, but not our process (a restarted container's PID 1): that one has ended.
        return not token.startswith(f"{process_token()}.")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, owned by another user
        return False
    return False


def _take_over(tx: Transaction, suite: str, values: tuple[object, ...], token: str) -> bool:
    # Conditional on the holder seen, so two processes cannot both take the lock over.
    return (
        tx.execute(
            "UPDATE locks SET host = ?, pid = ?, token = ?, acquired_at = ?, expires_at = ?"
            " WHERE suite = ? AND token = ?",
            (*values, suite, token),
        )
        > 0
    )


def release(tx: Transaction, holder: LockHolder) -> bool:
    """Release a lock taken by ``acquire``; return False when it had been taken over."""
    changed = tx.execute(
        "DELETE FROM locks WHERE suite = ? AND token = ?", (holder.suite, holder.token)
    )
    return changed > 0
