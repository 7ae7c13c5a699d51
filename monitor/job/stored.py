"""The comparison a run's job keeps in the store, and reading it back where it still holds.

The job compares each run with its baseline once (:func:`monitor.job.path.compare_stored`)
and keeps that comparison beside the run (:func:`save_comparison`), under the key of what
it was computed from (:func:`comparison_key`). A reader that compares a stored run again
(the report, the web app's run page) builds the key of its own inputs and reads the stored
comparison when the keys are equal (:func:`stored_comparison`). Any other key leaves the
reader to compute the comparison as before: a run saved before comparisons were kept,
another baseline pinned since, judgment layers added, the suite's settings or its eval set
changed, another version of the monitor.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from monitor import __version__
from monitor.compare.stored import CODEC, decode_comparison, encode_comparison
from monitor.config.hashing import config_hash
from monitor.store.comparisons import ComparisonKey, StoredComparison

if TYPE_CHECKING:
    from monitor.compare import Comparison
    from monitor.config.model import SuiteConfig
    from monitor.evalset import EvalSet
    from monitor.store import RunRecord, Store


def evalset_identity(suite: SuiteConfig, frozen: EvalSet, files: str | None) -> str | None:
    """Return what tells the eval set a comparison reads its query texts and metadata from:
    the digest of its files (``files``: :func:`monitor.evalset.digests.files_digest`, taken
    as it was read), or a bundled set's fingerprint (its metadata ships with the monitor);
    None for a set whose files' digest is unknown (they changed while it was read)."""
    if suite.evalset.bundled is not None:
        return f"bundled {suite.evalset.bundled} {frozen.fingerprint}"
    return files


def comparison_key(
    suite: SuiteConfig,
    store: Store,
    run: RunRecord,
    baseline: RunRecord | None,
    *,
    evalset: str | None,
    judgments: str | None,
    history: Mapping[str, Sequence[bool]],
    invariants: bool,
) -> ComparisonKey | None:
    """Return the key of the comparison of the stored ``run`` with ``baseline`` under the
    suite's settings, or None when it cannot be told (``evalset`` is None).

    ``evalset`` is :func:`evalset_identity`'s; ``judgments`` the version of the judgments
    in force the comparison reads (None: it reads none); ``history`` the rule history it is
    judged with; ``invariants`` whether it checks the suite's invariants.
    """
    if evalset is None or run.run_id is None:
        return None
    persistence = suite.significance.persistence is not None
    basis = {
        "monitor": __version__,
        "config": config_hash(suite),
        "evalset": evalset,
        "layers": list(store.layer_ids(suite.name)),
        # Only persistence reads the history (monitor.compare.rules.apply_rule).
        "history": {rule: list(flags) for rule, flags in history.items()} if persistence else {},
        "invariants": invariants,
        "baseline_pruned": baseline is not None and baseline.pruned_at is not None,
    }
    text = json.dumps(basis, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return ComparisonKey(
        run.run_id,
        None if baseline is None else baseline.run_id,
        judgments,
        "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest(),
    )


def save_comparison(store: Store, key: ComparisonKey, comparison: Comparison) -> None:
    """Keep ``comparison``, computed from what ``key`` says, as its run's comparison."""
    store.save_comparison(StoredComparison(key, CODEC, encode_comparison(comparison)))


def stored_comparison(store: Store, key: ComparisonKey | None) -> Comparison | None:
    """Return the comparison kept for ``key``'s run when it was computed from what ``key``
    says, else None (the caller computes it)."""
    if key is None:
        return None
    stored = store.stored_comparison(key.run_id)
    if stored is None or stored.key != key or stored.codec != CODEC:
        return None
    return decode_comparison(stored.data)
