"""How often a judge agrees with people: its grades against human grades on their overlap.

For every judge layer source (``judge:<id>:<model>:<prompt digest>``) the **overlap** is the
(query, doc) pairs that both the judge and people graded: the human grades are the frozen
eval set with the human layers on top (:func:`~monitor.judgments.merge.merged`), the judge's
are the union of its layers. On the overlap:

- ``exact``: the share of pairs graded alike.
- ``kappa``: Cohen's weighted kappa with **quadratic** weights ``((i - j) / (K - 1))**2``,
  the figure the ``judge_agreement`` rule reads by default; ``kappa_linear`` the same with
  linear weights ``|i - j| / (K - 1)``. ``1 - sum(w * observed) / sum(w * expected)``, the
  expected table being the product of the two marginals (Cohen 1968).
- ``alpha``: Krippendorff's alpha with the ordinal metric, two coders per pair
  (Krippendorff 2011, "Computing Krippendorff's alpha-reliability"):
  ``1 - (n - 1) * sum(o * d2) / sum(n_c * n_k * d2)`` over the coincidence matrix ``o``.
- the **confusion matrix**, rows the human grade, columns the judge's, over the scale
  ``0..max`` (the judge's ``max_grade``, or a higher grade either side gave).

The grade scale is the integers from 0 (or the lowest grade given) to the top, so a weight
reads the distance between grades, not between the grades that happen to occur. A statistic
is NaN when it is undefined (no pair, or a single grade everywhere: no expected
disagreement).

Each statistic has a **95 % percentile bootstrap interval over queries**: the queries of the
overlap are resampled with replacement (:data:`ITERATIONS` times, numpy's ``default_rng``
seeded with :data:`SEED`), each keeping all its pairs, since one query's pairs are not
independent. Every figure is a function of the confusion matrix, so the bootstrap adds up
per-query matrices and computes all statistics at once.

Figures are stored **per judge source and layer state**: the store's ``state`` table holds,
per suite, the figures of every judge source with the newest layer id they read
(``layers_through``); they are computed again only when a layer was added since.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any, Final

import numpy as np

from monitor.config.vocab import AGREEMENT_STATISTICS
from monitor.errors import UsageError
from monitor.evalset import EvalSet
from monitor.judgments.layers import _now
from monitor.judgments.merge import merged
from monitor.store import JudgmentLayer, Store

#: The statistics, in the order they are shown (the config's vocabulary owns the names, as
#: a rule names one); ``kappa`` is the quadratic-weighted one.
STATISTICS: Final = AGREEMENT_STATISTICS
#: What each statistic is, for people.
STATISTIC_NAMES: Final = MappingProxyType(
    {
        "exact": "exact agreement",
        "kappa": "Cohen's kappa (quadratic weights)",
        "kappa_linear": "Cohen's kappa (linear weights)",
        "alpha": "Krippendorff's alpha (ordinal)",
    }
)
#: Bootstrap resamples of the queries, and the seed of their generator.
ITERATIONS: Final = 1000
SEED: Final = 0
#: The confidence level of the intervals.
LEVEL: Final = 0.95
#: The ``state`` namespace of the stored figures (one document per suite).
NAMESPACE: Final = "judge_agreement"


@dataclass(frozen=True, slots=True)
class GradedPair:
    """One (query, doc) of the overlap with the human grade and the judge's."""

    query_id: str
    doc_id: str
    human: int
    judge: int


