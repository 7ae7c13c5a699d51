"""How the daemon feeds ``/metrics``: the exporter's endpoint and the scheduler's counters.

The endpoint is :func:`monitor.exporters.start_http_exporter`'s :class:`HttpExporter`: one
server for every suite. Its ``update`` is one of the sinks the job composer
(:func:`monitor.job.run_suite`) hands each run's :class:`~monitor.exporters.SuiteSnapshot`,
as it does ``run --metrics-out``'s, so the daemon builds no snapshot of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Protocol

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from monitor.daemon.status import DaemonSnapshot
    from monitor.exporters import SuiteSnapshot


class MetricsEndpoint(Protocol):
    """A running ``/metrics`` server (:class:`monitor.exporters.HttpExporter` is one)."""

    def update(self, snapshot: SuiteSnapshot) -> None:
        """Serve ``snapshot`` as its suite's latest run from the next scrape on."""
        ...

    def forget(self, suite: str) -> None:
        """Stop serving every series of ``suite``."""
        ...


class SchedulerCollector(Collector):
    """The daemon's own counters, read from its status board at each scrape.

    ``retrieval_scheduler_runs_total{suite, outcome}`` counts, since the daemon started, runs
    that were stored (``ok``), that raised (``failed``), that started too late and were
    dropped (``missed``), that were due while the previous run was still going or another
    process held the suite's store lock (``skipped``) and faults of the job itself
    (``job_error``); ``retrieval_scheduler_config_reloads_total``
    counts reloads by result. A missed or skipped run stores nothing, so only these counters
    (and the stale last-success alert) show it. Each suite's series carry its static
    ``labels:`` from the config, as its run gauges do.
    """

    def __init__(self, snapshot: Callable[[], DaemonSnapshot]) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        """Yield the counters as they are now."""
        state = self._snapshot()
        runs = CounterMetricFamily(
            "retrieval_scheduler_runs",
            "Runs of each suite since the daemon started, by outcome.",
        )
        for name, status in state.suites.items():
            for outcome, count in (
                ("ok", status.runs),
                ("failed", status.failures),
                ("missed", status.missed),
                ("skipped", status.skipped),
                ("job_error", status.job_errors),
            ):
                # The suite's static labels, as on its run gauges; its own labels come first
                # and win (the exporters reserve their names).
                labels = {"suite": name, "outcome": outcome}
                labels.update((k, v) for k, v in status.labels.items() if k not in labels)
                runs.add_sample("retrieval_scheduler_runs_total", labels, count)
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
