"""Apply a suite's rules to its current run and baseline.

Quality rules (``max_drop``, ``max_relative_drop``, ``min`` on a metric) fire only when the
change passes the threshold *and* is significant: a paired randomization test on per-query
values (one-sided, "current is worse") below ``alpha`` for drops, and a t-interval of the
current mean lying wholly under the floor for ``min``. Otherwise the outcome is
``insufficient_evidence``: reported, never alerted. Operational rules (latency, error and
zero-result rates, top-1 score, index size, ANN recall) compare figures of whole runs and
need no test. With persistence ``{breaches: N, runs: M}`` a significant breach fires only
when it was also seen in enough of the previous runs (``pending`` until then).

A query the search failed for (``error_type`` set) is not a quality figure: quality rules
compare only the queries answered in both runs, and say how many they left out
(``RuleOutcome.left_out``). The error-rate rule and the monitor-failure alert cover failures.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Protocol

import numpy as np

from monitor.compare.matched import Matched, judged_not_answered
from monitor.compare.overlap import Overlap
from monitor.compare.ppi import Calibration, calibrated_rule
from monitor.compare.records import RuleOutcome, RuleStatus
from monitor.compare.stats import compare_paired, mean_ci
from monitor.config.model import Check, RuleConfig, SignificanceConfig
from monitor.store.records import RunFigures, RunRecord


class Agreement(Protocol):
    """What a ``judge_agreement`` rule reads of a judge's agreement with human grades (the
    judgments stage's ``Agreement`` is one): the judge, the pairs both graded, each
    statistic's value and bootstrap interval."""

    @property
    def judge(self) -> str: ...

    @property
    def pairs(self) -> int: ...

    @property
    def intervals(self) -> Mapping[str, tuple[float, float]]: ...

    def value(self, statistic: str) -> float:
        """Return the statistic's value, NaN when undefined."""
        ...


#: The run figure each operational check reads, by check: its name and how to read it.
FIGURES: Mapping[Check, tuple[str, Callable[[RunFigures], float | int | None]]] = {
    Check.LATENCY_P95_SECONDS_MAX: ("latency_p95_seconds", lambda f: f.latency.p95),
    Check.LATENCY_P95_MAX_RELATIVE_RISE: ("latency_p95_seconds", lambda f: f.latency.p95),
    Check.ERROR_RATE_MAX: ("error_rate", lambda f: f.error_rate),
    Check.ZERO_RESULT_RATE_MAX: ("zero_result_rate", lambda f: f.zero_result_rate),
    Check.TOP1_SCORE_MAX_RELATIVE_DROP: ("mean_top1_score", lambda f: f.mean_top1_score),
    Check.INDEX_SIZE_MAX_RELATIVE_DROP: ("index_size", lambda f: f.index_size),
    Check.ANN_RECALL_MIN: ("ann_recall", lambda f: f.ann_recall),
}


def run_figure(run: RunRecord, check: Check) -> float | None:
    """Return the whole-run figure ``check`` reads (latency p95, a rate, index size), None
    when unknown."""
    value = FIGURES[check][1](run.figures)
    return None if value is None or math.isnan(value) else float(value)


def apply_rule(
    rule: RuleConfig,
    current: RunRecord,
    baseline: RunRecord | None,
    paired: tuple[np.ndarray, np.ndarray] | None,
    significance: SignificanceConfig,
    history: Sequence[bool] = (),
    overlap: Overlap | None = None,
    matched: Matched | None = None,
    agreement: Agreement | None = None,
    calibration: Calibration | None = None,
) -> RuleOutcome:
    """Apply one rule; ``paired`` holds the rule metric's aligned (baseline, current) values,
    ``overlap`` the current top k's overlap with the baseline's (for ``min_overlap``),
    ``matched`` the two runs' queries matched by id, when the caller has them, and
    ``agreement`` the suite judge's agreement with human grades (for ``judge_agreement``),
    and ``calibration`` the judge-corrected figures a quality rule then reads instead."""
    if rule.metric is not None and calibration is not None:
        outcome = calibrated_rule(rule, calibration, significance)
    elif rule.metric is not None:
        outcome = _quality(rule, current, baseline, paired, significance, matched)
    elif rule.check is Check.MIN_OVERLAP:
        outcome = _overlap(rule, overlap)
    elif rule.check is Check.JUDGE_AGREEMENT:
        outcome = _agreement(rule, agreement)
    else:
        outcome = _operational(rule, current, baseline)
    if outcome.status == "breach" and significance.persistence is not None:
        need = significance.persistence
        seen = 1 + sum(bool(flag) for flag in list(history)[-(need.runs - 1) :] if need.runs > 1)
        if seen < need.breaches:
            message = (
                f"{outcome.message} (seen in {seen} of the last {need.runs} runs; "
                f"fires at {need.breaches})"
            )
            return replace(outcome, status="pending", message=message)
    return outcome


