"""What a comparison of a run with its baseline produces: small frozen records."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

#: The outcome of one rule.
#: ``breach``: over its threshold (and, for quality rules, significant and persistent);
#: ``insufficient_evidence``: over its threshold but not significant (reported, not alerted);
#: ``pending``: a significant breach not yet seen in enough recent runs (persistence);
#: ``skipped``: could not be evaluated (no baseline, figure unknown, eval set changed).
RuleStatus = Literal["ok", "breach", "insufficient_evidence", "pending", "skipped"]

#: The verdict of a whole comparison.
Verdict = Literal["ok", "regression", "insufficient_evidence", "no_baseline", "evalset_changed"]

#: How a query got worse.
Change = Literal["lost_hit", "moved_down", "recall_fell", "score_fell"]


@dataclass(frozen=True, slots=True)
class RuleOutcome:
    """One rule applied to the current run (and its baseline where the rule needs one)."""

    rule: str  # e.g. "recall@5 max_drop", "latency_p95_seconds_max"
    check: str  # the rule's YAML key, e.g. "max_drop"
    metric: str  # the figure checked: a metric name or e.g. "latency_p95_seconds"
    threshold: float
    severity: str
    status: RuleStatus
    current: float | None = None
    baseline: float | None = None
    delta: float | None = None  # current - baseline
    p_value: float | None = None
    ci_low: float | None = None  # confidence interval of the delta (or of the current mean)
    ci_high: float | None = None
    quality: bool = False  # a quality metric rule (significance applies)
    message: str = ""

    @property
    def breached(self) -> bool:
        """Return whether the rule fires an alert."""
        return self.status == "breach"

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready form."""
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass(frozen=True, slots=True)
class MetricChange:
    """One metric's mean in the baseline and the current run, with a t-interval of the delta."""

    metric: str
    baseline: float
    current: float
    delta: float
    ci_low: float | None
    ci_high: float | None
    n: int

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready form."""
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass(frozen=True, slots=True)
class QueryDiff:
    """A query that got worse on ``metric``: what was expected and what came back."""

    query_id: str
    query: str
    metric: str
    baseline: float
    current: float
    change: Change
    expected_ids: tuple[str, ...]
    baseline_ids: tuple[str, ...]
    current_ids: tuple[str, ...]
    baseline_first_rank: int | None
    current_first_rank: int | None

    @property
    def loss(self) -> float:
        """Return how much the query lost (positive)."""
        return self.baseline - self.current

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready form."""
        out = {name: getattr(self, name) for name in self.__slots__}
        for name in ("expected_ids", "baseline_ids", "current_ids"):
            out[name] = list(out[name])
        out["loss"] = self.loss
        return out


@dataclass(frozen=True, slots=True)
class SegmentChange:
    """One metadata segment (e.g. ``language=fr``) and its share of the overall change.

    ``contribution`` is the segment's summed per-query delta divided by the number of
    compared queries: the contributions of a key's segments add up to the overall delta.
    """

    key: str
    value: str
    metric: str
    n: int
    baseline: float
    current: float
    delta: float
    contribution: float

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready form."""
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass(frozen=True, slots=True)
class Comparison:
    """A run compared with its suite's baseline: a verdict and everything behind it."""

    suite: str
    run_id: int | None
    baseline_run_id: int | None
    verdict: Verdict
    rules: tuple[RuleOutcome, ...] = ()
    metrics: tuple[MetricChange, ...] = ()
    worse_queries: tuple[QueryDiff, ...] = ()
    segments: tuple[SegmentChange, ...] = ()
    warnings: tuple[str, ...] = ()
    primary_metric: str | None = None

    @property
    def breaches(self) -> tuple[RuleOutcome, ...]:
        """Return the rules that fire an alert."""
        return tuple(rule for rule in self.rules if rule.breached)

    @property
    def regression(self) -> bool:
        """Return whether any rule fires."""
        return any(rule.breached for rule in self.rules)

    def driving_segment(self, key: str | None = None) -> SegmentChange | None:
        """Return the segment with the most negative contribution (of ``key`` if given)."""
        candidates = [s for s in self.segments if key is None or s.key == key]
        worst = min(candidates, key=lambda s: s.contribution, default=None)
        return worst if worst is not None and worst.contribution < 0 else None

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready form."""
        return {
            "suite": self.suite,
            "run_id": self.run_id,
            "baseline_run_id": self.baseline_run_id,
            "verdict": self.verdict,
            "primary_metric": self.primary_metric,
            "rules": [rule.to_dict() for rule in self.rules],
            "metrics": [change.to_dict() for change in self.metrics],
            "worse_queries": [diff.to_dict() for diff in self.worse_queries],
            "segments": [segment.to_dict() for segment in self.segments],
            "warnings": list(self.warnings),
        }
