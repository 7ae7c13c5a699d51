"""The ``state`` table (small JSON documents by namespace and key) and the ``outbox``."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from monitor.store.dialect import dump_json
from monitor.store.records import OutboxMessage
from monitor.store.sql import Transaction

_OUTBOX_COLUMNS = (
    "id, kind, item_key, payload, created_at, attempts, last_error, last_attempt_at, delivered_at"
)


def get_state(tx: Transaction, namespace: str, key: str) -> dict[str, Any] | None:
    """Return the document stored under ``namespace``/``key``, or None."""
    raw = tx.scalar(
        "SELECT value FROM state WHERE namespace = ? AND item_key = ?", (namespace, key)
    )
    return None if raw is None else dict(tx.dialect.read_json(raw))


def put_state(
    tx: Transaction, namespace: str, key: str, value: Mapping[str, object], now: datetime
) -> None:
    """Store ``value`` under ``namespace``/``key``, replacing what was there."""
    tx.execute(
        "INSERT INTO state (namespace, item_key, value, updated_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (namespace, item_key)"
        " DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        (namespace, key, dump_json(dict(value)), tx.dialect.timestamp(now)),
    )


def delete_state(tx: Transaction, namespace: str, key: str) -> bool:
    """Delete the document under ``namespace``/``key``; return whether there was one."""
    changed = tx.execute("DELETE FROM state WHERE namespace = ? AND item_key = ?", (namespace, key))
    return changed > 0


def enqueue(
    tx: Transaction, kind: str, key: str, payload: Mapping[str, object], now: datetime
) -> int:
    """Add a message, or replace the payload of the undelivered one with this kind and key;
    return the message's id."""
    found = tx.scalar(
        "INSERT INTO outbox (kind, item_key, payload, created_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (kind, item_key) WHERE delivered_at IS NULL"
        " DO UPDATE SET payload = excluded.payload RETURNING id",
        (kind, key, dump_json(dict(payload)), tx.dialect.timestamp(now)),
    )
    return int(found)


def pending(tx: Transaction, kind: str | None) -> list[OutboxMessage]:
    """Return the undelivered messages (of ``kind`` unless None), oldest first."""
    where = "WHERE delivered_at IS NULL" + ("" if kind is None else " AND kind = ?")
    rows = tx.all(
        f"SELECT {_OUTBOX_COLUMNS} FROM outbox {where} ORDER BY id",
        () if kind is None else (kind,),
    )
    return [_message(tx, row) for row in rows]


def mark_delivered(tx: Transaction, message_id: int, now: datetime) -> bool:
    """Record the message as delivered (once); return whether the message exists."""
    tx.execute(
        "UPDATE outbox SET delivered_at = ? WHERE id = ? AND delivered_at IS NULL",
        (tx.dialect.timestamp(now), message_id),
    )
    return tx.scalar("SELECT 1 FROM outbox WHERE id = ?", (message_id,)) is not None


def abandon(tx: Transaction, message_id: int, reason: str, now: datetime) -> bool:
    """Give up on a waiting message: it leaves the outbox, with the reason kept."""
    tx.execute(
        "UPDATE outbox SET delivered_at = ?, abandoned_reason = ? WHERE id = ?"
        " AND delivered_at IS NULL",
        (tx.dialect.timestamp(now), reason, message_id),
    )
    return tx.scalar("SELECT 1 FROM outbox WHERE id = ?", (message_id,)) is not None


def attempt_failed(tx: Transaction, message_id: int, error: str, now: datetime) -> bool:
    """Count one failed delivery with its error; return whether the message exists."""
    changed = tx.execute(
        "UPDATE outbox SET attempts = attempts + 1, last_error = ?, last_attempt_at = ?"
        " WHERE id = ?",
        (error, tx.dialect.timestamp(now), message_id),
    )
    return changed > 0


def _message(tx: Transaction, row: tuple[Any, ...]) -> OutboxMessage:
    d = tx.dialect
    message_id, kind, key, payload, created, attempts, last_error, last_attempt, delivered = row
    return OutboxMessage(
        id=int(message_id),
        kind=kind,
        key=key,
        payload=d.read_json(payload),
        created_at=d.read_timestamp(created),
        attempts=int(attempts),
        last_error=last_error,
        last_attempt_at=d.read_optional_timestamp(last_attempt),
        delivered_at=d.read_optional_timestamp(delivered),
    )
