"""Paired tests and intervals: exact values by hand, sampling, properties and bad input."""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.compare import stats
from monitor.compare.stats import (
    ALTERNATIVES,
    Alternative,
    Method,
    PairedComparison,
    bootstrap_ci,
    compare_paired,
    mean_ci,
    paired_randomization_test,
    wilson_interval,
)
from monitor.errors import UsageError

deltas_strategy = st.lists(
    st.floats(-10.0, 10.0, allow_nan=False, allow_subnormal=False), min_size=1, max_size=30
)


def drop(n: int, shift: float, noise: float, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Return a baseline in [0.3, 0.9] and a current run ``shift`` lower, with noise."""
    rng = np.random.default_rng(seed)
    baseline = rng.uniform(0.3, 0.9, n)
    return baseline, baseline - shift + rng.normal(0.0, noise, n)


# --- exact mode: values by hand ------------------------------------------------------------


def test_exact_p_value_when_every_delta_is_negative() -> None:
    """Three negative deltas give the one-sided exact p-value 1/8."""
    # Of the 2**3 = 8 sign patterns of (-1, -2, -3) only the observed one sums to -6 or
    # less; the exact mode counts it and adds no +1: p = 1/8.
    assert 1 / 8 == paired_randomization_test([0.0, 0.0, 0.0], [-1.0, -2.0, -3.0])


@pytest.mark.parametrize(
    ("alternative", "expected"),
    [("less", 3 / 8), ("greater", 6 / 8), ("two-sided", 6 / 8)],
)
def test_exact_p_value_by_enumeration(alternative: Alternative, expected: float) -> None:
    """Deltas (-3, -1, 2) give the p-values counted over all eight sign patterns."""
    # Signed sums of (+-3, +-1, +-2): -3-1+2=-2 (observed), -3-1-2=-6, -3+1+2=0, -3+1-2=-4,
    # 3-1+2=4, 3-1-2=0, 3+1+2=6, 3+1-2=2.
    # less: sums <= -2 are {-2, -6, -4} -> 3/8; greater: sums >= -2 are {-2, 0, 4, 0, 6, 2}
    # -> 6/8; two-sided: |sum| >= 2 are {-2, -6, -4, 4, 6, 2} -> 6/8.
    p = paired_randomization_test([0.0, 0.0, 0.0], [-3.0, -1.0, 2.0], alternative=alternative)
    assert expected == p


def test_sampled_p_value_counts_the_observed_pattern() -> None:
    """The sampled p-value is at least 1/(iterations + 1), reached by an extreme drop."""
    baseline, current = drop(200, 0.2, 0.01)
    p = paired_randomization_test(baseline, current, iterations=999)
    assert 1 / 1000 == p


@pytest.mark.parametrize("method", ["exact", "randomization"])
@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_identical_runs_give_p_one(method: Method, alternative: Alternative) -> None:
    """Identical runs give p = 1 whatever the alternative and method."""
    values = np.linspace(0.0, 1.0, 15)
    p = paired_randomization_test(values, values.copy(), alternative=alternative, method=method)
    assert 1.0 == p


def test_identical_runs_give_a_zero_interval() -> None:
    """Identical runs give the bootstrap interval (0, 0)."""
    values = np.linspace(0.0, 1.0, 50)
    assert (0.0, 0.0) == bootstrap_ci(values, values.copy())


def test_equal_deltas_give_a_point_interval() -> None:
    """When every delta is the same d, the interval is (d, d)."""
    assert (-0.25, -0.25) == bootstrap_ci([0.5, 0.25, 0.75], [0.25, 0.0, 0.5])


def test_small_n_is_tested_exactly() -> None:
    """Up to EXACT_MAX_N queries the comparison enumerates sign patterns."""
    baseline, current = drop(stats.EXACT_MAX_N, 0.05, 0.1)
    assert "exact" == compare_paired(baseline, current).method
    baseline, current = drop(stats.EXACT_MAX_N + 1, 0.05, 0.1)
    assert "randomization" == compare_paired(baseline, current).method


# --- sampling ----------------------------------------------------------------------------


def test_large_consistent_drop_is_significant() -> None:
    """A consistent drop over 200 queries gives p < 0.001 and an interval below 0."""
    baseline, current = drop(200, 0.05, 0.03)
    result = compare_paired(baseline, current)
    assert result.p_value < 0.001
    assert result.ci_high < 0.0


def test_same_seed_gives_the_same_result() -> None:
    """The same inputs and seed give the same p-value and interval."""
    baseline, current = drop(300, 0.01, 0.1)
    first = compare_paired(baseline, current, iterations=2000, seed=7)
    assert first == compare_paired(baseline, current, iterations=2000, seed=7)


def test_another_seed_gives_another_sample() -> None:
    """A different seed draws different patterns and resamples."""
    baseline, current = drop(300, 0.01, 0.1)
    first = compare_paired(baseline, current, iterations=2000, seed=7)
    other = compare_paired(baseline, current, iterations=2000, seed=8)
    assert first.p_value != other.p_value
    assert first.ci_low != other.ci_low


def test_chunk_size_does_not_change_the_result(monkeypatch: pytest.MonkeyPatch) -> None:
    """Drawing in small chunks gives exactly what one large chunk gives."""
    baseline, current = drop(301, 0.01, 0.1)
    large = compare_paired(baseline, current, iterations=999, alternative="two-sided")
    monkeypatch.setattr(stats, "CHUNK_CELLS", 1000)
    assert large == compare_paired(baseline, current, iterations=999, alternative="two-sided")


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_sampled_p_value_agrees_with_the_exact_one(alternative: Alternative) -> None:
    """At n = 12, 20,000 random patterns land within 0.015 of the exact p-value (~4 s.e.)."""
    baseline, current = drop(12, 0.05, 0.15, seed=3)
    exact = paired_randomization_test(baseline, current, alternative=alternative)
    sampled = paired_randomization_test(
        baseline,
        current,
        alternative=alternative,
        method="randomization",
        iterations=20_000,
    )
    assert exact == pytest.approx(sampled, abs=0.015)


# --- properties --------------------------------------------------------------------------


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(deltas_strategy, st.sampled_from(ALTERNATIVES), st.sampled_from(stats.METHODS[1:]))
def test_p_value_lies_in_zero_one(
    deltas: list[float], alternative: Alternative, method: Method
) -> None:
    """Every p-value lies in (0, 1]."""
    if method == "exact" and len(deltas) > stats.EXACT_MAX_N:
        method = "randomization"
    p = paired_randomization_test(
        np.zeros(len(deltas)), deltas, iterations=200, alternative=alternative, method=method
    )
    assert 0.0 < p <= 1.0


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-10.0, 10.0, allow_nan=False), min_size=1, max_size=12))
def test_two_sided_is_twice_the_smaller_one_sided(deltas: list[float]) -> None:
    """Exactly, the two-sided p-value is min(1, 2 * min(p_less, p_greater))."""
    # Sign flips make the null distribution symmetric about 0, so the two tails beyond
    # |observed| hold the same number of patterns.
    zeros = np.zeros(len(deltas))
    less = paired_randomization_test(zeros, deltas, alternative="less")
    greater = paired_randomization_test(zeros, deltas, alternative="greater")
    two = paired_randomization_test(zeros, deltas, alternative="two-sided")
    assert min(1.0, 2.0 * min(less, greater)) == two


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-10.0, 10.0, allow_nan=False), min_size=1, max_size=12))
def test_one_sided_p_values_cover_everything(deltas: list[float]) -> None:
    """Exactly, p_less + p_greater is at least 1 + 2**-n: the observed pattern is in both tails."""
    zeros = np.zeros(len(deltas))
    less = paired_randomization_test(zeros, deltas, alternative="less")
    greater = paired_randomization_test(zeros, deltas, alternative="greater")
    assert 1.0 + 2.0 ** -len(deltas) <= less + greater + 1e-12


@settings(max_examples=80, deadline=None)
@given(deltas_strategy, st.integers(0, 2**16), st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_percentile_interval_holds_the_mean(
    deltas: list[float], seed: int, confidence: float
) -> None:
    """The interval lies within the deltas' range and contains the mean delta."""
    # The range holds by construction (a mean of resampled deltas cannot leave it). Holding
    # the mean is not guaranteed for a percentile interval of any statistic, but the mean sits
    # near the middle of its own bootstrap distribution (one outlier is drawn Binomial(n, 1/n)
    # times, whose median is 1), so central intervals of 80% or more contain it.
    values = np.array(deltas)
    low, high = bootstrap_ci(
        np.zeros_like(values), values, iterations=300, confidence=confidence, seed=seed
    )
    slack = 1e-9 * max(1.0, float(np.abs(values).max()))
    assert values.min() <= low <= high <= values.max()
    assert low - slack <= values.mean() <= high + slack


# --- the record --------------------------------------------------------------------------


def test_comparison_record_describes_the_change() -> None:
    """The record holds the means, the delta, the per-query counts and the settings."""
    result = compare_paired([0.5, 0.5, 0.5, 0.5], [0.25, 0.5, 0.25, 0.75], iterations=50)
    expected = {
        "n": 4,
        "baseline_mean": 0.5,
        "current_mean": 0.4375,
        "delta": -0.0625,
        "relative_delta": -0.125,
        "n_worse": 2,
        "n_better": 1,
        "n_same": 1,
        "iterations": 50,
        "seed": 0,
        "alpha": 0.05,
        "confidence": 0.95,
        "alternative": "less",
        "method": "exact",
    }
    assert expected == {key: getattr(result, key) for key in expected}


def test_significant_means_p_below_alpha() -> None:
    """A change is significant exactly when its p-value is below alpha."""
    # Deltas (-1, -2, -3): exact one-sided p = 1/8 = 0.125.
    result = compare_paired([0.0, 0.0, 0.0], [-1.0, -2.0, -3.0], alpha=0.13)
    assert (0.125, True) == (result.p_value, result.significant)
    assert not compare_paired([0.0, 0.0, 0.0], [-1.0, -2.0, -3.0], alpha=0.125).significant


def test_relative_delta_is_none_for_a_zero_baseline() -> None:
    """A baseline mean of 0 leaves the relative delta undefined (None)."""
    assert compare_paired([0.0, 0.0], [0.5, 0.0]).relative_delta is None


def test_to_dict_lists_every_field() -> None:
    """to_dict gives every field by name, in declaration order."""
    result = compare_paired([0.5, 0.25], [0.25, 0.25])
    assert list(PairedComparison.__dataclass_fields__) == list(result.to_dict())


# --- single-run intervals ----------------------------------------------------------------


def test_wilson_interval_for_hit_rate_at_50() -> None:
    """40 hits of 50 give the Wilson 95% interval (0.6696, 0.8876)."""
    # z = 1.959964, p = 0.8, z^2/n = 0.0768292; centre = (0.8 + 0.0384146) / 1.0768292
    # = 0.778596; half = z / 1.0768292 * sqrt(0.8 * 0.2 / 50 + 3.841459 / 10000) = 0.108966.
    assert (0.669629, 0.887562) == pytest.approx(wilson_interval(40, 50), abs=1e-6)


@pytest.mark.parametrize(("successes", "index", "bound"), [(0, 0, 0.0), (20, 1, 1.0)])
def test_wilson_interval_stays_inside_zero_one(successes: int, index: int, bound: float) -> None:
    """With no or only successes the interval touches 0 or 1 and never crosses it."""
    assert bound == pytest.approx(wilson_interval(successes, 20)[index], abs=1e-15)


def test_mean_ci_uses_the_t_quantile() -> None:
    """Values 1..5 give the t interval 3 +- 2.7764451 * sqrt(2.5 / 5)."""
    # mean 3, s^2 = (4 + 1 + 0 + 1 + 4) / 4 = 2.5, s.e. = sqrt(0.5) = 0.7071068,
    # t(0.975, df 4) = 2.7764451 (tables), half width 1.9632432.
    assert (1.0367568, 4.9632432) == pytest.approx(mean_ci([1, 2, 3, 4, 5]), abs=1e-7)


@pytest.mark.parametrize("n", [2, 3, 10, 50, 301])
@pytest.mark.parametrize("confidence", [0.5, 0.95, 0.999])
def test_mean_ci_matches_scipy(n: int, confidence: float) -> None:
    """The t quantile behind mean_ci matches scipy's to 1e-9 relative."""
    scipy_stats = pytest.importorskip("scipy.stats")
    values = np.random.default_rng(n).normal(size=n)
    low, high = mean_ci(values, confidence)
    t = (high - low) / 2.0 / (values.std(ddof=1) / math.sqrt(n))
    assert scipy_stats.t.ppf((1.0 + confidence) / 2.0, n - 1) == pytest.approx(t, rel=1e-9)


def test_mean_ci_of_constant_values_is_a_point() -> None:
    """Constant values give the interval (value, value)."""
    assert (0.5, 0.5) == mean_ci([0.5, 0.5, 0.5])


#: Deltas of a total outage against a baseline with a few second-rank hits: every query lost
#: its hit, so the mean delta is -0.975 and its unbounded t interval reaches below -1.
OUTAGE_DELTAS = [-1.0] * 38 + [-0.5] * 2


def test_mean_ci_of_deltas_of_bounded_measures_stays_within_the_bounds() -> None:
    """With bounds (-1, 1) the t interval of an outage's deltas starts at -1, not below."""
    low, high = mean_ci(OUTAGE_DELTAS, bounds=(-1.0, 1.0))
    assert (-1.0, mean_ci(OUTAGE_DELTAS)[1]) == (low, high)


def test_mean_ci_of_a_mean_near_one_ends_at_one() -> None:
    """With bounds (0, 1) the t interval of values nearly all 1 ends at 1."""
    values = [1.0] * 38 + [0.5] * 2
    assert 1.0 == mean_ci(values, bounds=(0.0, 1.0))[1]


def test_mean_ci_of_values_a_rounding_past_a_bound_is_the_bound() -> None:
    """Values a rounding error above 1, with bounds (0, 1), give the point interval (1, 1)."""
    assert (1.0, 1.0) == mean_ci([1.0 + 2.3e-16] * 3, bounds=(0.0, 1.0))


@pytest.mark.parametrize(
    ("values", "bounds", "message"),
    [
        ([0.2, 0.4], (1.0, 0.0), "bounds must be a pair low <= high"),
        ([0.2, 0.4], (0.0, math.inf), "bounds must be a pair low <= high of finite numbers"),
    ],
)
def test_mean_ci_rejects_bad_bounds(
    values: list[float], bounds: tuple[float, float], message: str
) -> None:
    """Reversed or infinite bounds raise UsageError naming them."""
    with pytest.raises(UsageError, match=re.escape(message)):
        mean_ci(values, bounds=bounds)


# --- bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("baseline", "current", "options", "message"),
    [
        ([0.1, 0.2], [0.1], {}, "same queries: got 2 and 1"),
        ([], [], {}, "baseline is empty"),
        ([0.1, math.nan], [0.1, 0.2], {}, "baseline must hold finite numbers: position 1"),
        ([0.1, 0.2], [math.inf, 0.2], {}, "current must hold finite numbers: position 0"),
        ([[0.1, 0.2]], [[0.1, 0.2]], {}, "one-dimensional"),
        (["a"], [0.1], {}, "baseline must be a sequence of numbers"),
        ([0.1], [0.2], {"iterations": 0}, "iterations must be at least 1"),
        ([0.1], [0.2], {"iterations": 2.5}, "iterations must be an integer"),
        ([0.1], [0.2], {"seed": -1}, "seed must be at least 0"),
        ([0.1], [0.2], {"alternative": "lower"}, "unknown alternative 'lower'; known: less"),
        ([0.1], [0.2], {"method": "bayes"}, "unknown method 'bayes'"),
        ([0.1] * 21, [0.2] * 21, {"method": "exact"}, "at most 20 queries, got 21"),
    ],
)
def test_randomization_test_rejects_bad_input(
    baseline: object, current: object, options: dict[str, object], message: str
) -> None:
    """Bad arrays and options raise UsageError saying what is wrong."""
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace("*", r"\*")):
        paired_randomization_test(baseline, current, **options)  # type: ignore[arg-type]


