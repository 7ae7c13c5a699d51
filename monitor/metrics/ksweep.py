"""Sweep the cutoff k: tabulate every measure at several k and recommend k per use case.

Each use case maximises one measure over the swept k; among equal values the smallest k
wins (recall@k and mrr@k never fall as k grows, so "the largest k" would always win
otherwise, and a smaller k means a shorter, cheaper context).

A cutoff larger than the longest ranking in the run sees no more documents than that ranking
holds: there the measures equal their values at that length, except precision and f1, which
count the missing ranks as not relevant and so only fall. :attr:`KSweep.longest_ranking` and
:attr:`KSweep.ks_beyond_run` say when that happens, so that a flat row is not read as "more
results would not help".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from monitor.metrics.evaluation import QrelsLike, QueryCounts, RunLike, evaluate, ranked_run
from monitor.metrics.spec import Average, Metric

DEFAULT_KS: tuple[int, ...] = (1, 3, 5, 10, 20)
DEFAULT_MEASURES: tuple[str, ...] = ("hit_rate", "precision", "recall", "f1", "mrr", "ndcg", "map")
_TIE = 1e-12


@dataclass(frozen=True, slots=True)
class UseCase:
    """A way of using retrieved documents, and the measure that serves it best."""

    name: str
    measure: str
    description: str


USE_CASES: tuple[UseCase, ...] = (
    UseCase("first_answer", "mrr", "the first relevant result is what counts"),
    UseCase("balanced", "f1", "balance finding relevant documents against noise"),
    UseCase("coverage", "recall", "retrieve as many relevant documents as possible"),
    UseCase("tight_context", "precision", "few slots: keep what is passed on relevant"),
)


@dataclass(frozen=True, slots=True)
class Recommendation:
    """The k recommended for one use case, with the value it reaches."""

    use_case: str
    measure: str
    k: int
    value: float
    description: str


@dataclass(frozen=True, slots=True)
class KSweep:
    """Mean of each measure at each k, and a recommended k per use case."""

    ks: tuple[int, ...]
    measures: tuple[str, ...]
    means: dict[str, dict[int, float]]
    counts: QueryCounts
    recommendations: tuple[Recommendation, ...]
    longest_ranking: int | None = None  # distinct ids of the run's longest ranking

    @property
    def ks_beyond_run(self) -> tuple[int, ...]:
        """Return the swept k larger than the longest ranking in the run."""
        if self.longest_ranking is None:
            return ()
        return tuple(k for k in self.ks if k > self.longest_ranking)

    def note(self) -> str | None:
        """Return a line saying which k exceed the longest ranking, None when none does."""
        beyond = self.ks_beyond_run
        if not beyond:
            return None
        ks = ", ".join(str(k) for k in beyond)
        verb = "sees" if len(beyond) == 1 else "see"
        return (
            f"note: the longest ranking in the run holds {self.longest_ranking} results, so "
            f"k = {ks} {verb} no more documents than k = {self.longest_ranking} "
            "(precision and f1 only fall there)"
        )

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready form: table, counts, recommendations, the k beyond the run."""
        return {
            "ks": list(self.ks),
            "metrics": {
                f"{measure}@{k}": self.means[measure][k]
                for measure in self.measures
                for k in self.ks
            },
            "queries": self.counts.to_dict(),
            "recommendations": {
                r.use_case: {"measure": r.measure, "k": r.k, "value": r.value}
                for r in self.recommendations
            },
            "longest_ranking": self.longest_ranking,
            "ks_beyond_longest_ranking": list(self.ks_beyond_run),
        }

    def table(self) -> str:
        """Return the measures (rows) at each k (columns) as text."""
        width = max(len(m) for m in self.measures)
        head = f"{'measure':<{width}}" + "".join(f"{'@' + str(k):>9}" for k in self.ks)
        rows = [
            f"{m:<{width}}" + "".join(f"{self.means[m][k]:>9.4f}" for k in self.ks)
            for m in self.measures
        ]
        return "\n".join([head, *rows])

    def bars(self, width: int = 30, *, ascii_only: bool = False) -> str:
        """Return a bar chart per measure, one bar per k, scaled to 0..1."""
        full, empty = ("#", ".") if ascii_only else ("\u2588", "\u2591")
        lines: list[str] = []
        for measure in self.measures:
            lines.append(measure)
            for k in self.ks:
                value = self.means[measure][k]
                filled = round(max(0.0, min(1.0, value)) * width)
                lines.append(f"  k={k:<4} {full * filled}{empty * (width - filled)} {value:.4f}")
        return "\n".join(lines)

    def __str__(self) -> str:
        picks = [
            f"  {r.use_case:<14} k={r.k:<4} best {r.measure} = {r.value:.4f}  ({r.description})"
            for r in self.recommendations
        ]
        note = self.note()
        table = [self.table()] if note is None else [self.table(), note]
        return "\n".join([*table, "", "recommended k:", *picks])


def k_sweep(
    qrels: QrelsLike,
    run: RunLike,
    ks: Sequence[int] = DEFAULT_KS,
    measures: Sequence[str] = DEFAULT_MEASURES,
    *,
    include_no_relevant: bool = False,
    average: Average | None = None,
    relevance_level: int = 1,
    max_docs: int | None = None,
    judged_only: bool = False,
) -> KSweep:
    """Evaluate ``measures`` at every k of ``ks`` in one pass and recommend k per use case.

    The scoring options are :func:`monitor.metrics.evaluation.evaluate`'s (trec_eval's -c, -l, -M,
    -J).
    """
    ks = tuple(sorted(set(ks)))
    metrics = [Metric(measure, k) for measure in measures for k in ks]
    ranked = ranked_run(run)  # read once, for the sweep and its longest ranking
    result = evaluate(
        qrels,
        ranked,
        metrics,
        include_no_relevant=include_no_relevant,
        average=average,
        relevance_level=relevance_level,
        max_docs=max_docs,
        judged_only=judged_only,
    )
    flat = result.means
    means = {measure: {k: flat[f"{measure}@{k}"] for k in ks} for measure in measures}
    recommendations = tuple(
        _recommend(case, means[case.measure]) for case in USE_CASES if case.measure in means
    )
    longest = ranked.longest()
    return KSweep(ks, tuple(measures), means, result.counts, recommendations, longest)


def _recommend(case: UseCase, values: dict[int, float]) -> Recommendation:
    best = max(values.values())
    k = min(k for k, value in values.items() if value >= best - _TIE)
    return Recommendation(case.name, case.measure, k, values[k], case.description)
