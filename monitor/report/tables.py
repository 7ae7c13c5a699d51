"""A report as machine-readable text: one JSON object, or CSV with one row per metric."""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any

from monitor.compare import run_figure
from monitor.compare.records import RuleOutcome, RuleStatus
from monitor.report.records import Report
from monitor.store.records import RunRecord

#: The CSV columns, in order.
CSV_COLUMNS = ("metric", "baseline", "current", "delta", "ci_low", "ci_high", "rule", "status")

#: Rule statuses from the most to the least serious: a metric's CSV row shows the first found.
SERIOUSNESS: tuple[RuleStatus, ...] = (
    "breach",
    "unjudged",
    "pending",
    "insufficient_evidence",
    "unverified",
    "skipped",
    "ok",
)


def report_dict(report: Report) -> dict[str, Any]:
    """Return the report as JSON-ready data: the comparison, the run and its baseline, and
    the band of each banded mean of the run (``bands``: a reading aid, never an alert).

    Figures that could not be computed (NaN) become ``None``.
    """
    data = report.comparison.to_dict()
    data["run"] = _run_dict(report.run)
    data["baseline"] = None if report.baseline is None else _run_dict(report.baseline)
    data["links"] = dict(report.links)
    data["doc_texts"] = dict(report.doc_texts)
    data["bands"] = {
        metric: {"band": band.name, "meaning": band.meaning}
        for metric, value in report.run.means.items()
        if (band := report.bands.of(metric, value)) is not None
    }
    cleaned: dict[str, Any] = _finite(data)
    return cleaned


def render_json(report: Report) -> str:
    """Return the report as one JSON object (see :func:`report_dict`), newline-terminated."""
    return json.dumps(report_dict(report), indent=2, allow_nan=False) + "\n"


def render_csv(report: Report) -> str:
    """Return one CSV row per metric of the run, then one per run figure a rule watches.

    A metric row has the baseline and current means, the delta and its 95 % interval where
    the baseline measured the metric, and the rules watching it with their most serious
    status; the other cells are empty.
    """
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    watching: dict[str, list[RuleOutcome]] = {}
    for outcome in report.comparison.rules:
        watching.setdefault(outcome.metric, []).append(outcome)
    changes = {change.metric: change for change in report.comparison.metrics}
    for metric, value in report.run.means.items():
        change = changes.get(metric)
        if change is not None:
            figures = [change.baseline, change.current, change.delta, change.ci_low, change.ci_high]
        else:
            old = report.baseline.means.get(metric) if report.baseline is not None else None
            figures = [old, value, None, None, None]
        writer.writerow([metric, *map(_cell, figures), *_rule_cells(watching.pop(metric, []))])
    for figure, outcomes in watching.items():
        check = outcomes[0].check
        now = run_figure(report.run, check)
        old = run_figure(report.baseline, check) if report.baseline is not None else None
        delta = now - old if now is not None and old is not None else None
        writer.writerow(
            [figure, *map(_cell, [old, now, delta, None, None]), *_rule_cells(outcomes)]
        )
    return out.getvalue()


def _rule_cells(outcomes: list[RuleOutcome]) -> list[str]:
    if not outcomes:
        return ["", ""]
    worst = min(outcomes, key=lambda o: SERIOUSNESS.index(o.status))
    return ["; ".join(o.rule for o in outcomes), worst.status]


def _cell(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return ""
    return repr(float(value))


def _run_dict(run: RunRecord) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "suite": run.suite,
        "pipeline": run.pipeline,
        "status": run.status,
        "started_at": run.started_at.isoformat(),
        "finished_at": run.finished_at.isoformat(),
        "evalset_fingerprint": run.evalset_fingerprint,
        "config_hash": run.config_hash,
        "means": dict(run.means),
        "latency": _latency_dict(run),
        "rates": _rates_dict(run),
        "error": run.error,
    }


def _latency_dict(run: RunRecord) -> dict[str, float | None]:
    latency = run.figures.latency
    return {name: getattr(latency, name) for name in ("p50", "p95", "p99", "max", "mean")}


def _rates_dict(run: RunRecord) -> dict[str, float | int | None]:
    figures = run.figures
    return {
        "error_rate": figures.error_rate,
        "zero_result_rate": figures.zero_result_rate,
        "mean_top1_score": figures.mean_top1_score,
        "queries_per_second": figures.queries_per_second,
        "queries": figures.sent,
        "failed": figures.failed,
        "evaluated": figures.evaluated,
    }


def _finite(value: Any) -> Any:
    """Return ``value`` with NaN and infinite floats replaced by None, recursively."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value
