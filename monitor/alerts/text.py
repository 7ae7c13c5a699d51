"""The words of alerts: summaries, descriptions, annotations and the plain-text form.

Every notifier says the same thing in its own shape; the sentences are written here once.
Numbers show four significant digits (``0.8123``); counts above a thousand are grouped.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from monitor.alerts.model import Alert, RegressionDetails, WorseQuery

#: Most doc ids shown for one query.
SHOWN_IDS: Final = 5
#: Most characters of a query's text shown.
SHOWN_QUERY_CHARS: Final = 80

_DROPS: Final = frozenset(
    {
        "max_drop",
        "max_relative_drop",
        "top1_score_max_relative_drop",
        "index_size_max_relative_drop",
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


def _limit(check: str, threshold: float) -> str:
    if "relative" in check:
        return f"{threshold:.0%}"
    return number(threshold)


def regression_summary(suite: str, details: RegressionDetails) -> str:
    """Return one sentence saying which figure broke its rule and how."""
    metric, check = details.metric, details.check
    current, baseline = details.current, details.baseline
    limit = _limit(check, details.threshold)
    if check in _DROPS and current is not None and baseline is not None:
        what = f"{metric} dropped from {number(baseline)} to {number(current)}"
        what += f" (more than the allowed {limit})"
    elif check == "min":
        what = f"{metric} is {number(current)}, below the minimum of {limit}"
    elif check.endswith("_max_relative_rise"):
        what = f"{metric} rose from {number(baseline)} to {number(current)}, more than {limit}"
    elif check.endswith("_max"):
        what = f"{metric} is {number(current)}, above the maximum of {limit}"
    else:
        what = f"{metric} is {number(current)}, breaking {check} {limit}"
    return f"{suite}: {what}"


def regression_description(details: RegressionDetails) -> str:
    """Return the evidence of a regression in a few lines."""
    lines = [_figures(details)]
    evidence = _evidence(details)
    if evidence:
        lines.append(evidence)
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


def _figures(details: RegressionDetails) -> str:
    rule = f"rule {details.check} {_limit(details.check, details.threshold)}"
    if details.baseline is None:
        return f"{details.metric} is {number(details.current)} ({rule})."
    text = f"{details.metric}: {number(details.baseline)} in the baseline, "
    text += f"{number(details.current)} now"
    delta, relative = details.delta, details.relative_delta
    if delta is not None:
        text += f" ({_signed(delta)}"
        text += "" if relative is None else f", {relative:+.1%}"
        text += ")"
    return f"{text}; {rule}."


def _evidence(details: RegressionDetails) -> str:
    parts = []
    if details.ci_low is not None and details.ci_high is not None:
        level = "" if details.confidence is None else f"{details.confidence:.0%} "
        parts.append(f"{level}interval [{number(details.ci_low)}, {number(details.ci_high)}]")
    if details.p_value is not None:
        parts.append(f"p = {number(details.p_value)}")
    return ("Change: " + ", ".join(parts) + ".") if parts else ""


def worse_query(query: WorseQuery) -> str:
    """Return one line about a query that got worse: values, expected and retrieved ids."""
    text = query.query
    if len(text) > SHOWN_QUERY_CHARS:
        text = text[: SHOWN_QUERY_CHARS - 3] + "..."
    return (
        f"{query.query_id} {text!r}: {number(query.baseline)} -> {number(query.current)}; "
        f"expected {_ids(query.expected_ids)}; retrieved {_ids(query.retrieved_ids)}"
    )


def _ids(ids: tuple[str, ...]) -> str:
    if not ids:
        return "none"
    shown = ", ".join(ids[:SHOWN_IDS])
    return shown if len(ids) <= SHOWN_IDS else f"{shown} (+{len(ids) - SHOWN_IDS} more)"


def failure_description(message: str) -> str:
    """Return the description of a monitor failure: what the error said."""
    return message.strip() or "no further detail"


def alert_annotations(alert: Alert) -> dict[str, str]:
    """Return the alert's texts, evidence and links as string annotations."""
    out = {"summary": alert.summary}
    if alert.description:
        out["description"] = alert.description
    details = alert.details
    if details is not None:
        out["metric"] = details.metric
        out["current"] = number(details.current)
        if details.baseline is not None:
            out["baseline"] = number(details.baseline)
        if details.delta is not None:
            out["delta"] = _signed(details.delta)
        if details.p_value is not None:
            out["p_value"] = number(details.p_value)
        if details.ci_low is not None and details.ci_high is not None:
            out["confidence_interval"] = f"[{number(details.ci_low)}, {number(details.ci_high)}]"
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
    head = f"[{status_word(alert, repeat)}] {alert.severity} {alert.summary}"
    lines = [head]
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
