"""Retention: how long runs keep their per-query detail, and pruning what is past it.

Every run keeps its row and its summary figures (means, latency, rates: ``run_figures``)
for ever; retention drops only the per-query columns (``run_blobs``), with the comparison
stored beside them (``run_comparisons``), of runs that are neither recent (the last ``N``
runs of the suite, or those started in the last ``30d``) nor kept for a reason (``keep``:
the suite's pinned baseline, failed runs).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Final, Literal

from monitor.errors import UsageError

if TYPE_CHECKING:
    from monitor.store.sql import Transaction

#: What ``keep`` may name: runs whose per-query detail is kept however old they are.
KeepReason = Literal["baselines", "failed"]
KEEP_REASONS: Final[tuple[KeepReason, ...]] = ("baselines", "failed")


@dataclass(frozen=True, slots=True)
class Retention:
    """Keep per-query detail for the last ``runs`` runs of a suite, or for runs started within
    ``age`` of now (exactly one of the two), and for the runs ``keep`` names."""

    runs: int | None = None
    age: timedelta | None = None
    keep: tuple[KeepReason, ...] = ("baselines",)

    def __post_init__(self) -> None:
        if (self.runs is None) == (self.age is None):
            raise UsageError("retention needs exactly one of a number of runs or an age")
        if self.runs is not None and (isinstance(self.runs, bool) or self.runs < 0):
            raise UsageError(f"retention runs must be 0 or more, not {self.runs!r}")
        if self.age is not None and self.age <= timedelta(0):
            raise UsageError(f"retention age must be positive, not {self.age}")
        unknown = [reason for reason in self.keep if reason not in KEEP_REASONS]
        if unknown:
            raise UsageError(
                f"retention keep: unknown {unknown[0]!r} (expected one of "
                f"{', '.join(KEEP_REASONS)})"
            )

    def describe(self) -> str:
        """Return the policy in words: ``the last 10 runs``, ``30d``."""
        if self.runs is not None:
            return f"the last {self.runs} run{'' if self.runs == 1 else 's'}"
        seconds = int((self.age or timedelta(0)).total_seconds())
        for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
            if seconds % size == 0:
                return f"{seconds // size}{unit}"
        return f"{seconds}s"


@dataclass(frozen=True, slots=True)
class PrunedRun:
    """One run whose per-query detail a prune dropped (or would drop): its id, when it
    started, and the bytes of per-query data it held."""

    run_id: int
    suite: str
    started_at: datetime
    bytes: int


@dataclass(frozen=True, slots=True)
class PruneResult:
    """What a prune of one suite dropped, or with ``dry_run`` would drop.

    ``bytes_freed`` counts the per-query data deleted; ``bytes_returned`` the file space
    handed back to the operating system afterwards (SQLite; 0 for a dry run). It is None
    where the backend does not measure it: PostgreSQL's autovacuum reuses the space itself.
    """

    suite: str
    retention: Retention
    runs: tuple[PrunedRun, ...] = ()
    dry_run: bool = False
    bytes_returned: int | None = 0

    @property
    def bytes_freed(self) -> int:
        """Return the bytes of per-query data the pruned runs held."""
        return sum(run.bytes for run in self.runs)


def prunable(tx: Transaction, suite: str, retention: Retention, now: datetime) -> list[PrunedRun]:
    """Return the suite's runs whose per-query detail ``retention`` lets go, oldest first."""
    d = tx.dialect
    rows = tx.all(
        "SELECT r.run_id, r.status, r.started_at, SUM(LENGTH(b.data))"
        " FROM runs r JOIN run_blobs b ON b.run_id = r.run_id"
        " WHERE r.suite = ? GROUP BY r.run_id, r.status, r.started_at"
        " ORDER BY r.started_at DESC, r.run_id DESC",
        (suite,),
    )
    recent: set[int] = set()
    if retention.runs is not None:
        newest = tx.all(
            "SELECT run_id FROM runs WHERE suite = ? ORDER BY started_at DESC, run_id DESC LIMIT ?",
            (suite, retention.runs),
        )
        recent = {int(row[0]) for row in newest}
    kept: set[int] = set()
    if "baselines" in retention.keep:
        kept = {int(row[0]) for row in tx.all("SELECT run_id FROM baselines")}
    cutoff = None if retention.age is None else now - retention.age
    pruned: list[PrunedRun] = []
    for run_id, status, started, size in rows:
        started_at = d.read_timestamp(started)
        if int(run_id) in recent or int(run_id) in kept:
            continue
        if cutoff is not None and started_at >= cutoff:
            continue
        if status == "failed" and "failed" in retention.keep:
            continue
        pruned.append(PrunedRun(int(run_id), suite, started_at, int(size or 0)))
    return pruned[::-1]


def drop_detail(tx: Transaction, runs: list[PrunedRun], now: datetime) -> None:
    """Delete the per-query columns of ``runs`` and their stored comparisons (whose overlap
    is per query too), and mark them pruned at ``now``."""
    for run in runs:
        tx.execute("DELETE FROM run_blobs WHERE run_id = ?", (run.run_id,))
        tx.execute("DELETE FROM run_comparisons WHERE run_id = ?", (run.run_id,))
        tx.execute(
            "UPDATE runs SET per_query_pruned_at = ? WHERE run_id = ?",
            (tx.dialect.timestamp(now), run.run_id),
        )
