"""Query drift statistics: the MMD test's level and power, the classifier's AUC, the verdict.

The level and power tests draw Gaussian samples directly (200 rows a side, d = 8, B = 200
permutations, 200 seeds): the level is the share of same-distribution pairs that alarm, the
power the share that alarm when the current sample's mean moves by half a standard deviation
along one direction (the first axis; every other axis unchanged).
"""

from __future__ import annotations

import numpy as np
import pytest

from monitor.drift.check import drift_check
from monitor.drift.settings import DriftSettings
from monitor.drift.stats import (
    average_ranks,
    centroid_distance,
    classifier_auc,
    median_bandwidth,
    mmd_test,
    roc_auc,
    subsample,
)
from monitor.errors import UsageError

SEEDS = range(200)
ROWS = 200
DIMENSION = 8
ALPHA = 0.05


def _pair(seed: int, shift: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((ROWS, DIMENSION))
    y = rng.standard_normal((ROWS, DIMENSION))
    y[:, 0] += shift
    return x, y


def _alarm_rate(shift: float) -> float:
    alarms = sum(
        mmd_test(*_pair(seed, shift), permutations=200, seed=seed).p_value < ALPHA for seed in SEEDS
    )
    return alarms / len(SEEDS)


@pytest.mark.slow
def test_same_distribution_alarms_at_most_at_alpha_plus_003() -> None:
    """Two samples of one distribution alarm in at most alpha + 0.03 of 200 seeds."""
    assert _alarm_rate(0.0) <= ALPHA + 0.03


@pytest.mark.slow
def test_half_sigma_shift_is_detected_in_90_percent_of_seeds() -> None:
    """A mean shift of half a standard deviation along one axis alarms in >= 90% of seeds."""
    assert _alarm_rate(0.5) >= 0.90


def test_permutation_p_value_is_never_zero() -> None:
    """Samples far apart get the smallest p-value a permutation test can give, 1 / (1 + B)."""
    x, y = _pair(0, shift=10.0)
    assert 1 / 51 == mmd_test(x, y, permutations=50).p_value


def test_mmd_is_seeded() -> None:
    """One seed gives one p-value."""
    x, y = _pair(3, shift=0.2)
    assert mmd_test(x, y, seed=7) == mmd_test(x, y, seed=7)


def test_mmd_unbiased_estimate_matches_its_formula() -> None:
    """The observed MMD^2 is the unbiased estimator written out pair by pair."""
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((6, 3)), rng.standard_normal((4, 3)) + 0.3
    found = mmd_test(x, y, permutations=1)

    def k(a: np.ndarray, b: np.ndarray) -> float:
        return float(np.exp(-np.sum((a - b) ** 2) / (2 * found.bandwidth**2)))

    xx = sum(k(a, b) for i, a in enumerate(x) for j, b in enumerate(x) if i != j) / (6 * 5)
    yy = sum(k(a, b) for i, a in enumerate(y) for j, b in enumerate(y) if i != j) / (4 * 3)
    xy = sum(k(a, b) for a in x for b in y) / (6 * 4)
    assert xx + yy - 2 * xy == pytest.approx(found.mmd2, abs=1e-12)


def test_bandwidth_is_the_median_pairwise_distance() -> None:
    """The bandwidth is the median distance between distinct rows of the pooled sample."""
    rows = np.array([[0.0], [1.0], [3.0], [7.0]])  # distances 1, 3, 7, 2, 6, 4
    squared = (rows - rows.T) ** 2
    assert 3.5 == median_bandwidth(squared)


def test_auc_with_ties_matches_a_hand_computed_case() -> None:
    """Scores 0.1, 0.5 (label 0) and 0.5, 0.9 (label 1): 3 wins and a tie of 4 pairs."""
    assert 0.875 == roc_auc([0, 0, 1, 1], [0.1, 0.5, 0.5, 0.9]).auc


def test_average_ranks_share_a_tie() -> None:
    """Tied values share the mean of the ranks they span."""
    assert [1.0, 3.0, 3.0, 3.0, 5.0] == average_ranks([1, 2, 2, 2, 9]).tolist()


@pytest.mark.parametrize(("shift", "low", "high"), [(0.0, 0.40, 0.60), (3.0, 0.95, 1.0)])
def test_classifier_auc(shift: float, low: float, high: float) -> None:
    """The out-of-fold AUC is near 0.5 for one distribution and near 1 for separated ones."""
    aucs = [classifier_auc(*_pair(seed, shift), seed=seed).auc for seed in range(5)]
    assert low <= float(np.mean(aucs)) <= high


def test_centroid_distance_of_orthogonal_means() -> None:
    """Means (1, 0) and (0, 2): cosine distance 1, Euclidean distance sqrt(5)."""
    found = centroid_distance([[1.0, 0.0], [1.0, 0.0]], [[0.0, 2.0], [0.0, 2.0]])
    assert (1.0, pytest.approx(5**0.5)) == (found.cosine, found.euclidean)


def test_subsample_keeps_at_most_the_cap() -> None:
    """A sample above the cap keeps that many distinct rows."""
    rows = np.arange(30.0).reshape(15, 2)
    kept = subsample(rows, 10, np.random.default_rng(0))
    assert 10 == len({tuple(row) for row in kept.tolist()})


@pytest.mark.parametrize(
    ("shift", "settings", "status"),
    [
        (0.0, DriftSettings(), "ok"),
        (1.0, DriftSettings(), "drift"),
        (0.0, DriftSettings(max_auc=0.5), "drift"),
        (0.0, DriftSettings(max_centroid_distance=0.0), "drift"),
    ],
)
def test_verdict(shift: float, settings: DriftSettings, status: str) -> None:
    """The verdict is drift when the MMD p-value is below alpha or a threshold is passed."""
    assert status == drift_check(*_pair(1, shift), settings).status


def test_too_few_queries_is_no_data() -> None:
    """A window with fewer than min_queries queries gets no data and no statistic."""
    x, y = _pair(0)
    found = drift_check(x, y[:49])
    assert ("no data", {}) == (found.status, found.figures())


def test_verdict_reports_what_it_compared() -> None:
    """Samples above max_rows are compared on max_rows rows each."""
    x, y = _pair(0)
    found = drift_check(x, y, DriftSettings(max_rows=120, permutations=20))
    assert (200, 120) == (found.current_queries, found.current_rows)


@pytest.mark.parametrize(
    "options",
    [
        {"alpha": 0.0},
        {"alpha": 1.5},
        {"permutations": 0},
        {"min_queries": 2},
        {"max_rows": 10},
        {"max_auc": 0.2},
        {"max_centroid_distance": -1.0},
    ],
)
def test_bad_settings_are_refused(options: dict[str, float]) -> None:
    """A setting out of its range raises a UsageError naming it."""
    with pytest.raises(UsageError, match=next(iter(options))):
        DriftSettings(**options)  # type: ignore[arg-type]
