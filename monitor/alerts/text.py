"""The words of alerts: summaries, descriptions, annotations and the plain-text form.

Every notifier says the same thing in its own shape; the sentences are written here once,
from the comparison's records (:class:`~monitor.compare.records.RuleOutcome`,
:class:`~monitor.compare.records.QueryDiff`, :class:`~monitor.compare.records.SegmentChange`).
Numbers show four significant digits (``0.8123``); counts above a thousand are grouped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Final

from monitor.alerts.model import (
    Alert,
    FailureReason,
    InvariantDetails,
    LabelsNeededDetails,
    RegressionDetails,
)
from monitor.compare.records import (
    Comparison,
    InvariantOutcome,
    InvariantQuery,
    QueryDiff,
    RuleOutcome,
)
from monitor.config.model import Check

#: Most doc ids shown for one query.
SHOWN_IDS: Final = 5
#: Most characters of a query's text shown.
SHOWN_QUERY_CHARS: Final = 80
#: Most breaching queries an invariant's description lists, one line each.
SHOWN_INVARIANT_QUERIES: Final = 20

#: The checks whose threshold is a share of the baseline.
_RELATIVE: Final = frozenset(
    {
        Check.MAX_RELATIVE_DROP,
        Check.LATENCY_P95_MAX_RELATIVE_RISE,
        Check.TOP1_SCORE_MAX_RELATIVE_DROP,
        Check.INDEX_SIZE_MAX_RELATIVE_DROP,
    }
)

_FAILURE_HEADLINES: Final[Mapping[FailureReason, str]] = MappingProxyType(
    {
        FailureReason.SUITE_LOCKED: "the suite's store lock has been held for run after run",
        FailureReason.EVALSET_MISSING: "the eval set cannot be read",
        FailureReason.RUN_TERMINATED: "the run was terminated before it finished",
        FailureReason.SEARCH_BACKEND_DOWN: "the search backend is not answering",
        FailureReason.ERROR_BUDGET_EXCEEDED: "more queries failed than the error budget allows",
        FailureReason.NOT_MEASURED: "the run answered too few answerable queries to measure",
        FailureReason.MONITOR_FAULT: "the monitor itself failed while measuring the run",
        FailureReason.STORE_UNWRITABLE: "the results cannot be written to the store",
    }
)


def number(value: float | None) -> str:
    """Return ``value`` for people: 4 significant digits, grouped thousands, ``n/a`` if None."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.4g}"


def _signed(value: float) -> str:
    return ("+" if value > 0 else "") + number(value)


def limit(outcome: RuleOutcome) -> str:
    """Return the rule's threshold as people read it: a share for relative checks."""
    if outcome.check in _RELATIVE:
        return f"{outcome.threshold:.0%}"
    return number(outcome.threshold)


def _dropped(o: RuleOutcome) -> str:
    return (
        f"{o.metric} dropped from {number(o.baseline)} to {number(o.current)}"
        f" (more than the allowed {limit(o)})"
    )


def _below(o: RuleOutcome) -> str:
    return f"{o.metric} is {number(o.current)}, below the minimum of {limit(o)}"


def _above(o: RuleOutcome) -> str:
    return f"{o.metric} is {number(o.current)}, above the maximum of {limit(o)}"


def _rose(o: RuleOutcome) -> str:
    return f"{o.metric} rose from {number(o.baseline)} to {number(o.current)}, more than {limit(o)}"


#: How each check says that it broke.
_BROKE: Final[Mapping[Check, Callable[[RuleOutcome], str]]] = MappingProxyType(
    {
        Check.MAX_DROP: _dropped,
        Check.MAX_RELATIVE_DROP: _dropped,
        Check.MIN: _below,
        Check.LATENCY_P95_SECONDS_MAX: _above,
        Check.LATENCY_P95_MAX_RELATIVE_RISE: _rose,
        Check.ERROR_RATE_MAX: _above,
        Check.ZERO_RESULT_RATE_MAX: _above,
        Check.TOP1_SCORE_MAX_RELATIVE_DROP: _dropped,
        Check.INDEX_SIZE_MAX_RELATIVE_DROP: _dropped,
        Check.ANN_RECALL_MIN: _below,
        Check.MIN_OVERLAP: _below,
        Check.JUDGE_AGREEMENT: _below,
    }
)


def regression_summary(suite: str, outcome: RuleOutcome) -> str:
    """Return one sentence saying which figure broke its rule and how."""
    return f"{suite}: {_BROKE[outcome.check](outcome)}"


