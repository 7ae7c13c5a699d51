"""Compare a run with its suite's baseline: rules, significance, per-query and segment diffs.

:func:`compare_runs` is the one entry point; it reads two stored runs and returns a
:class:`Comparison`. A run whose eval-set fingerprint differs from the baseline's is not
compared on quality at all: the verdict is ``evalset_changed`` and a new baseline is needed.

Given the eval set's judgments (``qrels``), a comparison also measures judgment coverage
(:mod:`monitor.compare.coverage`): a quality breach whose k lost more coverage than
``coverage.max_drop`` is held as ``unjudged`` (labels needed), not a regression. The overlap
of the rankings with the baseline's (:mod:`monitor.compare.overlap`) needs no judgments.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from monitor.compare.corpus import corpus_notes
from monitor.compare.coverage import (
    CoverageChange,
    coverage_changes,
    depth,
    held_cutoff,
    judged_only_means,
    pooled_qrels,
)
from monitor.compare.diff import (
    labelled_segment_changes,
    metadata_rows,
    segment_labels,
    worse_queries,
)
from monitor.compare.invariants import check_invariants
from monitor.compare.matched import Matched, metric_values, stored_column
from monitor.compare.overlap import PERSISTENCE, Overlap, QueryOverlap, overlap_of
from monitor.compare.ppi import Calibration, side_by_side
from monitor.compare.records import (
    Comparison,
    InvariantOutcome,
    InvariantQuery,
    MetricChange,
    QueryDiff,
    RuleOutcome,
    SegmentChange,
    Verdict,
)
from monitor.compare.rules import Agreement, apply_rule, run_figure
from monitor.compare.stats import mean_ci
from monitor.config.model import (
    Check,
    CoverageConfig,
    InvariantConfig,
    RuleConfig,
    SignificanceConfig,
)
from monitor.metrics.ranks import Qrels
from monitor.records import MetaValue
from monitor.store.records import RunRecord

__all__ = [
    "PERSISTENCE",
    "Comparison",
    "CoverageChange",
    "InvariantOutcome",
    "InvariantQuery",
    "MetricChange",
    "Overlap",
    "QueryDiff",
    "QueryOverlap",
    "RuleOutcome",
    "SegmentChange",
    "Verdict",
    "compare_runs",
    "run_figure",
]

#: Below this many compared queries a warning says that tests have little power.
MIN_QUERIES = 30

#: The range of every measure the monitor computes, and so of a run's mean of one.
MEASURE_BOUNDS = (0.0, 1.0)
#: The range of a per-query (or mean) delta of a measure between two runs.
DELTA_BOUNDS = (MEASURE_BOUNDS[0] - MEASURE_BOUNDS[1], MEASURE_BOUNDS[1] - MEASURE_BOUNDS[0])


def compare_runs(
    current: RunRecord,
    baseline: RunRecord | None,
    rules: Sequence[RuleConfig],
    *,
    significance: SignificanceConfig | None = None,
    segments: Sequence[str] = (),
    metadata: Mapping[str, Mapping[str, MetaValue]] | None = None,
    texts: Mapping[str, str] | None = None,
    history: Mapping[str, Sequence[bool]] | None = None,
    top: int = 10,
    invariants: Sequence[InvariantConfig] = (),
    qrels: Qrels | None = None,
    coverage: CoverageConfig | None = None,
    agreement: Agreement | None = None,
    calibration: Calibration | None = None,
) -> Comparison:
    """Compare ``current`` with ``baseline`` under ``rules`` and ``invariants``.

    ``history`` maps a rule name to whether it breached (significantly) in each previous run,
    oldest first, for persistence. ``metadata`` and ``texts`` come from the eval set, for the
    segment breakdown and the per-query diff, which are given for the primary metric and for
    every metric a quality rule watches. ``invariants`` are checked exactly
    (:mod:`monitor.compare.invariants`); a breached one makes the verdict ``regression``.
    ``qrels`` are the eval set's judgments: with them, coverage is measured at every k a
    quality rule reads, a breach that lost more than ``coverage.max_drop`` of it is held
    (``unjudged``), and every metric change carries its judged-only means. ``agreement`` is
    the suite judge's agreement with human grades, for a ``judge_agreement`` rule.
    ``calibration`` (``alert_labels: calibrated``) makes the quality rules read the
    judge-corrected figures (:mod:`monitor.compare.ppi`), which the notes give beside the
    human-only and judge ones.
    """
    significance = significance or SignificanceConfig()
    coverage = coverage or CoverageConfig()
    history = history or {}
    changed = baseline is not None and (baseline.evalset_fingerprint != current.evalset_fingerprint)
    usable = None if changed else baseline
    top_k = depth(current.means)
    # The queries of both runs are matched once; every rule, diff and figure reads the match.
    matched = Matched.of(usable, current) if usable is not None else None
    overlap = overlap_of(usable, current, top_k, matched=matched) if usable is not None else None

    outcomes: list[RuleOutcome] = []
    for rule in rules:
        paired = None
        if matched is not None and rule.metric is not None:
            _, before, after = matched.pairs(str(rule.metric))
            paired = (before, after)
        elif rule.metric is not None:
            paired = (np.array([]), metric_values(current, str(rule.metric)))
        if changed and rule.metric is not None:
            outcome = RuleOutcome(
                rule=rule.name,
                check=rule.check,
                metric=str(rule.metric),
                threshold=rule.threshold,
                severity=rule.severity,
                status="skipped",
                quality=True,
                message="eval set changed: not compared with the baseline",
            )
        else:
            outcome = _bounded(
                apply_rule(
                    rule,
                    current,
                    usable,
                    paired,
                    significance,
                    history.get(rule.name, ()),
                    overlap=overlap,
                    matched=matched,
                    agreement=agreement,
                    calibration=calibration,
                )
            )
        outcomes.append(outcome)
    changes: tuple[CoverageChange, ...] = ()
    pooled = pooled_qrels(qrels) if qrels is not None else None
    if usable is not None and qrels is not None:
        ks = dict.fromkeys([top_k, *(held_cutoff(o.metric, top_k) for o in outcomes if o.quality)])
        changes = coverage_changes(usable, current, qrels, tuple(ks), pooled=pooled)
        outcomes = [_held(o, changes, coverage.max_drop, top_k) for o in outcomes]

    primary = _primary_metric(outcomes, current)
    warnings: list[str] = []
    metrics: tuple[MetricChange, ...] = ()
    diffs: tuple[QueryDiff, ...] = ()
    breakdown: tuple[SegmentChange, ...] = ()
    if changed:
        warnings.append(
            "eval set changed since the baseline "
            f"({baseline.evalset_fingerprint[:19] if baseline else ''} -> "
            f"{current.evalset_fingerprint[:19]}): pin a new baseline"
        )
    if matched is not None:
        metrics = _metric_changes(matched, qrels if pooled else None)
        labels = segment_labels(current.columns.query_ids, segments, metadata or {})
        for metric in _followed(primary, outcomes):
            rows, before, after = matched.pairs(metric)
            diffs += worse_queries(
                matched.baseline, current, metric, texts=texts, top=top, matched=matched
            )
            breakdown += labelled_segment_changes(labels, rows, before, after, metric)
    answerable = _answerable(current)
    if answerable < MIN_QUERIES:
        warnings.append(
            f"only {answerable} answerable queries: below {MIN_QUERIES}, significance tests "
            "have little power and small drops read as insufficient evidence"
        )
    checked = check_invariants(invariants, current, usable)
    weighted = traffic_weighted_note(current, metadata or {})
    calibrated: tuple[str, ...] = ()
    if calibration is not None:
        watched = dict.fromkeys(str(r.metric) for r in rules if r.metric is not None)
        calibrated = side_by_side(calibration, list(watched))[0]
    return Comparison(
        suite=current.suite,
        run_id=current.run_id,
        baseline_run_id=baseline.run_id if baseline is not None else None,
        verdict=_verdict(outcomes, checked, baseline, changed),
        rules=tuple(outcomes),
        metrics=metrics,
        worse_queries=diffs,
        segments=breakdown,
        warnings=tuple(warnings),
        notes=(
            *corpus_notes(current, baseline),
            *(() if weighted is None else (weighted,)),
            *calibrated,
        ),
        primary_metric=primary,
        invariants=checked,
        coverage=changes,
        overlap=overlap,
    )


def traffic_weighted_note(
    run: RunRecord, metadata: Mapping[str, Mapping[str, MetaValue]]
) -> str | None:
    """Return the run's traffic-weighted means beside its plain ones, for an eval set sampled
    from traffic (``evalset sample``: its queries carry ``traffic_searches`` and
    ``inclusion_probability``), or None for any other set."""
    columns = run.columns
    rows = metadata_rows(columns.query_ids, metadata)
    if not any("inclusion_probability" in row for row in rows):
        return None
    from monitor.traffic.sample import weighted_mean

    figures = []
    for metric, plain in run.means.items():
        values, present = stored_column(columns, metric)
        kept = [row for row, here in zip(rows, present.tolist(), strict=True) if here]
        mean = weighted_mean(values[present].tolist(), kept)
        if mean is not None and plain is not None:
            figures.append(f"{metric} {mean:.4f} (plain {plain:.4f})")
    if not figures:
        return None
    return (
        "traffic-weighted means (each query weighs its searches over its inclusion "
        "probability): " + ", ".join(figures)
    )


def _verdict(
    outcomes: Sequence[RuleOutcome],
    invariants: Sequence[InvariantOutcome],
    baseline: RunRecord | None,
    changed: bool,
) -> Verdict:
    if any(o.breached for o in outcomes) or any(i.breached for i in invariants):
        return "regression"
    if any(o.status == "unjudged" for o in outcomes):
        return "unjudged"
    if changed:
        return "evalset_changed"
    if baseline is None:
        return "no_baseline"
    if any(o.status == "insufficient_evidence" for o in outcomes):
        return "insufficient_evidence"
    return "ok"


def _primary_metric(outcomes: Sequence[RuleOutcome], current: RunRecord) -> str | None:
    """Return the metric the diffs follow: a breached quality rule's, else the first rule's."""
    quality = [o for o in outcomes if o.quality]
    for status in ("breach", "unjudged", "pending", "insufficient_evidence", None):
        pick = [o for o in quality if status is None or o.status == status]
        if pick:
            return pick[0].metric
    return next(iter(current.means), None)


def _followed(primary: str | None, outcomes: Sequence[RuleOutcome]) -> list[str]:
    """Return the metrics the diffs follow: the primary one, then every quality rule's."""
    metrics = [] if primary is None else [primary]
    metrics += [o.metric for o in outcomes if o.quality]
    return list(dict.fromkeys(metrics))