CONFIDENCE_CALLS: dict[str, Callable[[float], object]] = {
    "bootstrap_ci": lambda c: bootstrap_ci([0.1, 0.2], [0.2, 0.3], confidence=c),
    "compare_paired": lambda c: compare_paired([0.1, 0.2], [0.2, 0.3], confidence=c),
    "wilson_interval": lambda c: wilson_interval(1, 2, c),
    "mean_ci": lambda c: mean_ci([0.1, 0.2], c),
}


@pytest.mark.parametrize("function", list(CONFIDENCE_CALLS))
@pytest.mark.parametrize("confidence", [0.0, 1.0, 1.5, -0.1, math.nan])
def test_confidence_must_lie_strictly_inside_zero_one(function: str, confidence: float) -> None:
    """A confidence outside (0, 1) raises UsageError in every function taking one."""
    with pytest.raises(UsageError, match="confidence must be strictly between 0 and 1"):
        CONFIDENCE_CALLS[function](confidence)


@pytest.mark.parametrize("alpha", [0.0, 1.0, 2.0])
def test_alpha_must_lie_strictly_inside_zero_one(alpha: float) -> None:
    """An alpha outside (0, 1) raises UsageError."""
    with pytest.raises(UsageError, match="alpha must be strictly between 0 and 1"):
        compare_paired([0.1, 0.2], [0.2, 0.3], alpha=alpha)


@pytest.mark.parametrize(
    ("successes", "n", "message"),
    [
        (1, 0, "n must be at least 1"),
        (3, 2, "at most n"),
        (-1, 2, "at least 0"),
        (1.5, 2, "successes must be an integer"),
    ],
)
def test_wilson_interval_rejects_bad_counts(successes: int, n: int, message: str) -> None:
    """Counts that are not 0 <= successes <= n with n >= 1 raise UsageError."""
    with pytest.raises(UsageError, match=message):
        wilson_interval(successes, n)


def test_mean_ci_needs_two_values() -> None:
    """One value leaves the spread unknown and raises UsageError."""
    with pytest.raises(UsageError, match="at least 2 values"):
        mean_ci([0.5])
