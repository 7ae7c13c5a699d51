"""Measure an online suite's window: figures overall, per application and per segment value.

The searches of a window and their own metric values come from :data:`monitor.traffic.sql.
PER_SEARCH` (the one definition of every metric); a group's value of a metric is the mean of
its column over the group's searches that count for it, and a latency percentile the
percentile (:data:`~monitor.traffic.online.PERCENTILES`) of their ``latency_ms``. Labels stay
bounded: an application the suite does not name (or, without a list, past the
:data:`~monitor.config.online.MAX_APPLICATIONS` busiest) counts as ``other``, and so does a
segment value past the ``max_segment_values`` most frequent ones; a search without the
segment's field is ``none``.
The rules are applied by :mod:`monitor.compare.online`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from monitor.config.online import MAX_APPLICATIONS, OTHER
from monitor.config.traffic import OnlineSuiteConfig
from monitor.config.windows import Window
from monitor.traffic import sql
from monitor.traffic.engine import Connection, rows
from monitor.traffic.errors import NoTrafficError
from monitor.traffic.online import METRICS, PAULSCORE_FACTOR, PERCENTILES, REFORMULATION_GAP

#: The label value of every application (or every segment value): the whole window.
ALL = "all"
#: The segment value of a search that does not log the segment's field.
NONE = "none"


@dataclass(frozen=True, slots=True)
class Searches:
    """The searches of one window, column by column: one entry per search."""

    application: np.ndarray
    session: np.ndarray
    segment: np.ndarray
    values: Mapping[str, np.ndarray]

    def __len__(self) -> int:
        return len(self.application)

    def column(self, metric: str) -> np.ndarray:
        """Return each search's value of ``metric`` (NaN: not counted)."""
        return self.values["latency_ms" if metric in PERCENTILES else METRICS[metric]]


@dataclass(frozen=True, slots=True)
class GroupFigures:
    """A group's figures: ``application`` and ``segment`` (``all`` for every one)."""

    application: str
    segment: str
    searches: int
    values: Mapping[str, float | None]


def read_searches(
    connection: Connection, window: Window, click_action: str, segment: str | None
) -> Searches:
    """Return the window's searches; raise NoTrafficError when it holds none."""
    found = rows(
        connection,
        sql.PER_SEARCH,
        {
            "start": window.start,
            "end": window.end,
            "click_action": click_action,
            "gap_seconds": REFORMULATION_GAP,
            "paul_factor": PAULSCORE_FACTOR,
            "segment": segment,
        },
    )
    if not found:
        first, last, searches = connection.execute(sql.SPAN).fetchone()
        raise NoTrafficError(window, first, last, int(searches))
    applications = [str(r["application"]) for r in found]
    segments = [NONE if r["segment"] is None else str(r["segment"]) for r in found]
    sessions = [f"{r['application']}\x1f{r['client_id']}" for r in found]
    _, session_ids = np.unique(np.array(sessions, dtype=object), return_inverse=True)
    names = [*dict.fromkeys(METRICS.values()), "latency_ms"]
    values = {
        name: np.array(
            [np.nan if r[name] is None else float(r[name]) for r in found], dtype=np.float64
        )
        for name in names
    }
    return Searches(
        application=np.array(applications, dtype=object),
        session=session_ids.astype(np.int64),
        segment=np.array(segments, dtype=object),
        values=values,
    )


def value_of(values: np.ndarray, percentile: float | None = None) -> float | None:
    """Return the mean (or ``percentile``) of the counted (not NaN) ``values``; None when
    none is counted: no data."""
    counted = values[~np.isnan(values)]
    if not len(counted):
        return None
    return float(np.mean(counted) if percentile is None else np.percentile(counted, percentile))


def _value(searches: Searches, metric: str, mask: np.ndarray) -> float | None:
    return value_of(searches.column(metric)[mask], PERCENTILES.get(metric))


def applications_of(searches: Searches, suite: OnlineSuiteConfig) -> np.ndarray:
    """Return each search's application label: its own, or ``other``."""
    if suite.applications is not None:
        named = set(suite.applications)
    else:
        busiest = Counter(searches.application.tolist()).most_common(MAX_APPLICATIONS)
        named = {name for name, _ in busiest if name != OTHER}
    return np.array([a if a in named else OTHER for a in searches.application], dtype=object)


def segments_of(searches: Searches, suite: OnlineSuiteConfig) -> np.ndarray:
    """Return each search's segment label: its value, ``none``, or ``other``."""
    common = Counter(searches.segment.tolist()).most_common(suite.max_segment_values)
    named = {value for value, _ in common}
    return np.array([v if v in named else OTHER for v in searches.segment], dtype=object)


def figures(searches: Searches, suite: OnlineSuiteConfig) -> tuple[GroupFigures, ...]:
    """Return the window's figures: overall, each application, then each segment value."""
    everything = np.ones(len(searches), dtype=bool)
    groups: list[tuple[str, str, np.ndarray]] = [(ALL, ALL, everything)]
    apps = applications_of(searches, suite)
    groups += [(name, ALL, apps == name) for name in sorted(set(apps.tolist()))]
    if suite.segment is not None:
        values = segments_of(searches, suite)
        groups += [(ALL, name, values == name) for name in sorted(set(values.tolist()))]
    return tuple(
        GroupFigures(
            application=app,
            segment=segment,
            searches=int(mask.sum()),
            values={metric: _value(searches, metric, mask) for metric in suite.metrics},
        )
        for app, segment, mask in groups
    )


def overall(groups: Sequence[GroupFigures]) -> GroupFigures:
    """Return the whole window's figures among ``groups``."""
    return next(g for g in groups if g.application == ALL and g.segment == ALL)
