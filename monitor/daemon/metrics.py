"""How the daemon feeds ``/metrics``: the exporter's endpoint and a snapshot builder.

The endpoint is :func:`monitor.exporters.start_http_exporter`'s :class:`HttpExporter`: one
server for every suite, fed one :class:`~monitor.exporters.SuiteSnapshot` per run. The
builder that turns a suite's run (or failed attempt) into that snapshot belongs to the job
composer, which the one-shot exporters (Pushgateway, textfile) need as well; the daemon
takes it as a parameter and calls it once per run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from monitor.config.model import SuiteConfig
    from monitor.daemon.status import DaemonSnapshot
    from monitor.exporters import SuiteSnapshot
    from monitor.outcome import SuiteOutcome


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


class SchedulerCollector(Collector):
    """The daemon's own counters, read from its status board at each scrape.

    ``retrieval_scheduler_runs_total{suite, outcome}`` counts, since the daemon started, runs
    that were stored (``ok``), that raised (``failed``), that started too late and were
    dropped (``missed``), that were due while the previous run was still going (``skipped``)
    and faults of the job itself (``job_error``); ``retrieval_scheduler_config_reloads_total``
    counts reloads by result. A missed or skipped run stores nothing, so only these counters
    (and the stale last-success alert) show it.
    """

    def __init__(self, snapshot: Callable[[], DaemonSnapshot]) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        """Yield the counters as they are now."""
        state = self._snapshot()
        runs = CounterMetricFamily(
            "retrieval_scheduler_runs",
            "Runs of each suite since the daemon started, by outcome.",
            labels=("suite", "outcome"),
        )
        for name, status in state.suites.items():
            for outcome, count in (
                ("ok", status.runs),
                ("failed", status.failures),
                ("missed", status.missed),
                ("skipped", status.skipped),
                ("job_error", status.job_errors),
            ):
                runs.add_metric((name, outcome), count)
        yield runs
        reloads = CounterMetricFamily(
            "retrieval_scheduler_config_reloads",
            "Config reloads (SIGHUP) since the daemon started, by result.",
            labels=("result",),
        )
        reloads.add_metric(("ok",), state.reloads)
        reloads.add_metric(("failed",), state.reload_failures)
        yield reloads
        started = GaugeMetricFamily(
            "retrieval_scheduler_start_timestamp_seconds",
            "When the daemon started, in seconds since the epoch.",
        )
        started.add_metric((), state.started_at.timestamp())
        yield started
