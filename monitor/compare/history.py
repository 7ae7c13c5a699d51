"""Which rules breached in a suite's recent runs: the history persistence is judged by.

Each run's flags (a rule breached, or a breach pending) are kept in the store's state under
the suite, the last :data:`_HISTORY` runs of them, so a stateless CronJob sees them too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from monitor.compare import Comparison
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
