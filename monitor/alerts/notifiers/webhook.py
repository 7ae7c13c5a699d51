"""``kind: webhook``: POST Alertmanager's webhook payload (version 4) as JSON.

Receivers written for Alertmanager's webhook (``status``, ``alerts[]`` with ``labels``,
``annotations``, ``startsAt``, ``endsAt``, ``fingerprint``, ...) read it unchanged. Each
message holds one alert; ``groupKey`` is the same for every message about that alert.
``idempotencyKey`` (also the ``Idempotency-Key`` header) is the notification's key: the same
on every delivery of one notification, for receivers to drop duplicates.

With ``secret_env: NAME``, the body is signed with HMAC-SHA256 using the value of the
environment variable ``NAME`` and the signature is sent as
``X-Retrieval-Monitor-Signature: sha256=<hex>``, computed over the exact body bytes, so a
receiver can check it before parsing (:func:`verify_signature`).

Options: ``url`` (required), ``secret_env``, ``headers`` (extra request headers, secret),
``external_url`` (the payload's ``externalURL``; default the suite's dashboard or report
link), ``verify`` (true, false or a CA bundle file), ``timeout``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any, Final

from monitor.alerts import text
from monitor.alerts.base import Notification, NotifierContext
from monitor.alerts.http import Poster
from monitor.alerts.notifiers._common import Options, env_secret, require_url, rfc3339
from monitor.config.common import NotifierConfig
from monitor.config.model import Secret

SIGNATURE_HEADER: Final = "X-Retrieval-Monitor-Signature"
#: ``endsAt`` of a firing alert, as Alertmanager writes it (Go's zero time).
ZERO_TIME: Final = "0001-01-01T00:00:00Z"
#: The labels an alert's messages are grouped by.
GROUP_LABELS: Final = ("alertname", "suite", "rule", "metric")


def webhook_payload(
    notification: Notification, *, receiver: str, external_url: str = ""
) -> dict[str, Any]:
    """Return Alertmanager's webhook payload (version 4) for one notification."""
    alert = notification.alert
    labels = alert.label_set()
    annotations = text.alert_annotations(alert)
    group = {name: labels[name] for name in GROUP_LABELS if name in labels}
    group_key = "{}:{" + ", ".join(f"{k}={json.dumps(v)}" for k, v in sorted(group.items())) + "}"
    return {
        "version": "4",
        "groupKey": group_key,
        "truncatedAlerts": 0,
        "status": alert.status,
        "receiver": receiver,
        "groupLabels": group,
        "commonLabels": labels,
        "commonAnnotations": annotations,
        "externalURL": external_url,
        "alerts": [
            {
                "status": alert.status,
                "labels": labels,
                "annotations": annotations,
                "startsAt": rfc3339(alert.starts_at),
                "endsAt": ZERO_TIME if alert.ends_at is None else rfc3339(alert.ends_at),
                "generatorURL": alert.links.report or alert.links.dashboard or "",
                "fingerprint": alert.fingerprint,
            }
        ],
        "idempotencyKey": notification.idempotency_key,
    }


def sign(secret: str | bytes, body: bytes) -> str:
    """Return the signature header value for ``body``: ``sha256=<hex HMAC-SHA256>``."""
    key = secret.encode("utf-8") if isinstance(secret, str) else secret
    return "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest()


def verify_signature(secret: str | bytes, body: bytes, header: str | None) -> bool:
    """Return whether ``header`` is the signature of ``body`` (compared in constant time)."""
    return header is not None and hmac.compare_digest(sign(secret, body), header)


class WebhookNotifier:
    """Posts the webhook payload, signed when it has a secret."""

    def __init__(
        self, name: str, poster: Poster, *, secret: Secret | None = None, external_url: str = ""
    ) -> None:
        self.name = name
        self._poster = poster
        self._secret = secret
        self.external_url = external_url

    def send(self, notification: Notification) -> None:
        """Post ``notification`` once."""
        links = notification.alert.links
        external = self.external_url or links.dashboard or links.report or ""
        body = json.dumps(
            webhook_payload(notification, receiver=self.name, external_url=external),
            ensure_ascii=False,
            separators=(",", ":"),
        ).encode("utf-8")
        headers = {}
        if self._secret is not None:
            headers[SIGNATURE_HEADER] = sign(self._secret.reveal(), body)
        self._poster.post(body, headers, idempotency_key=notification.idempotency_key)

    def close(self) -> None:
        """Close the connection pool."""
        self._poster.close()

    def __repr__(self) -> str:
        return f"WebhookNotifier({self.name!r})"


def build(config: NotifierConfig, context: NotifierContext) -> WebhookNotifier:
    """Build the webhook notifier of ``config``."""
    name = context.name
    options = Options(name, config, ("headers", "external_url", "verify"))
    secret = None
    if config.secret_env is not None:
        secret = env_secret(name, context, config.secret_env, "the signing secret")
    poster = Poster(
        name,
        require_url(name, config),
        transport=context.transport,
        timeout_seconds=context.timeout_seconds,
        headers=options.headers(),
        secrets=() if secret is None else (secret.reveal(),),
        clock=context.clock,
        verify=options.verify(),
    )
    return WebhookNotifier(
        name, poster, secret=secret, external_url=options.string("external_url") or ""
    )
