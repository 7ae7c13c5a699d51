"""The smallest drop an eval set can detect: the power of the rules' paired test.

The rules test a drop one-sided ("the current run is worse", ``alternative="less"`` in
:mod:`monitor.compare.stats`) at the suite's ``alpha``. With the normal approximation of
that paired test, the minimal detectable drop at power ``1 - beta`` is::

    MDE = (z_{1-alpha} + z_{1-beta}) * sd / sqrt(n)

where ``n`` is the number of answerable queries and ``sd`` the sample standard deviation
(``ddof=1``) of the per-query paired deltas ``current - baseline`` of the metric, taken from
the latest stored run beside the baseline. When there is no such run yet, ``sd`` is that of
the baseline's own per-query values, and the figure says so (``source="baseline values"``).
For ``max_relative_drop`` rules the figure is divided by the baseline mean, so both sides of
the comparison are fractions.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import ArrayLike

from monitor.compare.matched import FloatArray, Matched, metric_values

if TYPE_CHECKING:
    from monitor.config.model import RuleConfig
    from monitor.store.records import RunRecord

#: The power every figure is computed for.
POWER = 0.8
#: Where the standard deviation came from.
PowerSource = Literal["paired deltas", "baseline values"]


@dataclass(frozen=True, slots=True)
class PowerFigure:
    """The smallest drop of ``metric`` one rule can detect with ``power``.

    ``drop`` is in the rule's own terms: absolute for ``max_drop``, a fraction of the
    baseline mean for ``max_relative_drop``. ``detectable`` is whether the rule's threshold
    is at least ``drop`` (a smaller threshold would fire on noise as often as on change).
    """

    rule: str
    metric: str
    threshold: float
    relative: bool
    n: int
    sd: float
    drop: float
    alpha: float
    source: PowerSource
    power: float = POWER

    @property
    def detectable(self) -> bool:
        """Return whether the rule's threshold is at least the minimal detectable drop."""
        return self.threshold >= self.drop

    def clause(self) -> str:
        """Return ``this set of 59 answerable queries detects drops of 0.07 or more ...``."""
        unit = " of the baseline" if self.relative else ""
        drop = f"{self.drop:.0%}" if self.relative else f"{self.drop:.2f}"
        where = ""
        if self.source == "baseline values":
            where = " (from the baseline's values: no run yet)"
        return (
            f"this set of {self.n} answerable queries detects drops of {drop}{unit} or more "
            f"with {self.power:.0%} power{where}"
        )

    def sentence(self) -> str:
        """Return ``recall@5 max_drop 0.05: this set of ...`` for checks and warnings."""
        return f"{self.rule} {self.threshold:g}: {self.clause()}"

    def to_dict(self) -> dict[str, object]:
        """Return the figure under its JSON names."""
        return {
            "rule": self.rule,
            "metric": self.metric,
            "threshold": self.threshold,
            "relative": self.relative,
            "queries": self.n,
            "sd": self.sd,
            "minimal_detectable_drop": self.drop,
            "alpha": self.alpha,
            "power": self.power,
            "source": self.source,
            "detectable": self.detectable,
        }


def minimal_detectable_drop(values: ArrayLike, alpha: float, power: float = POWER) -> float:
    """Return ``(z_{1-alpha} + z_{power}) * sd / sqrt(n)`` of ``values`` (NaN below 2 values)."""
    array = np.asarray(values, dtype=np.float64)
    if len(array) < 2:
        return math.nan
    z = NormalDist()
    return (z.inv_cdf(1 - alpha) + z.inv_cdf(power)) * sample_sd(array) / math.sqrt(len(array))


def sample_sd(values: ArrayLike) -> float:
    """Return the sample standard deviation (``ddof=1``) of ``values`` (NaN below 2).

    Both sums are exact (``math.fsum``), so the figure does not depend on the order of the
    values.
    """
    array = np.asarray(values, dtype=np.float64)
    n = len(array)
    if n < 2:
        return math.nan
    mean = math.fsum(array.tolist()) / n
    return math.sqrt(math.fsum(((array - mean) ** 2).tolist()) / (n - 1))


