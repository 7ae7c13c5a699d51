"""What one run of a suite produced, as the composer and the publish stage both read it.

:class:`SuiteOutcome` is built by :func:`monitor.job.run_suite` once the run is stored and
compared; :class:`Published` is what the export and alert stages (:mod:`monitor.job.publish`)
then did with it. Both are small frozen records that the stages pass on and never change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from monitor.compare import Comparison
    from monitor.evalset import EvalSet
    from monitor.judgments.agreement import Agreement
    from monitor.metrics.evaluation import EvaluationResult
    from monitor.runner import RunResult
    from monitor.store.records import RunRecord


@dataclass(frozen=True, slots=True)
class Published:
    """What the export and alert stages did: export errors, alerts firing and resolved, and
    how many notifications wait in the outbox for the next run."""

    export_errors: tuple[str, ...] = ()
    firing: tuple[str, ...] = ()
    resolved: tuple[str, ...] = ()
    undelivered: int = 0


@dataclass(frozen=True, slots=True)
class SuiteOutcome:
    """One completed run of a suite: the stored run, its comparison with the baseline, the
    evaluation and search result behind them, the eval set, and what was published.

    ``baseline`` is the suite's pinned baseline as stored (before any re-scoring under
    changed judgments), None when there was none: the readers of the run need not load it
    again. ``agreement`` is the suite judge's agreement with human grades (None without a
    judge).
    """

    suite: str
    run: RunRecord
    comparison: Comparison
    evaluation: EvaluationResult
    #: None when the run was asked not to keep its outcomes (``run_suite(keep_outcomes=False)``).
    result: RunResult | None
    evalset: EvalSet
    published: Published = field(default_factory=Published)
    baseline: RunRecord | None = None
    agreement: Agreement | None = None

    @property
    def run_id(self) -> int | None:
        """Return the stored run's id."""
        return self.run.run_id
