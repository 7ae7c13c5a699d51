"""Judge-corrected metrics: a rule metric estimated by prediction-powered inference (PPI).

A judge fills the label holes of every query; people verify a few. With ``alert_labels:
calibrated`` a rule reads neither figure alone but the basic PPI estimate of the mean
(Angelopoulos, Bates, Fannjiang, Jordan and Zrnic, "Prediction-powered inference", Science
2023), with lambda = 1 (no power tuning)::

    theta = mean_N(f_judge) + s * mean_n(f_human - f_judge)
    var   = var_N(f_judge) / N + s**2 * var_n(f_human - f_judge) / n

``f_judge`` is a query's metric with the judge's grade on every pair it graded, over the
``N`` answered queries that people's labels score too (those the human-only mean averages:
a query they give no relevant document stays out, whatever the judge says);
``f_human - f_judge`` the rectifier, over the ``n`` **verified** queries:
those with at least one judge grade in their top k, every one of which people graded too
(so ``f_human`` there is the figure under people's labels alone). ``s`` is the share of
the ``N`` queries with a judge grade in their top k: on the others both labels agree, so their
rectifier is 0 exactly and only the judged ones need the correction. The interval is the
normal (CLT) one, ``theta +- z * sqrt(var)``. It stays valid whatever the judge's bias,
provided the verified queries are a random sample of the judged ones.

A paired comparison applies the same estimate to the per-query deltas ``current -
baseline`` (the judge term over the queries both runs answered, the rectifier over those
verified in both, the share over those judged in either), with the normal one-sided p-value
of "current is worse". Variances use ``ddof=1``; fewer than two values give a NaN interval.
A rule whose judged queries people verified fewer than :data:`MIN_VERIFIED` of is
``unverified``: shown, never alerted.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, Final, Protocol

import numpy as np
from numpy.typing import ArrayLike

from monitor.compare.matched import stored_column
from monitor.compare.records import RuleOutcome, RuleStatus
from monitor.config.model import DEFAULT_MIN_VERIFIED, Check, RuleConfig, SignificanceConfig
from monitor.store.records import RunRecord

#: Below this many verified queries a calibrated rule says too little: it is ``unverified``
#: (the judge config's ``min_verified`` owns the default).
MIN_VERIFIED: Final = DEFAULT_MIN_VERIFIED
#: The confidence level of the calibrated intervals.
LEVEL: Final = 0.95


@dataclass(frozen=True, slots=True)
class Estimate:
    """A PPI estimate: the corrected mean, its normal interval and standard error, the
    judge-only mean it corrects, and how many queries each term read."""

    mean: float
    low: float
    high: float
    se: float
    judge: float  # mean_N(f_judge), the uncorrected figure
    n_all: int  # N, the queries of the judge term
    n_verified: int  # n, the queries of the rectifier
    share: float  # s, the share of the N queries the judge graded something of

    def p_less(self) -> float:
        """Return the normal one-sided p-value of the mean being below 0 (a delta: the
        current run is worse), against the null hypothesis that it is 0."""
        if not self.se > 0:
            return 0.0 if self.mean < 0 else 1.0
        return NormalDist().cdf(self.mean / self.se)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready form (NaN as None)."""
        out: dict[str, Any] = {}
        for name in self.__slots__:
            value = getattr(self, name)
            out[name] = None if isinstance(value, float) and math.isnan(value) else value
        return out


def ppi_mean(
    judged: ArrayLike,
    verified_judge: ArrayLike,
    verified_human: ArrayLike,
    *,
    share: float = 1.0,
    level: float = LEVEL,
) -> Estimate:
    """Return the PPI estimate of a mean from the judge's values of all queries and the
    judge's and people's values of the verified ones (aligned)."""
    f = np.asarray(judged, dtype=np.float64)
    rect = np.asarray(verified_human, dtype=np.float64) - np.asarray(
        verified_judge, dtype=np.float64
    )
    big, small = len(f), len(rect)
    if not big:
        return Estimate(math.nan, math.nan, math.nan, math.nan, math.nan, 0, small, share)
    judge_mean = float(f.mean())
    correction = float(rect.mean()) if small else 0.0
    mean = judge_mean + share * correction
    if big < 2 or (share > 0 and small < 2):
        return Estimate(mean, math.nan, math.nan, math.nan, judge_mean, big, small, share)
    var = float(f.var(ddof=1)) / big
    if share > 0:
        var += share**2 * float(rect.var(ddof=1)) / small
    se = math.sqrt(var)
    z = NormalDist().inv_cdf(0.5 + level / 2)
    return Estimate(mean, mean - z * se, mean + z * se, se, judge_mean, big, small, share)


