"""Two-sample statistics on embeddings: MMD, a domain classifier's AUC, centroid distances.

Each takes a reference sample ``X`` and a current sample ``Y``, arrays of shape ``(n, d)`` and
``(m, d)`` (one embedding per row), and needs no label: it asks only whether the two samples
could come from one distribution.

- :func:`mmd_test`: the unbiased estimate of the squared maximum mean discrepancy (Gretton et
  al., 2012, eq. 3) under a Gaussian kernel ``k(x, y) = exp(-|x - y|^2 / (2 s^2))`` whose
  bandwidth ``s`` is the median of the pairwise Euclidean distances of the pooled sample
  (the median heuristic, distinct pairs only). Its p-value comes from a permutation test over
  the pooled sample: each of ``B`` seeded permutations splits the ``n + m`` rows into new
  samples of sizes ``n`` and ``m``, and ``p = (1 + #{perm >= observed}) / (1 + B)``, so it is
  never 0. The pooled kernel matrix is computed once; a permutation is a 0/1 row of
  membership, and one matrix product (in float32) gives every permuted statistic.
- :func:`classifier_auc`: an L2-regularised logistic regression (Newton's method, numpy)
  told to separate ``X`` (label 0) from ``Y`` (label 1), scored out of fold by stratified
  ``k``-fold cross-validation; its ROC AUC by the rank formula (ties get their mean rank),
  with the one-sided p-value of AUC > 0.5 from the Mann-Whitney normal approximation with
  the tie correction. Out-of-fold scores come from ``k`` models, so the p-value is an
  approximation; the verdict reads the MMD's p-value, not this one.
- :func:`centroid_distance`: ``1 - cos`` of the two mean vectors (each normalised) and their
  Euclidean distance.

A sample larger than ``max_rows`` (default :data:`monitor.drift.settings.MAX_ROWS`) is
subsampled without replacement, seeded, before any statistic (:func:`subsample`): the kernel
matrix grows with the square of the rows. Every random draw comes from
``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from monitor.drift.settings import FOLDS, PERMUTATIONS
from monitor.errors import UsageError

FloatArray = npt.NDArray[np.float64]

#: The L2 penalty ``lambda / 2 * |w|^2`` of the domain classifier (features standardised).
L2: Final = 1.0
# Newton's method on an L2-penalised logistic loss converges in a handful of steps; these
# bound it on a degenerate fold.
_NEWTON_STEPS: Final = 25
_NEWTON_TOLERANCE: Final = 1e-8
# Permuted statistics within this of the observed one count as ties (>=): rounding only.
_TIE: Final = 1e-12


@dataclass(frozen=True, slots=True)
class MmdResult:
    """The unbiased MMD^2, the kernel bandwidth, the permutation p-value and its count."""

    mmd2: float
    bandwidth: float
    p_value: float
    permutations: int


@dataclass(frozen=True, slots=True)
class AucResult:
    """The domain classifier's out-of-fold ROC AUC and its one-sided p-value (AUC > 0.5)."""

    auc: float
    p_value: float
    folds: int


@dataclass(frozen=True, slots=True)
class CentroidDistance:
    """``1 - cos`` of the normalised centroids, and their Euclidean distance."""

    cosine: float
    euclidean: float


def as_sample(rows: npt.ArrayLike, name: str) -> FloatArray:
    """Return ``rows`` as a float64 ``(n, d)`` array; raise UsageError for another shape."""
    array = np.asarray(rows, dtype=np.float64)
    if array.ndim != 2 or array.shape[0] < 2 or array.shape[1] < 1:
        raise UsageError(
            f"{name}: expected at least 2 rows of an (n, d) array, found {array.shape}"
        )
    if not np.isfinite(array).all():
        raise UsageError(f"{name}: expected finite numbers, found NaN or infinity")
    return array


def subsample(rows: FloatArray, max_rows: int, rng: np.random.Generator) -> FloatArray:
    """Return ``rows``, or ``max_rows`` of them drawn without replacement when it has more."""
    if len(rows) <= max_rows:
        return rows
    return rows[np.sort(rng.choice(len(rows), size=max_rows, replace=False))]


