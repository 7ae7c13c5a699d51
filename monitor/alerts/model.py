"""Alerts: what the monitor tells people, as small frozen records.

An :class:`Alert` is about one condition of one suite, named by its :class:`AlertIdentity`
(kind, suite, rule and metric); the identity gives the alert its ``fingerprint``, which stays
the same from run to run, so that receivers, the lifecycle and the outbox recognise a
condition they have seen before. The kinds, kept apart everywhere:

- ``regression``: a rule of the suite broke (``recall@5 max_drop``, ``error_rate_max``);
  :class:`RegressionDetails` holds the comparison's own records: the rule's outcome, the
  segment that drove the metric's change and the queries that got worse on it. An invariant
  that broke (``invariant no_lost_hits@5``) is a regression too, with
  :class:`InvariantDetails`: the invariant's outcome, query by query.
- ``monitor_failure``: the monitor could not measure (:class:`FailureReason`: eval set
  missing, search backend down, error budget exceeded, store unwritable).
- ``labels_needed``: a quality breach was held because the run's top k holds documents the
  eval set has not judged (verdict ``unjudged``); rule :data:`LABELS_NEEDED_RULE`, its
  description saying how many came in, in how many queries, and where to label them.
- ``query_drift``: a suite's query drift check (:mod:`monitor.drift`) found the current
  window's queries unlike the reference window's; its rule is the check's name, its
  description the figures.

The records carry no wording: :mod:`monitor.alerts.build` makes alerts, with the sentences
of :mod:`monitor.alerts.text`. Alerts start ``firing``; :meth:`Alert.resolved` gives the same
alert resolved. Times are timezone-aware.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import Enum
from types import MappingProxyType
from typing import Any, Final, Literal

from monitor.compare.records import InvariantOutcome, QueryDiff, RuleOutcome, SegmentChange
from monitor.config.common import LinksConfig, Severity
from monitor.config.model import Check
from monitor.errors import UsageError

AlertKind = Literal["regression", "monitor_failure", "labels_needed", "query_drift"]
AlertStatus = Literal["firing", "resolved"]

KINDS: Final[tuple[AlertKind, ...]] = (
    "regression",
    "monitor_failure",
    "labels_needed",
    "query_drift",
)
STATUSES: Final[tuple[AlertStatus, ...]] = ("firing", "resolved")
#: Severities from the least to the most serious.
SEVERITIES: Final[tuple[Severity, ...]] = ("info", "warning", "critical")

#: The ``alertname`` label of each kind of alert.
ALERT_NAMES: Final[Mapping[AlertKind, str]] = MappingProxyType(
    {
        "regression": "RetrievalRegression",
        "monitor_failure": "RetrievalMonitorFailure",
        "labels_needed": "RetrievalLabelsNeeded",
        "query_drift": "RetrievalQueryDrift",
    }
)

#: The rule name of the one labels-needed alert of a suite.
LABELS_NEEDED_RULE: Final = "labels_needed"

#: The ``service`` label of every alert the monitor raises itself, as its Prometheus rules
#: set it: receivers route the monitor's alerts on it (``alerts/alertmanager``).
SERVICE: Final = "retrieval-monitor"

#: The labels every alert carries, which the static labels of a suite cannot replace.
IDENTITY_LABELS: Final = ("alertname", "service", "suite", "rule", "metric", "severity")

#: Version of the dictionary form written by :meth:`Alert.to_dict` (version 1 still reads).
FORMAT_VERSION: Final = 2


class FailureReason(str, Enum):
    """Why the monitor could not measure a suite; the value is the alert's rule name.

    The members are in the order a run meets them: a run that stopped at one has checked
    the ones before it (:func:`failures_checked`).
    """

    SUITE_LOCKED = "suite_locked"
    EVALSET_MISSING = "evalset_missing"
    RUN_TERMINATED = "run_terminated"
    SEARCH_BACKEND_DOWN = "search_backend_down"
    ERROR_BUDGET_EXCEEDED = "error_budget_exceeded"
    NOT_MEASURED = "not_measured"
    MONITOR_FAULT = "monitor_fault"
    STORE_UNWRITABLE = "store_unwritable"


def failures_checked(failed: FailureReason | str | None) -> frozenset[str]:
    """Return the failure rules a run has checked when it stopped at ``failed``.

    A run that stopped at ``failed`` got past the stages before it (their alerts may
    resolve) and never reached those after it (their alerts stay as they are). ``None``
    means the run completed: every failure rule was checked. Pass the result as
    ``evaluated`` to :meth:`~monitor.alerts.lifecycle.AlertLifecycle.update`.
    """
    order = list(FailureReason)
    if failed is None:
        return frozenset(reason.value for reason in order)
    stop = order.index(FailureReason(failed))
    return frozenset(reason.value for reason in order[: stop + 1])


@dataclass(frozen=True, slots=True)
class AlertIdentity:
    """What an alert is about: its kind, suite, rule and metric (``None`` when no metric).

    Two alerts with the same identity are the same condition seen at different times.
    """

    kind: AlertKind
    suite: str
    rule: str
    metric: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise UsageError(f"alert kind {self.kind!r}: expected one of {', '.join(KINDS)}")
        if not self.suite or not self.rule:
            raise UsageError("an alert needs a suite and a rule name")

    @property
    def fingerprint(self) -> str:
        """Return 16 hex digits derived from the identity alone, stable across runs."""
        joined = "\x1f".join((self.kind, self.suite, self.rule, self.metric or ""))
        return hashlib.sha256(joined.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class RegressionDetails:
    """The evidence behind a regression alert, as the comparison found it.

    ``outcome`` is the breached rule's outcome (figure, check, threshold, values, p-value and
    interval of the change); ``segment`` the segment that drove the change of the outcome's
    metric, and ``worse_queries`` the queries that got worse on it, worst first.
    ``confidence`` is the level of the interval when known.
    """

    outcome: RuleOutcome
    segment: SegmentChange | None = None
    worse_queries: tuple[QueryDiff, ...] = ()
    confidence: float | None = None
    run_id: int | None = None
    baseline_run_id: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "worse_queries", tuple(self.worse_queries))
        metric = self.outcome.metric
        if self.segment is not None and self.segment.metric != metric:
            raise UsageError(f"segment of {self.segment.metric}, not of the rule's {metric}")
        for query in self.worse_queries:
            if query.metric != metric:
                raise UsageError(f"worse query of {query.metric}, not of the rule's {metric}")


@dataclass(frozen=True, slots=True)
class InvariantDetails:
    """The evidence behind an invariant's alert: its outcome, with the queries that broke it
    and what each was expected to return and returned."""

    invariant: InvariantOutcome
    run_id: int | None = None
    baseline_run_id: int | None = None


@dataclass(frozen=True, slots=True)
class LabelsNeededDetails:
    """The evidence behind a labels-needed alert: at the largest held cutoff ``k``,
    ``unjudged`` more unjudged documents entered the top k in ``queries`` queries, coverage
    (``judged@k``) going from ``baseline`` to ``current``; ``rules`` were held, ``todo`` is
    the command that lists the documents and ``queue`` the labeling queue's URL when set."""

    k: int
    unjudged: int
    queries: int
    baseline: float
    current: float
    todo: str
    rules: tuple[str, ...] = ()
    queue: str | None = None
    run_id: int | None = None
    baseline_run_id: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "rules", tuple(self.rules))


