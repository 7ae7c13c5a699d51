"""What a comparison of a run with its baseline produces: small frozen records."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal

from monitor.compare.coverage import CoverageChange
from monitor.compare.overlap import Overlap
from monitor.config.common import Severity
from monitor.config.model import Check
from monitor.errors import UsageError

#: The outcome of one rule.
#: ``breach``: over its threshold (and, for quality rules, significant and persistent);
#: ``insufficient_evidence``: over its threshold but not significant (reported, not alerted);
#: ``pending``: a significant breach not yet seen in enough recent runs (persistence);
#: ``skipped``: could not be evaluated (no baseline, figure unknown, eval set changed);
#: ``unjudged``: a quality breach held because judgment coverage at the metric's k fell by
#: more than ``coverage.max_drop``: labels are needed before it can be called a regression;
#: ``unverified``: a ``judge_agreement`` rule whose judge and people share too few graded
#: pairs to say (shown, not alerted).
RuleStatus = Literal[
    "ok", "breach", "insufficient_evidence", "pending", "skipped", "unjudged", "unverified"
]

#: The verdict of a whole comparison.
Verdict = Literal[
    "ok", "regression", "unjudged", "insufficient_evidence", "no_baseline", "evalset_changed"
]

#: How a query got worse.
Change = Literal["lost_hit", "moved_down", "recall_fell", "score_fell"]

#: The outcome of one invariant: ``breach`` (some query broke it, exactly: no significance),
#: ``ok``, or ``skipped`` (nothing to check: no baseline, eval set changed, query unknown).
InvariantStatus = Literal["ok", "breach", "skipped"]

#: The kinds of invariant, as their YAML keys.
InvariantKind = Literal["must_include", "no_lost_hits"]


@dataclass(frozen=True, slots=True)
class RuleOutcome:
    """One rule applied to the current run (and its baseline where the rule needs one)."""

    rule: str  # e.g. "recall@5 max_drop", "latency_p95_seconds_max"
    check: Check
    metric: str  # the figure checked: a metric name or e.g. "latency_p95_seconds"
    threshold: float
    severity: Severity
    status: RuleStatus
    current: float | None = None
    baseline: float | None = None
    delta: float | None = None  # current - baseline
    p_value: float | None = None
    ci_low: float | None = None  # confidence interval of the delta (or of the current mean)
    ci_high: float | None = None
    quality: bool = False  # a quality metric rule (significance applies)
    message: str = ""
    #: Judged queries a quality rule left out because the search failed for them (in either
    #: run when compared with a baseline): failures are the error rate's, not quality.
    left_out: int = 0
    #: Read the judge-corrected (PPI) figures of ``alert_labels: calibrated``.
    calibrated: bool = False

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "check", Check(self.check))
        except ValueError:
            known = ", ".join(check.value for check in Check)
            raise UsageError(f"rule check {self.check!r}: expected one of {known}") from None

    @property
    def breached(self) -> bool:
        """Return whether the rule fires an alert."""
        return self.status == "breach"

    @property
    def ci_method(self) -> str:
        """Return how the interval was computed: ``"t"`` (a ``min`` rule's Student t interval
        of the current mean) or ``"bootstrap"`` (a drop rule's percentile bootstrap interval
        of the mean per-query delta), or ``"PPI normal"`` when the rule read the calibrated
        figures (:mod:`monitor.compare.ppi`)."""
        if self.calibrated:
            return "PPI normal"
        return "t" if self.check is Check.MIN else "bootstrap"

    @property
    def ci_label(self) -> str:
        """Return the interval's name for people, e.g. ``"bootstrap 95% CI of delta"``."""
        if self.check is Check.JUDGE_AGREEMENT:  # of the statistic itself, over queries
            return f"bootstrap 95% CI of {self.metric}"
        bounds = "mean" if self.check is Check.MIN else "delta"
        return f"{self.ci_method} 95% CI of {bounds}"

    @property
    def relative_delta(self) -> float | None:
        """Return the change as a share of the baseline, or None when it has no meaning."""
        if self.current is None or self.baseline is None or not self.baseline:
            return None
        return (self.current - self.baseline) / abs(self.baseline)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready form (the check by its YAML key)."""
        out = {name: getattr(self, name) for name in self.__slots__}
        out["check"] = self.check.value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RuleOutcome:
        """Return the outcome :meth:`to_dict` wrote."""
        return cls(**_known(cls, data))


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
    #: The means with unjudged documents removed from the rankings first (trec_eval ``-J``),
    #: None when the judgments were not at hand.
    judged_only_baseline: float | None = None
    judged_only_current: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready form."""
        return {name: getattr(self, name) for name in self.__slots__}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MetricChange:
        """Return the change :meth:`to_dict` wrote."""
        return cls(**_known(cls, data))


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

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QueryDiff:
        """Return the diff :meth:`to_dict` wrote."""
        known = _known(cls, data)
        for name in ("expected_ids", "baseline_ids", "current_ids"):
            known[name] = tuple(known[name])
        return cls(**known)


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

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SegmentChange:
        """Return the segment change :meth:`to_dict` wrote."""
        return cls(**_known(cls, data))