def _held(
    outcome: RuleOutcome, changes: Sequence[CoverageChange], max_drop: float, default_k: int
) -> RuleOutcome:
    """Return a quality breach as ``unjudged`` when coverage at its k fell by more than
    ``max_drop``; any other outcome as it is."""
    if not outcome.quality or outcome.status != "breach":
        return outcome
    k = held_cutoff(outcome.metric, default_k)
    change = next((c for c in changes if c.k == k), None)
    if change is None or change.drop <= max_drop:
        return outcome
    note = (
        f"; held, labels needed: {change.metric} fell {change.baseline:.4f} -> "
        f"{change.current:.4f} (more than coverage.max_drop {max_drop:g}), "
        f"{change.unjudged_added} unjudged documents entered the top {k} "
        f"in {change.queries} queries"
    )
    return replace(outcome, status="unjudged", message=outcome.message + note)


def _answerable(run: RunRecord) -> int:
    """Return how many queries of ``run`` have a metric value."""
    columns = run.columns
    return int(np.count_nonzero(columns.present.any(axis=1))) if columns.metrics else 0


def _metric_changes(matched: Matched, judged: Qrels | None = None) -> tuple[MetricChange, ...]:
    """Return every metric both runs measured with the t-interval of its mean delta, and its
    judged-only means when ``judged`` are given.

    Judged-only scores mean something only where non-relevant documents are judged too:
    with relevant ones alone, -J would drop every other document and score near 1. So the
    caller passes the judgments only when some of them grade a document non-relevant.
    """
    baseline, current = matched.baseline, matched.current
    shared = [metric for metric in current.means if metric in baseline.means]
    only_before = judged_only_means(baseline, judged, shared) if judged is not None else {}
    only_now = judged_only_means(current, judged, shared) if judged is not None else {}
    out = []
    for metric in current.means:
        if metric not in baseline.means:
            continue
        _, before, after = matched.pairs(metric)
        low = high = None
        deltas = after - before
        if len(deltas) >= 2 and bool(np.isfinite(deltas).all()):
            low, high = mean_ci(deltas, bounds=DELTA_BOUNDS)
        old, new = baseline.means[metric], current.means[metric]
        if math.isnan(old) or math.isnan(new):
            continue
        out.append(
            MetricChange(
                metric,
                old,
                new,
                new - old,
                low,
                high,
                len(deltas),
                _known(only_before.get(metric)),
                _known(only_now.get(metric)),
            )
        )
    return tuple(out)


def _bounded(outcome: RuleOutcome) -> RuleOutcome:
    """Return a ``min`` rule's outcome with its t interval of the mean kept in the measure's
    range; other outcomes as they are.

    Clipping leaves the verdict alone: the floor lies in the range, so an upper end past 1
    was never under it.
    """
    if outcome.check is not Check.MIN or outcome.ci_low is None or outcome.ci_high is None:
        return outcome
    low, high = MEASURE_BOUNDS
    return replace(
        outcome,
        ci_low=min(max(outcome.ci_low, low), high),
        ci_high=min(max(outcome.ci_high, low), high),
    )


def _known(value: float | None) -> float | None:
    """Return ``value``, or None when it is unknown or not a number."""
    return None if value is None or math.isnan(value) else value
