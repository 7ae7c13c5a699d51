"""``kind: slack``: post a short message to a Slack incoming webhook.

The message has a ``text`` (shown in notifications and by clients without blocks) and
``blocks``: a headline, the evidence while firing (cut to :data:`MAX_DETAIL_CHARS`), and the
links. The context block's ``block_id`` and the ``Idempotency-Key`` header carry the
notification's key, the same on every delivery of one notification (Slack itself does not
deduplicate: a proxy or an app reading the channel can). Options: ``url`` (required, the
webhook URL: a secret), ``channel``, ``username``, ``icon_emoji`` (honoured by legacy
webhooks), ``verify`` (true, false or a CA bundle file), ``timeout``.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from monitor.alerts import text
from monitor.alerts.base import Notification, NotifierContext
from monitor.alerts.http import Poster
from monitor.alerts.notifiers._common import Options, require_url
from monitor.config.common import NotifierConfig

#: Most characters of the description shown (Slack allows 3000 per text block).
MAX_DETAIL_CHARS: Final = 1500
_MARKS: Final = {
    "FIRING": ":rotating_light:",
    "STILL FIRING": ":warning:",
    "RESOLVED": ":white_check_mark:",
}
_PASSED: Final = ("channel", "username", "icon_emoji")


def escape(value: str) -> str:
    """Return ``value`` with the three characters Slack's mrkdwn reserves escaped."""
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_payload(
    notification: Notification, extra: dict[str, str] | None = None
) -> dict[str, Any]:
    """Return the incoming-webhook body for one notification."""
    alert = notification.alert
    status = text.status_word(alert, notification.repeat)
    headline = f"{_MARKS[status]} {status} ({alert.severity}): {text.headline(alert)}"
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": f"*{escape(headline)}*"}}
    ]
    if alert.firing and alert.description:
        detail = escape(alert.description)
        if len(detail) > MAX_DETAIL_CHARS:
            # Cut without leaving half an escape such as "&am".
            detail = re.sub(r"&[a-z]*$", "", detail[: MAX_DETAIL_CHARS - 3]) + "..."
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": detail}})
    links = [
        f"<{url}|{label}>"
        for label, url in (
            ("report", alert.links.report),
            ("dashboard", alert.links.dashboard),
            ("runbook", alert.links.runbook),
        )
        if url
    ]
    since = f"since {alert.starts_at.isoformat(timespec='minutes')}"
    blocks.append(
        {
            "type": "context",
            "block_id": notification.idempotency_key,
            "elements": [{"type": "mrkdwn", "text": " | ".join([since, *links])}],
        }
    )
    return {"text": headline, "blocks": blocks, **(extra or {})}


class SlackNotifier:
    """Posts one short message per notification."""

    def __init__(self, name: str, poster: Poster, extra: dict[str, str] | None = None) -> None:
        self.name = name
        self._poster = poster
        self._extra = dict(extra or {})

    def send(self, notification: Notification) -> None:
        """Post ``notification`` once."""
        body = json.dumps(slack_payload(notification, self._extra), ensure_ascii=False)
        self._poster.post(body.encode("utf-8"), idempotency_key=notification.idempotency_key)

    def close(self) -> None:
        """Close the connection pool."""
        self._poster.close()

    def __repr__(self) -> str:
        return f"SlackNotifier({self.name!r})"


def build(config: NotifierConfig, context: NotifierContext) -> SlackNotifier:
    """Build the Slack notifier of ``config``."""
    name = context.name
    options = Options(name, config, (*_PASSED, "verify"))
    extra = {key: value for key in _PASSED if (value := options.string(key)) is not None}
    poster = Poster(
        name,
        require_url(name, config),
        transport=context.transport,
        timeout_seconds=context.timeout_seconds,
        clock=context.clock,
        verify=options.verify(),
    )
    return SlackNotifier(name, poster, extra)
