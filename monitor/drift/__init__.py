"""Query drift: are this window's queries still like the reference window's?

A label-free check on the embeddings of two samples of queries (two windows of the traffic
database, or two query files, :mod:`monitor.drift.queries`): an MMD permutation test, a
domain classifier's ROC AUC and the distance between centroids (:mod:`monitor.drift.stats`),
read into a verdict by :func:`monitor.drift.check.drift_check` under
:class:`DriftSettings`. Only the settings are re-exported here: they import no numpy, so the
config can read them.
"""

from __future__ import annotations

from monitor.drift.settings import DriftSettings

__all__ = ["DriftSettings"]
