"""Alerts: what the monitor tells people, as small frozen records.

An :class:`Alert` is about one condition of one suite, named by its :class:`AlertIdentity`
(kind, suite, rule and metric); the identity gives the alert its ``fingerprint``, which stays
the same from run to run, so that receivers, the lifecycle and the outbox recognise a
condition they have seen before. There are two kinds, kept apart everywhere:

- ``regression``: a rule of the suite broke (``recall@5 max_drop``, ``error_rate_max``);
  :class:`RegressionDetails` says by how much, how sure the comparison is, which segment
  drove it and which queries got worse.
- ``monitor_failure``: the monitor could not measure (:class:`FailureReason`: eval set
  missing, search backend down, error budget exceeded, store unwritable).

Build alerts with :meth:`Alert.regression`, :meth:`Alert.from_outcome` (from a comparison's
rule outcome) and :meth:`Alert.monitor_failure`; they start ``firing``, and
:meth:`Alert.resolved` gives the same alert resolved. Times are timezone-aware.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import Enum
from types import MappingProxyType
from typing import Any, Final, Literal, Protocol

from monitor.alerts import text
from monitor.config.model import LinksConfig, RuleConfig, Severity
from monitor.errors import UsageError

AlertKind = Literal["regression", "monitor_failure"]
AlertStatus = Literal["firing", "resolved"]

KINDS: Final[tuple[AlertKind, ...]] = ("regression", "monitor_failure")
STATUSES: Final[tuple[AlertStatus, ...]] = ("firing", "resolved")
#: Severities from the least to the most serious.
SEVERITIES: Final[tuple[Severity, ...]] = ("info", "warning", "critical")

#: The ``alertname`` label of each kind of alert.
ALERT_NAMES: Final[Mapping[AlertKind, str]] = MappingProxyType(
    {"regression": "RetrievalRegression", "monitor_failure": "RetrievalMonitorFailure"}
)

#: The labels every alert carries, which the static labels of a suite cannot replace.
IDENTITY_LABELS: Final = ("alertname", "suite", "rule", "metric", "severity")

#: Version of the dictionary form written by :meth:`Alert.to_dict`.
FORMAT_VERSION: Final = 1


class FailureReason(str, Enum):
    """Why the monitor could not measure a suite; the value is the alert's rule name.

    The members are in the order a run meets them: a run that stopped at one has checked
    the ones before it (:func:`failures_checked`).
    """

    EVALSET_MISSING = "evalset_missing"
    SEARCH_BACKEND_DOWN = "search_backend_down"
    ERROR_BUDGET_EXCEEDED = "error_budget_exceeded"
    STORE_UNWRITABLE = "store_unwritable"

    @property
    def headline(self) -> str:
        """Return what went wrong, in a few words."""
        return _FAILURE_HEADLINES[self]


_FAILURE_HEADLINES: Final[Mapping[FailureReason, str]] = MappingProxyType(
    {
        FailureReason.EVALSET_MISSING: "the eval set cannot be read",
        FailureReason.SEARCH_BACKEND_DOWN: "the search backend is not answering",
        FailureReason.ERROR_BUDGET_EXCEEDED: "more queries failed than the error budget allows",
        FailureReason.STORE_UNWRITABLE: "the results cannot be written to the store",
    }
)


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
class WorseQuery:
    """A query that got worse: its metric value before and now, the ids it should find and
    the ids it retrieved (best first)."""

    query_id: str
    query: str
    baseline: float
    current: float
    expected_ids: tuple[str, ...] = ()
    retrieved_ids: tuple[str, ...] = ()

    @property
    def delta(self) -> float:
        """Return ``current - baseline`` (negative: worse)."""
        return self.current - self.baseline


@dataclass(frozen=True, slots=True)
class SegmentShift:
    """The segment of the eval set (``language=fr``) that drove a change, over ``n`` queries."""

    key: str
    value: str
    n: int
    baseline: float
    current: float

    @property
    def delta(self) -> float:
        """Return ``current - baseline`` (negative: worse)."""
        return self.current - self.baseline


@dataclass(frozen=True, slots=True)
class RegressionDetails:
    """The evidence behind a regression alert.

    ``metric`` is the figure checked (``recall@5``, ``error_rate``, ``latency_p95_seconds``),
    ``check`` the rule's check (``max_drop``) and ``threshold`` its limit. ``p_value`` and the
    interval ``ci_low``..``ci_high`` (of the change, at ``confidence`` when known) come from
    the paired comparison; ``segment`` is the segment that drove the change and
    ``worse_queries`` the queries that got worse, worst first.
    """

    metric: str
    check: str
    threshold: float
    current: float | None
    baseline: float | None = None
    p_value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    confidence: float | None = None
    segment: SegmentShift | None = None
    worse_queries: tuple[WorseQuery, ...] = ()
    run_id: int | None = None
    baseline_run_id: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "worse_queries", tuple(self.worse_queries))

    @property
    def delta(self) -> float | None:
        """Return ``current - baseline``, or None when either is unknown."""
        if self.current is None or self.baseline is None:
            return None
        return self.current - self.baseline

    @property
    def relative_delta(self) -> float | None:
        """Return the change as a share of the baseline, or None when it has no meaning."""
        delta = self.delta
        if delta is None or not self.baseline:
            return None
        return delta / abs(self.baseline)


class RuleOutcomeLike(Protocol):
    """What :meth:`Alert.from_outcome` reads from a comparison's rule outcome."""

    @property
    def rule(self) -> str: ...
    @property
    def check(self) -> str: ...
    @property
    def metric(self) -> str: ...
    @property
    def threshold(self) -> float: ...
    @property
    def severity(self) -> str: ...
    @property
    def current(self) -> float | None: ...
    @property
    def baseline(self) -> float | None: ...
    @property
    def p_value(self) -> float | None: ...
    @property
    def ci_low(self) -> float | None: ...
    @property
    def ci_high(self) -> float | None: ...
    @property
    def quality(self) -> bool: ...


