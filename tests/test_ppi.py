"""Judge-corrected metrics: the PPI estimate against a planted truth, and through a suite."""

from __future__ import annotations

import numpy as np
import pytest

from monitor.compare.ppi import ppi_mean

SEEDS = 200
QUERIES = 400
VERIFIED = 60
BIAS = 0.08


def planted(seed: int, bias: float = BIAS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return per-query true values, a judge's (biased by ``bias`` plus noise) and the
    indices of a random verified subset."""
    rng = np.random.default_rng(seed)
    truth = rng.beta(2, 3, QUERIES)
    judge = np.clip(truth + bias + rng.normal(0, 0.1, QUERIES), 0, 1)
    verified = rng.choice(QUERIES, VERIFIED, replace=False)
    return truth, judge, verified


def test_calibrated_interval_covers_the_true_mean_over_seeds() -> None:
    """The 95% calibrated interval covers the true mean in at least 93% of 200 seeds."""
    covered = 0
    for seed in range(SEEDS):
        truth, judge, verified = planted(seed)
        est = ppi_mean(judge, judge[verified], truth[verified])
        covered += est.low <= truth.mean() <= est.high
    assert covered / SEEDS >= 0.93


def test_judge_only_mean_is_biased_by_the_planted_amount() -> None:
    """The judge-only mean sits the planted bias above the true mean, on average over seeds."""
    gaps = []
    for seed in range(SEEDS):
        truth, judge, verified = planted(seed)
        gaps.append(ppi_mean(judge, judge[verified], truth[verified]).judge - truth.mean())
    # Clipping at 1 trims a little of the bias off the few values near the top.
    assert BIAS == pytest.approx(float(np.mean(gaps)), abs=0.01)


def test_calibrated_mean_is_unbiased() -> None:
    """The calibrated mean's error averages to nothing over seeds, bias or not."""
    errors = []
    for seed in range(SEEDS):
        truth, judge, verified = planted(seed)
        errors.append(ppi_mean(judge, judge[verified], truth[verified]).mean - truth.mean())
    assert 0.0 == pytest.approx(float(np.mean(errors)), abs=0.003)


def test_informative_judge_narrows_the_interval_below_human_only() -> None:
    """With an informative judge the calibrated interval is narrower than the human-only one."""
    truth, judge, verified = planted(7)
    est = ppi_mean(judge, judge[verified], truth[verified])
    human = truth[verified]
    half = 1.96 * human.std(ddof=1) / np.sqrt(len(human))
    assert est.high - est.low < 2 * half


def test_share_scales_the_correction() -> None:
    """With a share s of judged queries the rectifier's mean counts s times."""
    est = ppi_mean([0.5, 0.7, 0.9, 0.3], [0.5, 0.7], [0.3, 0.3], share=0.5)
    assert 0.6 - 0.5 * 0.3 == pytest.approx(est.mean)


def test_too_few_verified_queries_give_no_interval() -> None:
    """One verified query gives the corrected mean but no interval."""
    est = ppi_mean([0.5, 0.7], [0.5], [0.4])
    assert (0.5, True) == (pytest.approx(est.mean), bool(np.isnan(est.low)))
