"""How the reports name each interval they show: by the method that computed it.

A drop rule's interval is the percentile bootstrap interval of the mean per-query delta
(:func:`monitor.compare.stats.compare_paired`); a ``min`` rule's is the Student t interval of the
current mean, and the metric table's the paired t interval of the mean per-query delta
(:func:`monitor.compare.stats.mean_ci`). All are at 95%.
"""

from __future__ import annotations

from monitor.compare.records import RuleOutcome

#: The label of the metric table's interval.
METRIC_CI = "t 95% CI of delta"


def rule_ci_method(rule: RuleOutcome) -> str:
    """Return the method of ``rule``'s interval: ``"t"`` for a ``min`` rule, else bootstrap."""
    return "t" if rule.check == "min" else "bootstrap"


def rule_ci_label(rule: RuleOutcome) -> str:
    """Return the label of ``rule``'s interval, e.g. ``"bootstrap 95% CI of delta"``."""
    bounds = "mean" if rule.check == "min" else "delta"
    return f"{rule_ci_method(rule)} 95% CI of {bounds}"
