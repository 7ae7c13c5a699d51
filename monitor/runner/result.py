"""The record of one run: every query's outcome and the run's vital signs."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import TYPE_CHECKING

from monitor.records import LatencySummary, MetaValue, QueryOutcome
from monitor.runner.table import OutcomeTable

if TYPE_CHECKING:
    from monitor.search.trec_columns import TrecColumns


@dataclass(frozen=True, slots=True)
class RunResult:
    """One run of a set of queries through one search function.

    ``outcomes`` follow the order of the queries given: a tuple, or for a search that
    answered in bulk an :class:`~monitor.runner.table.OutcomeTable` (its outcomes as
    columns, each built when read). ``warmup`` is how many queries were
    sent once before the measured run, their answers discarded. ``latency`` covers answered
    queries only (a failure is counted by ``error_rate``; its latency is not a latency of the
    search). ``queries_per_second`` is over the measured run; ``duration_seconds`` is the
    wall time of the whole run, warm-up included. ``retries`` counts the attempts made after a
    retryable error. ``search_stats`` is what the plug-in's ``stats()`` reported after the run.
    """

    outcomes: Sequence[QueryOutcome]
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
        if isinstance(self.outcomes, OutcomeTable):
            return 0  # a bulk answer answers every query
        return sum(1 for outcome in self.outcomes if outcome.error_type is not None)

    @property
    def answered(self) -> int:
        """Return the number of queries the search answered (with or without hits)."""
        return self.total - self.failed

    @property
    def empty(self) -> int:
        """Return the number of answered queries with no hits."""
        if isinstance(self.outcomes, OutcomeTable):
            return self.outcomes.empty
        return sum(1 for outcome in self.outcomes if outcome.empty)

    @property
    def duplicates(self) -> int:
        """Return how many repeated ids were dropped over all queries."""
        if isinstance(self.outcomes, OutcomeTable):
            return self.outcomes.duplicates
        return sum(outcome.duplicates for outcome in self.outcomes)

    @property
    def error_rate(self) -> float:
        """Return the share of queries that failed (0.0 for an empty run)."""
        return self.failed / self.total if self.outcomes else 0.0

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
        if isinstance(self.outcomes, OutcomeTable):
            return self.outcomes.mean_top1_score()
        scores = [
            outcome.hits[0].score
            for outcome in self.outcomes
            if outcome.hits and outcome.hits[0].score is not None
        ]
        if not scores or not all(math.isfinite(s) for s in scores if s is not None):
            return None
        # Sum the shares, not the scores: a sum of finite scores near 1e308 overflows.
        return math.fsum(s / len(scores) for s in scores if s is not None)

    @property
    def error_counts(self) -> dict[str, int]:
        """Return the number of failed queries by error type, most frequent first."""
        if isinstance(self.outcomes, OutcomeTable):
            return {}
        counts = Counter(o.error_type for o in self.outcomes if o.error_type is not None)
        return dict(counts.most_common())

    @property
    def failures(self) -> tuple[QueryOutcome, ...]:
        """Return the failed queries' outcomes, in query order."""
        if isinstance(self.outcomes, OutcomeTable):
            return ()
        return tuple(outcome for outcome in self.outcomes if outcome.failed)

    def as_run(self) -> dict[str, list[str]]:
        """Return ``{query id: [doc ids best first]}`` for the metric engine.

        A failed query maps to an empty ranking here; the monitor's own measurements leave it
        out (``evaluate(..., exclude_failed=True)``), so it is never counted as a miss there.
        """
        return {outcome.query_id: list(outcome.retrieved_ids) for outcome in self.outcomes}

    def ranking_columns(self) -> TrecColumns | None:
        """Return the rankings as a TREC run's columns when the run holds them as arrays (a
        bulk answer: every query answered), else None."""
        if isinstance(self.outcomes, OutcomeTable):
            return self.outcomes.columns()
        return None
