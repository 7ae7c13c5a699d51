"""A run's comparison with its baseline as the job computed it: the ``run_comparisons`` table.

One row per run: what the comparison was computed from (:class:`ComparisonKey`: the run,
the baseline it was compared with, the judgments version of the labels it was scored under,
and a digest of everything else it read) and the comparison itself, serialised by the
compare stage under the name of its ``codec``. The store keeps the bytes without reading
them; a reader compares the key with the one it would compute from, and decodes the
comparison only when they are equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from monitor.store.sql import Transaction


@dataclass(frozen=True, slots=True)
class ComparisonKey:
    """What a comparison of run ``run_id`` was computed from.

    ``judgments_version`` is the version of the judgments it read (None when it read none
    from the judgments in force); ``basis`` is a digest of every other input (the suite's
    settings, its eval set, its judgment layers, the history it was judged with).
    """

    run_id: int
    baseline_run_id: int | None
    judgments_version: str | None
    basis: str


@dataclass(frozen=True, slots=True)
class StoredComparison:
    """A comparison as the store keeps it: its key and its bytes, written by ``codec``."""

    key: ComparisonKey
    codec: str
    data: bytes


def put_comparison(tx: Transaction, stored: StoredComparison, now: datetime) -> None:
    """Store ``stored`` as its run's comparison, replacing an earlier one."""
    key = stored.key
    tx.execute(
        "INSERT INTO run_comparisons"
        " (run_id, baseline_run_id, judgments_version, basis, codec, data, saved_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (run_id) DO UPDATE SET baseline_run_id = excluded.baseline_run_id,"
        " judgments_version = excluded.judgments_version, basis = excluded.basis,"
        " codec = excluded.codec, data = excluded.data, saved_at = excluded.saved_at",
        (
            key.run_id,
            key.baseline_run_id,
            key.judgments_version,
            key.basis,
            stored.codec,
            stored.data,
            tx.dialect.timestamp(now),
        ),
    )


def get_comparison(tx: Transaction, run_id: int) -> StoredComparison | None:
    """Return run ``run_id``'s stored comparison, or None when it has none."""
    row = tx.one(
        "SELECT baseline_run_id, judgments_version, basis, codec, data"
        " FROM run_comparisons WHERE run_id = ?",
        (run_id,),
    )
    if row is None:
        return None
    baseline, judgments, basis, codec, data = row
    key = ComparisonKey(run_id, None if baseline is None else int(baseline), judgments, str(basis))
    return StoredComparison(key, str(codec), bytes(data))
