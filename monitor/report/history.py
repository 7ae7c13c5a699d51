"""Turn a suite's run history (the store's frame) into the trends a report charts.

The history frame holds each run's overlap with its baseline too, as the figures ``rbo@k``
and ``jaccard@k`` (:func:`monitor.compare.history.with_overlap`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from monitor.config.model import Check, RuleConfig
from monitor.report.records import Trend, TrendPoint, Unit
from monitor.store.records import RunRecord

if TYPE_CHECKING:
    import pandas as pd


#: The figure name of latency p95, as rules and comparisons call it.
LATENCY_P95 = "latency_p95_seconds"

#: How many metrics are charted when no rule names one.
FALLBACK_METRICS = 4

#: How many of the most recent runs a chart shows.
MAX_POINTS = 60


def chart_metrics(
    rules: Sequence[RuleConfig], measured: Sequence[str], fallback: int = FALLBACK_METRICS
) -> tuple[str, ...]:
    """Return the metrics to chart: those the rules watch, else the first ``fallback`` measured."""
    watched = tuple(dict.fromkeys(str(rule.metric) for rule in rules if rule.metric is not None))
    return watched or tuple(measured[:fallback])


def build_trends(
    history: pd.DataFrame,
    metrics: Sequence[str],
    *,
    baseline: RunRecord | None = None,
    rules: Sequence[RuleConfig] = (),
    errors: Mapping[int, str] | None = None,
    limit: int = MAX_POINTS,
) -> tuple[Trend, ...]:
    """Return one trend per metric in ``metrics`` and one of latency p95, over the last
    ``limit`` runs of ``history`` (as :meth:`Store.history` returns it, oldest first).

    ``errors`` maps a failed run's id to its error, shown where the run is marked.
    """
    total = len(history)
    recent = history.tail(limit)
    errors = errors or {}
    trends = []
    for metric in metrics:
        base = baseline.means.get(metric) if baseline is not None else None
        trends.append(
            _trend(
                recent,
                metric,
                metric,
                metric,
                "score",
                _finite(base),
                total,
                errors,
                below=_alert_below(metric, rules, _finite(base)),
            )
        )
    base = _finite(baseline.figures.latency.p95) if baseline is not None else None
    trends.append(
        _trend(
            recent,
            "latency_p95",
            LATENCY_P95,
            "latency p95",
            "seconds",
            base,
            total,
            errors,
            above=_alert_above(rules, base),
        )
    )
    return tuple(trends)


def _trend(
    frame: pd.DataFrame,
    column: str,
    figure: str,
    label: str,
    unit: Unit,
    baseline: float | None,
    total: int,
    errors: Mapping[int, str],
    *,
    below: float | None = None,
    above: float | None = None,
) -> Trend:
    values = frame[column] if column in frame.columns else None
    points = tuple(
        TrendPoint(
            run_id=int(run_id),
            started_at=started.to_pydatetime(),
            status="ok" if status == "ok" else "failed",
            value=math.nan if values is None else float(values.iloc[position]),
            error=errors.get(int(run_id)),
        )
        for position, (run_id, started, status) in enumerate(
            zip(frame["run_id"], frame["started_at"], frame["status"], strict=True)
        )
    )
    return Trend(
        figure=figure,
        label=label,
        points=points,
        unit=unit,
        baseline=baseline,
        alert_below=below,
        alert_above=above,
        total_runs=total,
    )


def _alert_below(metric: str, rules: Sequence[RuleConfig], baseline: float | None) -> float | None:
    """Return the highest value under which a quality rule on ``metric`` fires (for
    ``rbo@k``, the ``min_overlap`` rules')."""
    floors = []
    for rule in rules:
        if rule.check is Check.MIN_OVERLAP and metric.startswith("rbo@"):
            floors.append(rule.threshold)
            continue
        if rule.metric is None or str(rule.metric) != metric:
            continue
        if rule.check is Check.MIN:
            floors.append(rule.threshold)
        elif baseline is not None and rule.check is Check.MAX_DROP:
            floors.append(baseline - rule.threshold)
        elif baseline is not None and rule.check is Check.MAX_RELATIVE_DROP:
            floors.append(baseline * (1 - rule.threshold))
    return max(floors, default=None)


def _alert_above(rules: Sequence[RuleConfig], baseline: float | None) -> float | None:
    """Return the lowest latency p95 over which a latency rule fires."""
    ceilings = []
    for rule in rules:
        if rule.check is Check.LATENCY_P95_SECONDS_MAX:
            ceilings.append(rule.threshold)
        elif baseline is not None and rule.check is Check.LATENCY_P95_MAX_RELATIVE_RISE:
            ceilings.append(baseline * (1 + rule.threshold))
    return min(ceilings, default=None)


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)
