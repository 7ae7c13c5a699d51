"""``kind: pagerduty``: trigger and resolve incidents through the Events API v2.

Every event about an alert carries the same ``dedup_key`` (:func:`dedup_key`, from the
alert's identity), so PagerDuty folds repeats into the open incident and a ``resolve``
closes it. The routing key is read from ``routing_key`` (secret; best ``${VAR}``) or from
the environment variable named by ``secret_env``. It is sent in the body only, never shown.

Each request also carries the notification's ``Idempotency-Key`` header.

Options: ``routing_key`` or ``secret_env``, ``url`` (default :data:`EVENTS_URL`; tests point
it at a local server), ``source`` (default ``retrieval-monitor/<suite>``), ``verify`` (true,
false or a CA bundle file), ``timeout``.
"""

from __future__ import annotations

import json
from typing import Any, Final

from monitor.alerts import text
from monitor.alerts.base import Notification, NotifierContext
from monitor.alerts.http import Poster
from monitor.alerts.model import Alert
from monitor.alerts.notifiers._common import Options, env_secret, rfc3339
from monitor.config.common import NotifierConfig
from monitor.config.model import Secret
from monitor.errors import NotifierSetupError

EVENTS_URL: Final = "https://events.pagerduty.com/v2/enqueue"
#: Longest summary the Events API accepts.
MAX_SUMMARY: Final = 1024
_SEVERITY: Final = {"info": "info", "warning": "warning", "critical": "critical"}


def dedup_key(alert: Alert) -> str:
    """Return the deduplication key of every event about ``alert``'s identity."""
    return f"retrieval-monitor/{alert.suite}/{alert.fingerprint}"


def pagerduty_event(
    notification: Notification, routing_key: str, source: str | None = None
) -> dict[str, Any]:
    """Return the Events API v2 body for one notification."""
    alert = notification.alert
    if not alert.firing:
        return {
            "routing_key": routing_key,
            "event_action": "resolve",
            "dedup_key": dedup_key(alert),
        }
    annotations = text.alert_annotations(alert)
    summary = annotations.pop("summary")
    links = [
        {"href": url, "text": label}
        for label, url in (
            ("report", alert.links.report),
            ("dashboard", alert.links.dashboard),
            ("runbook", alert.links.runbook),
        )
        if url
    ]
    event: dict[str, Any] = {
        "routing_key": routing_key,
        "event_action": "trigger",
        "dedup_key": dedup_key(alert),
        "payload": {
            "summary": summary[:MAX_SUMMARY],
            "source": source or f"retrieval-monitor/{alert.suite}",
            "severity": _SEVERITY[alert.severity],
            "timestamp": rfc3339(alert.starts_at),
            "component": alert.suite,
            "group": alert.labels.get("pipeline", alert.suite),
            "class": alert.rule,
            "custom_details": {**alert.label_set(), **annotations},
        },
        "client": "retrieval-monitor",
    }
    if links:
        event["links"] = links
    if alert.links.dashboard:
        event["client_url"] = alert.links.dashboard
    return event


class PagerDutyNotifier:
    """Sends one event per notification."""

    def __init__(
        self, name: str, poster: Poster, routing_key: Secret, source: str | None = None
    ) -> None:
        self.name = name
        self._poster = poster
        self._routing_key = routing_key
        self.source = source

    def send(self, notification: Notification) -> None:
        """Send ``notification`` once."""
        event = pagerduty_event(notification, self._routing_key.reveal(), self.source)
        body = json.dumps(event, ensure_ascii=False).encode("utf-8")
        self._poster.post(body, idempotency_key=notification.idempotency_key)

    def close(self) -> None:
        """Close the connection pool."""
        self._poster.close()

    def __repr__(self) -> str:
        return f"PagerDutyNotifier({self.name!r})"


def build(config: NotifierConfig, context: NotifierContext) -> PagerDutyNotifier:
    """Build the PagerDuty notifier of ``config``."""
    name = context.name
    options = Options(name, config, ("routing_key", "source", "verify"))
    raw = options.string("routing_key")
    if raw is not None and config.secret_env is not None:
        raise NotifierSetupError(name, "give 'routing_key' or 'secret_env', not both")
    if raw is not None:
        routing_key = Secret(raw)
    elif config.secret_env is not None:
        routing_key = env_secret(name, context, config.secret_env, "the routing key")
    else:
        raise NotifierSetupError(name, "needs 'routing_key' or 'secret_env' naming it")
    if not routing_key.reveal():
        raise NotifierSetupError(name, "the routing key is empty")
    url = config.url if config.url is not None else Secret(EVENTS_URL, EVENTS_URL)
    poster = Poster(
        name,
        url,
        transport=context.transport,
        timeout_seconds=context.timeout_seconds,
        secrets=(routing_key.reveal(),),
        clock=context.clock,
        verify=options.verify(),
    )
    return PagerDutyNotifier(name, poster, routing_key, options.string("source"))
