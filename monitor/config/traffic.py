"""The records of the ``traffic:`` section: the traffic database and the online suites, each a
window of traffic measured, compared with a baseline window and alerted on."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Final, Literal, get_args

from monitor.config.common import (
    ExporterConfig,
    LinksConfig,
    NotifierConfig,
    ScheduleConfig,
    Severity,
)
from monitor.config.values import _freeze_map
from monitor.errors import UsageError

#: A check of an online rule: the three of a suite's metric rules, and their mirrors for a
#: metric where lower is better.
OnlineCheck = Literal[
    "max_drop", "max_relative_drop", "min", "max_rise", "max_relative_rise", "max"
]
ONLINE_CHECKS: Final[tuple[OnlineCheck, ...]] = get_args(OnlineCheck)
#: The online checks that compare with the baseline window (the others bound the current).
COMPARING_CHECKS: Final = frozenset(
    {"max_drop", "max_relative_drop", "max_rise", "max_relative_rise"}
)
OnlineBaseline = Literal["last_window", "pinned"]
OnlineUnit = Literal["searches", "sessions"]


@dataclass(frozen=True, slots=True)
class OnlineRule:
    """One rule of an online suite: ``check`` of ``metric`` against ``threshold``.

    ``max_drop`` and ``max_rise`` are absolute changes from the baseline window, the
    ``*_relative_*`` checks a share of the baseline's value, ``min`` and ``max`` bounds on
    the current window.
    """

    metric: str
    check: OnlineCheck
    threshold: float
    severity: Severity = "warning"

    @property
    def name(self) -> str:
        """Return the rule's stable name, such as ``ctr max_drop``."""
        return f"{self.metric} {self.check}"

    @property
    def compares(self) -> bool:
        """Return whether the rule compares with the baseline window."""
        return self.check in COMPARING_CHECKS


@dataclass(frozen=True, slots=True)
class OnlineSignificance:
    """The bootstrap that tells a change of a window from noise: each window resampled on its
    own ``resamples`` times with ``seed`` (nothing pairs two windows' searches), drawing
    searches or sessions (a client's searches of one application in the window, kept
    together, as their clicks are not independent)."""

    over: OnlineUnit = "searches"
    resamples: int = 2000
    seed: int = 0
    alpha: float = 0.05


@dataclass(frozen=True, slots=True)
class OnlineSuiteConfig:
    """One online suite: a window of traffic measured, compared and alerted on.

    ``applications`` are reported on their own (None: the busiest, up to a cap), the rest
    as ``other``; ``segment`` is the query-log field ``logs import --keep-attribute`` kept.
    """

    name: str
    window: timedelta
    metrics: tuple[str, ...]
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    applications: tuple[str, ...] | None = None
    segment: str | None = None
    max_segment_values: int = 10
    rules: tuple[OnlineRule, ...] = ()
    baseline: OnlineBaseline = "last_window"
    significance: OnlineSignificance = field(default_factory=OnlineSignificance)
    exporters: tuple[ExporterConfig, ...] = ()
    notifiers: tuple[NotifierConfig, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict, hash=False)
    links: LinksConfig = field(default_factory=LinksConfig)


@dataclass(frozen=True, slots=True)
class TrafficConfig:
    """The ``traffic:`` section: the database ``logs import`` writes, the import's and the
    metrics' defaults, and the online suites by name, in file order."""

    database: Path
    click_action: str
    min_distinct_clients: int = 5
    online: Mapping[str, OnlineSuiteConfig] = field(default_factory=dict, hash=False)
    #: Spark's master and settings for ``--engine spark`` (``spark: {master, conf}``).
    spark_master: str | None = None
    spark_conf: Mapping[str, str] = field(default_factory=dict, hash=False)
    #: The file the section was read from, for the commands the monitor prints.
    config_file: Path | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "online", _freeze_map(self.online))
        object.__setattr__(self, "spark_conf", _freeze_map(self.spark_conf))

    def online_suite(self, name: str) -> OnlineSuiteConfig:
        """Return the online suite ``name``; raise UsageError naming the known ones."""
        try:
            return self.online[name]
        except KeyError:
            known = ", ".join(self.online) or "none"
            raise UsageError(f"no online suite {name!r}; online suites: {known}") from None
