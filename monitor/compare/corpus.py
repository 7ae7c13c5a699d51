"""What a comparison says about the searched corpus: notes beside the run, never a verdict.

A run records the digest of its search's ``corpus_fingerprint()`` (``corpus_fingerprint``
in its stats) and, when the daemon started it for a change of that corpus, ``trigger:
on_change``. A corpus that changed explains a change of the figures; it is not one, so
these are notes: no rule reads them and no alert fires for them.
"""

from __future__ import annotations

from monitor.store.records import RunRecord


def corpus_notes(current: RunRecord, baseline: RunRecord | None) -> tuple[str, ...]:
    """Return the notes on ``current``'s corpus: what started the run when a corpus change
    did, and a change of the corpus fingerprint since ``baseline``."""
    notes: list[str] = []
    now = current.stats.get("corpus_fingerprint")
    if current.stats.get("trigger") == "on_change":
        notes.append(
            "run started by a change of the search's corpus"
            + (f" (corpus fingerprint {now})" if isinstance(now, str) else "")
        )
    if baseline is None:
        return tuple(notes)
    before = baseline.stats.get("corpus_fingerprint")
    if isinstance(now, str) and isinstance(before, str) and now != before:
        notes.append(
            f"the search's corpus changed since the baseline run {baseline.run_id}"
            f" (corpus fingerprint {before} -> {now}): figures may move with it"
        )
    return tuple(notes)