def resolved_summary(alert: Alert) -> str:
    """Return one sentence saying that the alert's condition is over."""
    if alert.kind == "monitor_failure":
        return f"{alert.suite}: the monitor measures again ({alert.rule} is over)"
    if alert.kind == "labels_needed":
        return f"{alert.suite}: judgment coverage is back, no quality breach is held"
    if alert.kind == "query_drift":
        return f"{alert.suite}: {alert.rule}: the queries are like the reference window's again"
    return f"{alert.suite}: {alert.rule} holds again"


def headline(alert: Alert) -> str:
    """Return the alert's sentence for its status: the summary while firing."""
    return alert.summary if alert.firing else resolved_summary(alert)


def regression_description(details: RegressionDetails) -> str:
    """Return the evidence of a regression in a few lines: figures, the change, how many
    failed queries were left out, the segment that drove the rule's metric and the queries
    that got worse on it."""
    lines = [_figures(details.outcome)]
    evidence = _evidence(details)
    if evidence:
        lines.append(evidence)
    if details.outcome.left_out:
        lines.append(_left_out(details.outcome.left_out))
    segment = details.segment
    if segment is not None:
        lines.append(
            f"Driven by {segment.key}={segment.value}: {number(segment.baseline)} -> "
            f"{number(segment.current)} over {segment.n} queries."
        )
    if details.worse_queries:
        lines.append("Queries that got worse:")
        lines.extend(f"- {worse_query(query)}" for query in details.worse_queries)
    return "\n".join(lines)


def _figures(outcome: RuleOutcome) -> str:
    rule = f"rule {outcome.check.value} {limit(outcome)}"
    if outcome.baseline is None:
        return f"{outcome.metric} is {number(outcome.current)} ({rule})."
    text = f"{outcome.metric}: {number(outcome.baseline)} in the baseline, "
    text += f"{number(outcome.current)} now"
    if outcome.current is not None:
        relative = outcome.relative_delta
        text += f" ({_signed(outcome.current - outcome.baseline)}"
        text += "" if relative is None else f", {relative:+.1%}"
        text += ")"
    return f"{text}; {rule}."


def _evidence(details: RegressionDetails) -> str:
    outcome, parts = details.outcome, []
    if outcome.ci_low is not None and outcome.ci_high is not None:
        parts.append(f"{outcome.ci_label} [{number(outcome.ci_low)}, {number(outcome.ci_high)}]")
    if outcome.p_value is not None:
        parts.append(f"p = {number(outcome.p_value)}")
    return ("Change: " + ", ".join(parts) + ".") if parts else ""


def _left_out(count: int) -> str:
    noun = "query" if count == 1 else "queries"
    return (
        f"Left out: {number(count)} {noun} the search failed for, compared on answered "
        "queries only (the error rate counts failures)."
    )


def shorten(query: str) -> str:
    """Return a query text cut to :data:`SHOWN_QUERY_CHARS`, ``...`` marking the cut."""
    if len(query) <= SHOWN_QUERY_CHARS:
        return query
    return query[: SHOWN_QUERY_CHARS - 3] + "..."


def worse_query(query: QueryDiff) -> str:
    """Return one line about a query that got worse: values, expected and retrieved ids."""
    text = shorten(query.query)
    return (
        f"{query.query_id} {text!r}: {number(query.baseline)} -> {number(query.current)}; "
        f"expected {_ids(query.expected_ids)}; retrieved {_ids(query.current_ids)}"
    )


def _ids(ids: tuple[str, ...]) -> str:
    if not ids:
        return "none"
    shown = ", ".join(ids[:SHOWN_IDS])
    return shown if len(ids) <= SHOWN_IDS else f"{shown} (+{len(ids) - SHOWN_IDS} more)"


def invariant_summary(suite: str, invariant: InvariantOutcome) -> str:
    """Return one sentence saying which invariant broke and for how many queries."""
    count = len(invariant.queries)
    if invariant.kind == "must_include" and count == 1:
        query = invariant.queries[0]
        missing = _ids(query.missing_ids)
        return f"{suite}: {invariant.rule} broke: {missing} not in the top {query.k}"
    noun = "query" if count == 1 else "queries"
    return f"{suite}: {invariant.rule} broke for {number(count)} {noun}"


def invariant_description(invariant: InvariantOutcome) -> str:
    """Return the evidence of a broken invariant: what was checked, then each breaching query
    with the ids it was expected to return and those it returned."""
    lines = [invariant.message.rstrip(".") + "." if invariant.message else invariant.rule]
    lines.append("Queries that broke it:")
    shown = invariant.queries[:SHOWN_INVARIANT_QUERIES]
    lines.extend(f"- {invariant_query(query)}" for query in shown)
    if len(invariant.queries) > len(shown):
        lines.append(f"- and {number(len(invariant.queries) - len(shown))} more")
    return "\n".join(lines)


