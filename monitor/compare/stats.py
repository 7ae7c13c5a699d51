"""Paired significance tests and confidence intervals for one metric over two runs.

A comparison takes the per-query values of one metric for a pinned baseline run and a current
run over the same queries (two aligned arrays) and asks whether the current run is really
worse, or only noisily different. Per-query deltas are ``current - baseline``; every metric
the monitor computes is better when higher, so a negative delta is a query that got worse.

- :func:`paired_randomization_test` flips the sign of each delta at random (under the null
  hypothesis both runs are exchangeable on every query) and compares the mean delta; for
  ``n <= EXACT_MAX_N`` queries it enumerates every sign pattern instead.
- :func:`bootstrap_ci` resamples queries with replacement (pairs stay together) for a
  percentile interval of the mean delta.
- :func:`compare_paired` does both and returns a :class:`PairedComparison`.
- :func:`wilson_interval` and :func:`mean_ci` give the uncertainty of a single run's value.

Random draws come from ``numpy.random.Generator(PCG64(seed))``: the same inputs and seed give
the same result. Resampling is vectorised in chunks of at most ``CHUNK_CELLS`` (iteration x
query) cells, so memory stays bounded whatever the number of iterations.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from functools import lru_cache
from statistics import NormalDist
from typing import Any, Final, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from monitor.errors import UsageError

Alternative = Literal["less", "greater", "two-sided"]
Method = Literal["auto", "exact", "randomization"]

ALTERNATIVES: Final[tuple[Alternative, ...]] = ("less", "greater", "two-sided")
METHODS: Final[tuple[Method, ...]] = ("auto", "exact", "randomization")

#: Up to this many queries the randomization test enumerates all 2**n sign patterns.
EXACT_MAX_N: Final = 20
#: Most (iteration x query) cells drawn at once by the resampling loops.
CHUNK_CELLS: Final = 1 << 20
#: Above this many queries, random draws are made per distinct value, not per query.
GROUPED_FROM_N: Final = 2048
#: In a sign-flip test of many queries, a magnitude this many deltas share is drawn as one
#: binomial count of negative signs instead of one sign per delta.
HEAVY_MIN: Final = 64
#: A bootstrap of many queries draws counts per distinct delta when there are at most this
#: share as many distinct deltas as queries (a multinomial draw costs more than an index).
GROUPED_SHARE: Final = 0.25
#: Deltas closer to zero than this count as unchanged in ``n_worse``/``n_better``/``n_same``.
SAME_TOLERANCE: Final = 1e-12
# Permuted sums that differ from the observed sum only by rounding count as ties; rounding of
# a sum of n terms stays far below this share of sum(|delta|) for any realistic n.
_TIE_SHARE: Final = 1e-9

FloatArray = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class PairedComparison:
    """The outcome of comparing one metric between a baseline and a current run.

    ``delta`` is ``current_mean - baseline_mean`` (the mean per-query delta) and
    ``relative_delta`` is ``delta / baseline_mean`` (None when the baseline mean is 0).
    ``p_value`` tests ``alternative`` ("less": the current run is worse); ``ci_low`` and
    ``ci_high`` bound the mean delta at ``confidence``. ``method`` says how the p-value was
    found: "exact" (all sign patterns) or "randomization" (``iterations`` random ones).
    """

    n: int
    baseline_mean: float
    current_mean: float
    delta: float
    relative_delta: float | None
    p_value: float
    ci_low: float
    ci_high: float
    confidence: float
    alpha: float
    significant: bool
    n_worse: int
    n_better: int
    n_same: int
    iterations: int
    seed: int
    alternative: str
    method: str

    def to_dict(self) -> dict[str, Any]:
        """Return the fields as a JSON-ready dict, in declaration order."""
        return asdict(self)


def paired_randomization_test(
    baseline: ArrayLike,
    current: ArrayLike,
    *,
    iterations: int = 10_000,
    seed: int = 0,
    alternative: Alternative = "less",
    method: Method = "auto",
) -> float:
    """Return the p-value of a paired sign-flip randomization test on the mean delta.

    Under the null hypothesis each per-query delta ``current - baseline`` is as likely to
    have either sign, so the test flips signs and counts the flipped mean deltas at least as
    extreme as the observed one: at most it for "less", at least it for "greater", at least
    its absolute value in absolute value for "two-sided". Ties within rounding count.

    With ``method="auto"`` (the default), ``n <= EXACT_MAX_N`` queries are tested exactly:
    all ``2**n`` sign patterns are enumerated (``iterations`` and ``seed`` are then unused)
    and ``p = count / 2**n``. The observed pattern is one of them, so ``p >= 2**-n`` and no
    correction is needed. Above that, or with ``method="randomization"``, ``iterations``
    random patterns are drawn and ``p = (count + 1) / (iterations + 1)``: the ``+ 1`` counts
    the observed pattern, which keeps the sampled p-value valid (never 0). When every delta
    is zero, p is 1.
    """
    deltas = _paired_deltas(baseline, current)
    _check_iterations(iterations)
    _check_seed(seed)
    _check_choice("alternative", alternative, ALTERNATIVES)
    exact = _use_exact(method, deltas.size)
    return _p_value(deltas, alternative, iterations, seed, exact)


def bootstrap_ci(
    baseline: ArrayLike,
    current: ArrayLike,
    *,
    iterations: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Return the percentile bootstrap interval ``(low, high)`` of the mean delta.

    Each iteration resamples the queries with replacement, keeping each query's baseline and
    current values together, and takes the mean delta; the interval runs between the
    ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of those means (numpy's
    linear interpolation). A mean of resampled deltas never leaves their range, so the bounds
    are clipped to ``[min(delta), max(delta)]`` against rounding; when all deltas equal ``d``
    the interval is ``(d, d)``.
    """
    deltas = _paired_deltas(baseline, current)
    _check_iterations(iterations)
    _check_confidence(confidence)
    _check_seed(seed)
    return _bootstrap_interval(deltas, iterations, confidence, seed)