@dataclass(frozen=True, slots=True)
class InvariantQuery:
    """One query that broke an invariant: the ids expected in the current top ``k`` and the
    current top ``k`` itself."""

    query_id: str
    k: int
    expected_ids: tuple[str, ...]
    retrieved_ids: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "expected_ids", tuple(self.expected_ids))
        object.__setattr__(self, "retrieved_ids", tuple(self.retrieved_ids))

    @property
    def missing_ids(self) -> tuple[str, ...]:
        """Return the expected ids not in the current top ``k``."""
        shown = set(self.retrieved_ids)
        return tuple(doc for doc in self.expected_ids if doc not in shown)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready form."""
        return {
            "query_id": self.query_id,
            "k": self.k,
            "expected_ids": list(self.expected_ids),
            "retrieved_ids": list(self.retrieved_ids),
            "missing_ids": list(self.missing_ids),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> InvariantQuery:
        """Return the query :meth:`to_dict` wrote."""
        known = _known(cls, data)
        for name in ("expected_ids", "retrieved_ids"):
            known[name] = tuple(known[name])
        return cls(**known)


@dataclass(frozen=True, slots=True)
class InvariantOutcome:
    """One invariant checked on the current run (and the baseline for a policy over it).

    ``name`` is the invariant's (``must_include Q34``, ``no_lost_hits@5``); ``queries`` the
    queries that broke it, in eval-set order; ``message`` says what was checked and which
    queries were skipped (failed in the current run, or unknown to the eval set).
    """

    name: str
    kind: InvariantKind
    status: InvariantStatus
    queries: tuple[InvariantQuery, ...] = ()
    message: str = ""
    severity: Severity = "warning"

    def __post_init__(self) -> None:
        object.__setattr__(self, "queries", tuple(self.queries))

    @property
    def breached(self) -> bool:
        """Return whether the invariant fires an alert."""
        return self.status == "breach"

    @property
    def rule(self) -> str:
        """Return the name of the invariant's alert rule, e.g. ``invariant no_lost_hits@5``."""
        return f"invariant {self.name}"

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready form."""
        return {
            "name": self.name,
            "kind": self.kind,
            "status": self.status,
            "severity": self.severity,
            "message": self.message,
            "queries": [query.to_dict() for query in self.queries],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> InvariantOutcome:
        """Return the outcome :meth:`to_dict` wrote."""
        known = _known(cls, data)
        known["queries"] = tuple(InvariantQuery.from_dict(q) for q in known.get("queries", ()))
        return cls(**known)


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
    #: What the run did beside the comparison that is not a problem (a judge's round).
    notes: tuple[str, ...] = ()
    invariants: tuple[InvariantOutcome, ...] = ()
    #: Judgment coverage against the baseline at each k a quality rule reads.
    coverage: tuple[CoverageChange, ...] = ()
    #: The overlap of the current top k with the baseline's (None without a baseline).
    overlap: Overlap | None = None
    #: The run's per-query detail was pruned: the verdict, rules and metric changes are those
    #: kept when it ran (``monitor.compare.history.kept_comparison``), not computed again.
    pruned: bool = False

    @property
    def held(self) -> tuple[RuleOutcome, ...]:
        """Return the quality breaches held for lack of judgments (status ``unjudged``)."""
        return tuple(rule for rule in self.rules if rule.status == "unjudged")

    def coverage_at(self, k: int) -> CoverageChange | None:
        """Return the coverage change at ``k``, or None when it was not measured."""
        return next((c for c in self.coverage if c.k == k), None)

    @property
    def breaches(self) -> tuple[RuleOutcome, ...]:
        """Return the rules that fire an alert."""
        return tuple(rule for rule in self.rules if rule.breached)

    @property
    def invariant_breaches(self) -> tuple[InvariantOutcome, ...]:
        """Return the invariants that fire an alert."""
        return tuple(invariant for invariant in self.invariants if invariant.breached)

    @property
    def regression(self) -> bool:
        """Return whether any rule or invariant fires."""
        return any(rule.breached for rule in self.rules) or bool(self.invariant_breaches)

    def driving_segment(
        self, key: str | None = None, *, metric: str | None = None
    ) -> SegmentChange | None:
        """Return the segment (of ``key`` if given) with the most negative contribution to
        ``metric``'s change (the primary metric's when None), or None when none lost."""
        candidates = [s for s in self.segments_for(metric) if key is None or s.key == key]
        worst = min(candidates, key=lambda s: s.contribution, default=None)
        return worst if worst is not None and worst.contribution < 0 else None

    def segments_for(self, metric: str | None = None) -> tuple[SegmentChange, ...]:
        """Return the segment breakdown of ``metric`` (the primary metric's when None)."""
        metric = self.primary_metric if metric is None else metric
        return tuple(segment for segment in self.segments if segment.metric == metric)

    def worse_for(self, metric: str | None = None) -> tuple[QueryDiff, ...]:
        """Return the queries that got worse on ``metric`` (the primary metric when None)."""
        metric = self.primary_metric if metric is None else metric
        return tuple(diff for diff in self.worse_queries if diff.metric == metric)

    def to_dict(self, *, lazy_rows: bool = False) -> dict[str, Any]:
        """Return a JSON-ready form (``lazy_rows``: :meth:`Overlap.to_dict`'s)."""
        return {
            "suite": self.suite,
            "run_id": self.run_id,
            "baseline_run_id": self.baseline_run_id,
            "verdict": self.verdict,
            "pruned": self.pruned,
            "primary_metric": self.primary_metric,
            "rules": [rule.to_dict() for rule in self.rules],
            "metrics": [change.to_dict() for change in self.metrics],
            "worse_queries": [diff.to_dict() for diff in self.worse_queries],
            "segments": [segment.to_dict() for segment in self.segments],
            "warnings": list(self.warnings),
            "notes": list(self.notes),
            "invariants": [invariant.to_dict() for invariant in self.invariants],
            "coverage": [change.to_dict() for change in self.coverage],
            "overlap": None if self.overlap is None else self.overlap.to_dict(lazy_rows=lazy_rows),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Comparison:
        """Return the comparison :meth:`to_dict` wrote."""
        overlap = data["overlap"]
        return cls(
            suite=data["suite"],
            run_id=data["run_id"],
            baseline_run_id=data["baseline_run_id"],
            verdict=data["verdict"],
            rules=tuple(RuleOutcome.from_dict(rule) for rule in data["rules"]),
            metrics=tuple(MetricChange.from_dict(change) for change in data["metrics"]),
            worse_queries=tuple(QueryDiff.from_dict(diff) for diff in data["worse_queries"]),
            segments=tuple(SegmentChange.from_dict(segment) for segment in data["segments"]),
            warnings=tuple(data["warnings"]),
            primary_metric=data["primary_metric"],
            notes=tuple(data["notes"]),
            invariants=tuple(InvariantOutcome.from_dict(i) for i in data["invariants"]),
            coverage=tuple(CoverageChange.from_dict(change) for change in data["coverage"]),
            overlap=None if overlap is None else Overlap.from_dict(overlap),
            pruned=data["pruned"],
        )


def _known(record: type[Any], data: Mapping[str, Any]) -> dict[str, Any]:
    """Return the entries of ``data`` that are fields of ``record`` (derived ones dropped)."""
    return {item.name: data[item.name] for item in fields(record) if item.name in data}
