"""The ``corpus_fingerprints`` table: the last corpus fingerprint the daemon saw, per suite.

A suite with ``trigger: on_change`` runs when its search's corpus fingerprint differs from
the one kept here (:mod:`monitor.daemon.change`). Kept in the store, not in the daemon's
memory, so that a change made while the daemon was down is noticed when it starts again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType

from monitor.records import MetaValue
from monitor.store.dialect import dump_json
from monitor.store.records import utc
from monitor.store.sql import Transaction


@dataclass(frozen=True, slots=True)
class KnownCorpus:
    """A suite's corpus as last seen: the fingerprint's digest, what the search reported
    (``detail``), and when the digest was stored."""

    suite: str
    fingerprint: str
    detail: Mapping[str, MetaValue] = field(default_factory=dict)
    seen_at: datetime | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "detail", MappingProxyType(dict(self.detail)))
        if self.seen_at is not None:
            object.__setattr__(self, "seen_at", utc(self.seen_at, "seen_at"))


def get_corpus(tx: Transaction, suite: str) -> KnownCorpus | None:
    """Return the suite's stored corpus fingerprint, or None when none was stored yet."""
    row = tx.one(
        "SELECT fingerprint, detail, seen_at FROM corpus_fingerprints WHERE suite = ?", (suite,)
    )
    if row is None:
        return None
    fingerprint, detail, seen_at = row
    return KnownCorpus(
        suite,
        str(fingerprint),
        dict(tx.dialect.read_json(detail)),
        tx.dialect.read_timestamp(seen_at),
    )


def put_corpus(
    tx: Transaction,
    suite: str,
    fingerprint: str,
    detail: Mapping[str, MetaValue],
    now: datetime,
) -> None:
    """Store ``fingerprint`` (and the ``detail`` it digests) as the suite's, replacing any."""
    tx.execute(
        "INSERT INTO corpus_fingerprints (suite, fingerprint, detail, seen_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (suite) DO UPDATE SET fingerprint = excluded.fingerprint,"
        " detail = excluded.detail, seen_at = excluded.seen_at",
        (suite, fingerprint, dump_json(dict(detail)), tx.dialect.timestamp(now)),
    )