def _quality(
    rule: RuleConfig,
    current: RunRecord,
    baseline: RunRecord | None,
    paired: tuple[np.ndarray, np.ndarray] | None,
    significance: SignificanceConfig,
    matched: Matched | None = None,
) -> RuleOutcome:
    metric = str(rule.metric)
    # A floor is about the current run alone; a drop compares the pairs of both runs.
    alone = rule.check is Check.MIN or baseline is None
    if matched is not None and matched.current is not current:
        matched = None
    if matched is not None and (alone or matched.baseline is baseline):
        excluded = matched.left_out(paired=not alone)
    else:
        excluded = left_out(current, None if alone else baseline)
    make = partial(_outcome(rule, metric, quality=True), left_out=excluded)
    value = current.means.get(metric)
    if value is None or math.isnan(value):
        failed = matched.left_out(paired=False) if matched is not None else left_out(current)
        reason = f": the search failed for all {failed} judged queries" if failed else ""
        return make(status="skipped", message=f"{metric} was not measured in this run{reason}")
    if rule.check is Check.MIN:
        values = paired[1] if paired is not None else None
        low, high = _interval(values)
        if value >= rule.threshold:
            return make(
                status="ok",
                current=value,
                ci_low=low,
                ci_high=high,
                message=f"{metric} {value:.4f} >= floor {rule.threshold:g}"
                + _left_out_text(excluded),
            )
        sure = high is not None and high < rule.threshold
        return make(
            status="breach" if sure else "insufficient_evidence",
            current=value,
            ci_low=low,
            ci_high=high,
            message=f"{metric} {value:.4f} below floor {rule.threshold:g}"
            + ("" if sure else " (the confidence interval reaches the floor)")
            + _left_out_text(excluded),
        )
    if baseline is None or paired is None:
        return make(status="skipped", current=value, message="no baseline to compare with")
    before, after = paired
    if len(before) == 0:
        return make(
            status="skipped",
            current=value,
            message="no query answered in both this run and the baseline"
            + _left_out_text(excluded),
        )
    old = float(before.mean())
    new = float(after.mean())
    delta = new - old
    drop = -delta if rule.check is Check.MAX_DROP else (-delta / old if old > 0 else 0.0)
    figures = {"current": new, "baseline": old, "delta": delta}
    if drop <= rule.threshold:
        return make(
            status="ok",
            **figures,
            message=_drop_text(metric, old, new, rule) + _left_out_text(excluded),
        )
    test = compare_paired(
        before,
        after,
        alpha=significance.alpha,
        iterations=significance.iterations,
        seed=significance.seed,
        alternative="less",
    )
    status: RuleStatus = "breach" if test.significant else "insufficient_evidence"
    note = f"p = {test.p_value:.4f}" + (
        "" if test.significant else f" >= alpha {significance.alpha:g}"
    )
    return make(
        status=status,
        **figures,
        p_value=test.p_value,
        ci_low=test.ci_low,
        ci_high=test.ci_high,
        message=f"{_drop_text(metric, old, new, rule)}; {note}" + _left_out_text(excluded),
    )


def _operational(rule: RuleConfig, current: RunRecord, baseline: RunRecord | None) -> RuleOutcome:
    if rule.check is Check.ANN_RECALL_MIN:
        return _ann_recall(rule, current)
    figure = FIGURES[rule.check][0]
    make = _outcome(rule, figure, quality=False)
    value = run_figure(current, rule.check)
    if value is None:
        return make(status="skipped", message=f"{figure} is not known for this run")
    if rule.check in (
        Check.LATENCY_P95_SECONDS_MAX,
        Check.ERROR_RATE_MAX,
        Check.ZERO_RESULT_RATE_MAX,
    ):
        over = value > rule.threshold
        return make(
            status="breach" if over else "ok",
            current=value,
            message=f"{figure} {value:.4g} {'>' if over else '<='} {rule.threshold:g}",
        )
    old = run_figure(baseline, rule.check) if baseline is not None else None
    if old is None or old <= 0:
        return make(
            status="skipped", current=value, message=f"no baseline {figure} to compare with"
        )
    change = (value - old) / old
    worse = (
        change > rule.threshold
        if rule.check is Check.LATENCY_P95_MAX_RELATIVE_RISE
        else (-change > rule.threshold)
    )
    return make(
        status="breach" if worse else "ok",
        current=value,
        baseline=old,
        delta=value - old,
        message=f"{figure} {old:.4g} -> {value:.4g} ({change:+.1%}; limit {rule.threshold:.0%})",
    )


