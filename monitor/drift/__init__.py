"""Query drift: are this window's queries still like the reference window's?

A label-free check on the embeddings of two samples of queries (two windows of the traffic
database, or two query files): an MMD permutation test, a domain classifier's ROC AUC and the
distance between centroids (:mod:`monitor.drift.stats`), read into a verdict
(:mod:`monitor.drift.check`).
"""

from __future__ import annotations

from monitor.drift.check import DriftResult, DriftSettings, drift_check

__all__ = ["DriftResult", "DriftSettings", "drift_check"]
