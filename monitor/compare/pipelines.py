"""A/B: several search pipelines on one eval set, each compared with the first.

Every pipeline answers the same queries; the first one named is the reference. For each
metric, the difference of every other pipeline from the reference gets a two-sided paired
randomization test on per-query values, so "B is 0.03 better" comes with its p-value.

A pipeline whose every query failed has no quality to compare: it is a failed search
backend. Its row is still part of the comparison (marked as failed), and
:meth:`PipelineComparison.backend_failure` returns the error naming every such pipeline, so
that a caller never reports a dead pipeline as a result. A pipeline where only some queries
failed is compared on the queries it answered (a failed query is left out of its means and
of the paired tests) and :meth:`PipelineComparison.warnings` says how many failed and why.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from monitor.compare.stats import compare_paired
from monitor.errors import SearchBackendError
from monitor.metrics.spec import Metric

if TYPE_CHECKING:
    import numpy as np

    from monitor.evalset import EvalSet
    from monitor.metrics.evaluation import EvaluationResult
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
    queries: int = 0
    failed: int = 0
    errors: Mapping[str, int] = field(default_factory=dict)  # error type -> failed queries
    error_example: str | None = None  # the first failure's message, URLs masked

    @property
    def all_failed(self) -> bool:
        """Return whether every query failed: the pipeline's backend is down."""
        return self.queries > 0 and self.failed == self.queries

    def failure_text(self) -> str | None:
        """Return what failed (counts, error types, an example message), None if nothing."""
        if not self.failed:
            return None
        if self.all_failed:
            text = f"every one of its {self.queries} queries failed"
        else:
            text = (
                f"{self.failed} of {self.queries} queries failed ({self.failed / self.queries:.1%})"
            )
        if self.errors:
            text += ": " + ", ".join(f"{kind} x{count}" for kind, count in self.errors.items())
        if self.error_example:
            text += f" (first: {self.error_example})"
        return text

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
            "failed_queries": self.failed,
            "errors": dict(self.errors),
            "all_failed": self.all_failed,
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
            "failed_pipelines": [row.name for row in self.failed_rows],
        }

    @property
    def failed_rows(self) -> tuple[PipelineRow, ...]:
        """Return the rows of the pipelines whose every query failed."""
        return tuple(row for row in self.rows if row.all_failed)

    def backend_failure(self) -> SearchBackendError | None:
        """Return the error naming every pipeline whose every query failed, None if none."""
        failed = self.failed_rows
        if not failed:
            return None
        return SearchBackendError(
            "; ".join(f"pipeline {row.name!r}: {row.failure_text()}" for row in failed)
        )

    def warnings(self) -> tuple[str, ...]:
        """Return one line per pipeline where some, but not all, queries failed."""
        return tuple(
            f"pipeline {row.name!r}: {row.failure_text()}"
            for row in self.rows
            if row.failed and not row.all_failed
        )

    def __str__(self) -> str:
        name_width = max(len(row.name) for row in self.rows)
        cell = max(16, *(len(m) for m in self.metrics))
        head = f"{'pipeline':<{name_width}}" + "".join(f"  {m:>{cell}}" for m in self.metrics)
        head += f"  {'p50 ms':>8}  {'p95 ms':>8}  {'errors':>7}"
        lines = [head]
        for row in self.rows:
            cells = []
            for metric in self.metrics:
                mean = row.means[metric]
                text = "-" if math.isnan(mean) else f"{mean:.4f}"  # no answered query
                if metric in row.deltas:
                    mark = "*" if row.p_values[metric] < self.alpha else " "
                    text = f"{row.deltas[metric]:+.3f}{mark} {text}"
                cells.append(f"  {text:>{cell}}")
            lines.append(
                f"{row.name:<{name_width}}{''.join(cells)}  {_ms(row.latency_p50):>8}"
                f"  {_ms(row.latency_p95):>8}  {row.error_rate:>7.1%}"
                + ("  FAILED" if row.all_failed else "")
            )
        lines.append(
            f"\nreference: {self.rows[0].name}; other rows show the difference from it, "
            f"* where a two-sided paired randomization test gives p < {self.alpha:g} "
            f"({self.evaluated} queries; a failed query is left out of its pipeline's means "
            "and of the tests it would be part of)"
        )
        if self.failed_rows:
            names = ", ".join(row.name for row in self.failed_rows)
            lines.append(f"FAILED (every query failed, no result to compare): {names}")
        return "\n".join(lines)


def compare_pipelines(
    evalset: EvalSet,
    searches: Mapping[str, Search],
    metrics: Sequence[Metric],
    *,
    alpha: float = 0.05,
    iterations: int = 10000,
    seed: int = 0,
    scoring: Mapping[str, Any] | None = None,
    **settings: Any,
) -> PipelineComparison:
    """Run each search on ``evalset`` and compare every pipeline with the first one.

    ``scoring`` holds :func:`~monitor.metrics.evaluation.evaluate`'s scoring options (trec_eval's
    ``-l``, ``-M``, ``-J`` and the average); ``settings`` are the runner's keyword arguments
    (k, concurrency, timeout, ...).
    """
    from monitor.metrics.evaluation import evaluate
    from monitor.runner import run_pipelines

    results: dict[str, RunResult] = run_pipelines(evalset, searches, **settings)
    # A failed query is not quality: it is left out of its pipeline's means and of every
    # paired test it would be part of (the errors column and the warnings count it).
    evaluations = {
        name: evaluate(evalset, result, metrics, exclude_failed=True, **(scoring or {}))
        for name, result in results.items()
    }
    names = [str(m) for m in metrics]
    reference_name = next(iter(evaluations))
    reference = evaluations[reference_name]
    rows = []
    for name, evaluation in evaluations.items():
        deltas: dict[str, float] = {}
        p_values: dict[str, float] = {}
        common = _answered_in_both(reference, evaluation)
        if name != reference_name and len(common[0]):
            for metric in metrics:
                test = compare_paired(
                    reference.values[metric][common[0]],
                    evaluation.values[metric][common[1]],
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
                queries=result.total,
                failed=result.failed,
                errors=result.error_counts,
                error_example=_example(result),
            )
        )
    return PipelineComparison(tuple(names), tuple(rows), alpha, reference.counts.evaluated)


_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


def _answered_in_both(
    reference: EvaluationResult, other: EvaluationResult
) -> tuple[np.ndarray, np.ndarray]:
    """Return the positions, in each evaluation, of the queries both evaluated (answered)."""
    import numpy as np

    where = {qid: i for i, qid in enumerate(other.query_ids)}
    pairs = [(i, where[qid]) for i, qid in enumerate(reference.query_ids) if qid in where]
    if not pairs:
        return np.array([], dtype=np.int64), np.array([], dtype=np.int64)
    first, second = zip(*pairs, strict=True)
    return np.array(first, dtype=np.int64), np.array(second, dtype=np.int64)


def _example(result: RunResult) -> str | None:
    """Return the first failure's message with every URL masked (no credentials or query)."""
    failure = next(iter(result.failures), None)
    if failure is None or not failure.error_message:
        return None
    message = _URL.sub(lambda match: _masked(match.group(0)), failure.error_message)
    return message if len(message) <= 200 else message[:197] + "..."


def _masked(url: str) -> str:
    """Return ``url`` as scheme, host, port and path: no user, password, query or fragment."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "<URL>"
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port is None else f"{host}:{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.1f}"
