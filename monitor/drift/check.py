"""The drift verdict of two samples of query embeddings: ``ok``, ``drift`` or ``no data``.

:func:`drift_check` reads the three statistics of :mod:`monitor.drift.stats` on a reference
sample and a current one and decides:

- ``no data`` when either sample has fewer than ``min_queries`` rows (nothing is computed:
  a handful of queries says nothing about a distribution);
- ``drift`` when the MMD permutation p-value is below ``alpha``, or when the domain
  classifier's AUC is above ``max_auc``, or ``1 - cos`` of the centroids above
  ``max_centroid_distance`` (both thresholds are off unless set);
- ``ok`` otherwise.

The AUC and the centroid distances are always reported beside the verdict, so a reader sees
how far apart the samples are, not only whether the test found them apart.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt

from monitor.drift.settings import DriftSettings
from monitor.drift.stats import (
    AucResult,
    CentroidDistance,
    MmdResult,
    as_sample,
    centroid_distance,
    classifier_auc,
    mmd_test,
    subsample,
)

Status = Literal["ok", "drift", "no data"]

#: The verdicts, from the one that alarms.
STATUSES: Final[tuple[Status, ...]] = ("drift", "no data", "ok")


@dataclass(frozen=True, slots=True)
class DriftResult:
    """A drift check's verdict, the sizes it read and the statistics it found.

    ``reference_queries`` and ``current_queries`` count the rows given; ``reference_rows``
    and ``current_rows`` those compared (at most ``max_rows`` each). The statistics are None
    when the verdict is ``no data``. ``reasons`` says what made a ``drift`` (or a ``no
    data``), one phrase each.
    """

    status: Status
    reference_queries: int
    current_queries: int
    reference_rows: int
    current_rows: int
    mmd: MmdResult | None
    auc: AucResult | None
    centroid: CentroidDistance | None
    reasons: tuple[str, ...]
    settings: DriftSettings

    def figures(self) -> dict[str, float]:
        """Return each statistic by its name (the gauges' ``statistic`` label); none if no data."""
        if self.mmd is None or self.auc is None or self.centroid is None:
            return {}
        return {
            "mmd2": self.mmd.mmd2,
            "mmd_p_value": self.mmd.p_value,
            "auc": self.auc.auc,
            "auc_p_value": self.auc.p_value,
            "centroid_cosine_distance": self.centroid.cosine,
            "centroid_euclidean_distance": self.centroid.euclidean,
        }

    def to_json(self) -> dict[str, Any]:
        """Return the result as plain JSON values."""
        return {
            "status": self.status,
            "reasons": list(self.reasons),
            "reference": {"queries": self.reference_queries, "compared": self.reference_rows},
            "current": {"queries": self.current_queries, "compared": self.current_rows},
            "statistics": self.figures() or None,
            "bandwidth": None if self.mmd is None else self.mmd.bandwidth,
            "settings": asdict(self.settings),
        }


def no_data(sizes: tuple[int, int], settings: DriftSettings) -> DriftResult | None:
    """Return the ``no data`` result when a side of ``sizes`` is below ``min_queries``."""
    short = [
        f"the {side} has {size} queries, fewer than {settings.min_queries}"
        for side, size in zip(("reference", "current"), sizes, strict=True)
        if size < settings.min_queries
    ]
    if not short:
        return None
    return DriftResult("no data", *sizes, *sizes, None, None, None, tuple(short), settings)


def drift_check(
    reference: npt.ArrayLike,
    current: npt.ArrayLike,
    settings: DriftSettings | None = None,
    *,
    sizes: tuple[int, int] | None = None,
) -> DriftResult:
    """Return the drift verdict of the ``current`` embeddings against the ``reference`` ones.

    ``sizes`` are the queries each sample was drawn from, when the rows given are already a
    subsample of them (default: the rows given).
    """
    settings = settings or DriftSettings()
    xs = np.asarray(reference, dtype=np.float64)
    ys = np.asarray(current, dtype=np.float64)
    sizes = sizes or (len(xs), len(ys))
    empty = no_data((len(xs), len(ys)), settings)
    if empty is not None:
        return empty
    rng = np.random.default_rng(settings.seed)
    xs = subsample(as_sample(xs, "reference"), settings.max_rows, rng)
    ys = subsample(as_sample(ys, "current"), settings.max_rows, rng)
    mmd = mmd_test(xs, ys, permutations=settings.permutations, seed=settings.seed)
    auc = classifier_auc(xs, ys, folds=settings.folds, seed=settings.seed)
    centroid = centroid_distance(xs, ys)
    reasons = []
    if mmd.p_value < settings.alpha:
        reasons.append(f"MMD p-value {mmd.p_value:.4g} < alpha {settings.alpha:g}")
    if settings.max_auc is not None and auc.auc > settings.max_auc:
        reasons.append(f"classifier AUC {auc.auc:.4f} > max_auc {settings.max_auc:g}")
    limit = settings.max_centroid_distance
    if limit is not None and centroid.cosine > limit:
        reasons.append(f"centroid distance {centroid.cosine:.4g} > max_centroid_distance {limit:g}")
    status: Status = "drift" if reasons else "ok"
    return DriftResult(
        status, *sizes, len(xs), len(ys), mmd, auc, centroid, tuple(reasons), settings
    )
