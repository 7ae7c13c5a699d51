"""The records each page of the web UI shows: small frozen dataclasses that
:class:`monitor.web.views.Views` builds from the store and the config."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from monitor.alerts.model import Alert
    from monitor.config.model import SuiteConfig
    from monitor.judgments.agreement import Agreement
    from monitor.report.records import Trend
    from monitor.store import OutboxMessage, QueryRecord, RunSummary


@dataclass(frozen=True, slots=True)
class SuiteCard:
    """One suite on the suites page."""

    name: str
    latest: RunSummary | None
    verdict: str | None
    firing: tuple[Alert, ...]
    next_run_at: datetime | None
    sparklines: Mapping[str, tuple[float, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SuitePage:
    """A suite: one page of its runs, its trends, baseline, alerts and outbox."""

    suite: SuiteConfig
    runs: tuple[RunRow, ...]
    page: int
    has_next: bool
    trends: tuple[Trend, ...]
    baseline: RunRow | None
    firing: tuple[Alert, ...]
    outbox: tuple[OutboxMessage, ...]
    total_runs: int
    coverage: CoverageFigure | None = None
    #: Each judge's agreement with human grades, as last stored (see ``judgments agreement``).
    agreement: tuple[Agreement, ...] = ()

    @property
    def baseline_id(self) -> int | None:
        """Return the baseline's run id, or None."""
        return None if self.baseline is None else self.baseline.run_id


@dataclass(frozen=True, slots=True)
class CoverageFigure:
    """A suite's judgment coverage: ``metric`` (``judged@k``) of its newest run measuring it."""

    metric: str
    value: float
    run_id: int
    trend: Trend


@dataclass(frozen=True, slots=True)
class RunRow:
    """One run in a suite's history: read from the history, without its per-query records."""

    run_id: int
    status: str
    started_at: datetime
    queries: int
    means: Mapping[str, float]
    latency_p95: float | None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class DocRow:
    """One document of a query page: where it sits in each run, its grade, what changed."""

    doc_id: str
    grade: int | None
    baseline_rank: int | None
    current_rank: int | None
    change: str  # "moved", "lost", "new", "same"; "missing": judged, in neither ranking
    text: str | None = None

    @property
    def judged(self) -> bool:
        """Return whether the document has a grade."""
        return self.grade is not None


@dataclass(frozen=True, slots=True)
class QueryPage:
    """One query of a run beside the same query of the baseline."""

    suite: str
    run_id: int
    baseline_id: int | None
    query_id: str
    text: str
    metadata: Mapping[str, Any]
    judgments: Mapping[str, int]
    current: QueryRecord
    before: QueryRecord | None
    current_rows: tuple[DocRow, ...]
    baseline_rows: tuple[DocRow, ...]
    lost: tuple[DocRow, ...]
    metric_names: tuple[str, ...]
    #: The documents judged relevant that the current ranking lacks, best grade first.
    missing: tuple[DocRow, ...] = ()
    #: The text of each judged document, where the suite has one.
    judged_texts: Mapping[str, str] = field(default_factory=dict)