@dataclass(frozen=True, slots=True)
class Agreement:
    """A judge's agreement with human grades on their overlap, as stored.

    ``statistics`` maps each of :data:`STATISTICS` to its value (NaN: undefined),
    ``intervals`` to its bootstrap ``(low, high)``; ``confusion`` has one row per human grade
    and one column per judge grade of ``grades``. ``layers_through`` is the newest layer id
    the figures read (0: none).
    """

    suite: str
    judge: str
    pairs: int
    queries: int
    grades: tuple[int, ...]
    confusion: tuple[tuple[int, ...], ...]
    statistics: Mapping[str, float] = field(default_factory=dict, hash=False)
    intervals: Mapping[str, tuple[float, float]] = field(default_factory=dict, hash=False)
    layers_through: int = 0
    iterations: int = ITERATIONS
    seed: int = SEED
    computed_at: datetime | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "statistics", MappingProxyType(dict(self.statistics)))
        object.__setattr__(self, "intervals", MappingProxyType(dict(self.intervals)))

    def value(self, statistic: str) -> float:
        """Return ``statistic``'s value (NaN when undefined); raise UsageError if unknown."""
        if statistic not in STATISTICS:
            raise UsageError(f"unknown agreement statistic {statistic!r}; known: {_known()}")
        return self.statistics.get(statistic, math.nan)

    def to_state(self) -> dict[str, Any]:
        """Return a JSON-ready form (NaN as null)."""
        return {
            "judge": self.judge,
            "pairs": self.pairs,
            "queries": self.queries,
            "grades": list(self.grades),
            "confusion": [list(row) for row in self.confusion],
            "statistics": {k: _json(v) for k, v in self.statistics.items()},
            "intervals": {k: [_json(lo), _json(hi)] for k, (lo, hi) in self.intervals.items()},
            "layers_through": self.layers_through,
            "iterations": self.iterations,
            "seed": self.seed,
            "computed_at": None if self.computed_at is None else self.computed_at.isoformat(),
        }

    @classmethod
    def from_state(cls, suite: str, data: Mapping[str, Any]) -> Agreement:
        """Return the figures :meth:`to_state` wrote."""
        moment = data.get("computed_at")
        return cls(
            suite=suite,
            judge=str(data["judge"]),
            pairs=int(data["pairs"]),
            queries=int(data["queries"]),
            grades=tuple(int(g) for g in data["grades"]),
            confusion=tuple(tuple(int(c) for c in row) for row in data["confusion"]),
            statistics={k: _float(v) for k, v in data["statistics"].items()},
            intervals={k: (_float(lo), _float(hi)) for k, (lo, hi) in data["intervals"].items()},
            layers_through=int(data["layers_through"]),
            iterations=int(data["iterations"]),
            seed=int(data["seed"]),
            computed_at=None if moment is None else datetime.fromisoformat(moment),
        )

    def lines(self) -> list[str]:
        """Return the figures for people: one line of statistics, then the confusion matrix."""
        head = f"{self.judge} vs human grades: {self.pairs} pairs over {self.queries} queries"
        if not self.pairs:
            return [f"{head} (no overlap yet: grade a verification sample)"]
        parts = []
        for name in STATISTICS:
            low, high = self.intervals.get(name, (math.nan, math.nan))
            parts.append(f"{name} {_fmt(self.statistics[name])} [{_fmt(low)}, {_fmt(high)}]")
        out = [f"{head}; {', '.join(parts)} (95% bootstrap over queries)"]
        width = max(len(str(g)) for g in self.grades) + 1
        cell = max(width, *(len(str(c)) + 1 for row in self.confusion for c in row))
        out.append("  human\\judge " + "".join(str(g).rjust(cell) for g in self.grades))
        for grade, row in zip(self.grades, self.confusion, strict=True):
            out.append(f"  {str(grade).rjust(11)} " + "".join(str(c).rjust(cell) for c in row))
        return out


def _known() -> str:
    return ", ".join(STATISTICS)


def _json(value: float) -> float | None:
    return None if math.isnan(value) else value


def _float(value: object) -> float:
    return math.nan if value is None else float(value)  # type: ignore[arg-type]


def _fmt(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.3f}"


def judge_sources(layers: Iterable[JudgmentLayer]) -> list[str]:
    """Return the distinct sources of the judge layers, in the order they first appear."""
    return list(dict.fromkeys(layer.source for layer in layers if layer.kind == "judge"))


def overlap(frozen: EvalSet, layers: Sequence[JudgmentLayer], judge: str) -> list[GradedPair]:
    """Return the pairs that people and the judge source ``judge`` both graded, by query id
    then doc id: the human grade is the frozen set's with the human layers on top."""
    human = merged(frozen, [layer for layer in layers if layer.kind == "human"])
    judged: dict[tuple[str, str], int] = {}
    for layer in layers:
        if layer.kind != "judge" or layer.source != judge:
            continue
        for qid, docs in layer.grades.items():
            for doc, grade in docs.items():
                judged.setdefault((qid, doc), grade)  # a judge never grades a pair twice
    out = []
    for qid, doc in sorted(judged):
        query = human.get(qid)
        if query is not None and doc in query.judgments:
            out.append(GradedPair(qid, doc, int(query.judgments[doc]), judged[(qid, doc)]))
    return out


