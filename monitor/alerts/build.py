"""Build alerts from what a run found: the comparison's breaches, or a failure to measure.

The builders give each alert its identity, severity and wording (:mod:`monitor.alerts.text`);
the records of :mod:`monitor.alerts.model` only hold them. A regression alert carries the
comparison's own records: the rule's outcome, and the segment breakdown and worse queries of
the rule's own metric. A breached invariant gets an alert of its own, rule
``invariant <name>``, listing the queries that broke it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

from monitor.alerts import text
from monitor.alerts.model import (
    LABELS_NEEDED_RULE,
    Alert,
    AlertIdentity,
    FailureReason,
    InvariantDetails,
    LabelsNeededDetails,
    RegressionDetails,
)
from monitor.compare.coverage import labels_todo
from monitor.compare.records import Comparison, RuleOutcome
from monitor.config.common import LinksConfig, Severity
from monitor.config.model import CoverageConfig
from monitor.errors import UsageError

#: Most worse queries an alert shows.
MAX_QUERIES = 5


def regression_alert(
    suite: str,
    details: RegressionDetails,
    *,
    at: datetime,
    labels: Mapping[str, str] | None = None,
    links: LinksConfig | None = None,
    pipeline: str | None = None,
) -> Alert:
    """Return a firing regression alert of ``suite`` for the rule outcome in ``details``.

    The metric is part of the identity only for quality rules, whose name already holds it;
    ``pipeline`` becomes a label.
    """
    outcome = details.outcome
    metric = outcome.metric if outcome.quality else None
    return Alert(
        identity=AlertIdentity("regression", suite, outcome.rule, metric),
        severity=outcome.severity,
        summary=text.regression_summary(suite, outcome),
        description=text.regression_description(details),
        details=details,
        starts_at=at,
        labels=_with_pipeline(labels, pipeline),
        links=links or LinksConfig(),
    )


def regression_alerts(
    suite: str,
    comparison: Comparison,
    *,
    at: datetime,
    confidence: float | None = None,
    max_queries: int = MAX_QUERIES,
    labels: Mapping[str, str] | None = None,
    links: LinksConfig | None = None,
    pipeline: str | None = None,
) -> list[Alert]:
    """Return one firing alert per breached rule of ``comparison``, each with the segment
    that drove its own metric and the queries that got worse on it."""
    return [
        regression_alert(
            suite,
            evidence(comparison, outcome, confidence=confidence, max_queries=max_queries),
            at=at,
            labels=labels,
            links=links,
            pipeline=pipeline,
        )
        for outcome in comparison.breaches
    ]


def evidence(
    comparison: Comparison,
    outcome: RuleOutcome,
    *,
    confidence: float | None = None,
    max_queries: int = MAX_QUERIES,
) -> RegressionDetails:
    """Return the evidence of ``outcome`` from ``comparison``: its metric's driving segment
    and worse queries (none for operational rules, which compare whole runs)."""
    segment = comparison.driving_segment(metric=outcome.metric) if outcome.quality else None
    queries = comparison.worse_for(outcome.metric) if outcome.quality else ()
    return RegressionDetails(
        outcome=outcome,
        segment=segment,
        worse_queries=queries[: max(0, max_queries)],
        confidence=confidence,
        run_id=comparison.run_id,
        baseline_run_id=comparison.baseline_run_id,
    )


def invariant_alert(
    suite: str,
    details: InvariantDetails,
    *,
    at: datetime,
    labels: Mapping[str, str] | None = None,
    links: LinksConfig | None = None,
    pipeline: str | None = None,
) -> Alert:
    """Return a firing regression alert of ``suite`` for the breached invariant in
    ``details``: rule ``invariant <name>``, the breaching queries in its description."""
    invariant = details.invariant
    return Alert(
        identity=AlertIdentity("regression", suite, invariant.rule),
        severity=invariant.severity,
        summary=text.invariant_summary(suite, invariant),
        description=text.invariant_description(invariant),
        details=details,
        starts_at=at,
        labels=_with_pipeline(labels, pipeline),
        links=links or LinksConfig(),
    )


def invariant_alerts(
    suite: str,
    comparison: Comparison,
    *,
    at: datetime,
    labels: Mapping[str, str] | None = None,
    links: LinksConfig | None = None,
    pipeline: str | None = None,
) -> list[Alert]:
    """Return one firing alert per breached invariant of ``comparison``."""
    return [
        invariant_alert(
            suite,
            InvariantDetails(invariant, comparison.run_id, comparison.baseline_run_id),
            at=at,
            labels=labels,
            links=links,
            pipeline=pipeline,
        )
        for invariant in comparison.invariant_breaches
    ]


def labels_needed_alerts(
    suite: str,
    comparison: Comparison,
    *,
    at: datetime,
    coverage: CoverageConfig | None = None,
    labels: Mapping[str, str] | None = None,
    links: LinksConfig | None = None,
    pipeline: str | None = None,
    config_file: Path | None = None,
) -> list[Alert]:
    """Return the one labels-needed alert of ``suite`` when ``comparison`` held a quality
    breach for lack of judgments (verdict ``unjudged`` or a regression beside it), else none.

    Its severity is ``coverage.severity``; its description names the labeling command and,
    with ``coverage.queue_url``, the queue's address for this run.
    """
    if not comparison.held:
        return []
    coverage = coverage or CoverageConfig()
    queue = None
    if coverage.queue_url is not None:
        run_id = "" if comparison.run_id is None else str(comparison.run_id)
        queue = coverage.queue_url.format(suite=suite, run_id=run_id)
    todo = labels_todo(suite, comparison.run_id, config_file)
    return [
        Alert(
            identity=AlertIdentity("labels_needed", suite, LABELS_NEEDED_RULE),
            severity=coverage.severity,
            summary=text.labels_needed_summary(suite, comparison),
            description=text.labels_needed_description(comparison, todo, queue),
            details=labels_needed_details(comparison, todo, queue),
            starts_at=at,
            labels=_with_pipeline(labels, pipeline),
            links=links or LinksConfig(),
        )
    ]


def labels_needed_details(
    comparison: Comparison, todo: str, queue: str | None = None
) -> LabelsNeededDetails:
    """Return the evidence of a labels-needed alert: the coverage change at the largest held
    cutoff (nothing came in, coverage unknown, when the comparison measured none)."""
    change = max(comparison.coverage, key=lambda c: c.k, default=None)
    return LabelsNeededDetails(
        k=0 if change is None else change.k,
        unjudged=0 if change is None else change.unjudged_added,
        queries=0 if change is None else change.queries,
        baseline=math.nan if change is None else change.baseline,
        current=math.nan if change is None else change.current,
        todo=todo,
        rules=tuple(outcome.rule for outcome in comparison.held),
        queue=queue,
        run_id=comparison.run_id,
        baseline_run_id=comparison.baseline_run_id,
    )


def checked_rules(comparison: Comparison) -> frozenset[str]:
    """Return the alert rules ``comparison`` evaluated, rules' and invariants' alike: the
    regression alerts a run may resolve. Skipped ones keep their state, and so do held ones
    (``unjudged``): until the new documents are labelled, nobody knows whether it holds."""
    rules = (
        rule.rule
        for rule in comparison.rules
        if rule.status not in ("skipped", "unjudged", "unverified")
    )
    invariants = (i.rule for i in comparison.invariants if i.status != "skipped")
    return frozenset((*rules, *invariants))


def failure_alert(
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
    return Alert(
        identity=AlertIdentity("monitor_failure", suite, reason.value),
        severity=severity,
        summary=text.failure_summary(suite, reason),
        description=text.failure_description(message),
        starts_at=at,
        labels=_with_pipeline(labels, pipeline),
        links=links or LinksConfig(),
    )


def _with_pipeline(labels: Mapping[str, str] | None, pipeline: str | None) -> dict[str, str]:
    merged = dict(labels or {})
    if pipeline is not None:
        merged["pipeline"] = pipeline
    return merged