class LabelledRun(Protocol):
    """One run as a calibrated comparison reads it (the judgments stage's
    ``CalibratedViews`` is one): scored with people's labels only and with the judge's on
    every pair it graded, the queries with a judge grade in their top k, and those of them
    people verified."""

    @property
    def human(self) -> RunRecord: ...

    @property
    def judge(self) -> RunRecord: ...

    @property
    def judged(self) -> frozenset[str]: ...

    @property
    def verified(self) -> frozenset[str]: ...


@dataclass(frozen=True, slots=True, eq=False)
class Calibration:
    """What a calibrated comparison reads: the current run and its baseline (None without
    one) as :class:`LabelledRun`, and how many verified queries a rule needs."""

    current: LabelledRun
    baseline: LabelledRun | None = None
    min_verified: int = MIN_VERIFIED

    def mean(self, metric: str, *, baseline: bool = False) -> Estimate:
        """Return the calibrated mean of ``metric`` in the current run (or the baseline)."""
        run = self.baseline if baseline else self.current
        if run is None:
            return ppi_mean([], [], [])
        f, h = _scored_both(run.judge, run.human, metric)
        ids = [q for q in f if q in run.verified]
        share = sum(q in run.judged for q in f) / len(f) if f else 0.0
        return ppi_mean(list(f.values()), [f[q] for q in ids], [h[q] for q in ids], share=share)

    def delta(self, metric: str) -> Estimate:
        """Return the calibrated mean per-query delta (current - baseline) of ``metric``."""
        now, then = self.current, self.baseline
        if then is None:
            return ppi_mean([], [], [])
        f_now, h_now = _scored_both(now.judge, now.human, metric)
        f_then, h_then = _scored_both(then.judge, then.human, metric)
        both = [q for q in f_now if q in f_then]
        judged = [q for q in both if q in now.judged or q in then.judged]
        # Verified for the delta: judged in either run, and known to people in each run that
        # the judge graded something of.
        ids = [
            q
            for q in judged
            if (q in now.verified or q not in now.judged)
            and (q in then.verified or q not in then.judged)
        ]
        return ppi_mean(
            [f_now[q] - f_then[q] for q in both],
            [f_now[q] - f_then[q] for q in ids],
            [h_now[q] - h_then[q] for q in ids],
            share=len(judged) / len(both) if both else 0.0,
        )


def _scored_both(
    judge: RunRecord, human: RunRecord, metric: str
) -> tuple[dict[str, float], dict[str, float]]:
    """Return the judge's and people's values of ``metric`` of the queries both score.

    A query people's labels give no relevant document is not scored under them (nor in the
    human-only mean): the judge's labels may give it one, but the figure estimated is the
    mean over the queries the human-only one averages, so the judge term reads those alone.
    """
    f, h = values_by_id(judge, metric), values_by_id(human, metric)
    return {q: v for q, v in f.items() if q in h}, h


def values_by_id(run: RunRecord, metric: str) -> dict[str, float]:
    """Return the query id -> value of ``metric`` of the queries ``run`` answered and scored."""
    columns = run.columns
    values, present = stored_column(columns, metric)
    answered = columns.answered()
    keep = present & answered if len(answered) == len(present) else present
    ids = columns.query_ids
    return {ids[i]: float(values[i]) for i in np.flatnonzero(keep).tolist()}


