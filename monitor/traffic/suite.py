"""Measure an online suite's window: figures overall, per application and per segment value,
and its rules against a baseline window.

The searches of a window and their own metric values come from :data:`monitor.traffic.sql.
PER_SEARCH` (the one definition of every metric); a group's value of a metric is the mean of
its column over the group's searches that count for it, and a latency percentile the
percentile (:data:`~monitor.traffic.online.PERCENTILES`) of their ``latency_ms``. Labels stay
bounded: an application the suite does not name (or, without a list, past the
:data:`~monitor.config.online.MAX_APPLICATIONS` busiest) counts as ``other``, and so does a
segment value past the ``max_segment_values`` most frequent ones; a search without the
segment's field is ``none``. Rules read the overall figures only (the groups are exported,
never alerted on, so one busy segment cannot page anyone on its own).

A rule's evidence is a bootstrap (:mod:`monitor.compare.independent`) over the suite's
``significance.over``: searches, or sessions (a client's searches of one application in
the window). A rule breaches only when its threshold is passed *and* the bootstrap is sure:
the one-sided p-value of a change is below ``alpha``, or the interval of the current value
lies wholly past a ``min`` or ``max`` bound; otherwise it is ``insufficient_evidence``. The
intervals are percentile intervals at ``1 - 2 * alpha``, so each bound is the one-sided
test at ``alpha`` that the rule makes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from monitor.compare.independent import Sample, compare_independent, interval, statistic
from monitor.config.model import OnlineRule, OnlineSuiteConfig
from monitor.config.online import MAX_APPLICATIONS, OTHER
from monitor.traffic import sql
from monitor.traffic.engine import Connection, rows
from monitor.traffic.errors import NoTrafficError
from monitor.traffic.online import (
    LOWER_IS_BETTER,
    METRICS,
    PAULSCORE_FACTOR,
    PERCENTILES,
    REFORMULATION_GAP,
)
from monitor.traffic.window import Window

#: The label value of every application (or every segment value): the whole window.
ALL = "all"
#: The segment value of a search that does not log the segment's field.
NONE = "none"


@dataclass(frozen=True, slots=True)
class Searches:
    """The searches of one window, column by column: one entry per search."""

    application: np.ndarray
    session: np.ndarray
    segment: np.ndarray
    values: Mapping[str, np.ndarray]

    def __len__(self) -> int:
        return len(self.application)

    def column(self, metric: str) -> np.ndarray:
        """Return each search's value of ``metric`` (NaN: not counted)."""
        return self.values["latency_ms" if metric in PERCENTILES else METRICS[metric]]


@dataclass(frozen=True, slots=True)
class GroupFigures:
    """A group's figures: ``application`` and ``segment`` (``all`` for every one)."""

    application: str
    segment: str
    searches: int
    values: Mapping[str, float | None]


@dataclass(frozen=True, slots=True)
class OnlineOutcome:
    """One rule applied to the window (and its baseline when the rule compares)."""

    rule: str
    metric: str
    check: str
    threshold: float
    severity: str
    status: str  # ok, breach, insufficient_evidence or skipped
    current: float | None = None
    baseline: float | None = None
    delta: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None
    message: str = ""

    @property
    def breached(self) -> bool:
        """Return whether the rule fires an alert."""
        return self.status == "breach"


def read_searches(
    connection: Connection, window: Window, click_action: str, segment: str | None
) -> Searches:
    """Return the window's searches; raise NoTrafficError when it holds none."""
    found = rows(
        connection,
        sql.PER_SEARCH,
        {
            "start": window.start,
            "end": window.end,
            "click_action": click_action,
            "gap_seconds": REFORMULATION_GAP,
            "paul_factor": PAULSCORE_FACTOR,
            "segment": segment,
        },
    )
    if not found:
        first, last, searches = connection.execute(sql.SPAN).fetchone()
        raise NoTrafficError(window, first, last, int(searches))
    applications = [str(r["application"]) for r in found]
    segments = [NONE if r["segment"] is None else str(r["segment"]) for r in found]
    sessions = [f"{r['application']}\x1f{r['client_id']}" for r in found]
    _, session_ids = np.unique(np.array(sessions, dtype=object), return_inverse=True)
    names = [*dict.fromkeys(METRICS.values()), "latency_ms"]
    values = {
        name: np.array(
            [np.nan if r[name] is None else float(r[name]) for r in found], dtype=np.float64
        )
        for name in names
    }
    return Searches(
        application=np.array(applications, dtype=object),
        session=session_ids.astype(np.int64),
        segment=np.array(segments, dtype=object),
        values=values,
    )


def _value(searches: Searches, metric: str, mask: np.ndarray) -> float | None:
    percentile = PERCENTILES.get(metric)
    return statistic(Sample(searches.column(metric)[mask], np.zeros(0, np.int64)), percentile)


def applications_of(searches: Searches, suite: OnlineSuiteConfig) -> np.ndarray:
    """Return each search's application label: its own, or ``other``."""
    if suite.applications is not None:
        named = set(suite.applications)
    else:
        busiest = Counter(searches.application.tolist()).most_common(MAX_APPLICATIONS)
        named = {name for name, _ in busiest if name != OTHER}
    return np.array([a if a in named else OTHER for a in searches.application], dtype=object)