#: The evidence an alert carries: a rule's, an invariant's, or the labels it needs.
Details = RegressionDetails | InvariantDetails | LabelsNeededDetails


@dataclass(frozen=True, slots=True)
class Alert:
    """One condition of one suite at one time: firing, or resolved at ``ends_at``.

    ``labels`` are the suite's static labels (from config); :meth:`label_set` adds the
    identity labels, which win over static ones of the same name. ``description`` is the
    longer text; ``details`` the evidence of a regression, a rule's or an invariant's, or of
    the labels needed (None for monitor failures).
    """

    identity: AlertIdentity
    severity: Severity
    summary: str
    starts_at: datetime
    status: AlertStatus = "firing"
    ends_at: datetime | None = None
    description: str = ""
    details: Details | None = None
    labels: Mapping[str, str] = field(default_factory=dict, hash=False)
    links: LinksConfig = field(default_factory=LinksConfig)

    def __post_init__(self) -> None:
        object.__setattr__(self, "labels", MappingProxyType(dict(self.labels)))
        if self.severity not in SEVERITIES:
            raise UsageError(
                f"alert severity {self.severity!r}: expected one of {', '.join(SEVERITIES)}"
            )
        if self.status not in STATUSES:
            raise UsageError(f"alert status {self.status!r}: expected firing or resolved")
        if not self.summary:
            raise UsageError("an alert needs a summary")
        for name, moment in (("starts_at", self.starts_at), ("ends_at", self.ends_at)):
            if moment is not None and moment.utcoffset() is None:
                raise UsageError(f"alert {name} must be timezone-aware, got {moment.isoformat()}")
        if (self.status == "resolved") != (self.ends_at is not None):
            raise UsageError("a resolved alert has ends_at, a firing one has none")
        for name, value in self.labels.items():
            if not isinstance(name, str) or not isinstance(value, str):
                raise UsageError(f"alert label {name!r}: names and values must be strings")

    # Reading -------------------------------------------------------------------------------

    @property
    def fingerprint(self) -> str:
        """Return the identity's fingerprint."""
        return self.identity.fingerprint

    @property
    def kind(self) -> AlertKind:
        """Return ``regression`` or ``monitor_failure``."""
        return self.identity.kind

    @property
    def suite(self) -> str:
        """Return the suite's name."""
        return self.identity.suite

    @property
    def rule(self) -> str:
        """Return the rule's name (for a failure, the :class:`FailureReason` value)."""
        return self.identity.rule

    @property
    def firing(self) -> bool:
        """Return whether the alert is firing."""
        return self.status == "firing"

    def resolved(self, at: datetime) -> Alert:
        """Return this alert resolved at ``at``."""
        return replace(self, status="resolved", ends_at=at)

    def started(self, at: datetime) -> Alert:
        """Return this alert with ``starts_at`` set to ``at`` (when the condition began)."""
        return replace(self, starts_at=at)

    def label_set(self) -> dict[str, str]:
        """Return the labels that identify the alert to receivers: static ones, then
        ``alertname``, ``service``, ``suite``, ``rule``, ``metric`` (when set) and
        ``severity``."""
        labels = {k: v for k, v in self.labels.items() if k not in IDENTITY_LABELS}
        labels["alertname"] = ALERT_NAMES[self.kind]
        labels["service"] = SERVICE
        labels["suite"] = self.suite
        labels["rule"] = self.rule
        if self.identity.metric is not None:
            labels["metric"] = self.identity.metric
        labels["severity"] = self.severity
        return labels

    # Dictionary form -----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready form that :meth:`from_dict` reads back into an equal alert."""
        details = self.details
        return {
            "version": FORMAT_VERSION,
            "kind": self.kind,
            "suite": self.suite,
            "rule": self.rule,
            "metric": self.identity.metric,
            "fingerprint": self.fingerprint,
            "status": self.status,
            "severity": self.severity,
            "summary": self.summary,
            "description": self.description,
            "starts_at": self.starts_at.isoformat(),
            "ends_at": None if self.ends_at is None else self.ends_at.isoformat(),
            "labels": dict(self.labels),
            "links": {
                "report": self.links.report,
                "dashboard": self.links.dashboard,
                "runbook": self.links.runbook,
            },
            "details": None if details is None else _details_dict(details),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Alert:
        """Return the alert written by :meth:`to_dict`; raise UsageError for another shape."""
        try:
            version = data.get("version")
            if version not in (1, FORMAT_VERSION):
                raise UsageError(f"alert form version {version!r} is not known")
            links = data.get("links") or {}
            raw_details = data.get("details")
            ends_at = data.get("ends_at")
            return cls(
                identity=AlertIdentity(data["kind"], data["suite"], data["rule"], data["metric"]),
                severity=data["severity"],
                summary=data["summary"],
                description=data.get("description", ""),
                status=data["status"],
                starts_at=datetime.fromisoformat(data["starts_at"]),
                ends_at=None if ends_at is None else datetime.fromisoformat(ends_at),
                labels=dict(data.get("labels") or {}),
                links=LinksConfig(
                    report=links.get("report"),
                    dashboard=links.get("dashboard"),
                    runbook=links.get("runbook"),
                ),
                details=None
                if raw_details is None
                else (_details_v1 if version == 1 else _details_from)(raw_details, data),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise UsageError(f"not an alert in dictionary form: {type(exc).__name__}") from None


def _finite(value: float | None) -> float | None:
    """Return ``value``, or None for NaN and infinities (JSON has neither)."""
    return None if value is None or not math.isfinite(value) else value


def _json_ready(data: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _finite(v) if isinstance(v, float) else v for k, v in data.items()}


def _details_dict(details: Details) -> dict[str, Any]:
    if isinstance(details, LabelsNeededDetails):
        return {
            "labels_needed": {
                "k": details.k,
                "unjudged_documents": details.unjudged,
                "queries": details.queries,
                "coverage": {
                    "baseline": _finite(details.baseline),
                    "current": _finite(details.current),
                },
                "rules": list(details.rules),
                "todo": details.todo,
                "queue": details.queue,
            },
            "run_id": details.run_id,
            "baseline_run_id": details.baseline_run_id,
        }
    if isinstance(details, InvariantDetails):
        return {
            "invariant": details.invariant.to_dict(),
            "run_id": details.run_id,
            "baseline_run_id": details.baseline_run_id,
        }
    segment = details.segment
    return {
        "outcome": _json_ready(details.outcome.to_dict()),
        "segment": None if segment is None else _json_ready(segment.to_dict()),
        "worse_queries": [_json_ready(query.to_dict()) for query in details.worse_queries],
        "confidence": details.confidence,
        "run_id": details.run_id,
        "baseline_run_id": details.baseline_run_id,
    }


def _not_a_number(data: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """Return ``data`` with NaN for the float fields ``names`` that :func:`_json_ready` wrote
    as None (a version-1 segment's unknown contribution, for one)."""
    return {**data, **{name: math.nan for name in names if name in data and data[name] is None}}


def _details_from(data: Mapping[str, Any], alert: Mapping[str, Any]) -> Details:
    if "labels_needed" in data:
        needed = data["labels_needed"]
        coverage = needed["coverage"]
        return LabelsNeededDetails(
            k=int(needed["k"]),
            unjudged=int(needed["unjudged_documents"]),
            queries=int(needed["queries"]),
            baseline=math.nan if coverage["baseline"] is None else float(coverage["baseline"]),
            current=math.nan if coverage["current"] is None else float(coverage["current"]),
            todo=needed["todo"],
            rules=tuple(needed.get("rules", ())),
            queue=needed.get("queue"),
            run_id=data.get("run_id"),
            baseline_run_id=data.get("baseline_run_id"),
        )
    if "invariant" in data:
        return InvariantDetails(
            invariant=InvariantOutcome.from_dict(data["invariant"]),
            run_id=data.get("run_id"),
            baseline_run_id=data.get("baseline_run_id"),
        )
    segment = data.get("segment")
    return RegressionDetails(
        outcome=RuleOutcome.from_dict(data["outcome"]),
        segment=None
        if segment is None
        else SegmentChange.from_dict(
            _not_a_number(segment, ("baseline", "current", "delta", "contribution"))
        ),
        worse_queries=tuple(
            QueryDiff.from_dict(_not_a_number(query, ("baseline", "current")))
            for query in data["worse_queries"]
        ),
        confidence=data.get("confidence"),
        run_id=data.get("run_id"),
        baseline_run_id=data.get("baseline_run_id"),
    )


def _details_v1(data: Mapping[str, Any], alert: Mapping[str, Any]) -> RegressionDetails:
    """Read the evidence of an alert that an earlier version kept in the store."""
    metric, current, baseline = data["metric"], data.get("current"), data.get("baseline")
    delta = None if current is None or baseline is None else current - baseline
    outcome = RuleOutcome(
        rule=alert["rule"],
        check=Check(data["check"]),
        metric=metric,
        threshold=float(data["threshold"]),
        severity=alert["severity"],
        status="breach",
        current=current,
        baseline=baseline,
        delta=delta,
        p_value=data.get("p_value"),
        ci_low=data.get("ci_low"),
        ci_high=data.get("ci_high"),
        quality=alert.get("metric") is not None,
    )
    segment = data.get("segment")
    return RegressionDetails(
        outcome=outcome,
        segment=None
        if segment is None
        else SegmentChange(
            key=segment["key"],
            value=segment["value"],
            metric=metric,
            n=int(segment["n"]),
            baseline=float(segment["baseline"]),
            current=float(segment["current"]),
            delta=float(segment["current"]) - float(segment["baseline"]),
            contribution=math.nan,
        ),
        worse_queries=tuple(
            QueryDiff(
                query_id=query["query_id"],
                query=query["query"],
                metric=metric,
                baseline=float(query["baseline"]),
                current=float(query["current"]),
                change="score_fell",
                expected_ids=tuple(query.get("expected_ids", ())),
                baseline_ids=(),
                current_ids=tuple(query.get("retrieved_ids", ())),
                baseline_first_rank=None,
                current_first_rank=None,
            )
            for query in data.get("worse_queries", ())
        ),
        confidence=data.get("confidence"),
        run_id=data.get("run_id"),
        baseline_run_id=data.get("baseline_run_id"),
    )
