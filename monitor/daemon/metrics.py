"""How the daemon feeds ``/metrics``: the exporter's endpoint and a snapshot builder.

The endpoint is :func:`monitor.exporters.start_http_exporter`'s :class:`HttpExporter`: one
server for every suite, fed one :class:`~monitor.exporters.SuiteSnapshot` per run. The
builder that turns a suite's run (or failed attempt) into that snapshot belongs to the job
composer, which the one-shot exporters (Pushgateway, textfile) need as well; the daemon
takes it as a parameter and calls it once per run.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from monitor.config.model import SuiteConfig
    from monitor.exporters import SuiteSnapshot
    from monitor.job import SuiteOutcome


class MetricsEndpoint(Protocol):
    """A running ``/metrics`` server (:class:`monitor.exporters.HttpExporter` is one)."""

    def update(self, snapshot: SuiteSnapshot) -> None:
        """Serve ``snapshot`` as its suite's latest run from the next scrape on."""
        ...

    def forget(self, suite: str) -> None:
        """Stop serving every series of ``suite``."""
        ...


class SnapshotBuilder(Protocol):
    """Return what one run of ``suite`` tells Prometheus.

    ``outcome`` is the run's :class:`~monitor.job.SuiteOutcome`, or None when the run
    raised; ``last_success_at`` is when the suite last succeeded, as far as the daemon knows.
    """

    def __call__(
        self,
        suite: SuiteConfig,
        outcome: SuiteOutcome | None,
        *,
        started_at: datetime,
        finished_at: datetime,
        last_success_at: datetime | None,
    ) -> SuiteSnapshot: ...
