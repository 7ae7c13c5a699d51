"""Config records a suite and an online suite both hold: when it runs, where its gauges and
alerts go, and how severe an alert is."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from monitor.config.values import OptionValue, Origin, Secret, _freeze_map, thaw

#: How severe an alert is.
Severity = Literal["info", "warning", "critical"]


@dataclass(frozen=True, slots=True)
class ScheduleConfig:
    """When the daemon runs a suite: exactly one of ``cron`` (5 fields) or ``interval_seconds``.

    ``timezone`` (an IANA name) applies to ``cron``; ``None`` means the host's local time.
    """

    cron: str | None = None
    interval_seconds: float | None = 3600.0
    timezone: str | None = None


@dataclass(frozen=True, slots=True)
class PushgatewayExporterConfig:
    """Push the gauges to a Prometheus Pushgateway at ``url`` under ``job``."""

    url: Secret
    job: str = "retrieval-monitor"
    kind: Literal["pushgateway"] = field(default="pushgateway", init=False)


@dataclass(frozen=True, slots=True)
class TextfileExporterConfig:
    """Write the gauges atomically to ``path`` (a ``.prom`` file for node_exporter)."""

    path: Path
    kind: Literal["textfile"] = field(default="textfile", init=False)


@dataclass(frozen=True, slots=True)
class HttpExporterConfig:
    """Serve the gauges on ``http://address:port/metrics`` while the daemon runs."""

    port: int = 9108
    address: str = "127.0.0.1"
    kind: Literal["http"] = field(default="http", init=False)


ExporterConfig = PushgatewayExporterConfig | TextfileExporterConfig | HttpExporterConfig


@dataclass(frozen=True, slots=True)
class NotifierConfig:
    """One alert destination: a ``kind`` alias (or ``entrypoint:<name>``) and its options.

    ``url`` is a :class:`Secret` (webhook URLs carry their credentials). ``secret_env`` names
    the environment variable that holds a signing secret, read when sending. ``options``
    holds every other key, read-only and checked by the notifier itself; values under
    secret-like keys are :class:`Secret`, revealed by :meth:`plugin_options`. ``origin``
    says where the notifier was written; it takes no part in comparisons.
    """

    kind: str
    url: Secret | None = None
    secret_env: str | None = None
    options: Mapping[str, OptionValue] = field(default_factory=dict, hash=False)
    origin: Origin | None = field(default=None, compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", _freeze_map(self.options))

    def plugin_options(self) -> dict[str, object]:
        """Return the options to hand to the notifier, as :func:`thaw` gives them."""
        return {key: thaw(value) for key, value in self.options.items()}


@dataclass(frozen=True, slots=True)
class LinksConfig:
    """URLs put into alerts: the report, the dashboard and the runbook."""

    report: str | None = None
    dashboard: str | None = None
    runbook: str | None = None
