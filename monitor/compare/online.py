"""Apply an online suite's rules to its window and a baseline window.

Rules read the window's overall figures only (the groups are exported, never alerted on, so
one busy segment cannot page anyone on its own). A rule's evidence is a bootstrap
(:mod:`monitor.compare.independent`) over the suite's ``significance.over``: searches, or
sessions (a client's searches of one application in the window). A rule breaches only when
its threshold is passed *and* the bootstrap is sure: the one-sided p-value of a change is
below ``alpha``, or the interval of the current value lies wholly past a ``min`` or ``max``
bound; otherwise it is ``insufficient_evidence``. The intervals are percentile intervals at
``1 - 2 * alpha``, so each bound is the one-sided test at ``alpha`` that the rule makes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from monitor.compare.independent import Sample, compare_independent, interval, statistic
from monitor.config.traffic import OnlineRule, OnlineSuiteConfig
from monitor.traffic.online import LOWER_IS_BETTER, PERCENTILES
from monitor.traffic.suite import Searches


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
