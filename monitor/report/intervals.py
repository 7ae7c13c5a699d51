"""How the reports name the metric table's interval; a rule's names itself.

A drop rule's interval is the percentile bootstrap interval of the mean per-query delta
(:func:`monitor.compare.stats.compare_paired`); a ``min`` rule's is the Student t interval of
the current mean (:attr:`~monitor.compare.records.RuleOutcome.ci_label`), and the metric
table's the paired t interval of the mean per-query delta (:func:`monitor.compare.stats.mean_ci`).
All are at 95%.
"""

from __future__ import annotations

#: The label of the metric table's interval.
METRIC_CI = "t 95% CI of delta"
