"""Run locks as leases: one row per locked suite in the ``locks`` table.

A lock names its holder (host, pid), when it was taken and when its lease ends. The holder
renews the lease while it runs (:class:`~monitor.store.sqlstore.SqlStore` does so from a
background thread), so a lock whose lease has ended belongs to a holder that stopped
renewing it (killed, frozen, cut off from the store) and is taken over, whatever host it ran
on. A holder of this host whose process no longer exists is taken over at once.

The pid alone does not identify a process: a container restarted as PID 1 has the pid its
killed predecessor had. Each holder's token therefore starts with a token of the process
that took it (:func:`process_token`: its start time after boot and a random part), and a
holder with this process's pid but another process's token, or whose pid is now used by a
process that started at another time, is one that has ended. The token also keeps a holder
whose lock was taken over from releasing or renewing its successor's lock.

A lease is judged by the clock of the process that reads it, and a clock can step (NTP, a
resumed VM): to a process whose clock stepped ahead, a live holder's lease looks expired.
So a holder known to be running on this host (its pid used by the process its token names)
is never taken over by its lease; and whatever a holder writes under its lock (the run, by
:meth:`~monitor.store.sqlstore.SqlStore.save_run`) is fenced: the transaction checks first
that the lock is still the holder's (:func:`check_held`), so of two processes that each
believed they held a suite's lock, one stores its run and the other fails with
LockLostError.

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
from pathlib import Path

from monitor.errors import LockLostError, StoreLockedError
from monitor.store.records import LockHolder
from monitor.store.sql import Transaction

_POSTGRESQL = "postgresql"
#: The end of the token of a holder that holds the suite's session advisory lock.
_SESSION = ".session"


@functools.cache
def process_token() -> str:
    """Return a token unique to this process, made on first use: its start time (in clock
    ticks after boot, where the system tells it) and a random part."""
    return f"{started_ticks(os.getpid()) or 0}-{uuid.uuid4().hex}"


def started_ticks(pid: int) -> str | None:
    """Return when process ``pid`` started, in clock ticks after boot (Linux's
    ``/proc/PID/stat``), or None where that cannot be read: with the pid it names one
    process, whose pid a later process may reuse but never its start."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    # The command name may hold spaces and parentheses; the fields after it are fixed, and
    # the start time is the 20th of them (field 22 of the line).
    fields = stat.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 and fields[19].isdigit() else None


def _token_ticks(token: str) -> str | None:
    """Return the start time a holder's token records, or None (an older token, or none)."""
    ticks, dash, _ = token.partition(".")[0].partition("-")
    return ticks if dash and ticks.isdigit() and ticks != "0" else None


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
        if _insert(tx, suite, values):
            return holder
        row = tx.one("SELECT host, pid, token, acquired_at FROM locks WHERE suite = ?", (suite,))
        if row is not None:
            host, pid, token, since = row
            had_session = str(token).endswith(_SESSION)
            gone = (session and had_session) or _ended_here(str(host), int(pid), str(token))
            if gone and _take_over(tx, suite, values, str(token)):
                return holder
            if _alive_here(str(host), int(pid), str(token)):
                # The holder runs on this host: a lease that looks expired only says that
                # this process's clock stepped ahead of the holder's last renewal.
                raise StoreLockedError(tx.location, suite, host, int(pid), d.read_timestamp(since))
            if _take_over_expired(tx, suite, values, now):
                return holder
            raise StoreLockedError(tx.location, suite, host, int(pid), d.read_timestamp(since))
    raise StoreLockedError(tx.location, suite, "an unknown host", 0, now)


def check_held(tx: Transaction, holder: LockHolder) -> None:
    """Raise LockLostError unless ``holder`` still holds its lock: what a holder writes under
    its lock is written in a transaction that checks this first, so that a holder whose lock
    was taken over (its lease looked expired to another process) never writes as if it held
    it."""
    row = tx.one("SELECT host, pid, token, acquired_at FROM locks WHERE suite = ?", (holder.suite,))
    if row is not None and str(row[2]) == holder.token:
        return
    host, pid, since = ("nobody", 0, holder.since) if row is None else (row[0], row[1], row[3])
    when = since if isinstance(since, datetime) else tx.dialect.read_timestamp(since)
    raise LockLostError(tx.location, holder.suite, str(host), int(pid), when)


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
        pass
    # The pid is in use; by the holder, unless it started at another time (pid reused).
    recorded, started = _token_ticks(token), started_ticks(pid)
    return recorded is not None and started is not None and recorded != started


def _alive_here(host: str, pid: int, token: str) -> bool:
    """Return whether the holder is another process of this host known to be running: its
    pid is in use by a process that started when the holder's token says."""
    if host != socket.gethostname() or pid <= 0 or pid == os.getpid():
        return False
    recorded = _token_ticks(token)
    return recorded is not None and recorded == started_ticks(pid)


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