def scale(pairs: Sequence[GradedPair], max_grade: int) -> tuple[int, ...]:
    """Return the grades of the confusion matrix: 0 (or lower) to ``max_grade`` (or higher)."""
    given = [g for pair in pairs for g in (pair.human, pair.judge)]
    return tuple(range(min([0, *given]), max([max_grade, *given]) + 1))


def confusion_counts(pairs: Sequence[GradedPair], grades: Sequence[int]) -> np.ndarray:
    """Return the K x K counts, rows the human grade and columns the judge's."""
    low = grades[0]
    out = np.zeros((len(grades), len(grades)), dtype=np.int64)
    for pair in pairs:
        out[pair.human - low, pair.judge - low] += 1
    return out


def statistics(confusion: np.ndarray) -> dict[str, np.ndarray]:
    """Return every statistic of ``confusion`` (shape ``(..., K, K)``), over its last two axes.

    A statistic whose denominator is 0 is NaN.
    """
    counts = np.asarray(confusion, dtype=np.float64)
    size = counts.shape[-1]
    n = counts.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        share = counts / n[..., None, None]
        exact = np.trace(share, axis1=-2, axis2=-1)
        expected = share.sum(axis=-1)[..., :, None] * share.sum(axis=-2)[..., None, :]
        index = np.arange(size)
        distance = np.abs(index[:, None] - index[None, :]) / max(size - 1, 1)
        out = {"exact": np.where(n > 0, exact, np.nan)}
        for name, weight in (("kappa", distance**2), ("kappa_linear", distance)):
            seen = (weight * share).sum(axis=(-2, -1))
            chance = (weight * expected).sum(axis=(-2, -1))
            out[name] = np.where(chance > 0, 1.0 - seen / chance, np.nan)
        out["alpha"] = _ordinal_alpha(counts)
    return out


def _ordinal_alpha(counts: np.ndarray) -> np.ndarray:
    """Krippendorff's ordinal alpha of two coders who graded every unit (no missing value).

    Each pair adds 1 to ``o[h, j]`` and to ``o[j, h]`` (``1 / (m_u - 1)`` with ``m_u = 2``).
    """
    coincidence = counts + np.swapaxes(counts, -1, -2)
    marginal = coincidence.sum(axis=-1)  # n_c
    total = marginal.sum(axis=-1)  # n = 2 * pairs
    cumulative = np.cumsum(marginal, axis=-1)
    # sum_{g=c..k} n_g - (n_c + n_k) / 2 for c <= k, symmetric.
    high = cumulative[..., None, :] - cumulative[..., :, None] + marginal[..., :, None]
    low = cumulative[..., :, None] - cumulative[..., None, :] + marginal[..., None, :]
    size = counts.shape[-1]
    upper = np.arange(size)[:, None] <= np.arange(size)[None, :]
    spans = np.where(upper, high, low)
    delta = (spans - (marginal[..., :, None] + marginal[..., None, :]) / 2.0) ** 2
    observed = (coincidence * delta).sum(axis=(-2, -1))
    expected = (marginal[..., :, None] * marginal[..., None, :] * delta).sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(expected > 0, 1.0 - (total - 1.0) * observed / expected, np.nan)


def krippendorff_alpha(units: Iterable[Sequence[float | None]], metric: str = "ordinal") -> float:
    """Return Krippendorff's alpha of ``units`` (each the values its coders gave, ``None``
    for a missing one), for any number of coders: ``nominal``, ``ordinal`` or ``interval``.

    Units with fewer than two values are not pairable and are left out (Krippendorff 2011).
    """
    kept = [[v for v in unit if v is not None] for unit in units]
    kept = [unit for unit in kept if len(unit) >= 2]
    values = sorted({v for unit in kept for v in unit})
    where = {v: i for i, v in enumerate(values)}
    size = len(values)
    coincidence = np.zeros((size, size))
    for unit in kept:
        for a, first in enumerate(unit):
            for b, second in enumerate(unit):
                if a != b:
                    coincidence[where[first], where[second]] += 1.0 / (len(unit) - 1)
    marginal = coincidence.sum(axis=1)
    total = marginal.sum()
    delta = np.zeros((size, size))
    for c in range(size):
        for k in range(size):
            if metric == "nominal":
                delta[c, k] = float(c != k)
            elif metric == "interval":
                delta[c, k] = (float(values[c]) - float(values[k])) ** 2
            elif metric == "ordinal":
                lo, hi = min(c, k), max(c, k)
                delta[c, k] = (marginal[lo : hi + 1].sum() - (marginal[c] + marginal[k]) / 2) ** 2
            else:
                raise UsageError(f"unknown metric {metric!r}; known: nominal, ordinal, interval")
    expected = float((np.outer(marginal, marginal) * delta).sum())
    if expected == 0:
        return math.nan
    return float(1.0 - (total - 1.0) * (coincidence * delta).sum() / expected)


