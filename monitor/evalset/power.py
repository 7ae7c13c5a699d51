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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING, Literal

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


def minimal_detectable_drop(values: Sequence[float], alpha: float, power: float = POWER) -> float:
    """Return ``(z_{1-alpha} + z_{power}) * sd / sqrt(n)`` of ``values`` (NaN below 2 values)."""
    if len(values) < 2:
        return math.nan
    z = NormalDist()
    return (z.inv_cdf(1 - alpha) + z.inv_cdf(power)) * sample_sd(values) / math.sqrt(len(values))


def sample_sd(values: Sequence[float]) -> float:
    """Return the sample standard deviation (``ddof=1``) of ``values`` (NaN below 2)."""
    n = len(values)
    if n < 2:
        return math.nan
    mean = math.fsum(values) / n
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))


def rule_power(
    rule: RuleConfig, baseline: RunRecord, latest: RunRecord | None, alpha: float
) -> PowerFigure | None:
    """Return the power figure of a ``max_drop`` or ``max_relative_drop`` rule, else None.

    ``latest`` is the newest run beside the baseline (None: none yet); its per-query deltas
    from ``baseline`` give the spread, else the baseline's own values do.
    """
    check = rule.check.value
    if rule.metric is None or check not in ("max_drop", "max_relative_drop"):
        return None
    name = str(rule.metric)
    base = {q.query_id: q.values[name] for q in baseline.queries if name in q.values}
    source: PowerSource = "baseline values"
    values = list(base.values())
    if latest is not None and latest.run_id != baseline.run_id:
        current = {q.query_id: q.values[name] for q in latest.queries if name in q.values}
        paired = [current[qid] - value for qid, value in base.items() if qid in current]
        if len(paired) >= 2:
            values, source = paired, "paired deltas"
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

    Everything is computed from the two records in memory: no store is read.
    """
    figures = {}
    for rule in rules:
        figure = rule_power(rule, baseline, latest, alpha)
        if figure is not None:
            figures[figure.rule] = figure
    return figures
