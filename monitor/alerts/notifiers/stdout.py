"""``kind: stdout``: write alerts as text to standard output (the demo, and cron mail)."""

from __future__ import annotations

from typing import TextIO

from monitor.alerts import text
from monitor.alerts.base import Notification, NotifierContext
from monitor.alerts.notifiers._common import Options
from monitor.config.common import NotifierConfig
from monitor.errors import NotifyError
from monitor.terminal import printable


class StdoutNotifier:
    """Writes each notification as a few lines of text."""

    def __init__(self, name: str, context: NotifierContext) -> None:
        self.name = name
        self._context = context

    @property
    def stream(self) -> TextIO:
        """Return the stream written to."""
        return self._context.out()

    def send(self, notification: Notification) -> None:
        """Write ``notification`` without control characters; raise NotifyError when the stream
        refuses it."""
        try:
            self.stream.write(printable(text.plain(notification.alert, notification.repeat)) + "\n")
            self.stream.flush()
        except (OSError, ValueError) as exc:
            raise NotifyError(self.name, f"cannot write: {type(exc).__name__}") from None

    def __repr__(self) -> str:
        return f"StdoutNotifier({self.name!r})"


def build(config: NotifierConfig, context: NotifierContext) -> StdoutNotifier:
    """Build the stdout notifier (it takes no options)."""
    Options(context.name, config, ())
    return StdoutNotifier(context.name, context)