def compare_paired(
    baseline: ArrayLike,
    current: ArrayLike,
    *,
    alpha: float = 0.05,
    confidence: float = 0.95,
    iterations: int = 10_000,
    seed: int = 0,
    alternative: Alternative = "less",
    method: Method = "auto",
) -> PairedComparison:
    """Compare one metric's per-query values of two runs and return a :class:`PairedComparison`.

    The p-value comes from :func:`paired_randomization_test` and the interval from
    :func:`bootstrap_ci`, both with ``iterations`` and ``seed``; the change is
    ``significant`` when ``p_value < alpha``.
    """
    deltas = _paired_deltas(baseline, current)
    _check_unit_interval("alpha", alpha)
    _check_confidence(confidence)
    _check_iterations(iterations)
    _check_seed(seed)
    _check_choice("alternative", alternative, ALTERNATIVES)
    exact = _use_exact(method, deltas.size)

    base = np.asarray(baseline, dtype=np.float64)
    baseline_mean = float(base.mean())
    delta = float(deltas.mean())
    p_value = _p_value(deltas, alternative, iterations, seed, exact)
    ci_low, ci_high = _bootstrap_interval(deltas, iterations, confidence, seed)
    n_worse = int(np.count_nonzero(deltas < -SAME_TOLERANCE))
    n_better = int(np.count_nonzero(deltas > SAME_TOLERANCE))
    return PairedComparison(
        n=int(deltas.size),
        baseline_mean=baseline_mean,
        current_mean=float(np.asarray(current, dtype=np.float64).mean()),
        delta=delta,
        relative_delta=None if baseline_mean == 0.0 else delta / baseline_mean,
        p_value=p_value,
        ci_low=ci_low,
        ci_high=ci_high,
        confidence=float(confidence),
        alpha=float(alpha),
        significant=p_value < alpha,
        n_worse=n_worse,
        n_better=n_better,
        n_same=int(deltas.size) - n_worse - n_better,
        iterations=int(iterations),
        seed=int(seed),
        alternative=alternative,
        method="exact" if exact else "randomization",
    )


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Return the Wilson score interval of a proportion ``successes / n``.

    Use it for rates such as hit_rate: unlike the normal (Wald) interval it stays inside
    [0, 1] and keeps a useful width at 0 or n successes and at small n.
    """
    successes = _check_count("successes", successes)
    n = _check_count("n", n)
    if n == 0:
        raise UsageError("n must be at least 1")
    if successes > n:
        raise UsageError(f"successes must be at most n ({n}), got {successes}")
    _check_confidence(confidence)
    z = NormalDist().inv_cdf((1.0 + confidence) / 2.0)
    share = successes / n
    z2n = z * z / n
    centre = (share + z2n / 2.0) / (1.0 + z2n)
    half = z / (1.0 + z2n) * math.sqrt(share * (1.0 - share) / n + z2n / (4.0 * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def mean_ci(
    values: ArrayLike,
    confidence: float = 0.95,
    *,
    bounds: tuple[float, float] | None = None,
) -> tuple[float, float]:
    """Return the Student t interval of the mean of ``values``.

    The interval is ``mean +- t * s / sqrt(n)`` with the sample standard deviation ``s``
    (``n - 1`` degrees of freedom) and the exact t quantile (computed here, not a normal
    approximation, so it stays right for small eval sets). Needs at least two values.

    ``bounds`` ``(low, high)`` is the range the values, and so their mean, cannot leave
    (``(0, 1)`` for a measure, ``(-1, 1)`` for a delta of two): both ends are clipped to
    it, since near a bound the symmetric t interval would reach past it (a total outage's
    deltas all near -1).
    """
    array = _finite_vector("values", values)
    if array.size < 2:
        raise UsageError(f"values needs at least 2 values for an interval, got {array.size}")
    _check_confidence(confidence)
    lowest, highest = -math.inf, math.inf
    if bounds is not None:
        lowest, highest = _check_bounds(bounds)
    mean = float(array.mean())
    spread = float(array.std(ddof=1))
    half = 0.0
    if spread > 0.0:
        half = _t_quantile(confidence, array.size - 1) * spread / math.sqrt(array.size)
    # Both ends are clipped, so a mean a rounding error past a bound still gives low <= high.
    return min(max(mean - half, lowest), highest), min(max(mean + half, lowest), highest)


# --- randomization test ----------------------------------------------------------------


def _p_value(
    deltas: FloatArray, alternative: str, iterations: int, seed: int, exact: bool
) -> float:
    """Return the randomization p-value, exact or sampled."""
    # Compare sums rather than means: over the same n queries they order alike.
    observed = float(deltas.sum())
    tolerance = _TIE_SHARE * float(np.abs(deltas).sum())
    if exact:
        return _exact_count(deltas, observed, alternative, tolerance) / (1 << deltas.size)
    rng = np.random.Generator(np.random.PCG64(seed))
    count = _sampled_count(deltas, observed, alternative, tolerance, iterations, rng)
    return (count + 1) / (iterations + 1)


def _exact_count(deltas: FloatArray, observed: float, alternative: str, tolerance: float) -> int:
    """Count the sign patterns, of all ``2**n``, whose sum is at least as extreme.

    Meet in the middle: every signed sum is ``a + b`` with ``a`` from the ``2**h`` patterns
    of the first half and ``b`` from the second half's, so counting pairs by binary search
    over the sorted ``b`` never builds the ``2**n`` sums.
    """
    half = deltas.size // 2
    first = _all_signed_sums(deltas[:half])
    second = np.sort(_all_signed_sums(deltas[half:]))

    def at_most(x: float) -> int:
        return int(np.searchsorted(second, x - first, side="right").sum())

    def at_least(x: float) -> int:
        below = np.searchsorted(second, x - first, side="left")
        return int((second.size - below).sum())

    if alternative == "less":
        return at_most(observed + tolerance)
    if alternative == "greater":
        return at_least(observed - tolerance)
    bound = abs(observed) - tolerance
    if bound <= 0.0:
        return 1 << deltas.size
    return at_least(bound) + at_most(-bound)


def _all_signed_sums(part: FloatArray) -> FloatArray:
    """Return ``sum(s * part)`` for each of the ``2**len(part)`` sign vectors ``s``."""
    # Adding one value at a time keeps the set exactly symmetric (fl(-a - x) == -fl(a + x)),
    # so "less", "greater" and "two-sided" count mirrored patterns alike.
    sums = np.zeros(1)
    for value in part:
        sums = np.concatenate((sums + value, sums - value))
    return sums


def _sampled_count(
    deltas: FloatArray,
    observed: float,
    alternative: str,
    tolerance: float,
    iterations: int,
    rng: np.random.Generator,
) -> int:
    """Count the random sign patterns whose sum is at least as extreme as ``observed``.

    Up to :data:`GROUPED_FROM_N` deltas, one random sign is drawn per delta
    (:func:`_bit_sums`). Above, the same distribution is drawn in less work
    (:func:`_grouped_count`).
    """
    if deltas.size > GROUPED_FROM_N:
        return _grouped_count(deltas, observed, alternative, tolerance, iterations, rng)
    count = 0
    for sums in _bit_sums(deltas, iterations, rng):
        count += _count_extreme(sums, observed, alternative, tolerance)
    return count


def _grouped_count(
    deltas: FloatArray,
    observed: float,
    alternative: str,
    tolerance: float,
    iterations: int,
    rng: np.random.Generator,
) -> int:
    """Count the sign patterns at least as extreme as ``observed``, drawn by magnitude.

    A flipped sum is ``sum(s_i * |d_i|)``: a zero delta adds nothing whatever its sign, and
    the ``m`` deltas of one magnitude ``a`` add ``a * (m - 2 X)`` with ``X`` the number of
    negative signs among them, ``Binomial(m, 1/2)``. So zeros are dropped, each magnitude
    shared by at least :data:`HEAVY_MIN` deltas costs one binomial draw per iteration, and
    the other deltas keep one random sign each. The distribution of the sums is that of
    one sign per delta; the draws are not the same ones. Signs and binomial counts come
    from two streams spawned from ``seed``'s sequence, so chunking does not matter.
    """
    magnitudes, counts = np.unique(np.abs(deltas[deltas != 0.0]), return_counts=True)
    heavy = counts >= HEAVY_MIN
    singles = np.repeat(magnitudes[~heavy], counts[~heavy])
    shared, many = magnitudes[heavy], counts[heavy]
    signs_rng, counts_rng = (np.random.Generator(np.random.PCG64(child)) for child in _spawn(rng))
    width = max(1, singles.size + shared.size)
    rows = max(1, CHUNK_CELLS // width)
    bits = _bit_sums(singles, iterations, signs_rng, rows=rows) if singles.size else None
    count = 0
    for start in range(0, iterations, rows):
        size = min(rows, iterations - start)
        sums = next(bits) if bits is not None else np.zeros(size)
        if shared.size:
            negative = counts_rng.binomial(many, 0.5, size=(size, shared.size))
            sums = sums + ((many - 2 * negative) * shared).sum(axis=1)
        count += _count_extreme(sums, observed, alternative, tolerance)
    return count


def _spawn(rng: np.random.Generator) -> list[np.random.SeedSequence]:
    """Return two child seed sequences of ``rng``'s seed."""
    seed = rng.bit_generator.seed_seq
    if not isinstance(seed, np.random.SeedSequence):  # pragma: no cover - PCG64 has one
        raise TypeError("the generator has no seed sequence to spawn")
    return seed.spawn(2)


