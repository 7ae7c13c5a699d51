"""A/B: several search pipelines on one eval set, each compared with the first.

Every pipeline answers the same queries; the first one named is the reference. For each
metric, the difference of every other pipeline from the reference gets a two-sided paired
randomization test on per-query values, so "B is 0.03 better" comes with its p-value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from monitor.metrics.spec import Metric
from monitor.stats import compare_paired

if TYPE_CHECKING:
    from monitor.evalset import EvalSet
    from monitor.runner import RunResult
    from monitor.search import Search


@dataclass(frozen=True, slots=True)
class PipelineRow:
    """One pipeline's means, latency and errors, and its differences from the reference."""

    name: str
    means: Mapping[str, float]
    latency_p50: float | None
    latency_p95: float | None
    error_rate: float
    zero_result_rate: float
    deltas: Mapping[str, float]  # metric -> mean difference from the reference
    p_values: Mapping[str, float]  # metric -> two-sided p-value (empty for the reference)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready form."""
        return {
            "name": self.name,
            "metrics": dict(self.means),
            "latency_p50_seconds": self.latency_p50,
            "latency_p95_seconds": self.latency_p95,
            "error_rate": self.error_rate,
            "zero_result_rate": self.zero_result_rate,
            "delta_vs_reference": dict(self.deltas),
            "p_value_vs_reference": dict(self.p_values),
        }


@dataclass(frozen=True, slots=True)
class PipelineComparison:
    """Every pipeline's row, the reference first, and the significance level used."""

    metrics: tuple[str, ...]
    rows: tuple[PipelineRow, ...]
    alpha: float
    evaluated: int

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready form."""
        return {
            "reference": self.rows[0].name,
            "alpha": self.alpha,
            "queries_evaluated": self.evaluated,
            "pipelines": [row.to_dict() for row in self.rows],
        }

    def __str__(self) -> str:
        name_width = max(len(row.name) for row in self.rows)
        cell = max(16, *(len(m) for m in self.metrics))
        head = f"{'pipeline':<{name_width}}" + "".join(f"  {m:>{cell}}" for m in self.metrics)
        head += f"  {'p50 ms':>8}  {'p95 ms':>8}  {'errors':>7}"
        lines = [head]
        for row in self.rows:
            cells = []
            for metric in self.metrics:
                text = f"{row.means[metric]:.4f}"
                if metric in row.deltas:
                    mark = "*" if row.p_values[metric] < self.alpha else " "
                    text = f"{row.deltas[metric]:+.3f}{mark} {text}"
                cells.append(f"  {text:>{cell}}")
            lines.append(
                f"{row.name:<{name_width}}{''.join(cells)}  {_ms(row.latency_p50):>8}"
                f"  {_ms(row.latency_p95):>8}  {row.error_rate:>7.1%}"
            )
        lines.append(
            f"\nreference: {self.rows[0].name}; other rows show the difference from it, "
            f"* where a two-sided paired randomization test gives p < {self.alpha:g} "
            f"({self.evaluated} queries)"
        )
        return "\n".join(lines)


def compare_pipelines(
    evalset: EvalSet,
    searches: Mapping[str, Search],
    metrics: Sequence[Metric],
    *,
    alpha: float = 0.05,
    iterations: int = 10000,
    seed: int = 0,
    **settings: Any,
) -> PipelineComparison:
    """Run each search on ``evalset`` and compare every pipeline with the first one.

    ``settings`` are the runner's keyword arguments (k, concurrency, timeout, ...).
    """
    from monitor.evaluation import evaluate
    from monitor.runner import run_pipelines

    results: dict[str, RunResult] = run_pipelines(evalset, searches, **settings)
    evaluations = {name: evaluate(evalset, result, metrics) for name, result in results.items()}
    names = [str(m) for m in metrics]
    reference_name = next(iter(evaluations))
    reference = evaluations[reference_name]
    rows = []
    for name, evaluation in evaluations.items():
        deltas: dict[str, float] = {}
        p_values: dict[str, float] = {}
        if name != reference_name:
            for metric in metrics:
                test = compare_paired(
                    reference.values[metric],
                    evaluation.values[metric],
                    alpha=alpha,
                    iterations=iterations,
                    seed=seed,
                    alternative="two-sided",
                )
                deltas[str(metric)] = test.delta
                p_values[str(metric)] = test.p_value
        result = results[name]
        rows.append(
            PipelineRow(
                name=name,
                means=evaluation.means,
                latency_p50=result.latency.p50,
                latency_p95=result.latency.p95,
                error_rate=result.error_rate,
                zero_result_rate=result.zero_result_rate,
                deltas=deltas,
                p_values=p_values,
            )
        )
    return PipelineComparison(tuple(names), tuple(rows), alpha, reference.counts.evaluated)


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.1f}"