class QueryDiffLike(Protocol):
    """What :meth:`Alert.from_outcome` reads from a comparison's per-query diff."""

    @property
    def query_id(self) -> str: ...
    @property
    def query(self) -> str: ...
    @property
    def metric(self) -> str: ...
    @property
    def baseline(self) -> float: ...
    @property
    def current(self) -> float: ...
    @property
    def expected_ids(self) -> tuple[str, ...]: ...
    @property
    def current_ids(self) -> tuple[str, ...]: ...


class SegmentChangeLike(Protocol):
    """What :meth:`Alert.from_outcome` reads from a comparison's segment breakdown."""

    @property
    def key(self) -> str: ...
    @property
    def value(self) -> str: ...
    @property
    def n(self) -> int: ...
    @property
    def baseline(self) -> float: ...
    @property
    def current(self) -> float: ...


@dataclass(frozen=True, slots=True)
class Alert:
    """One condition of one suite at one time: firing, or resolved at ``ends_at``.

    ``labels`` are the suite's static labels (from config); :meth:`label_set` adds the
    identity labels, which win over static ones of the same name. ``description`` is the
    longer text; ``details`` the evidence of a regression (None for monitor failures).
    """

    identity: AlertIdentity
    severity: Severity
    summary: str
    starts_at: datetime
    status: AlertStatus = "firing"
    ends_at: datetime | None = None
    description: str = ""
    details: RegressionDetails | None = None
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

    # Building ------------------------------------------------------------------------------

    @classmethod
    def regression(
        cls,
        suite: str,
        rule: RuleConfig | str,
        details: RegressionDetails,
        *,
        at: datetime,
        metric: str | None = None,
        severity: Severity | None = None,
        summary: str | None = None,
        labels: Mapping[str, str] | None = None,
        links: LinksConfig | None = None,
        pipeline: str | None = None,
    ) -> Alert:
        """Return a firing regression alert of ``suite`` for ``rule``, seen at ``at``.

        With a :class:`~monitor.config.model.RuleConfig`, the rule's name, metric and
        severity are used; with a rule name, ``metric`` and ``severity`` (default
        ``warning``) say them. ``summary`` defaults to a sentence built from ``details``;
        ``pipeline`` becomes a label.
        """
        if isinstance(rule, RuleConfig):
            name = rule.name
            metric = metric if metric is not None else _opt_str(rule.metric)
            severity = severity or rule.severity
        else:
            name = rule
        identity = AlertIdentity("regression", suite, name, metric)
        return cls(
            identity=identity,
            severity=severity or "warning",
            summary=summary or text.regression_summary(suite, details),
            description=text.regression_description(details),
            details=details,
            starts_at=at,
            labels=_with_pipeline(labels, pipeline),
            links=links or LinksConfig(),
        )

    @classmethod
    def from_outcome(
        cls,
        suite: str,
        outcome: RuleOutcomeLike,
        *,
        at: datetime,
        worse_queries: Iterable[QueryDiffLike] = (),
        segment: SegmentChangeLike | None = None,
        max_queries: int = 5,
        confidence: float | None = None,
        run_id: int | None = None,
        baseline_run_id: int | None = None,
        labels: Mapping[str, str] | None = None,
        links: LinksConfig | None = None,
        pipeline: str | None = None,
    ) -> Alert:
        """Return a firing regression alert from a comparison's rule outcome.

        ``worse_queries`` (a comparison's per-query diffs) are kept when they are about the
        outcome's metric, at most ``max_queries`` of them; ``segment`` is the segment that
        drove the change (``comparison.driving_segment()``). The metric is part of the
        identity only for quality rules, whose name already holds it.
        """
        queries = tuple(
            WorseQuery(
                query_id=diff.query_id,
                query=diff.query,
                baseline=diff.baseline,
                current=diff.current,
                expected_ids=tuple(diff.expected_ids),
                retrieved_ids=tuple(diff.current_ids),
            )
            for diff in worse_queries
            if diff.metric == outcome.metric
        )[: max(0, max_queries)]
        shift = None
        if segment is not None:
            shift = SegmentShift(
                key=segment.key,
                value=segment.value,
                n=segment.n,
                baseline=segment.baseline,
                current=segment.current,
            )
        details = RegressionDetails(
            metric=outcome.metric,
            check=outcome.check,
            threshold=outcome.threshold,
            current=outcome.current,
            baseline=outcome.baseline,
            p_value=outcome.p_value,
            ci_low=outcome.ci_low,
            ci_high=outcome.ci_high,
            confidence=confidence,
            segment=shift,
            worse_queries=queries,
            run_id=run_id,
            baseline_run_id=baseline_run_id,
        )
        return cls.regression(
            suite,
            outcome.rule,
            details,
            at=at,
            metric=outcome.metric if outcome.quality else None,
            severity=_severity(outcome.severity),
            labels=labels,
            links=links,
            pipeline=pipeline,
        )

    @classmethod
    def monitor_failure(
        cls,
        suite: str,
        reason: FailureReason | str,
        message: str,
        *,
        at: datetime,
        severity: Severity = "critical",
        labels: Mapping[str, str] | None = None,
        links: LinksConfig | None = None,
        pipeline: str | None = None,
    ) -> Alert:
        """Return a firing monitor-failure alert of ``suite``: ``reason`` says which failure
        (its value is the rule name), ``message`` what the error said.

        ``message`` goes into the description as given: pass the error's own message, which
        the monitor's errors keep free of secrets.
        """
        try:
            reason = FailureReason(reason)
        except ValueError:
            known = ", ".join(item.value for item in FailureReason)
            raise UsageError(f"failure reason {reason!r}: expected one of {known}") from None
        return cls(
            identity=AlertIdentity("monitor_failure", suite, reason.value),
            severity=severity,
            summary=f"{suite}: {reason.headline}",
            description=text.failure_description(message),
            starts_at=at,
            labels=_with_pipeline(labels, pipeline),
            links=links or LinksConfig(),
        )

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
        ``alertname``, ``suite``, ``rule``, ``metric`` (when set) and ``severity``."""
        labels = {k: v for k, v in self.labels.items() if k not in IDENTITY_LABELS}
        labels["alertname"] = ALERT_NAMES[self.kind]
        labels["suite"] = self.suite
        labels["rule"] = self.rule
        if self.identity.metric is not None:
            labels["metric"] = self.identity.metric
        labels["severity"] = self.severity
        return labels

    def annotations(self) -> dict[str, str]:
        """Return the alert's texts and links as Alertmanager-style annotations."""
        return text.alert_annotations(self)

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
            if data.get("version") != FORMAT_VERSION:
                raise UsageError(f"alert form version {data.get('version')!r} is not known")
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
                details=None if raw_details is None else _details_from(raw_details),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise UsageError(f"not an alert in dictionary form: {type(exc).__name__}") from None


