"""What earlier comparisons of a suite's runs left in the store for later ones to read.

Which rules breached in recent runs, the history persistence is judged by: each run's flags
(a rule breached, or a breach pending) are kept in the store's state under the suite, the
last :data:`_HISTORY` runs of them, so a stateless CronJob sees them too
(:func:`record_rule_flags`, :func:`rule_history`).

Each run's overlap with its baseline (mean rank-biased overlap and Jaccard of the top k) is
a comparison, not a measurement of the run alone, so it is kept beside the run in the
store's state (:func:`record_overlap`, namespace :data:`OVERLAP_STATE`) and joined into a
history frame as the figures ``rbo@k`` and ``jaccard@k`` (:func:`with_overlap`).

Each run's verdict, rule and invariant outcomes and metric changes, as measured when it ran,
are kept too (:func:`record_verdict`, namespace :data:`VERDICT_STATE`): once retention drops
a run's per-query detail its comparison can no longer be computed again, and the verdict
measured at the time is history that must stay (:func:`kept_comparison`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from monitor.compare.overlap import Overlap
    from monitor.compare.records import Comparison
    from monitor.store import Store

#: How many recent runs' rule breaches are kept for persistence checks.
_HISTORY = 50
_RULE_HISTORY = "rule_history"


def rule_history(store: Store, suite: str, *, before: int | None = None) -> dict[str, list[bool]]:
    """Return, per rule, whether it breached (significantly) in each recent run, oldest first.

    Only runs with an id below ``before`` count (all recorded runs when None), so a report on
    a past run sees the history that run was judged with. The last 50 runs are kept.
    """
    state = store.get_state(_RULE_HISTORY, suite) or {}
    history: dict[str, list[bool]] = {}
    for entry in state.get("runs", []):
        if before is not None and int(entry["run_id"]) >= before:
            continue
        for rule, flag in dict(entry["flags"]).items():
            history.setdefault(str(rule), []).append(bool(flag))
    return history


def record_rule_flags(store: Store, suite: str, run_id: int, comparison: Comparison) -> None:
    """Append this run's breach flags (a breach or a pending one) to the suite's history."""
    state = store.get_state(_RULE_HISTORY, suite) or {}
    runs = [entry for entry in state.get("runs", []) if int(entry["run_id"]) != run_id]
    flags = {o.rule: o.status in ("breach", "pending") for o in comparison.rules}
    runs.append({"run_id": run_id, "flags": flags})
    store.put_state(_RULE_HISTORY, suite, {"runs": runs[-_HISTORY:]})


#: The store state namespace holding each run's overlap with its baseline, keyed
#: ``<suite>/<run id>``.
OVERLAP_STATE = "overlap"


#: The store state namespace holding each run's judge-corrected figures (``alert_labels:
#: calibrated``), keyed ``<suite>/<run id>``: by metric, the human-only mean and the
#: :class:`~monitor.compare.ppi.Estimate` fields.
CALIBRATED_STATE = "calibrated"


def record_calibration(
    store: Store, suite: str, run_id: int, figures: Mapping[str, Mapping[str, object]]
) -> None:
    """Keep run ``run_id``'s calibrated figures (see :func:`monitor.compare.ppi.side_by_side`)."""
    if figures:
        store.put_state(CALIBRATED_STATE, f"{suite}/{run_id}", {"metrics": dict(figures)})


def stored_calibration(store: Store, suite: str, run_id: int) -> dict[str, dict[str, object]]:
    """Return run ``run_id``'s kept calibrated figures by metric (empty when none)."""
    kept = store.get_state(CALIBRATED_STATE, f"{suite}/{run_id}") or {}
    metrics = kept.get("metrics")
    return dict(metrics) if isinstance(metrics, dict) else {}


def record_overlap(store: Store, suite: str, run_id: int, overlap: Overlap | None) -> None:
    """Keep run ``run_id``'s mean overlap with its baseline (nothing without a baseline)."""
    if overlap is None or not overlap.n:
        return
    store.put_state(
        OVERLAP_STATE,
        f"{suite}/{run_id}",
        {
            "k": overlap.k,
            "persistence": overlap.persistence,
            "rbo": _finite(overlap.rbo),
            "jaccard": _finite(overlap.jaccard),
            "n": overlap.n,
        },
    )


def with_overlap(
    store: Store, suite: str, history: pd.DataFrame, limit: int
) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """Return ``history`` with the columns ``rbo@k`` and ``jaccard@k`` of its last ``limit``
    runs' stored overlaps (NaN for a run compared with no baseline), and their names; the
    frame unchanged and no names when none of those runs has one."""
    rows: dict[int, dict[str, float]] = {}
    for position, run_id in zip(history.index[-limit:], history["run_id"].tail(limit), strict=True):
        kept = store.get_state(OVERLAP_STATE, f"{suite}/{int(run_id)}")
        if kept is None:
            continue
        k = int(kept["k"])
        rows[position] = {
            f"rbo@{k}": math.nan if kept["rbo"] is None else float(kept["rbo"]),
            f"jaccard@{k}": math.nan if kept["jaccard"] is None else float(kept["jaccard"]),
        }
    names = tuple(dict.fromkeys(name for row in rows.values() for name in row))
    if not names:
        return history, ()
    out = history.copy()
    for name in names:
        out[name] = [rows.get(position, {}).get(name, math.nan) for position in out.index]
    return out, names


#: The store state namespace holding each run's comparison as measured when it ran, keyed
#: ``<suite>/<run id>``.
VERDICT_STATE = "verdict"


def record_verdict(store: Store, suite: str, run_id: int, comparison: Comparison) -> None:
    """Keep run ``run_id``'s verdict, rule and invariant outcomes and metric changes."""
    store.put_state(
        VERDICT_STATE,
        f"{suite}/{run_id}",
        {
            "verdict": comparison.verdict,
            "baseline_run_id": comparison.baseline_run_id,
            "primary_metric": comparison.primary_metric,
            "rules": [rule.to_dict() for rule in comparison.rules],
            "metrics": [change.to_dict() for change in comparison.metrics],
            "invariants": [invariant.to_dict() for invariant in comparison.invariants],
        },
    )


def kept_comparison(store: Store, suite: str, run_id: int) -> Comparison | None:
    """Return run ``run_id``'s comparison as :func:`record_verdict` kept it, marked
    ``pruned``; None when none was kept."""
    from monitor.compare.records import Comparison, InvariantOutcome, MetricChange, RuleOutcome

    kept = store.get_state(VERDICT_STATE, f"{suite}/{run_id}")
    if kept is None:
        return None
    baseline = kept.get("baseline_run_id")
    return Comparison(
        suite=suite,
        run_id=run_id,
        baseline_run_id=None if baseline is None else int(baseline),
        verdict=kept["verdict"],
        rules=tuple(RuleOutcome.from_dict(rule) for rule in kept.get("rules", ())),
        metrics=tuple(
            MetricChange.from_dict(_nan_for_null(change)) for change in kept.get("metrics", ())
        ),
        primary_metric=kept.get("primary_metric"),
        invariants=tuple(InvariantOutcome.from_dict(i) for i in kept.get("invariants", ())),
        pruned=True,
    )


def _nan_for_null(change: dict[str, Any]) -> dict[str, Any]:
    """Return a stored metric change with NaN for the means JSON kept as null."""
    means = ("baseline", "current", "delta")
    return {k: math.nan if k in means and v is None else v for k, v in change.items()}


def _finite(value: float | None) -> float | None:
    """Return ``value``, or None when it is not a finite number (stored as JSON null)."""
    return None if value is None or not math.isfinite(value) else float(value)
