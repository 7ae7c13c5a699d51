"""What the report renderers read: a comparison, the runs behind it, and trends of figures."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from monitor.compare.records import Comparison
from monitor.metrics.bands import DEFAULT_BANDS, Bands
from monitor.store.records import RunRecord, RunStatus

#: How a trend's values read: quality scores in [0, 1], or durations in seconds.
Unit = Literal["score", "seconds"]


@dataclass(frozen=True, slots=True)
class TrendPoint:
    """One run's value of a figure; NaN when the run failed or did not measure it."""

    run_id: int
    started_at: datetime
    status: RunStatus
    value: float
    error: str | None = None

    @property
    def measured(self) -> bool:
        """Return whether the point has a value to draw."""
        return not math.isnan(self.value)


@dataclass(frozen=True, slots=True)
class Trend:
    """One figure (a metric mean, latency p95) across a suite's runs, oldest first.

    ``baseline`` is the pinned baseline run's value, drawn as a reference line;
    ``alert_below`` and ``alert_above`` are where the suite's rules start to fire, when they
    can be drawn on the same scale. ``total_runs`` counts the runs before any were left out
    of ``points`` to keep the chart readable.
    """

    figure: str
    label: str
    points: tuple[TrendPoint, ...]
    unit: Unit = "score"
    baseline: float | None = None
    alert_below: float | None = None
    alert_above: float | None = None
    total_runs: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "points", tuple(self.points))
        if self.total_runs < len(self.points):
            object.__setattr__(self, "total_runs", len(self.points))


@dataclass(frozen=True, slots=True)
class Report:
    """Everything a report shows: the comparison of ``run`` with ``baseline`` and the trends.

    ``links`` maps a label (``dashboard``, ``runbook``, ``report``) to a URL from the config.
    ``doc_texts`` maps each document the query diffs name to its text (the suite's corpus,
    or the passages a bundled set brings), so a diff shows what was lost, not only ids.
    ``bands`` are the suite's reading bands, each mean shown with its own.
    """

    comparison: Comparison
    run: RunRecord
    baseline: RunRecord | None = None
    trends: tuple[Trend, ...] = ()
    links: Mapping[str, str] = field(default_factory=dict)
    generated_at: datetime | None = None
    doc_texts: Mapping[str, str] = field(default_factory=dict)
    bands: Bands = DEFAULT_BANDS
    #: The suite's config file, for the commands the report prints (None: the default).
    config_file: Path | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "trends", tuple(self.trends))
        object.__setattr__(self, "links", MappingProxyType(dict(self.links)))
        object.__setattr__(self, "doc_texts", MappingProxyType(dict(self.doc_texts)))
