"""``kind: alertmanager``: push alerts to Alertmanager's API (``POST /api/v2/alerts``).

Alertmanager identifies an alert by its labels (:meth:`~monitor.alerts.model.Alert.label_set`:
``alertname``, ``suite``, ``rule``, ``metric``, ``severity`` and the suite's static labels)
and does its own grouping, deduplication, silencing and routing.

While an alert fires, every run sends it again (``repeat_interval`` 0) with ``endsAt`` set
to *now + 2 x the suite's interval*: without an ``endsAt``, Alertmanager resolves an alert
it has not heard of for its ``resolve_timeout`` (5 minutes by default), and an hourly job
would flap; two intervals survive one late run. A resolved alert is sent with ``endsAt``
set to the time it cleared, which resolves it at once.

Every request carries the notification's ``Idempotency-Key`` header; Alertmanager itself
needs none, as a repeated post of the same labels is the same alert.

Options: ``url`` (required: the base URL, with any route prefix, such as
``http://alertmanager:9093``; ``https://user:pass@alertmanager`` sends the credentials as
HTTP basic auth), ``headers`` (secret; for an authenticating proxy), ``ends_after``
(seconds an alert stays alive without news; default 2 x the suite's interval), ``verify``
(true, false or a CA bundle file), ``timeout``.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any, Final

from monitor.alerts import text
from monitor.alerts.base import Clock, Notification, NotifierContext
from monitor.alerts.http import Poster
from monitor.alerts.notifiers._common import Options, require_url, rfc3339
from monitor.config.common import NotifierConfig
from monitor.config.model import Secret

API_PATH: Final = "/api/v2/alerts"


def alertmanager_alert(notification: Notification, ends_at_if_firing: str) -> dict[str, Any]:
    """Return one postable alert of Alertmanager's v2 API."""
    alert = notification.alert
    posted: dict[str, Any] = {
        "labels": alert.label_set(),
        "annotations": text.alert_annotations(alert),
        "startsAt": rfc3339(alert.starts_at),
        "endsAt": ends_at_if_firing if alert.ends_at is None else rfc3339(alert.ends_at),
    }
    generator = alert.links.report or alert.links.dashboard
    if generator:
        posted["generatorURL"] = generator
    return posted


class AlertmanagerNotifier:
    """Posts each notification as a one-alert list to ``/api/v2/alerts``."""

    #: Send on every run while firing, to keep ``endsAt`` in the future.
    repeat_interval = 0.0

    def __init__(self, name: str, poster: Poster, *, ends_after: timedelta, clock: Clock) -> None:
        self.name = name
        self._poster = poster
        self.ends_after = ends_after
        self._clock = clock

    def send(self, notification: Notification) -> None:
        """Post ``notification`` once."""
        ends = rfc3339(self._clock() + self.ends_after)
        body = json.dumps([alertmanager_alert(notification, ends)], ensure_ascii=False)
        self._poster.post(body.encode("utf-8"), idempotency_key=notification.idempotency_key)

    def close(self) -> None:
        """Close the connection pool."""
        self._poster.close()

    def __repr__(self) -> str:
        return f"AlertmanagerNotifier({self.name!r})"


def build(config: NotifierConfig, context: NotifierContext) -> AlertmanagerNotifier:
    """Build the Alertmanager notifier of ``config``."""
    name = context.name
    options = Options(name, config, ("headers", "ends_after", "verify"))
    base = require_url(name, config)
    url = Secret(base.reveal().rstrip("/") + API_PATH, base.masked)
    poster = Poster(
        name,
        url,
        transport=context.transport,
        timeout_seconds=context.timeout_seconds,
        headers=options.headers(),
        clock=context.clock,
        verify=options.verify(),
    )
    ends_after = options.number("ends_after", 2 * context.interval_seconds)
    return AlertmanagerNotifier(
        name, poster, ends_after=timedelta(seconds=ends_after), clock=context.clock
    )
