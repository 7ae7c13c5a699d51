"""Apply a suite's retention after its run (see :mod:`monitor.store.retention`)."""

from __future__ import annotations

from monitor.errors import StoreError
from monitor.logs import get_logger
from monitor.store.base import Store
from monitor.store.retention import PruneResult, Retention

log = get_logger(__name__)


def apply_retention(store: Store, suite: str, policy: Retention | None) -> PruneResult | None:
    """Prune the suite's runs past ``policy`` after a run (nothing when it is None); return
    what was freed.

    Retention is housekeeping: a store error here is logged, not raised, since the run it
    follows is already saved; the next run prunes what this one could not.
    """
    if policy is None:
        return None
    try:
        result = store.prune(suite, policy)
    except StoreError as error:
        log.warning("retention_failed", suite=suite, error=str(error))
        return None
    if result.runs:
        log.info(
            "retention_pruned",
            suite=suite,
            runs=len(result.runs),
            bytes_freed=result.bytes_freed,
            bytes_returned=result.bytes_returned,
        )
    return result
