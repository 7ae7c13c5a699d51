"""Reading bands: what a metric mean says to someone who does not know the metric.

``mrr@10 0.6622`` means little to a new user; its band (``medium``) and the band's sentence
say whether that is good. Bands are a reading aid beside each mean, never an alert: the
suite's rules alone decide what fires.

A family of measures shares one pair of thresholds: a mean above ``high`` reads ``high``,
one below ``low`` reads ``low``, and one from ``low`` to ``high`` (both included) reads
``medium``. Only the families in :data:`DEFAULT_THRESHOLDS` have bands; every other figure
(latency, counts, ERR, MAP, judged@k, ...) has none. A suite may set its own thresholds per
family (the ``bands:`` config section), read into :class:`Bands`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, Literal

from monitor.errors import MetricError, UsageError
from monitor.metrics.spec import parse_metric

#: A band's name, best first.
BandName = Literal["high", "medium", "low"]
BAND_NAMES: Final[tuple[BandName, ...]] = ("high", "medium", "low")


@dataclass(frozen=True, slots=True)
class Thresholds:
    """A family's band edges: above ``high`` is high, below ``low`` is low, between medium."""

    low: float
    high: float

    def __post_init__(self) -> None:
        for name in ("low", "high"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise UsageError(f"band threshold {name} must be a number, not {value!r}")
            if not 0.0 <= value <= 1.0:
                raise UsageError(f"band threshold {name} must be in 0..1, not {value!r}")
            object.__setattr__(self, name, float(value))
        if self.low > self.high:
            raise UsageError(f"band threshold low ({self.low}) is above high ({self.high})")

    def name_of(self, value: float) -> BandName | None:
        """Return the band ``value`` falls in; None for a value that is not a number."""
        if math.isnan(value):
            return None
        if value > self.high:
            return "high"
        if value < self.low:
            return "low"
        return "medium"


#: The families that have bands, with their default edges.
DEFAULT_THRESHOLDS: Final[Mapping[str, Thresholds]] = MappingProxyType(
    {
        "recall": Thresholds(low=0.5, high=0.8),
        "precision": Thresholds(low=0.5, high=0.8),
        "mrr": Thresholds(low=0.5, high=0.8),
        "ndcg": Thresholds(low=0.5, high=0.8),
        "hit_rate": Thresholds(low=0.7, high=0.9),
    }
)
#: The families a ``bands:`` section may name.
FAMILIES: Final[tuple[str, ...]] = tuple(DEFAULT_THRESHOLDS)

#: What each band means for the people searching.
MEANINGS: Final[Mapping[BandName, str]] = MappingProxyType(
    {
        "high": "most queries find what they need near the top",
        "medium": "many queries find what they need, but often lower down or only in part",
        "low": "many queries miss what they need: people search again or give up",
    }
)


@dataclass(frozen=True, slots=True)
class Band:
    """The band a mean falls in, the sentence that reads it, and the edges it was read with."""

    name: BandName
    family: str
    thresholds: Thresholds

    @property
    def meaning(self) -> str:
        """Return what the band means for the people searching."""
        return MEANINGS[self.name]

    def describe(self) -> str:
        """Return the edges in words: ``high above 0.8, low below 0.5``."""
        return f"high above {self.thresholds.high:g}, low below {self.thresholds.low:g}"


@dataclass(frozen=True, slots=True)
class Bands:
    """A suite's band edges per family (the defaults for the families it does not set)."""

    thresholds: Mapping[str, Thresholds] = field(
        default_factory=lambda: DEFAULT_THRESHOLDS, hash=False
    )

    def __post_init__(self) -> None:
        unknown = [family for family in self.thresholds if family not in DEFAULT_THRESHOLDS]
        if unknown:
            raise UsageError(
                f"bands: no band for {unknown[0]!r} (expected one of {', '.join(FAMILIES)})"
            )
        merged = {**DEFAULT_THRESHOLDS, **self.thresholds}
        object.__setattr__(self, "thresholds", MappingProxyType(merged))

    def of(self, metric: str, value: float | None) -> Band | None:
        """Return the band of ``metric``'s mean ``value``; None when the metric's family has
        no bands (or the name is no metric: ``latency_p95_seconds``) or ``value`` is unknown."""
        if value is None:
            return None
        family = family_of(metric)
        edges = None if family is None else self.thresholds.get(family)
        if family is None or edges is None:
            return None
        name = edges.name_of(float(value))
        return None if name is None else Band(name, family, edges)


def family_of(metric: str) -> str | None:
    """Return the measure of a metric name (``mrr`` for ``mrr@10[section]``); None when the
    name is not a metric."""
    try:
        return parse_metric(metric).measure
    except MetricError:
        return None


#: The bands of a suite that sets none.
DEFAULT_BANDS: Final[Bands] = Bands()