def calibrated_rule(
    rule: RuleConfig, calibration: Calibration, significance: SignificanceConfig
) -> RuleOutcome:
    """Apply a quality rule to the calibrated figures.

    A ``min`` rule breaches when the calibrated mean is under the floor and so is its whole
    interval; a drop rule when the calibrated drop passes the threshold and the normal
    one-sided p-value of the calibrated delta is below ``alpha`` (as the uncalibrated rules
    read their paired test). Fewer than ``min_verified`` verified queries where the judge
    graded some: ``unverified`` (shown, never alerted).
    """
    metric = str(rule.metric)
    now = calibration.mean(metric)

    def make(
        status: RuleStatus,
        message: str,
        *,
        current: float | None = None,
        baseline: float | None = None,
        delta: float | None = None,
        p_value: float | None = None,
        ci_low: float | None = None,
        ci_high: float | None = None,
    ) -> RuleOutcome:
        return RuleOutcome(
            rule=rule.name,
            check=rule.check,
            metric=metric,
            threshold=rule.threshold,
            severity=rule.severity,
            status=status,
            quality=True,
            calibrated=True,
            message=f"calibrated {message}",
            current=current,
            baseline=baseline,
            delta=delta,
            p_value=p_value,
            ci_low=ci_low,
            ci_high=ci_high,
        )

    if rule.check is Check.MIN:
        return _floor(rule, now, calibration.min_verified, make)
    if calibration.baseline is None:
        return make("skipped", "no baseline to compare with", current=_known(now.mean))
    delta = calibration.delta(metric)
    then = calibration.mean(metric, baseline=True)
    figures = {
        "current": _known(now.mean),
        "baseline": _known(then.mean),
        "delta": _known(delta.mean),
        "ci_low": _known(delta.low),
        "ci_high": _known(delta.high),
    }
    counted = f"{delta.n_verified} of {delta.n_all} queries verified"
    if _unverified(delta, calibration.min_verified):
        return make(
            "unverified",
            f"{metric} delta unverified: {counted}, fewer than "
            f"{calibration.min_verified}; grade a verification sample (judgments verify)",
            **figures,
        )
    old = then.mean
    drop = -delta.mean if rule.check is Check.MAX_DROP else (-delta.mean / old if old > 0 else 0)
    limit = f"{rule.threshold:g}" if rule.check is Check.MAX_DROP else f"{rule.threshold:.0%}"
    text = (
        f"{metric} {old:.4f} -> {now.mean:.4f} (each run's own estimate), paired delta "
        f"{delta.mean:+.4f} (allowed drop {limit}; {counted})"
    )
    if drop <= rule.threshold:
        return make("ok", text, **figures)
    p = delta.p_less()
    sure = p < significance.alpha
    note = f"; p = {p:.4f}" + ("" if sure else f" >= alpha {significance.alpha:g}")
    status: RuleStatus = "breach" if sure else "insufficient_evidence"
    return make(status, text + note, p_value=p, **figures)


def _floor(
    rule: RuleConfig, now: Estimate, least: int, make: Callable[..., RuleOutcome]
) -> RuleOutcome:
    """Apply a ``min`` rule to a calibrated mean."""
    metric = str(rule.metric)
    figures = {"current": _known(now.mean), "ci_low": _known(now.low), "ci_high": _known(now.high)}
    counted = f"{now.n_verified} of {now.n_all} queries verified"
    if _unverified(now, least):
        return make(
            "unverified",
            f"{metric} unverified: {counted}, fewer than {least}; grade a verification "
            "sample (judgments verify)",
            **figures,
        )
    text = f"{metric} {now.mean:.4f} ({counted})"
    if now.mean >= rule.threshold:
        return make("ok", f"{text} >= floor {rule.threshold:g}", **figures)
    sure = now.high < rule.threshold
    return make(
        "breach" if sure else "insufficient_evidence",
        f"{text} below floor {rule.threshold:g}"
        + ("" if sure else " (the confidence interval reaches the floor)"),
        **figures,
    )


def side_by_side(
    calibration: Calibration, metrics: Sequence[str]
) -> tuple[tuple[str, ...], dict[str, dict[str, Any]]]:
    """Return a line per metric giving its human-only, judge and calibrated means (the
    calibrated one gates), and the same figures JSON-ready, by metric, for the store."""
    lines = []
    kept: dict[str, dict[str, Any]] = {}
    for metric in metrics:
        human = calibration.current.human.means.get(metric, math.nan)
        est = calibration.mean(metric)
        lines.append(
            f"{metric}: human-only {human:.4f}, judge {est.judge:.4f}, calibrated "
            f"{est.mean:.4f} [{est.low:.4f}, {est.high:.4f}] ({est.n_verified} of "
            f"{est.n_all} queries verified); the calibrated figure gates"
        )
        kept[metric] = {"human": _known(human), **est.to_dict()}
    return tuple(lines), kept


def _unverified(estimate: Estimate, least: int) -> bool:
    """Return whether ``estimate`` says too little: the judge graded some of its queries and
    people verified fewer than ``least`` of them, or it has no interval. With no query
    judged there is nothing to correct, and the estimate is the human-only mean's."""
    return (estimate.share > 0 and estimate.n_verified < least) or math.isnan(estimate.se)


def _known(value: float) -> float | None:
    return None if math.isnan(value) else float(value)