def rule_power(
    rule: RuleConfig,
    baseline: RunRecord,
    latest: RunRecord | None,
    alpha: float,
    *,
    matched: Matched | None = None,
) -> PowerFigure | None:
    """Return the power figure of a ``max_drop`` or ``max_relative_drop`` rule, else None.

    ``latest`` is the newest run beside the baseline (None: none yet); its per-query deltas
    from ``baseline`` give the spread, else the baseline's own values do. ``matched`` is
    ``Matched.of(latest, baseline)`` (the baseline's queries matched with the latest's)
    when the caller has it already.
    """
    if _metric_of(rule) is None:
        return None
    if latest is None or latest.run_id == baseline.run_id:
        matched = None
    elif matched is None:
        matched = Matched.of(latest, baseline)
    return _Spreads(baseline, matched).figure(rule, alpha)


def _metric_of(rule: RuleConfig) -> str | None:
    """Return the metric of a drop rule (the rules that have a power figure), else None."""
    if rule.metric is None or rule.check.value not in ("max_drop", "max_relative_drop"):
        return None
    return str(rule.metric)


class _Spread:
    """One metric's per-query values behind its figures, with their sample sd (once)."""

    __slots__ = ("sd", "source", "values")

    def __init__(self, values: FloatArray, source: PowerSource) -> None:
        self.values, self.source = values, source
        self.sd = sample_sd(values)


class _Spreads:
    """The spread of each metric of the baseline (and the latest run ``matched`` with it,
    when there is one), read once per metric: the rules of one metric share it."""

    def __init__(self, baseline: RunRecord, matched: Matched | None) -> None:
        self.baseline, self.matched = baseline, matched
        self._spreads: dict[str, _Spread] = {}

    def spread(self, name: str) -> _Spread:
        """Return the paired deltas of ``name`` (else the baseline's values) and their sd."""
        found = self._spreads.get(name)
        if found is None:
            found = self._spreads[name] = self._read(name)
        return found

    def _read(self, name: str) -> _Spread:
        pairs = self.matched
        if pairs is None:
            return _Spread(metric_values(self.baseline, name), "baseline values")
        base, has_base = pairs.column(name, baseline=False)
        now, has_now = pairs.column(name, baseline=True)
        at = pairs.position
        held = has_base & (at >= 0)
        held[held] = has_now[at[held]]
        if np.count_nonzero(held) >= 2:
            return _Spread(now[at[held]] - base[held], "paired deltas")
        return _Spread(base[has_base], "baseline values")

    def figure(self, rule: RuleConfig, alpha: float) -> PowerFigure | None:
        """Return the power figure of a drop rule (None for another rule or too few values)."""
        name = _metric_of(rule)
        if name is None:
            return None
        spread = self.spread(name)
        n = len(spread.values)
        drop = math.nan
        if n >= 2:
            z = NormalDist()
            drop = (z.inv_cdf(1 - alpha) + z.inv_cdf(POWER)) * spread.sd / math.sqrt(n)
        relative = rule.check.value == "max_relative_drop"
        if relative:
            mean = self.baseline.means.get(name, math.nan)
            drop = drop / mean if mean else math.nan
        if math.isnan(drop):
            return None
        return PowerFigure(
            rule=rule.name,
            metric=name,
            threshold=rule.threshold,
            relative=relative,
            n=n,
            sd=spread.sd,
            drop=drop,
            alpha=alpha,
            source=spread.source,
        )


def rule_powers(
    rules: Iterable[RuleConfig], baseline: RunRecord, latest: RunRecord | None, alpha: float
) -> dict[str, PowerFigure]:
    """Return the power figure of each drop rule of ``rules`` by rule name.

    Everything is computed from the two records in memory: no store is read, the two runs'
    queries are matched once for all rules, and each metric's deltas and their spread are
    computed once for all its rules.
    """
    matched = None
    if latest is not None and latest.run_id != baseline.run_id:
        matched = Matched.of(latest, baseline)
    spreads = _Spreads(baseline, matched)
    figures = {}
    for rule in rules:
        figure = spreads.figure(rule, alpha)
        if figure is not None:
            figures[figure.rule] = figure
    return figures
