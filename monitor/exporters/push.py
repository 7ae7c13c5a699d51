"""Push a snapshot to a Prometheus Pushgateway, for one-shot runs (cron, Kubernetes jobs).

The grouping key is stable: ``job`` (``retrieval-monitor`` unless configured) and ``suite``,
never a run id, so each suite owns exactly one group that every run overwrites.

The Pushgateway replaces per group: a ``PUT`` replaces every metric of the group, a
``POST`` replaces only the metric names it carries and keeps the rest. So:

- a successful run ``PUT``\\ s all its gauges: series a previous run had and this one has not
  (a metric dropped from the config, a segment value gone) disappear;
- a failed run ``POST``\\ s only the attempt gauges (``run_success`` 0, the last-run time, the
  error ratio, counts, duration). The group keeps the last good quality figures and, above
  all, the last good ``retrieval_last_success_timestamp_seconds``, which is what the stale
  alert watches. Pushing the failure with ``PUT`` would wipe that timestamp; pushing it to a
  second group would split one suite's series over two ``job``/``suite`` label sets.

A Pushgateway that is down or refuses the push raises :class:`~monitor.errors.ExportError`,
never anything else, so the caller keeps the stored run and maps the error to its exit code.
"""

from __future__ import annotations

import http.client
from collections.abc import Callable
from typing import Final
from urllib.error import HTTPError
from urllib.parse import urlsplit

from prometheus_client.exposition import default_handler, push_to_gateway, pushadd_to_gateway

from monitor.errors import ExportError, UsageError
from monitor.exporters.gauges import ATTEMPT_SIDE, families, registry_of
from monitor.exporters.snapshot import SuiteSnapshot

#: The ``job`` of the grouping key unless the config names another.
DEFAULT_JOB: Final = "retrieval-monitor"

#: Seconds to wait for the Pushgateway.
DEFAULT_TIMEOUT: Final = 10.0

#: ``handler(url, method, timeout, headers, data)`` returns a function that sends the request
#: and raises ``OSError`` on failure: prometheus_client's handler protocol. Tests pass one
#: that records the request instead of sending it.
PushHandler = Callable[[str, str, "float | None", list[tuple[str, str]], bytes], Callable[[], None]]


def grouping_key(snapshot: SuiteSnapshot) -> dict[str, str]:
    """Return the grouping key besides ``job``: the suite, and nothing that changes per run."""
    return {"suite": snapshot.suite}


def push_snapshot(
    snapshot: SuiteSnapshot,
    gateway: str,
    *,
    job: str = DEFAULT_JOB,
    timeout: float | None = DEFAULT_TIMEOUT,
    handler: PushHandler = default_handler,
) -> None:
    """Push ``snapshot`` to the Pushgateway at ``gateway`` (``http://host:9091``).

    A successful run replaces its group (``PUT``); a failed run adds its attempt gauges to
    it (``POST``), keeping the last success. Raise ExportError when the push fails.
    """
    if not isinstance(job, str) or not job:
        raise UsageError(f"the Pushgateway job must be a non-empty string, not {job!r}")
    target = f"pushgateway {_safe(gateway)}"
    if snapshot.success:
        send, metrics = push_to_gateway, families(snapshot)
    else:
        send, metrics = pushadd_to_gateway, families(snapshot, ATTEMPT_SIDE)
    registry = registry_of(metrics)
    try:
        send(
            gateway,
            job=job,
            registry=registry,
            grouping_key=grouping_key(snapshot),
            timeout=timeout,
            handler=handler,
        )
    except HTTPError as error:
        raise ExportError(target, _http_reason(error)) from error
    except (OSError, http.client.HTTPException, ValueError) as error:
        raise ExportError(target, f"{type(error).__name__}: {error}") from error


def _http_reason(error: HTTPError) -> str:
    """Return the status and the Pushgateway's own explanation (it says what was invalid)."""
    try:
        body = error.read(500).decode("utf-8", "replace").strip()
    except (OSError, http.client.HTTPException):
        body = ""
    reason = f"HTTP {error.code} {error.reason}"
    return f"{reason}: {body}" if body else reason


def _safe(url: str) -> str:
    """Return ``url`` without user, password, path or query: enough to say where, no secret."""
    parts = urlsplit(url if "://" in url else f"http://{url}")
    try:
        host = parts.hostname or "?"
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "<invalid URL>"
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{host}{port}"
