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

from monitor.compare.matched import Matched

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
    check = rule.check.value
    if rule.metric is None or check not in ("max_drop", "max_relative_drop"):
        return None
    name = str(rule.metric)
    source: PowerSource = "baseline values"
    if latest is not None and latest.run_id != baseline.run_id:
        pairs = matched if matched is not None else Matched.of(latest, baseline)
        base, has_base = pairs.column(name, baseline=False)
        values = base[has_base]
        now, has_now = pairs.column(name, baseline=True)
        at = pairs.position
        held = has_base & (at >= 0)
        held[held] = has_now[at[held]]
        if np.count_nonzero(held) >= 2:
            values, source = now[at[held]] - base[held], "paired deltas"
    else:
        values = np.fromiter(
            (q.values[name] for q in baseline.queries if name in q.values), dtype=np.float64
        )
    drop = minimal_detectable_drop(values, alpha)
    relative = check == "max_relative_drop"
    if relative:
        mean = baseline.means.get(name, math.nan)
        drop = drop / mean if mean else math.nan
    if math.isnan(drop):
        return None
    return PowerFigure(
        rule=rule.name,
        metric=name,
        threshold=rule.threshold,
        relative=relative,
        n=len(values),
        sd=sample_sd(values),
        drop=drop,
        alpha=alpha,
        source=source,
    )


def rule_powers(
    rules: Iterable[RuleConfig], baseline: RunRecord, latest: RunRecord | None, alpha: float
) -> dict[str, PowerFigure]:
    """Return the power figure of each drop rule of ``rules`` by rule name.

    Everything is computed from the two records in memory: no store is read, and the two
    runs' queries are matched once for all rules.
    """
    matched = None
    if latest is not None and latest.run_id != baseline.run_id:
        matched = Matched.of(latest, baseline)
    figures = {}
    for rule in rules:
        figure = rule_power(rule, baseline, latest, alpha, matched=matched)
        if figure is not None:
            figures[figure.rule] = figure
    return figures