def _opt_str(value: object) -> str | None:
    return None if value is None else str(value)


def _severity(value: str) -> Severity:
    if value not in SEVERITIES:
        raise UsageError(f"alert severity {value!r}: expected one of {', '.join(SEVERITIES)}")
    return value


def _with_pipeline(labels: Mapping[str, str] | None, pipeline: str | None) -> dict[str, str]:
    merged = dict(labels or {})
    if pipeline is not None:
        merged["pipeline"] = pipeline
    return merged


def _finite(value: float | None) -> float | None:
    """Return ``value``, or None for NaN and infinities (JSON has neither)."""
    return None if value is None or not math.isfinite(value) else value


def _details_dict(details: RegressionDetails) -> dict[str, Any]:
    segment = details.segment
    return {
        "metric": details.metric,
        "check": details.check,
        "threshold": details.threshold,
        "current": _finite(details.current),
        "baseline": _finite(details.baseline),
        "p_value": _finite(details.p_value),
        "ci_low": _finite(details.ci_low),
        "ci_high": _finite(details.ci_high),
        "confidence": details.confidence,
        "segment": None
        if segment is None
        else {
            "key": segment.key,
            "value": segment.value,
            "n": segment.n,
            "baseline": segment.baseline,
            "current": segment.current,
        },
        "worse_queries": [
            {
                "query_id": query.query_id,
                "query": query.query,
                "baseline": query.baseline,
                "current": query.current,
                "expected_ids": list(query.expected_ids),
                "retrieved_ids": list(query.retrieved_ids),
            }
            for query in details.worse_queries
        ],
        "run_id": details.run_id,
        "baseline_run_id": details.baseline_run_id,
    }


def _details_from(data: Mapping[str, Any]) -> RegressionDetails:
    segment = data.get("segment")
    return RegressionDetails(
        metric=data["metric"],
        check=data["check"],
        threshold=float(data["threshold"]),
        current=data.get("current"),
        baseline=data.get("baseline"),
        p_value=data.get("p_value"),
        ci_low=data.get("ci_low"),
        ci_high=data.get("ci_high"),
        confidence=data.get("confidence"),
        segment=None
        if segment is None
        else SegmentShift(
            key=segment["key"],
            value=segment["value"],
            n=int(segment["n"]),
            baseline=float(segment["baseline"]),
            current=float(segment["current"]),
        ),
        worse_queries=tuple(
            WorseQuery(
                query_id=query["query_id"],
                query=query["query"],
                baseline=float(query["baseline"]),
                current=float(query["current"]),
                expected_ids=tuple(query.get("expected_ids", ())),
                retrieved_ids=tuple(query.get("retrieved_ids", ())),
            )
            for query in data.get("worse_queries", ())
        ),
        run_id=data.get("run_id"),
        baseline_run_id=data.get("baseline_run_id"),
    )
