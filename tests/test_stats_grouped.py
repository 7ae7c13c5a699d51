"""Many queries: the paired tests draw per distinct value, with the same distribution."""

from __future__ import annotations

import math

import numpy as np
import pytest

from monitor.compare import stats
from monitor.compare.stats import (
    GROUPED_FROM_N,
    HEAVY_MIN,
    bootstrap_ci,
    compare_paired,
    paired_randomization_test,
)

N = 5000
assert N > GROUPED_FROM_N


def signs(negative: int, positive: int, magnitude: float = 0.25) -> tuple[np.ndarray, np.ndarray]:
    """Return N paired values whose deltas are ``negative`` times -magnitude, ``positive``
    times +magnitude and zero for the rest."""
    deltas = np.zeros(N)
    deltas[:negative] = -magnitude
    deltas[negative : negative + positive] = magnitude
    baseline = np.full(N, 0.5)
    return baseline, baseline + deltas


def binomial_tail(m: int, at_least: int) -> float:
    """Return P(X >= at_least) for X ~ Binomial(m, 1/2)."""
    return sum(math.comb(m, x) for x in range(at_least, m + 1)) / 2**m


def test_a_shared_magnitude_gives_the_binomial_p_value() -> None:
    """110 drops and 90 gains of 0.25 among 5,000 queries: p = P(Bin(200, 1/2) >= 110)."""
    baseline, current = signs(110, 90)
    sampled = paired_randomization_test(baseline, current, iterations=20_000, seed=4)
    # The Monte Carlo standard error of p near 0.09 is 0.002 at 20,000 iterations.
    assert binomial_tail(200, 110) == pytest.approx(sampled, abs=0.01)


@pytest.mark.parametrize("alternative", ["less", "greater", "two-sided"])
def test_grouped_p_value_agrees_with_one_sign_per_query(
    monkeypatch: pytest.MonkeyPatch, alternative: stats.Alternative
) -> None:
    """Distinct and shared magnitudes, zeros included: both ways of drawing agree."""
    rng = np.random.default_rng(5)
    baseline = rng.uniform(0.2, 0.8, N)
    shift = np.where(rng.random(N) < 0.5, 0.0, rng.normal(-0.002, 0.05, N))
    shift[: 3 * HEAVY_MIN] = -0.125
    current = baseline + shift
    grouped = paired_randomization_test(
        baseline, current, iterations=20_000, seed=1, alternative=alternative
    )
    monkeypatch.setattr(stats, "GROUPED_FROM_N", 10 * N)
    direct = paired_randomization_test(
        baseline, current, iterations=20_000, seed=2, alternative=alternative
    )
    assert direct == pytest.approx(grouped, abs=0.02)


def test_a_bootstrap_of_two_values_gives_the_binomial_interval() -> None:
    """Deltas of 0 and 1 (30% ones): the interval is that of Binomial(N, 0.3) / N."""
    ones = int(0.3 * N)
    baseline = np.zeros(N)
    current = np.where(np.arange(N) < ones, 1.0, 0.0)
    low, high = bootstrap_ci(baseline, current, iterations=10_000, seed=3)
    expected = binomial_quantiles(N, 0.3, (0.025, 0.975))
    # Monte Carlo error of each end is about 2e-4 at 10,000 iterations (one step is 2e-4).
    assert expected == pytest.approx((low, high), abs=1.2e-3)


def binomial_quantiles(n: int, share: float, levels: tuple[float, float]) -> tuple[float, ...]:
    """Return the smallest k / n with P(Binomial(n, share) <= k) >= each level."""
    ks = np.arange(n + 1)
    log_pmf = (
        np.array([math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) for k in ks])
        + ks * math.log(share)
        + (n - ks) * math.log(1 - share)
    )
    cdf = np.cumsum(np.exp(log_pmf))
    return tuple(float(np.searchsorted(cdf, level)) / n for level in levels)


@pytest.mark.slow
def test_grouped_bootstrap_agrees_with_drawing_queries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Few distinct deltas among many queries: counts per value give the query draw's
    interval within Monte Carlo error."""
    rng = np.random.default_rng(6)
    baseline = rng.choice(np.linspace(0.0, 1.0, 11), N)
    current = np.clip(baseline + rng.choice([-0.2, -0.1, 0.0, 0.0, 0.1], N), 0.0, 1.0)
    grouped = bootstrap_ci(baseline, current, iterations=10_000, seed=1)
    monkeypatch.setattr(stats, "GROUPED_FROM_N", 10 * N)
    direct = bootstrap_ci(baseline, current, iterations=10_000, seed=2)
    assert direct == pytest.approx(grouped, abs=1e-3)


def test_grouped_draws_do_not_depend_on_the_chunk_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Drawing per value in small chunks gives exactly what one large chunk gives."""
    baseline, current = signs(110, 90)
    current[-500:] += np.linspace(0.001, 0.3, 500)
    first = compare_paired(baseline, current, iterations=999, alternative="two-sided")
    monkeypatch.setattr(stats, "CHUNK_CELLS", 1000)
    assert first == compare_paired(baseline, current, iterations=999, alternative="two-sided")


def test_grouped_draws_follow_the_seed() -> None:
    """The same seed gives the same p-value and interval; another seed another sample."""
    baseline, current = signs(110, 90)
    first = compare_paired(baseline, current, iterations=2000, seed=7)
    other = compare_paired(baseline, current, iterations=2000, seed=8)
    assert first == compare_paired(baseline, current, iterations=2000, seed=7)
    assert (first.p_value, first.ci_low) != (other.p_value, other.ci_low)