def invariant_query(query: InvariantQuery) -> str:
    """Return one line about a query that broke an invariant: expected and retrieved ids."""
    return (
        f"{query.query_id}: expected {_ids(query.expected_ids)} in the top {query.k}; "
        f"retrieved {_ids(query.retrieved_ids)}"
    )


def failure_summary(suite: str, reason: FailureReason) -> str:
    """Return one sentence saying that the monitor could not measure ``suite``, and why."""
    return f"{suite}: {_FAILURE_HEADLINES[reason]}"


def failure_description(message: str) -> str:
    """Return the description of a monitor failure: what the error said."""
    return message.strip() or "no further detail"


def alert_annotations(alert: Alert) -> dict[str, str]:
    """Return the alert's texts, evidence and links as string annotations."""
    out = {"summary": headline(alert)}
    if alert.description:
        out["description"] = alert.description
    details = alert.details
    if isinstance(details, LabelsNeededDetails):
        out["unjudged_documents"] = str(details.unjudged)
        out["queries"] = str(details.queries)
        out["k"] = str(details.k)
        out["coverage_baseline"] = number(details.baseline)
        out["coverage_current"] = number(details.current)
        out["todo"] = details.todo
        if details.queue:
            out["labeling_queue"] = details.queue
    elif isinstance(details, InvariantDetails):
        out["invariant"] = details.invariant.name
        out["queries"] = ", ".join(q.query_id for q in details.invariant.queries)
    elif details is not None:
        outcome = details.outcome
        out["metric"] = outcome.metric
        out["current"] = number(outcome.current)
        if outcome.baseline is not None:
            out["baseline"] = number(outcome.baseline)
            if outcome.current is not None:
                out["delta"] = _signed(outcome.current - outcome.baseline)
        if outcome.p_value is not None:
            out["p_value"] = number(outcome.p_value)
        if outcome.ci_low is not None and outcome.ci_high is not None:
            out["confidence_interval"] = f"[{number(outcome.ci_low)}, {number(outcome.ci_high)}]"
        if details.segment is not None:
            out["segment"] = f"{details.segment.key}={details.segment.value}"
        if details.worse_queries:
            out["worse_queries"] = ", ".join(q.query_id for q in details.worse_queries)
    for name, url in (
        ("runbook_url", alert.links.runbook),
        ("dashboard_url", alert.links.dashboard),
        ("report_url", alert.links.report),
    ):
        if url:
            out[name] = url
    return out


def status_word(alert: Alert, repeat: bool = False) -> str:
    """Return ``FIRING``, ``STILL FIRING`` or ``RESOLVED``."""
    if not alert.firing:
        return "RESOLVED"
    return "STILL FIRING" if repeat else "FIRING"


def plain(alert: Alert, repeat: bool = False) -> str:
    """Return the alert as text for a terminal: a headline, the description, the links."""
    lines = [f"[{status_word(alert, repeat)}] {alert.severity} {headline(alert)}"]
    if alert.firing:
        lines.extend(f"  {line}" for line in alert.description.splitlines())
        lines.append(f"  since {alert.starts_at.isoformat(timespec='seconds')}")
    elif alert.ends_at is not None:
        lines.append(
            f"  from {alert.starts_at.isoformat(timespec='seconds')}"
            f" to {alert.ends_at.isoformat(timespec='seconds')}"
        )
    for name, url in (
        ("report", alert.links.report),
        ("dashboard", alert.links.dashboard),
        ("runbook", alert.links.runbook),
    ):
        if url:
            lines.append(f"  {name}: {url}")
    return "\n".join(lines)


def labels_needed_summary(suite: str, comparison: Comparison) -> str:
    """Return one sentence saying that labels are needed, and for which held rules."""
    held = ", ".join(o.rule for o in comparison.held)
    return f"{suite}: labels needed before {held} can be judged (unjudged documents in the top k)"


def labels_needed_description(comparison: Comparison, todo: str, queue: str | None) -> str:
    """Return how coverage fell at each held rule's k, how many unjudged documents came into
    the top k in how many queries, and how to label them (the command, the queue's URL)."""
    lines = []
    for held in comparison.held:
        lines.append(f"{held.rule}: {number(held.baseline)} -> {number(held.current)}, held.")
    for change in comparison.coverage:
        lines.append(
            f"{change.metric}: {number(change.baseline)} in the baseline, "
            f"{number(change.current)} now; {change.unjudged_added} unjudged documents "
            f"entered the top {change.k} in {change.queries} of {change.n} queries."
        )
    lines.append(f"Label them: {todo}")
    if queue:
        lines.append(f"Labeling queue: {queue}")
    return "\n".join(lines)
