"""Sweep one search parameter of a vector kind: quality, ANN recall and latency per value.

``retrieval-monitor sweep --suite S --param hnsw.ef_search=10,20,50`` runs the suite's
queries once per value, the value set as the kind's own knob (pgvector: the session setting
of that name, under ``settings``; qdrant: the search parameter ``hnsw_ef``), with index
health on, and nothing written to the store. Each value gives the suite's main metric (from
its judgments), ``ann_recall@k`` against the exact search of the same store
(:mod:`monitor.search.health`) and the p95 latency of the answered queries.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from monitor.config.model import SuiteConfig
from monitor.errors import UsageError
from monitor.evalset.model import EvalSet
from monitor.search.health import DEFAULT_K, ann_recall_name

#: The parameters each vector kind sweeps, and where the value goes in its options.
KNOBS: Final[Mapping[str, str]] = {"pgvector": "settings", "qdrant": "hnsw_ef"}
#: The most values one sweep runs.
MAX_VALUES: Final = 50

_PARAM = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_.]*)=(?P<values>.+)")
_VALUE = re.compile(r"[0-9]{1,9}", re.ASCII)


@dataclass(frozen=True, slots=True)
class SweepPoint:
    """One value's figures: the main metric, the ANN recall and the p95 latency (None when
    not known), over ``queries`` answered queries."""

    value: int
    metric: float | None
    ann_recall: float | None
    latency_p95: float | None
    queries: int


@dataclass(frozen=True, slots=True)
class Sweep:
    """A sweep of one parameter of a suite's search."""

    suite: str
    param: str
    metric: str
    k: int
    points: tuple[SweepPoint, ...]

    def to_dict(self) -> dict[str, object]:
        """Return the sweep as JSON data."""
        return {
            "suite": self.suite,
            "param": self.param,
            "metric": self.metric,
            "ann_recall": ann_recall_name(self.k),
            "points": [
                {
                    "value": p.value,
                    self.metric: p.metric,
                    ann_recall_name(self.k): p.ann_recall,
                    "latency_p95_seconds": p.latency_p95,
                    "queries": p.queries,
                }
                for p in self.points
            ],
        }

    def __str__(self) -> str:
        heads = (self.param, self.metric, ann_recall_name(self.k), "p95 ms")
        rows = [
            (
                str(p.value),
                _share(p.metric),
                _share(p.ann_recall),
                "n/a" if p.latency_p95 is None else f"{p.latency_p95 * 1000:.2f}",
            )
            for p in self.points
        ]
        widths = [max(len(row[i]) for row in [heads, *rows]) for i in range(len(heads))]
        return "\n".join(
            "  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True))
            for row in [heads, *rows]
        )


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def parse_param(text: str) -> tuple[str, tuple[int, ...]]:
    """Parse ``NAME=V1,V2,...`` (positive integers, each once); raise UsageError if not."""
    match = _PARAM.fullmatch(text.strip())
    if match is None:
        raise UsageError(
            f"--param: expected NAME=V1,V2,... such as hnsw.ef_search=10,20,50, found {text!r}"
        )
    values: list[int] = []
    for part in match.group("values").split(","):
        part = part.strip()
        if not _VALUE.fullmatch(part) or int(part) < 1:
            raise UsageError(
                f"--param: expected positive integers separated by commas, found {part!r}"
            )
        if int(part) in values:
            raise UsageError(f"--param: each value once ({part} is given twice)")
        values.append(int(part))
    if len(values) > MAX_VALUES:
        raise UsageError(f"--param: at most {MAX_VALUES} values, found {len(values)}")
    return match.group("name"), tuple(values)


def swept_options(suite: SuiteConfig, name: str, value: int, k: int) -> dict[str, object]:
    """Return the suite's search options with ``name`` set to ``value`` and index health on
    at ``k``; raise UsageError for a kind or a parameter that cannot be swept."""
    kind = suite.search.kind
    if kind not in KNOBS:
        known = ", ".join(KNOBS)
        raise UsageError(f"sweep: suite {suite.name}'s search is {kind!r}; a sweep needs {known}")
    options = dict(suite.search.plugin_options())
    if kind == "qdrant":
        if name != "hnsw_ef":
            raise UsageError(f"sweep: a qdrant search sweeps hnsw_ef, not {name!r}")
        options["hnsw_ef"] = value
    else:
        settings = options.get("settings")
        options["settings"] = {**(settings if isinstance(settings, Mapping) else {}), name: value}
    options["index_health"] = {"k": k}
    return options


def main_metric(suite: SuiteConfig, chosen: str | None = None) -> str:
    """Return the metric a sweep shows: ``chosen``, else the suite's first recall, else its
    first metric."""
    names = [str(metric) for metric in suite.metrics]
    if chosen is not None:
        if chosen not in names:
            raise UsageError(
                f"--metric: one of the suite's metrics ({', '.join(names)}), not {chosen!r}"
            )
        return chosen
    recalls = [str(m) for m in suite.metrics if m.measure == "recall" and m.unit is None]
    return recalls[-1] if recalls else names[0]


def sweep(
    suite: SuiteConfig,
    evalset: EvalSet,
    name: str,
    values: Sequence[int],
    *,
    metric: str | None = None,
    progress: bool | None = None,
) -> Sweep:
    """Run ``evalset`` through the suite's search once per value of ``name``; nothing is
    stored."""
    from monitor.job.path import score_run, search_suite
    from monitor.search import build_search
    from monitor.search.base import close_search

    shown = main_metric(suite, metric)
    health = suite.search.options.get("index_health")
    k = health.get("k", DEFAULT_K) if isinstance(health, Mapping) else DEFAULT_K
    k = k if isinstance(k, int) and not isinstance(k, bool) else DEFAULT_K
    points: list[SweepPoint] = []
    for value in values:
        search = build_search(suite.search.kind, swept_options(suite, name, value, k))
        try:
            label = f"{suite.name} {name}={value}"
            result = search_suite(suite, evalset, search, progress=progress, label=label)
        finally:
            close_search(search)
        mean = score_run(suite, evalset, result).means.get(shown)
        recall = result.search_stats.get(ann_recall_name(k))
        p95 = result.latency.p95
        points.append(
            SweepPoint(
                value=value,
                metric=None if mean is None or math.isnan(mean) else float(mean),
                ann_recall=float(recall) if isinstance(recall, int | float) else None,
                latency_p95=None if p95 is None or math.isnan(p95) else float(p95),
                queries=result.total - result.failed,
            )
        )
    return Sweep(suite=suite.name, param=name, metric=shown, k=k, points=tuple(points))