def _squared_distances(pooled: FloatArray) -> FloatArray:
    norms: FloatArray = np.einsum("ij,ij->i", pooled, pooled)
    squared: FloatArray = norms[:, None] + norms[None, :] - 2.0 * (pooled @ pooled.T)
    np.maximum(squared, 0.0, out=squared)  # rounding can make a distance a hair below 0
    np.fill_diagonal(squared, 0.0)
    return squared


def median_bandwidth(squared: FloatArray) -> float:
    """Return the median distance between distinct rows, from the square distance matrix."""
    # Off the diagonal each pair is there twice, which leaves the median as it is; the N
    # zeros of the diagonal are the N smallest cells, so the median of the pairs is the mean
    # of the roots of cells N + M/2 - 1 and N + M/2 of the sorted matrix (M = N(N-1) cells
    # off the diagonal, an even number).
    size = len(squared)
    middle = size + size * (size - 1) // 2
    cells = np.partition(squared.ravel(), (middle - 1, middle))
    bandwidth = 0.5 * (math.sqrt(float(cells[middle - 1])) + math.sqrt(float(cells[middle])))
    # All rows equal (or half of them): any bandwidth gives the same verdict; 1 avoids 0/0.
    return bandwidth if bandwidth > 0 else 1.0


def _mmd2(inside: FloatArray, row_sums: FloatArray, total: float, n: int, m: int) -> FloatArray:
    """Return the unbiased MMD^2 of each membership row from its ``z' K z`` (``inside``)."""
    # With K's diagonal zeroed, z the 0/1 membership of X and w = 1 - z:
    # sum over X pairs = z'Kz, over Y pairs = w'Kw = total - 2 z'r + z'Kz, across = z'r - z'Kz.
    cross = row_sums - inside
    within_y = total - 2.0 * row_sums + inside
    return inside / (n * (n - 1)) + within_y / (m * (m - 1)) - 2.0 * cross / (n * m)


def mmd_test(
    x: npt.ArrayLike, y: npt.ArrayLike, *, permutations: int = PERMUTATIONS, seed: int = 0
) -> MmdResult:
    """Return the unbiased MMD^2 of ``x`` and ``y`` and its permutation p-value."""
    if permutations < 1:
        raise UsageError(f"permutations: expected at least 1, found {permutations}")
    xs, ys = as_sample(x, "reference"), as_sample(y, "current")
    n, m = len(xs), len(ys)
    pooled = np.vstack([xs, ys])
    squared = _squared_distances(pooled)
    bandwidth = median_bandwidth(squared)
    kernel = np.exp(squared / (-2.0 * bandwidth * bandwidth))
    np.fill_diagonal(kernel, 0.0)
    sums = kernel.sum(axis=1)
    total = float(sums.sum())
    rng = np.random.default_rng(seed)
    # Row 0 is the observed split; rows 1..B are permutations of the pooled sample.
    order = rng.permuted(np.tile(np.arange(n + m), (permutations + 1, 1)), axis=1)
    order[0] = np.arange(n + m)
    # The permuted statistics are ranked among themselves, so float32 serves (kernel values
    # lie in (0, 1]; its rounding is far below their spread) at half the work of float64.
    member = np.zeros((permutations + 1, n + m), dtype=np.float32)
    np.put_along_axis(member, order[:, :n], 1.0, axis=1)
    inside = np.einsum("bi,bi->b", member @ kernel.astype(np.float32), member, dtype=np.float64)
    stats = _mmd2(inside, member.astype(np.float64) @ sums, total, n, m)
    beaten = int(np.count_nonzero(stats[1:] >= stats[0] - _TIE))
    # The reported estimate is the float64 one.
    observed = _mmd2(np.array([kernel[:n, :n].sum()]), np.array([sums[:n].sum()]), total, n, m)
    p_value = (1 + beaten) / (1 + permutations)
    return MmdResult(float(observed[0]), bandwidth, p_value, permutations)


def average_ranks(values: npt.ArrayLike) -> FloatArray:
    """Return the 1-based ranks of ``values``, tied values sharing their mean rank."""
    array = np.asarray(values, dtype=np.float64)
    order = np.argsort(array, kind="mergesort")
    ordered = array[order]
    # Each run of equal values starts where a value differs from the one before it.
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], len(array)]
    mean_rank = (starts + 1 + ends) / 2.0  # the mean of ranks starts+1 .. ends
    ranks = np.empty(len(array))
    ranks[order] = np.repeat(mean_rank, ends - starts)
    return ranks


