"""The :class:`Store` protocol: what every run store offers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from monitor.records import MetaValue
from monitor.store.comparisons import StoredComparison
from monitor.store.drift import DriftRecord
from monitor.store.fingerprints import KnownCorpus
from monitor.store.layers import JudgmentLayer, RunLabels
from monitor.store.records import (
    Baseline,
    LockHolder,
    OutboxMessage,
    QueryRecord,
    RunRecord,
    RunSummary,
)

if TYPE_CHECKING:
    import pandas as pd

    from monitor.store.columnar import QueryArrays
    from monitor.store.online import StoredWindow
    from monitor.store.retention import PruneResult, Retention

#: How long a run lock's lease lasts: a holder that stops renewing it loses it this much later.
DEFAULT_LOCK_TTL_SECONDS = 60.0


class Store(Protocol):
    """Where runs, baselines, stage state and undelivered notifications are kept.

    Every method is one transaction: it happens completely or not at all. A store is used by
    one thread at a time; close it (or use it as a context manager) when done.
    """

    location: str

    def save_run(self, run: RunRecord) -> int:
        """Save ``run`` with its figures and per-query records; return the id it was given.

        The record's own ``run_id`` is ignored. A failure leaves nothing of the run behind.
        """
        ...

    def get_run(self, run_id: int) -> RunRecord:
        """Return the run with this id; raise StoreLookupError when there is none."""
        ...

    def latest_run(self, suite: str, status: str | None = "ok") -> RunRecord | None:
        """Return the suite's most recently started run of ``status`` (any status if None)."""
        ...

    def list_runs(self, suite: str | None = None, limit: int = 50) -> list[RunSummary]:
        """Return up to ``limit`` runs (of ``suite``, or of every suite), newest first."""
        ...

    def set_baseline(self, suite: str, run_id: int) -> Baseline:
        """Pin run ``run_id`` as the suite's baseline.

        Raise BaselineError unless the run exists, belongs to the suite and is ok.
        """
        ...

    def get_baseline(self, suite: str) -> RunRecord | None:
        """Return the run pinned as the suite's baseline, or None."""
        ...

    def list_baselines(self) -> list[Baseline]:
        """Return every suite's baseline, by suite name."""
        ...

    def history(self, suite: str, metrics: Iterable[str] | None = None) -> pd.DataFrame:
        """Return one row per run of the suite, oldest first.

        Columns: ``run_id``, ``started_at``, ``finished_at`` (UTC), ``status``, one per metric
        mean (those in ``metrics``, in that order, or all), ``latency_p50`` and the other
        latency figures, then one per rate (``error_rate``, ...). Missing figures are NaN.
        """
        ...

    def per_query_frame(self, run_id: int) -> pd.DataFrame:
        """Return one row per query of the run (index ``query_id``): metric values, then
        ``latency_seconds``, ``error_type``, ``error_message``, ``retrieved_ids`` and
        ``relevant_ids``."""
        ...

    def add_layer(self, layer: JudgmentLayer, *, after: int | None = None) -> int:
        """Save a judgment layer (grades with provenance); return the id it was given.

        With ``after`` (a layer id, 0 for none), save it only if the suite's newest layer is
        still that one; raise LayersChangedError otherwise.
        """
        ...

    def layers(self, suite: str) -> list[JudgmentLayer]:
        """Return the suite's judgment layers in the order they were added."""
        ...

    def set_run_labels(self, run_id: int, labels: RunLabels) -> None:
        """Record which queries and judgments run ``run_id`` was scored with."""
        ...

    def run_labels(self, run_id: int) -> RunLabels | None:
        """Return the labels run ``run_id`` was scored with; None for a run saved without."""
        ...

    def layer_ids(self, suite: str) -> tuple[int, ...]:
        """Return the ids of the suite's judgment layers in the order they were added,
        reading none of their grades."""
        ...

    def save_comparison(self, stored: StoredComparison) -> None:
        """Keep ``stored`` as its run's comparison, replacing an earlier one; raise
        StoreLookupError when there is no such run."""
        ...

    def stored_comparison(self, run_id: int) -> StoredComparison | None:
        """Return the comparison kept for run ``run_id``, or None when none is (a run saved
        before comparisons were kept, or whose per-query detail retention dropped)."""
        ...

    def per_query_values(self, run_id: int) -> QueryArrays:
        """Return the run's query ids and per-query metric values as arrays, in run order
        (NaN where a query has no value), without building a record per query.

        A run whose detail retention dropped has no queries. Raise StoreLookupError when
        there is no such run.
        """
        ...

    def query_record(self, run_id: int, query_id: str) -> QueryRecord | None:
        """Return query ``query_id`` of the run as stored, reading no other query's record;
        None when the run has no such query (or its detail retention dropped). Raise
        StoreLookupError when there is no such run.
        """
        ...

    def prune(self, suite: str, policy: Retention, *, dry_run: bool = False) -> PruneResult:
        """Drop the per-query detail of the suite's runs that ``policy`` does not keep, and
        hand the space back; their means and figures stay. ``dry_run`` only lists them."""
        ...

    def get_state(self, namespace: str, key: str) -> dict[str, Any] | None:
        """Return the JSON document stored under ``namespace``/``key``, or None."""
        ...

    def put_state(self, namespace: str, key: str, value: Mapping[str, object]) -> None:
        """Store a JSON document under ``namespace``/``key``, replacing any earlier one."""
        ...

    def delete_state(self, namespace: str, key: str) -> bool:
        """Delete the document under ``namespace``/``key``; return whether there was one."""
        ...

    def known_corpus(self, suite: str) -> KnownCorpus | None:
        """Return the corpus fingerprint last stored for ``suite``, or None."""
        ...

    def set_known_corpus(
        self, suite: str, fingerprint: str, detail: Mapping[str, MetaValue]
    ) -> None:
        """Store ``fingerprint`` (the digest of ``detail``) as the suite's corpus."""
        ...

    def add_drift_check(self, record: DriftRecord) -> int:
        """Store a query drift check of a suite; return its id."""
        ...

    def drift_checks(self, suite: str, limit: int = 50) -> list[DriftRecord]:
        """Return up to ``limit`` drift checks of ``suite``, newest first."""
        ...

    def save_online_window(self, window: StoredWindow) -> int:
        """Store a measured window of an online suite; return its id."""
        ...

    def online_window(self, window_id: int) -> StoredWindow:
        """Return the stored online window ``window_id``."""
        ...

    def latest_online_window(self, suite: str, status: str | None = "ok") -> StoredWindow | None:
        """Return the suite's latest stored window (of ``status`` unless None), or None."""
        ...

    def pin_online_window(self, suite: str, window_id: int) -> None:
        """Pin the stored window ``window_id`` as the online suite's baseline."""
        ...

    def pinned_online_window(self, suite: str) -> StoredWindow | None:
        """Return the window pinned for the online suite, or None."""
        ...

    def enqueue(self, kind: str, key: str, payload: Mapping[str, object]) -> int:
        """Put a notification in the outbox; return its id.

        An undelivered message of the same kind and key is replaced (its id is returned), so a
        notification enqueued twice is delivered once.
        """
        ...

    def pending(self, kind: str | None = None) -> list[OutboxMessage]:
        """Return the undelivered messages (of ``kind``, or all), oldest first."""
        ...

    def mark_delivered(self, message_id: int) -> None:
        """Record that the message was delivered; it leaves :meth:`pending`."""
        ...

    def attempt_failed(self, message_id: int, error: str) -> None:
        """Record a failed delivery of the message: one more attempt, and its error."""
        ...

    def abandon(self, message_id: int, reason: str) -> None:
        """Give up on a waiting message (it leaves the outbox); keep ``reason``."""
        ...

    def lock(
        self,
        suite: str,
        ttl_seconds: float = DEFAULT_LOCK_TTL_SECONDS,
        renew_seconds: float | None = None,
    ) -> AbstractContextManager[LockHolder]:
        """Hold the suite's run lock for the ``with`` block, as a lease renewed while it runs.

        The lease lasts ``ttl_seconds`` and is renewed every ``renew_seconds`` (default: a
        quarter of the lease) until the block ends. Raise StoreLockedError, naming the holder,
        while another holds it; a lock whose lease has ended, or whose holder is known to be
        gone, is taken over.
        """
        ...

    def close(self) -> None:
        """Close the store's connection."""
        ...

    def __enter__(self) -> Store: ...

    def __exit__(self, *exc_info: object) -> None: ...