def agreement_of(
    suite: str,
    judge: str,
    pairs: Sequence[GradedPair],
    *,
    max_grade: int,
    iterations: int = ITERATIONS,
    seed: int = SEED,
    layers_through: int = 0,
    clock: Callable[[], datetime] = _now,
) -> Agreement:
    """Return the agreement figures of ``pairs``, with bootstrap intervals over queries."""
    grades = scale(pairs, max_grade)
    confusion = confusion_counts(pairs, grades)
    figures = {name: float(value) for name, value in statistics(confusion).items()}
    by_query: dict[str, list[GradedPair]] = {}
    for pair in pairs:
        by_query.setdefault(pair.query_id, []).append(pair)
    intervals = dict.fromkeys(STATISTICS, (math.nan, math.nan))
    if by_query and iterations > 0:
        per_query = np.stack([confusion_counts(group, grades) for group in by_query.values()])
        rng = np.random.default_rng(seed)
        drawn = rng.multinomial(
            len(by_query), np.full(len(by_query), 1 / len(by_query)), iterations
        )
        resampled = np.einsum("bq,qij->bij", drawn, per_query)
        tail = (1.0 - LEVEL) / 2 * 100
        for name, values in statistics(resampled).items():
            finite = values[~np.isnan(values)]
            if finite.size:
                low, high = np.percentile(finite, [tail, 100 - tail])
                intervals[name] = (float(low), float(high))
    return Agreement(
        suite=suite,
        judge=judge,
        pairs=len(pairs),
        queries=len(by_query),
        grades=grades,
        confusion=tuple(tuple(int(c) for c in row) for row in confusion),
        statistics=figures,
        intervals=intervals,
        layers_through=layers_through,
        iterations=iterations,
        seed=seed,
        computed_at=clock(),
    )


def suite_agreement(
    store: Store,
    suite: str,
    frozen: EvalSet,
    *,
    max_grade: int,
    iterations: int = ITERATIONS,
    seed: int = SEED,
    clock: Callable[[], datetime] = _now,
    keep: bool = True,
) -> list[Agreement]:
    """Return the agreement of every judge source of ``suite`` with its human grades.

    Figures stored for the current layer state (and the same ``iterations`` and ``seed``)
    are read back; the others are computed and, with ``keep``, stored (a reader such as a
    report passes ``keep=False`` and writes nothing).
    """
    layers = store.layers(suite)
    through = max((layer.layer_id or 0 for layer in layers), default=0)
    kept = (store.get_state(NAMESPACE, suite) or {}).get("judges", {})
    out = []
    changed = False
    for judge in judge_sources(layers):
        known = kept.get(judge)
        if (
            isinstance(known, dict)
            and known.get("layers_through") == through
            and (known.get("iterations"), known.get("seed")) == (iterations, seed)
        ):
            out.append(Agreement.from_state(suite, known))
            continue
        pairs = overlap(frozen, layers, judge)
        out.append(
            agreement_of(
                suite,
                judge,
                pairs,
                max_grade=max_grade,
                iterations=iterations,
                seed=seed,
                layers_through=through,
                clock=clock,
            )
        )
        changed = True
    if changed and keep:
        store.put_state(NAMESPACE, suite, {"judges": {a.judge: a.to_state() for a in out}})
    return out


def stored_agreement(store: Store, suite: str) -> dict[str, Agreement]:
    """Return the figures stored for ``suite``, by judge source (none computed here)."""
    kept = (store.get_state(NAMESPACE, suite) or {}).get("judges", {})
    return {judge: Agreement.from_state(suite, data) for judge, data in kept.items()}
