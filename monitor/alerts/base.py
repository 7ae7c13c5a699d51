"""The notifier plug-in point: a :class:`Notifier` sends one :class:`Notification`.

A notifier is any object with ``send(notification) -> None`` that either delivers the
notification once or raises :class:`~monitor.errors.NotifyError` (``retryable`` when trying
again soon may help). Retries, the outbox and the lifecycle live outside it
(:mod:`monitor.alerts.delivery`, :mod:`monitor.alerts.outbox`,
:mod:`monitor.alerts.lifecycle`), so a plug-in makes exactly one attempt per call.

Optional extras, found by name:

- ``repeat_interval``: seconds between reminders while an alert keeps firing (``0``: every
  run, as Alertmanager needs; ``None`` or absent: the lifecycle's default);
- ``accepts(alert) -> bool``: whether the notifier wants this alert at all;
- ``close()``: release connections (:func:`close_notifiers`).

Delivery is at least once: a receiver may get a notification twice (a retry after a timeout,
a run killed between the receiver's answer and the outbox's record of it). Every
:class:`Notification` carries an ``idempotency_key`` that is the same each time that
notification is sent, and differs between notifications, for receivers to deduplicate on.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Final, Literal, Protocol, TextIO

from monitor.alerts.model import Alert
from monitor.errors import UsageError

if TYPE_CHECKING:
    import httpx

#: What a notification says about its alert: it began firing, it still fires, it cleared.
Transition = Literal["firing", "repeat", "resolved"]
TRANSITIONS: Final[tuple[Transition, ...]] = ("firing", "repeat", "resolved")

#: Gives the current time (timezone-aware); tests inject a fixed clock.
Clock = Callable[[], datetime]


def utcnow() -> datetime:
    """Return the current time in UTC."""
    return datetime.now(timezone.utc)


def notification_key(receiver: str, alert: Alert, transition: Transition, nonce: str = "") -> str:
    """Return the idempotency key of ``alert`` at ``transition`` for ``receiver``.

    It is derived from the notifier's name, the alert's fingerprint, the start of its
    episode (``starts_at``) and the transition, so the firing and the resolve of one episode
    keep their keys from run to run. Reminders of one episode are told apart by ``nonce``
    (the outbox gives each reminder its own and keeps it with the message).
    """
    start = alert.starts_at.astimezone(timezone.utc).isoformat()
    joined = "\x1f".join((receiver, alert.fingerprint, start, transition, nonce))
    return hashlib.sha256(joined.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Notification:
    """One message for one notifier: ``alert`` at ``transition``, for ``receiver`` (the
    notifier's name). A ``resolved`` transition carries a resolved alert, the others a
    firing one.

    ``idempotency_key`` is the same every time this notification is sent (retries, and the
    outbox's later runs) and differs between notifications; empty means
    :func:`notification_key` without a nonce. HTTP notifiers send it as the
    ``Idempotency-Key`` header.
    """

    alert: Alert
    transition: Transition
    receiver: str
    idempotency_key: str = ""

    def __post_init__(self) -> None:
        if self.transition not in TRANSITIONS:
            raise UsageError(
                f"transition {self.transition!r}: expected one of {', '.join(TRANSITIONS)}"
            )
        if (self.transition == "resolved") == self.alert.firing:
            raise UsageError(
                f"a {self.transition} notification cannot carry a {self.alert.status} alert"
            )
        if not self.idempotency_key:
            key = notification_key(self.receiver, self.alert, self.transition)
            object.__setattr__(self, "idempotency_key", key)

    @property
    def repeat(self) -> bool:
        """Return whether this is a reminder about an alert already notified."""
        return self.transition == "repeat"


class Notifier(Protocol):
    """Sends notifications somewhere: one attempt per call."""

    def send(self, notification: Notification) -> None:
        """Deliver ``notification``; raise NotifyError when it was not delivered."""
        ...


@dataclass(frozen=True, slots=True)
class NotifierContext:
    """What a notifier builder gets beside its config.

    ``name`` is the notifier's name (in messages, the outbox and logs; never its URL);
    ``interval_seconds`` how often the suite runs (Alertmanager keeps an alert alive for two
    intervals); ``transport`` the httpx transport HTTP notifiers send through (None: a real
    one); ``clock`` the current time; ``environ`` where ``secret_env`` variables are read;
    ``stream`` where ``stdout`` writes (None: ``sys.stdout`` at the time of writing);
    ``timeout_seconds`` how long one HTTP attempt may take.
    """

    name: str
    suite: str = ""
    interval_seconds: float = 3600.0
    transport: httpx.BaseTransport | None = None
    clock: Clock = utcnow
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ, hash=False)
    stream: TextIO | None = None
    timeout_seconds: float = 10.0

    def out(self) -> TextIO:
        """Return the stream to write to."""
        return self.stream if self.stream is not None else sys.stdout


def repeat_interval_of(notifier: object, default: timedelta) -> timedelta:
    """Return how long ``notifier`` waits before reminding about a firing alert."""
    seconds = getattr(notifier, "repeat_interval", None)
    if seconds is None:
        return default
    if isinstance(seconds, timedelta):
        return seconds
    return timedelta(seconds=float(seconds))


def accepts(notifier: object, alert: Alert) -> bool:
    """Return whether ``notifier`` wants ``alert`` (every alert without ``accepts``)."""
    check = getattr(notifier, "accepts", None)
    return True if check is None else bool(check(alert))


def close_notifiers(notifiers: Iterable[object]) -> None:
    """Call ``close()`` on every notifier that has one."""
    for notifier in notifiers:
        close = getattr(notifier, "close", None)
        if callable(close):
            close()
