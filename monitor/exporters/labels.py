"""Prometheus label names and values: what the exporters put on every series, and the checks.

Every series carries ``suite`` and ``pipeline``, its gauge's own labels (``k``, ``measure``,
``rule``, ``severity``, ...), and the suite's static labels from the config.
:func:`validate_labels` checks the static labels once at start-up, so a bad name fails with
the label's name before any run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from monitor.errors import LabelError
from monitor.metrics.spec import Metric

#: A Prometheus label name; names starting with ``__`` are reserved for Prometheus itself.
LABEL_NAME: Final = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")

#: The labels every series carries: which suite and which search pipeline it measures.
IDENTITY_LABELS: Final = ("suite", "pipeline")

#: Label names the exporters set themselves or that Prometheus and the Pushgateway attach
#: (``job``, ``instance``, ``le``, ``quantile``); a static label may use none of them.
RESERVED_LABELS: Final = frozenset(
    {
        *IDENTITY_LABELS,
        "k",
        "measure",
        "rule",
        "severity",
        "quantile",
        "percentile",
        "segment",
        "segment_value",
        # The online suites' own labels.
        "metric",
        "application",
        "fingerprint",
        "baseline_run_id",
        "judge",
        "statistic",
        "job",
        "instance",
        "le",
        # The daemon's retrieval_scheduler_runs_total.
        "outcome",
        # retrieval_query_drift.
        "check",
    }
)

#: The ``k`` label of a metric taken over the whole ranking (``mrr``, ``map``, ``r_precision``).
K_ALL: Final = "all"

#: Longest label value accepted: label values are index keys in Prometheus, not documents.
MAX_VALUE_LENGTH: Final = 256


def k_label(metric: Metric) -> str:
    """Return the ``k`` label of ``metric``: its cutoff, or ``"all"`` when it has none."""
    return K_ALL if metric.k is None else str(metric.k)


def check_value(name: str, value: object) -> str:
    """Return ``value`` if it can be the value of label ``name``; raise LabelError if not.

    A value is a non-empty string (Prometheus treats an empty value as a missing label) of at
    most :data:`MAX_VALUE_LENGTH` characters.
    """
    if not isinstance(value, str):
        raise LabelError(name, "the value must be a string", value=value)
    if not value:
        raise LabelError(name, "the value must not be empty (Prometheus drops empty labels)")
    if len(value) > MAX_VALUE_LENGTH:
        raise LabelError(
            name, f"the value must be at most {MAX_VALUE_LENGTH} characters", value=value
        )
    return value


def validate_labels(labels: Mapping[str, object]) -> Mapping[str, str]:
    """Check static labels from the config; return them as a read-only mapping.

    Each name must be a Prometheus label name, not start with ``__`` and not be one of
    :data:`RESERVED_LABELS`; each value must pass :func:`check_value`. The error names the
    first bad label.
    """
    checked: dict[str, str] = {}
    for name, value in labels.items():
        if not isinstance(name, str) or not LABEL_NAME.fullmatch(name):
            raise LabelError(str(name), "not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)")
        if name.startswith("__"):
            raise LabelError(name, "names starting with __ are reserved for Prometheus")
        if name in RESERVED_LABELS:
            reserved = ", ".join(sorted(RESERVED_LABELS))
            raise LabelError(name, f"reserved for the exporter's own labels ({reserved})")
        checked[name] = check_value(name, value)
    return MappingProxyType(dict(sorted(checked.items())))