def roc_auc(labels: npt.ArrayLike, scores: npt.ArrayLike) -> AucResult:
    """Return the ROC AUC of ``scores`` for the 0/1 ``labels`` by the rank formula."""
    truth = np.asarray(labels, dtype=bool)
    ranks = average_ranks(scores)
    positives = int(truth.sum())
    negatives = len(truth) - positives
    if positives == 0 or negatives == 0:
        raise UsageError("roc_auc: expected both labels among the scores")
    u = float(ranks[truth].sum()) - positives * (positives + 1) / 2.0
    auc = u / (positives * negatives)
    # Mann-Whitney U under the null hypothesis, its variance corrected for ties.
    total = positives + negatives
    _, counts = np.unique(np.asarray(scores, dtype=np.float64), return_counts=True)
    ties = float(np.sum(counts.astype(np.float64) ** 3 - counts))
    variance = positives * negatives / 12.0 * ((total + 1) - ties / (total * (total - 1)))
    if variance <= 0:  # every score equal: no evidence either way
        return AucResult(auc, 1.0, 0)
    z = (u - positives * negatives / 2.0) / math.sqrt(variance)
    return AucResult(auc, 0.5 * math.erfc(z / math.sqrt(2.0)), 0)


def _fit_logistic(features: FloatArray, labels: FloatArray, l2: float) -> FloatArray:
    """Return the weights (intercept last) of an L2-penalised logistic regression."""
    design = np.hstack([features, np.ones((len(features), 1))])
    weights = np.zeros(design.shape[1])
    penalty = np.full(design.shape[1], l2)
    penalty[-1] = 0.0  # the intercept is not shrunk
    for _ in range(_NEWTON_STEPS):
        p = 1.0 / (1.0 + np.exp(-(design @ weights)))
        gradient = design.T @ (p - labels) + penalty * weights
        hessian = (design.T * (p * (1.0 - p))) @ design
        hessian[np.diag_indices_from(hessian)] += penalty + 1e-10
        step = np.linalg.solve(hessian, gradient)
        weights -= step
        if float(np.max(np.abs(step))) < _NEWTON_TOLERANCE:
            break
    return weights


def classifier_auc(
    x: npt.ArrayLike, y: npt.ArrayLike, *, folds: int = FOLDS, seed: int = 0, l2: float = L2
) -> AucResult:
    """Return the out-of-fold ROC AUC of a logistic regression telling ``y`` from ``x``."""
    xs, ys = as_sample(x, "reference"), as_sample(y, "current")
    if folds < 2 or min(len(xs), len(ys)) < folds:
        raise UsageError(f"folds: expected 2 to {min(len(xs), len(ys))}, found {folds}")
    features = np.vstack([xs, ys])
    labels = np.r_[np.zeros(len(xs)), np.ones(len(ys))]
    rng = np.random.default_rng(seed)
    # Stratified folds: each side is shuffled and dealt round the folds on its own.
    fold = np.empty(len(labels), dtype=np.int64)
    for side in (np.flatnonzero(labels == 0), np.flatnonzero(labels == 1)):
        fold[rng.permutation(side)] = np.arange(len(side)) % folds
    scores = np.empty(len(labels))
    for k in range(folds):
        held = fold == k
        train = features[~held]
        mean = train.mean(axis=0)
        scale = train.std(axis=0)
        scale[scale == 0] = 1.0  # a constant feature carries nothing either way
        weights = _fit_logistic((train - mean) / scale, labels[~held], l2)
        scores[held] = ((features[held] - mean) / scale) @ weights[:-1] + weights[-1]
    found = roc_auc(labels, scores)
    return AucResult(found.auc, found.p_value, folds)


def centroid_distance(x: npt.ArrayLike, y: npt.ArrayLike) -> CentroidDistance:
    """Return ``1 - cos`` of the normalised centroids of ``x`` and ``y``, and their distance."""
    cx = as_sample(x, "reference").mean(axis=0)
    cy = as_sample(y, "current").mean(axis=0)
    norms = float(np.linalg.norm(cx)) * float(np.linalg.norm(cy))
    cosine = float(cx @ cy) / norms if norms > 0 else 0.0
    return CentroidDistance(1.0 - cosine, float(np.linalg.norm(cx - cy)))
