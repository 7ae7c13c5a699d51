"""Export a suite's latest run as Prometheus gauges: scraped, pushed, or written to a file.

The job composer builds a :class:`SuiteSnapshot` per run; the exporters read nothing else.

- :func:`start_http_exporter`: the daemon's ``/metrics`` endpoint (every suite's latest run).
- :func:`push_snapshot`: a Pushgateway push for one-shot runs.
- :func:`write_textfile`: a ``.prom`` file for node_exporter's textfile collector.
- :func:`render`: the text exposition, for ``--metrics-out`` and tests.

Every gauge is declared once, in :data:`GAUGES` (see :mod:`monitor.exporters.gauges` for the
naming rules and the side each gauge belongs to).
"""

from __future__ import annotations

from monitor.exporters.gauges import GAUGES, Gauge, build_registry, families, merge, render
from monitor.exporters.http import HttpExporter, start_http_exporter
from monitor.exporters.labels import K_ALL, RESERVED_LABELS, validate_labels
from monitor.exporters.push import DEFAULT_JOB, PushHandler, push_snapshot
from monitor.exporters.snapshot import (
    LATENCY_KEYS,
    MAX_SEGMENT_VALUES,
    SEVERITIES,
    RuleState,
    SuiteSnapshot,
)
from monitor.exporters.textfile import write_textfile

__all__ = [
    "DEFAULT_JOB",
    "GAUGES",
    "K_ALL",
    "LATENCY_KEYS",
    "MAX_SEGMENT_VALUES",
    "RESERVED_LABELS",
    "SEVERITIES",
    "Gauge",
    "HttpExporter",
    "PushHandler",
    "RuleState",
    "SuiteSnapshot",
    "build_registry",
    "families",
    "merge",
    "push_snapshot",
    "render",
    "start_http_exporter",
    "validate_labels",
    "write_textfile",
]