def _bit_sums(
    deltas: FloatArray, iterations: int, rng: np.random.Generator, *, rows: int = 0
) -> Iterator[FloatArray]:
    """Yield the sums of ``iterations`` random sign patterns of ``deltas``, ``rows`` at a
    time (by default as many as :data:`CHUNK_CELLS` allows).

    One random byte holds the signs of eight queries; a table of the 256 signed sums of
    each group of eight turns a row of bytes into a sum by lookup, an eighth of the work of
    a sign matrix product. The table costs 32 floats per query, whatever ``iterations``.
    """
    groups = -(-deltas.size // 8)
    padded = np.zeros(groups * 8)
    padded[: deltas.size] = deltas
    signs = 1.0 - 2.0 * np.unpackbits(np.arange(256, dtype=np.uint8)[:, np.newaxis], axis=1)
    table = (padded.reshape(groups, 8) @ signs.T).ravel()
    offsets = np.arange(groups) * 256
    words = -(-groups // 4)
    rows = rows or max(1, CHUNK_CELLS // deltas.size)
    for start in range(0, iterations, rows):
        size = min(rows, iterations - start)
        # Whole 32-bit draws, read as little-endian bytes, consume the stream row by row, so
        # the result does not depend on the chunk size or the platform's byte order.
        draws = rng.integers(0, 2**32, size=(size, words), dtype=np.uint32).astype("<u4")
        packed = draws.view(np.uint8)[:, :groups]
        yield table[packed + offsets].sum(axis=1)


def _count_extreme(sums: FloatArray, observed: float, alternative: str, tolerance: float) -> int:
    """Count the sums at least as extreme as ``observed`` in the direction of ``alternative``."""
    if alternative == "less":
        return int(np.count_nonzero(sums <= observed + tolerance))
    if alternative == "greater":
        return int(np.count_nonzero(sums >= observed - tolerance))
    return int(np.count_nonzero(np.abs(sums) >= abs(observed) - tolerance))


# --- bootstrap ---------------------------------------------------------------------------


def _bootstrap_interval(
    deltas: FloatArray, iterations: int, confidence: float, seed: int
) -> tuple[float, float]:
    """Return the clipped percentile bootstrap interval of the mean of ``deltas``."""
    lowest, highest = float(deltas.min()), float(deltas.max())
    if lowest == highest:
        return lowest, highest
    rng = np.random.Generator(np.random.PCG64(seed))
    means = np.empty(iterations)
    values, counts = np.unique(deltas, return_counts=True)
    if deltas.size > GROUPED_FROM_N and GROUPED_SHARE * deltas.size >= values.size:
        # How often each distinct delta is drawn is all a resampled mean depends on: the
        # counts of n draws with replacement are Multinomial(n, counts / n).
        shares = counts / deltas.size
        rows = max(1, CHUNK_CELLS // values.size)
        for start in range(0, iterations, rows):
            size = min(rows, iterations - start)
            drawn = rng.multinomial(deltas.size, shares, size=size)
            # A row sum, not a matrix product: BLAS would sum in an order that hangs on the
            # chunk's shape.
            means[start : start + size] = (drawn * values).sum(axis=1) / deltas.size
    else:
        rows = max(1, CHUNK_CELLS // deltas.size)
        for start in range(0, iterations, rows):
            size = min(rows, iterations - start)
            picks = rng.integers(0, deltas.size, size=(size, deltas.size))
            means[start : start + size] = deltas[picks].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return min(max(float(low), lowest), highest), min(max(float(high), lowest), highest)


# --- Student t quantile ------------------------------------------------------------------


# A comparison asks for the same quantile once per metric (one df: the queries compared),
# and each costs O(df): the pure function is kept for the last few arguments.
@lru_cache(maxsize=32)
def _t_quantile(confidence: float, df: int) -> float:
    """Return ``t`` with ``P(|T| <= t) = confidence`` for Student's T with ``df`` (>= 1).

    For an integer ``df`` the central mass is a finite sum in ``theta = atan(t / sqrt(df))``
    (Abramowitz and Stegun 26.7.3 and 26.7.4) that grows with theta, so bisection on theta
    over [0, pi/2] finds the quantile to double precision; ``t = sqrt(df) * tan(theta)``.
    """
    low, high = 0.0, math.pi / 2.0
    for _ in range(100):
        middle = (low + high) / 2.0
        if middle in (low, high):
            break
        if _t_central_mass(middle, df) < confidence:
            low = middle
        else:
            high = middle
    return math.sqrt(df) * math.tan((low + high) / 2.0)


def _t_central_mass(theta: float, df: int) -> float:
    """Return ``P(|T| <= sqrt(df) * tan(theta))`` for Student's T with ``df`` degrees."""
    sin, cos = math.sin(theta), math.cos(theta)
    if df % 2 == 0:
        # sin(theta) * (1 + 1/2 cos^2 + (1*3)/(2*4) cos^4 + ... up to cos^(df-2))
        k = np.arange(1, df // 2)
        terms = np.cumprod((2 * k - 1) / (2 * k) * cos**2)
        return sin * (1.0 + float(terms.sum()))
    # 2/pi * (theta + sin(theta) * (cos + 2/3 cos^3 + (2*4)/(3*5) cos^5 + ... up to cos^(df-2)))
    if df == 1:
        return 2.0 * theta / math.pi
    k = np.arange(1, (df - 1) // 2)
    terms = np.cumprod((2 * k) / (2 * k + 1) * cos**2)
    return 2.0 / math.pi * (theta + sin * cos * (1.0 + float(terms.sum())))


# --- argument checks ---------------------------------------------------------------------


def _paired_deltas(baseline: ArrayLike, current: ArrayLike) -> FloatArray:
    """Return ``current - baseline`` after checking both are aligned, finite and non-empty."""
    base = _finite_vector("baseline", baseline)
    curr = _finite_vector("current", current)
    if base.size != curr.size:
        raise UsageError(
            f"baseline and current must hold the same queries: got {base.size} and "
            f"{curr.size} values"
        )
    return curr - base


def _finite_vector(name: str, values: ArrayLike) -> FloatArray:
    """Return ``values`` as a non-empty 1-D float64 array of finite numbers."""
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise UsageError(f"{name} must be a sequence of numbers: {error}") from None
    if array.ndim != 1:
        raise UsageError(f"{name} must be one-dimensional, got shape {array.shape}")
    if array.size == 0:
        raise UsageError(f"{name} is empty: need at least one value")
    finite = np.isfinite(array)
    if not finite.all():
        where = int(np.argmin(finite))
        raise UsageError(
            f"{name} must hold finite numbers: position {where} is {array[where]!r} "
            f"({int(np.count_nonzero(~finite))} not finite)"
        )
    return array


def _check_bounds(bounds: tuple[float, float]) -> tuple[float, float]:
    """Return ``bounds`` as floats after checking they are finite and ordered."""
    try:
        low, high = (float(bound) for bound in bounds)
    except (TypeError, ValueError):
        raise UsageError(
            f"bounds must be a pair low <= high of finite numbers, got {bounds!r}"
        ) from None
    if not (math.isfinite(low) and math.isfinite(high) and low <= high):
        raise UsageError(f"bounds must be a pair low <= high of finite numbers, got {bounds!r}")
    return low, high


def _check_count(name: str, value: int) -> int:
    """Return ``value`` as an int after checking it is a whole number >= 0."""
    if isinstance(value, bool):
        raise UsageError(f"{name} must be an integer, got {value!r}")
    try:
        number = operator.index(value)
    except TypeError:
        raise UsageError(f"{name} must be an integer, got {value!r}") from None
    if number < 0:
        raise UsageError(f"{name} must be at least 0, got {number}")
    return number


def _check_iterations(iterations: int) -> None:
    """Raise UsageError unless ``iterations`` is an integer >= 1."""
    if _check_count("iterations", iterations) < 1:
        raise UsageError(f"iterations must be at least 1, got {iterations}")


def _check_seed(seed: int) -> None:
    """Raise UsageError unless ``seed`` is an integer >= 0 (as PCG64 needs)."""
    _check_count("seed", seed)


def _check_unit_interval(name: str, value: float) -> None:
    """Raise UsageError unless ``value`` is a number strictly between 0 and 1."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating):
        raise UsageError(f"{name} must be a number between 0 and 1, got {value!r}")
    if not 0.0 < value < 1.0:
        raise UsageError(f"{name} must be strictly between 0 and 1, got {value!r}")


def _check_confidence(confidence: float) -> None:
    """Raise UsageError unless ``confidence`` lies strictly between 0 and 1."""
    _check_unit_interval("confidence", confidence)


def _check_choice(name: str, value: str, known: tuple[str, ...]) -> None:
    """Raise UsageError naming the known choices unless ``value`` is one of them."""
    if value not in known:
        raise UsageError(f"unknown {name} {value!r}; known: {', '.join(known)}")


def _use_exact(method: str, n: int) -> bool:
    """Return whether to enumerate all sign patterns for ``n`` queries under ``method``."""
    _check_choice("method", method, METHODS)
    if method == "exact" and n > EXACT_MAX_N:
        raise UsageError(
            f"method 'exact' enumerates 2**n sign patterns and allows at most "
            f"{EXACT_MAX_N} queries, got {n}; use 'randomization' or 'auto'"
        )
    return method == "exact" or (method == "auto" and n <= EXACT_MAX_N)
