"""The record of one run: every query's outcome and the run's vital signs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import TYPE_CHECKING

from monitor.records import LatencySummary, MetaValue, QueryOutcome
from monitor.run.table import RunTable

if TYPE_CHECKING:
    from monitor.search.trec_columns import TrecColumns


@dataclass(frozen=True, slots=True)
class RunResult:
    """One run of a set of queries through one search function.

    ``outcomes`` follow the order of the queries given, as one
    :class:`~monitor.run.RunTable` whichever way the search answered (``RunTable.of``
    reads a sequence of outcomes into one). ``warmup`` is how many queries were
    sent once before the measured run, their answers discarded. ``latency`` covers answered
    queries only (a failure is counted by ``error_rate``; its latency is not a latency of the
    search). ``queries_per_second`` is over the measured run; ``duration_seconds`` is the
    wall time of the whole run, warm-up included. ``retries`` counts the attempts made after a
    retryable error. ``search_stats`` is what the plug-in's ``stats()`` reported after the run,
    with ``corpus_fingerprint`` (the digest of its ``corpus_fingerprint()`` asked before the
    first query) when the plug-in has one.
    """

    outcomes: RunTable
    k: int
    started_at: datetime
    finished_at: datetime
    duration_seconds: float
    latency: LatencySummary = field(default_factory=LatencySummary)
    queries_per_second: float | None = None
    warmup: int = 0
    retries: int = 0
    search_stats: Mapping[str, MetaValue] = field(default_factory=dict)
    label: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "search_stats", MappingProxyType(dict(self.search_stats)))

    @property
    def total(self) -> int:
        """Return the number of queries in the run."""
        return len(self.outcomes)

    @property
    def failed(self) -> int:
        """Return the number of queries that raised, timed out or were not run."""
        return self.outcomes.failed

    @property
    def answered(self) -> int:
        """Return the number of queries the search answered (with or without hits)."""
        return self.total - self.failed

    @property
    def empty(self) -> int:
        """Return the number of answered queries with no hits."""
        return self.outcomes.empty

    @property
    def duplicates(self) -> int:
        """Return how many repeated ids were dropped over all queries."""
        return self.outcomes.duplicates

    @property
    def error_rate(self) -> float:
        """Return the share of queries that failed (0.0 for an empty run)."""
        return self.failed / self.total if self.total else 0.0

    @property
    def zero_result_rate(self) -> float:
        """Return the share of answered queries that came back with no hits."""
        answered = self.answered
        return self.empty / answered if answered else 0.0

    @property
    def mean_top1_score(self) -> float | None:
        """Return the mean score of the first hit, over the answers whose first hit has one.

        None when no first hit has a score, or when one is not finite (the mean is not a
        number then).
        """
        return self.outcomes.mean_top1_score()

    @property
    def error_counts(self) -> dict[str, int]:
        """Return the number of failed queries by error type, most frequent first."""
        return self.outcomes.error_counts()

    @property
    def failures(self) -> tuple[QueryOutcome, ...]:
        """Return the failed queries' outcomes, in query order."""
        return self.outcomes.failures()

    def as_run(self) -> dict[str, list[str]]:
        """Return ``{query id: [doc ids best first]}``, for readers that take a run as dicts.

        A failed query maps to an empty ranking here; the monitor's own measurements leave it
        out (``evaluate(..., exclude_failed=True)``), so it is never counted as a miss there.
        """
        return {outcome.query_id: list(outcome.retrieved_ids) for outcome in self.outcomes}

    def ranking_columns(self, *, answered_only: bool = False) -> TrecColumns:
        """Return the rankings as a TREC run's columns, for the metric engine's bulk look-up
        (:meth:`monitor.run.RunTable.ranking_columns`)."""
        return self.outcomes.ranking_columns(answered_only=answered_only)
