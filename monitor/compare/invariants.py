"""Check a suite's invariants on a run: exact per-query checks, no significance.

- ``must_include``: each listed doc id is in the current run's top ``within`` for the query.
- ``no_lost_hits@k``: a query with a relevant hit in the baseline's top ``k`` keeps one (any
  relevant doc) in the current run's top ``k``.

A query whose search failed in the current run breaks no invariant (the error-rate rule
counts failures); it is named in the outcome's message as skipped. A query the run does not
hold (the eval set has no such id) makes a ``must_include`` invariant ``skipped``; without a
usable baseline (none, or another eval set) ``no_lost_hits`` is ``skipped``.
"""

from __future__ import annotations

from collections.abc import Sequence

from monitor.compare.records import InvariantOutcome, InvariantQuery, InvariantStatus
from monitor.config.model import InvariantConfig, MustInclude, NoLostHits
from monitor.store.records import QueryRecord, RunRecord

#: Most skipped query ids a message names.
SHOWN_SKIPPED = 10


def check_invariants(
    invariants: Sequence[InvariantConfig], current: RunRecord, baseline: RunRecord | None
) -> tuple[InvariantOutcome, ...]:
    """Return the outcome of each invariant on ``current`` (``baseline``: the approved run,
    None when there is none or it measured another eval set)."""
    return tuple(
        _must_include(invariant, current)
        if isinstance(invariant, MustInclude)
        else _no_lost_hits(invariant, current, baseline)
        for invariant in invariants
    )


def _must_include(invariant: MustInclude, current: RunRecord) -> InvariantOutcome:
    query = current.query(invariant.query)
    name, k = invariant.name, invariant.within
    if query is None:
        return _outcome(
            invariant, "skipped", message=f"query {invariant.query} is not in the eval set"
        )
    if query.error_type is not None:
        return _outcome(
            invariant,
            "skipped",
            message=f"skipped: the search failed for {query.query_id} ({query.error_type}); "
            "the error rate counts failures",
        )
    found = InvariantQuery(query.query_id, k, invariant.doc_ids, query.retrieved_ids[:k])
    if found.missing_ids:
        missing = ", ".join(found.missing_ids)
        return _outcome(
            invariant,
            "breach",
            (found,),
            f"{name}: {missing} not in the top {k} of {query.query_id}",
        )
    return _outcome(invariant, "ok", message=f"{name}: every listed doc in the top {k}")


def _no_lost_hits(
    invariant: NoLostHits, current: RunRecord, baseline: RunRecord | None
) -> InvariantOutcome:
    if baseline is None:
        return _outcome(invariant, "skipped", message="no baseline of the same eval set")
    k = invariant.k
    now = {q.query_id: q for q in current.queries}
    checked, skipped, lost = 0, [], []
    for before in baseline.queries:
        hits = _hits(before, k)
        after = now.get(before.query_id)
        if not hits or after is None:
            continue
        if after.error_type is not None:
            skipped.append(after.query_id)
            continue
        checked += 1
        if not _hits(after, k):
            lost.append(InvariantQuery(after.query_id, k, hits, after.retrieved_ids[:k]))
    noun = "query" if checked == 1 else "queries"
    message = (
        f"{len(lost)} of {checked} {noun} with a relevant hit in the baseline's top {k} lost it"
    )
    if skipped:
        shown = ", ".join(skipped[:SHOWN_SKIPPED])
        more = f" (+{len(skipped) - SHOWN_SKIPPED} more)" if len(skipped) > SHOWN_SKIPPED else ""
        message += f"; skipped {len(skipped)} the search failed for: {shown}{more}"
    return _outcome(invariant, "breach" if lost else "ok", tuple(lost), message)


def _hits(query: QueryRecord, k: int) -> tuple[str, ...]:
    """Return the relevant doc ids in the query's top ``k``, best first."""
    relevant = set(query.relevant_ids)
    return tuple(doc for doc in query.retrieved_ids[:k] if doc in relevant)


def _outcome(
    invariant: InvariantConfig,
    status: InvariantStatus,
    queries: tuple[InvariantQuery, ...] = (),
    message: str = "",
) -> InvariantOutcome:
    return InvariantOutcome(
        name=invariant.name,
        kind=invariant.kind,
        status=status,
        queries=queries,
        message=message,
        severity=invariant.severity,
    )
