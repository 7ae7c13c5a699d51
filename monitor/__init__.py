"""retrieval-monitor: know every day whether your retrieval still finds the right documents.

The package re-exports its public names lazily, so ``import monitor`` stays cheap (the command
line starts without loading numpy or pandas until a command needs them).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from monitor.errors import ConfigError, InputError, MonitorError, UsageError
    from monitor.evalset import EvalSet
    from monitor.metrics.evaluation import EvaluationResult, evaluate
    from monitor.metrics.ksweep import KSweep, k_sweep
    from monitor.metrics.spec import Metric, parse_metric
    from monitor.records import Hit, Query, QueryOutcome
    from monitor.runner import RunResult, run_queries
    from monitor.search import build_search
    from monitor.search.saved import load_run

__version__ = "0.1.0"

_EXPORTS = {
    "ConfigError": "monitor.errors",
    "EvalSet": "monitor.evalset",
    "EvaluationResult": "monitor.metrics.evaluation",
    "Hit": "monitor.records",
    "InputError": "monitor.errors",
    "KSweep": "monitor.metrics.ksweep",
    "Metric": "monitor.metrics.spec",
    "MonitorError": "monitor.errors",
    "Query": "monitor.records",
    "QueryOutcome": "monitor.records",
    "RunResult": "monitor.runner",
    "UsageError": "monitor.errors",
    "build_search": "monitor.search",
    "evaluate": "monitor.metrics.evaluation",
    "k_sweep": "monitor.metrics.ksweep",
    "load_run": "monitor.search.saved",
    "parse_metric": "monitor.metrics.spec",
    "run_queries": "monitor.runner",
}

__all__ = [
    "ConfigError",
    "EvalSet",
    "EvaluationResult",
    "Hit",
    "InputError",
    "KSweep",
    "Metric",
    "MonitorError",
    "Query",
    "QueryOutcome",
    "RunResult",
    "UsageError",
    "build_search",
    "evaluate",
    "k_sweep",
    "load_run",
    "parse_metric",
    "run_queries",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'monitor' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
