"""A bootstrap over two independent samples: two windows of traffic hold different searches.

Each sample is resampled on its own, by *cluster* (a search, or a session of searches kept
together): as many clusters as it holds are drawn with replacement by
``numpy.random.Generator(PCG64(seed))``. A resample's value of a mean metric is
``sum(s_c) / sum(n_c)`` over the drawn clusters' sums ``s_c`` and counts ``n_c`` of counted
values (a ratio of means, so a metric that counts only some searches, such as abandonment,
is resampled as it is computed), and of a percentile the percentile of the drawn clusters'
values. Resamples are drawn in chunks of at most :data:`CHUNK_CELLS` (resample x cluster)
cells.

:func:`compare_independent` gives the change ``current - baseline``, its percentile
interval from the differences of the two samples' resamples, and a one-sided p-value: the
share of those differences (with one added to both counts) that show no worsening, which
under equal distributions is uniform, so a test at ``alpha`` flags about ``alpha`` of the
comparisons of two windows that do not differ.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

#: The most resample x cluster cells drawn at once.
CHUNK_CELLS: Final = 4_000_000


@dataclass(frozen=True, slots=True)
class Sample:
    """One sample's values and the cluster of each (NaN: the value is not counted)."""

    values: FloatArray
    clusters: npt.NDArray[np.int64]

    @property
    def size(self) -> int:
        """Return how many clusters the sample holds."""
        return int(self.clusters.max()) + 1 if len(self.clusters) else 0


@dataclass(frozen=True, slots=True)
class IndependentComparison:
    """The change of a statistic from a baseline sample to a current one."""

    baseline: float
    current: float
    delta: float
    ci_low: float
    ci_high: float
    p_value: float


def _draws(clusters: int, resamples: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Yield the drawn clusters of each resample, a chunk of resamples (rows) at a time."""
    step = max(1, CHUNK_CELLS // max(clusters, 1))
    for start in range(0, resamples, step):
        yield rng.integers(0, clusters, size=(min(step, resamples - start), clusters))


def resample(
    sample: Sample, resamples: int, rng: np.random.Generator, percentile: float | None = None
) -> FloatArray:
    """Return ``resamples`` bootstrap values of the sample's mean (or ``percentile``)."""
    counted = ~np.isnan(sample.values)
    values = sample.values[counted]
    clusters = sample.clusters[counted]
    size = sample.size
    out: list[FloatArray] = []
    if percentile is None:
        sums = np.bincount(clusters, weights=values, minlength=size)
        counts = np.bincount(clusters, minlength=size).astype(np.float64)
        for drawn in _draws(size, resamples, rng):
            with np.errstate(invalid="ignore", divide="ignore"):
                out.append(sums[drawn].sum(axis=1) / counts[drawn].sum(axis=1))
        return np.concatenate(out) if out else np.array([], dtype=np.float64)
    for drawn in _draws(size, resamples, rng):
        for row in drawn:
            repeated = np.repeat(values, np.bincount(row, minlength=size)[clusters])
            out.append(np.array([np.percentile(repeated, percentile) if len(repeated) else np.nan]))
    return np.concatenate(out) if out else np.array([], dtype=np.float64)


def statistic(sample: Sample, percentile: float | None = None) -> float | None:
    """Return the sample's mean (or ``percentile``) of counted values; None when none is."""
    values = sample.values[~np.isnan(sample.values)]
    if not len(values):
        return None
    return float(np.mean(values) if percentile is None else np.percentile(values, percentile))


def compare_independent(
    baseline: Sample,
    current: Sample,
    *,
    resamples: int,
    seed: int,
    alpha: float,
    higher_is_better: bool,
    percentile: float | None = None,
) -> IndependentComparison | None:
    """Compare the samples' statistic; None when either has no counted value."""
    old = statistic(baseline, percentile)
    new = statistic(current, percentile)
    if old is None or new is None:
        return None
    rng = np.random.Generator(np.random.PCG64(seed))
    before = resample(baseline, resamples, rng, percentile)
    after = resample(current, resamples, rng, percentile)
    differences = after - before
    differences = differences[~np.isnan(differences)]
    low, high = np.percentile(differences, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    not_worse = differences >= 0 if higher_is_better else differences <= 0
    p_value = (1 + int(not_worse.sum())) / (1 + len(differences))
    return IndependentComparison(old, new, new - old, float(low), float(high), p_value)


def interval(
    sample: Sample, *, resamples: int, seed: int, alpha: float, percentile: float | None = None
) -> tuple[float, float] | None:
    """Return the percentile bootstrap interval of the sample's statistic at ``1 - alpha``."""
    if statistic(sample, percentile) is None:
        return None
    values = resample(sample, resamples, np.random.Generator(np.random.PCG64(seed)), percentile)
    values = values[~np.isnan(values)]
    low, high = np.percentile(values, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return float(low), float(high)