def segments_of(searches: Searches, suite: OnlineSuiteConfig) -> np.ndarray:
    """Return each search's segment label: its value, ``none``, or ``other``."""
    common = Counter(searches.segment.tolist()).most_common(suite.max_segment_values)
    named = {value for value, _ in common}
    return np.array([v if v in named else OTHER for v in searches.segment], dtype=object)


def figures(searches: Searches, suite: OnlineSuiteConfig) -> tuple[GroupFigures, ...]:
    """Return the window's figures: overall, each application, then each segment value."""
    everything = np.ones(len(searches), dtype=bool)
    groups: list[tuple[str, str, np.ndarray]] = [(ALL, ALL, everything)]
    apps = applications_of(searches, suite)
    groups += [(name, ALL, apps == name) for name in sorted(set(apps.tolist()))]
    if suite.segment is not None:
        values = segments_of(searches, suite)
        groups += [(ALL, name, values == name) for name in sorted(set(values.tolist()))]
    return tuple(
        GroupFigures(
            application=app,
            segment=segment,
            searches=int(mask.sum()),
            values={metric: _value(searches, metric, mask) for metric in suite.metrics},
        )
        for app, segment, mask in groups
    )


def _sample(searches: Searches, metric: str, unit: str) -> Sample:
    clusters = searches.session if unit == "sessions" else np.arange(len(searches), dtype=np.int64)
    return Sample(searches.column(metric), clusters)


def apply_rules(
    suite: OnlineSuiteConfig, current: Searches, baseline: Searches | None, baseline_label: str
) -> tuple[OnlineOutcome, ...]:
    """Apply the suite's rules to the window's overall figures (and the baseline's)."""
    return tuple(_apply(rule, suite, current, baseline, baseline_label) for rule in suite.rules)


def _apply(
    rule: OnlineRule,
    suite: OnlineSuiteConfig,
    current: Searches,
    baseline: Searches | None,
    baseline_label: str,
) -> OnlineOutcome:
    sig = suite.significance
    metric = rule.metric
    percentile = PERCENTILES.get(metric)
    higher = metric not in LOWER_IS_BETTER
    base: dict[str, Any] = {
        "rule": rule.name,
        "metric": metric,
        "check": rule.check,
        "threshold": rule.threshold,
        "severity": rule.severity,
    }
    now = _sample(current, metric, sig.over)
    value = statistic(now, percentile)
    if value is None:
        return OnlineOutcome(**base, status="skipped", message=f"{metric}: no data in the window")
    if not rule.compares:
        bounds = interval(now, resamples=sig.resamples, seed=sig.seed, alpha=2 * sig.alpha)
        low, high = bounds if bounds is not None else (None, None)
        over = value < rule.threshold if rule.check == "min" else value > rule.threshold
        word = "floor" if rule.check == "min" else "ceiling"
        if not over:
            sign = ">=" if rule.check == "min" else "<="
            message = f"{metric} {value:.4g} {sign} {word} {rule.threshold:g}"
            return OnlineOutcome(
                **base, status="ok", current=value, ci_low=low, ci_high=high, message=message
            )
        sure = (
            (high is not None and high < rule.threshold)
            if rule.check == "min"
            else (low is not None and low > rule.threshold)
        )
        message = f"{metric} {value:.4g} past {word} {rule.threshold:g}" + (
            "" if sure else " (the bootstrap interval reaches it)"
        )
        status = "breach" if sure else "insufficient_evidence"
        return OnlineOutcome(
            **base, status=status, current=value, ci_low=low, ci_high=high, message=message
        )
    if baseline is None:
        return OnlineOutcome(
            **base,
            status="skipped",
            current=value,
            message=f"no search in the baseline window ({baseline_label})",
        )
    test = compare_independent(
        _sample(baseline, metric, sig.over),
        now,
        resamples=sig.resamples,
        seed=sig.seed,
        alpha=2 * sig.alpha,
        higher_is_better=higher,
        percentile=percentile,
    )
    if test is None:
        return OnlineOutcome(
            **base,
            status="skipped",
            current=value,
            message=f"{metric}: no data in the baseline window",
        )
    worse = -test.delta if higher else test.delta
    if rule.check.startswith("max_relative"):
        change = worse / abs(test.baseline) if test.baseline else 0.0
        limit = f"{rule.threshold:.0%}"
    else:
        change = worse
        limit = f"{rule.threshold:g}"
    figures: dict[str, Any] = {
        "current": test.current,
        "baseline": test.baseline,
        "delta": test.delta,
        "ci_low": test.ci_low,
        "ci_high": test.ci_high,
        "p_value": test.p_value,
    }
    text = (
        f"{metric} {test.baseline:.4g} -> {test.current:.4g} ({test.delta:+.4g}; allowed "
        f"{'drop' if higher else 'rise'} {limit}); p = {test.p_value:.4f}"
    )
    if change <= rule.threshold:
        return OnlineOutcome(**base, status="ok", **figures, message=text)
    sure = test.p_value < sig.alpha
    status = "breach" if sure else "insufficient_evidence"
    return OnlineOutcome(
        **base,
        status=status,
        **figures,
        message=text + ("" if sure else f" >= alpha {sig.alpha:g}"),
    )


def overall(groups: Sequence[GroupFigures]) -> GroupFigures:
    """Return the whole window's figures among ``groups``."""
    return next(g for g in groups if g.application == ALL and g.segment == ALL)