def _ann_recall(rule: RuleConfig, current: RunRecord) -> RuleOutcome:
    """Apply an ``ann_recall_min`` floor: the run's ANN recall against the exact search of
    the same store (no judgments, no test: the exact answer is the truth) stays at or above
    the threshold; skipped when the run did not measure it (``index_health`` off)."""
    k = current.figures.ann_recall_k
    figure = "ann_recall" if k is None else f"ann_recall@{k}"
    make = _outcome(rule, figure, quality=False)
    value = current.figures.ann_recall
    if value is None:
        return make(status="skipped", message=f"{figure} is not known for this run")
    under = value < rule.threshold
    return make(
        status="breach" if under else "ok",
        current=value,
        message=f"{figure} {value:.4f} {'<' if under else '>='} floor {rule.threshold:g}",
    )


#: The figure a ``min_overlap`` rule reads.
OVERLAP_FIGURE = "rank_biased_overlap"


def _overlap(rule: RuleConfig, overlap: Overlap | None) -> RuleOutcome:
    """Apply a ``min_overlap`` rule: the mean RBO of the current top k with the baseline's
    stays at or above the threshold. It needs no judgments and no significance test: the
    rankings themselves moved, exactly."""
    make = _outcome(rule, OVERLAP_FIGURE, quality=False)
    if overlap is None:
        return make(status="skipped", message="no baseline to compare the rankings with")
    if not overlap.n:
        return make(status="skipped", message="no query answered in both this run and the baseline")
    under = overlap.rbo < rule.threshold
    return make(
        status="breach" if under else "ok",
        current=overlap.rbo,
        message=(
            f"rank-biased overlap@{overlap.k} (p = {overlap.persistence:g}) with the baseline "
            f"{overlap.rbo:.4f} {'<' if under else '>='} {rule.threshold:g}; "
            f"Jaccard@{overlap.k} {overlap.jaccard:.4f} over {overlap.n} queries"
        ),
    )


def _agreement(rule: RuleConfig, agreement: Agreement | None) -> RuleOutcome:
    """Apply a ``judge_agreement`` rule: the suite judge's ``statistic`` with human grades
    stays at or above the floor. Below ``min_overlap`` graded pairs in common the figure says
    too little: the rule is ``unverified`` (shown, never alerted)."""
    make = _outcome(rule, f"judge_{rule.statistic}", quality=False)
    if agreement is None:
        return make(status="skipped", message="no judge agreement measured (a suite judge?)")
    value = agreement.value(rule.statistic)
    low, high = agreement.intervals.get(rule.statistic, (math.nan, math.nan))
    known = {
        "current": None if math.isnan(value) else value,
        "ci_low": None if math.isnan(low) else low,
        "ci_high": None if math.isnan(high) else high,
    }
    pairs = f"{agreement.pairs} pairs graded by both people and {agreement.judge}"
    if agreement.pairs < rule.min_overlap:
        return make(
            status="unverified",
            **known,
            message=f"judge unverified: {pairs}, fewer than min_overlap {rule.min_overlap}; "
            "grade a verification sample (judgments verify)",
        )
    if math.isnan(value):
        return make(status="skipped", message=f"{rule.statistic} is undefined on {pairs}")
    under = value < rule.threshold
    return make(
        status="breach" if under else "ok",
        **known,
        message=f"judge {rule.statistic} {value:.3f} {'<' if under else '>='} "
        f"{rule.threshold:g} on {pairs} (95% bootstrap [{low:.3f}, {high:.3f}])",
    )


def _drop_text(metric: str, old: float, new: float, rule: RuleConfig) -> str:
    limit = f"{rule.threshold:g}" if rule.check is Check.MAX_DROP else f"{rule.threshold:.0%}"
    return f"{metric} {old:.4f} -> {new:.4f} ({new - old:+.4f}; allowed drop {limit})"


def _left_out_text(count: int) -> str:
    """Return the note a quality rule's message ends with when it left failed queries out."""
    if not count:
        return ""
    noun = "query" if count == 1 else "queries"
    return f"; {count} failed {noun} left out (the error rate counts them)"


def _interval(values: np.ndarray | None) -> tuple[float | None, float | None]:
    if values is None or len(values) < 2:
        return None, None
    return mean_ci(values)


def _outcome(rule: RuleConfig, metric: str, *, quality: bool) -> partial[RuleOutcome]:
    """Return a RuleOutcome builder with the rule's fixed fields filled in."""
    return partial(
        RuleOutcome,
        rule=rule.name,
        check=rule.check,
        metric=metric,
        threshold=rule.threshold,
        severity=rule.severity,
        quality=quality,
    )


def aligned(
    baseline: RunRecord, current: RunRecord, metric: str
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Return the query ids both runs answered and evaluated, and their values of ``metric``,
    aligned, in the current run's order. A query the search failed for in either run is
    left out (:func:`left_out`)."""
    return Matched.of(baseline, current).aligned(metric)


def left_out(current: RunRecord, baseline: RunRecord | None = None) -> int:
    """Return how many judged queries a quality rule leaves out because the search failed
    for them: in ``current``, and in ``baseline`` too for the queries both runs hold."""
    if baseline is None:
        return judged_not_answered(current)
    return Matched.of(baseline, current).left_out()
