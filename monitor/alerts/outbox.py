"""The outbox of notifications: none lost when a receiver is down, none sent twice.

Every notification is first put in the store's outbox (kind :data:`OUTBOX_KIND`), then
delivered, then marked delivered in its own transaction right after the receiver accepted
it. What cannot be delivered stays there, and :func:`flush_outbox` (first thing each run)
tries it again. A message's key is ``notifier|fingerprint|episode|transition`` (the episode
is the alert's ``starts_at``): enqueueing the same transition again replaces the waiting
message instead of adding one, and a reminder replaces a reminder still waiting.

The payload holds the notifier's *name*, the transition and the alert's dictionary form;
never a URL, key or signing secret. Messages are delivered oldest first. When one fails,
the later messages of the same notifier and alert wait for the next run (a resolve never
overtakes its firing), and after a connection error, timeout or 5xx the notifier gets no
more messages in this flush. A receiver that is down is waited for without limit; a message
the receiver *rejects* (a 4xx other than 429) in :attr:`DeliveryPolicy.max_rejections` runs
is given up with an error in the log, so that it stops holding back that alert's later
messages.

Delivery is at least once: a run killed while a receiver answers, or a receiver slower
than the timeout, may deliver one message twice; it never loses one. The payload keeps the
notification's ``idempotency_key``, so every delivery of a message carries the same key:
the firing and the resolve of an episode derive theirs from it (the same in every run),
and each reminder gets a new random part, kept while it waits (a reminder that replaces a
waiting one keeps the waiting one's key).
"""

from __future__ import annotations

import random
import secrets
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, Protocol

from monitor.alerts.base import (
    TRANSITIONS,
    Notification,
    Notifier,
    Transition,
    accepts,
    notification_key,
)
from monitor.alerts.delivery import DEFAULT_POLICY, DeliveryPolicy, Random, Sleep, try_deliver
from monitor.alerts.model import Alert
from monitor.errors import UsageError
from monitor.logs import get_logger

log = get_logger("monitor.alerts")

#: The outbox kind of alert notifications.
OUTBOX_KIND: Final = "alert"
#: Version of the payload written by :func:`payload`.
PAYLOAD_VERSION: Final = 1


class OutboxMessageLike(Protocol):
    """What the outbox gives back for a waiting message."""

    @property
    def id(self) -> int: ...
    @property
    def key(self) -> str: ...
    @property
    def attempts(self) -> int: ...
    @property
    def payload(self) -> Mapping[str, object]: ...


class OutboxStore(Protocol):
    """The outbox part of :class:`monitor.store.Store`."""

    def enqueue(self, kind: str, key: str, payload: Mapping[str, object]) -> int:
        """Put a message in the outbox, replacing a waiting one of the same kind and key."""
        ...

    def pending(self, kind: str | None = None) -> Sequence[OutboxMessageLike]:
        """Return the waiting messages, oldest first."""
        ...

    def mark_delivered(self, message_id: int) -> None:
        """Record that the message was delivered."""
        ...

    def attempt_failed(self, message_id: int, error: str) -> None:
        """Record a failed delivery of the message."""
        ...

    def abandon(self, message_id: int, reason: str) -> None:
        """Give up on the message: it leaves the outbox."""
        ...


@dataclass(frozen=True, slots=True)
class DeliveryOutcome:
    """What happened to one notification: delivered or not, after how many attempts.

    ``message_id`` is the outbox message (None when sent without the outbox); ``error`` the
    last failure, free of secrets; ``retryable`` whether that failure may pass by itself (the
    receiver was down or busy) rather than being a rejection.
    """

    notifier: str
    fingerprint: str
    transition: Transition
    delivered: bool
    attempts: int
    message_id: int | None = None
    error: str | None = None
    retryable: bool = False


def message_key(notifier: str, alert: Alert, transition: Transition) -> str:
    """Return the outbox key of ``alert`` at ``transition`` for ``notifier``."""
    episode = alert.starts_at.isoformat()
    return f"{notifier}|{alert.fingerprint}|{episode}|{transition}"


def payload(notification: Notification) -> dict[str, Any]:
    """Return the outbox payload of ``notification``: names and the alert, no secrets."""
    return {
        "version": PAYLOAD_VERSION,
        "notifier": notification.receiver,
        "transition": notification.transition,
        "idempotency_key": notification.idempotency_key,
        "alert": notification.alert.to_dict(),
    }


def notification_from(data: Mapping[str, Any]) -> Notification:
    """Return the notification a payload holds; raise UsageError for another shape."""
    if data.get("version") != PAYLOAD_VERSION:
        raise UsageError(f"outbox payload version {data.get('version')!r} is not known")
    transition = data.get("transition")
    receiver = data.get("notifier")
    alert = data.get("alert")
    if transition not in TRANSITIONS or not isinstance(receiver, str):
        raise UsageError("outbox payload without a known transition and notifier")
    if not isinstance(alert, Mapping):
        raise UsageError("outbox payload without an alert")
    # A payload written before keys were kept gets the key derived from the alert.
    key = data.get("idempotency_key")
    if not isinstance(key, str):
        key = ""
    return Notification(Alert.from_dict(alert), transition, receiver, key)


def enqueue(store: OutboxStore, notification: Notification) -> int:
    """Put ``notification`` in the outbox; return the message's id.

    A reminder without a key of its own gets one (see the module's docstring).
    """
    key = message_key(notification.receiver, notification.alert, notification.transition)
    return store.enqueue(OUTBOX_KIND, key, payload(_keyed(store, notification, key)))


def _keyed(store: OutboxStore, notification: Notification, key: str) -> Notification:
    """Return ``notification`` with the idempotency key its message is to keep."""
    derived = notification_key(notification.receiver, notification.alert, "repeat")
    if notification.transition != "repeat" or notification.idempotency_key != derived:
        return notification
    for message in store.pending(OUTBOX_KIND):
        kept = message.payload.get("idempotency_key")
        if message.key == key and isinstance(kept, str) and kept:
            return replace(notification, idempotency_key=kept)
    nonce = secrets.token_hex(8)
    fresh = notification_key(notification.receiver, notification.alert, "repeat", nonce)
    return replace(notification, idempotency_key=fresh)


def flush_outbox(
    store: OutboxStore,
    notifiers: Mapping[str, Notifier],
    *,
    policy: DeliveryPolicy = DEFAULT_POLICY,
    sleep: Sleep = time.sleep,
    rng: Random = random.random,
) -> list[DeliveryOutcome]:
    """Deliver the waiting notifications of ``notifiers`` (by name), oldest first.

    Messages for other notifiers (another suite's) are left alone. Return one outcome per
    message tried; those not tried because an earlier one failed are not in it.
    """
    outcomes: list[DeliveryOutcome] = []
    down: set[str] = set()
    held: set[tuple[str, str]] = set()
    for message in store.pending(OUTBOX_KIND):
        name = message.payload.get("notifier")
        if not isinstance(name, str) or name not in notifiers or name in down:
            continue
        try:
            notification = notification_from(message.payload)
        except UsageError as exc:
            store.attempt_failed(message.id, exc.message)
            log.warning(
                "outbox_message_unreadable", message_id=message.id, notifier=name, error=str(exc)
            )
            continue
        stream = (name, notification.alert.fingerprint)
        if stream in held:
            continue
        outcome = _attempt(store, notifiers[name], notification, message.id, policy, sleep, rng)
        outcomes.append(outcome)
        if outcome.delivered:
            continue
        if not outcome.retryable and message.attempts + 1 >= policy.max_rejections:
            # The receiver keeps refusing this message (a 4xx): holding it longer would hold
            # back every later message of this alert, so it is given up, loudly.
            store.abandon(message.id, f"rejected {message.attempts + 1} times: {outcome.error}")
            log.error(
                "outbox_message_given_up",
                notifier=name,
                transition=notification.transition,
                fingerprint=notification.alert.fingerprint,
                rejections=message.attempts + 1,
                message_id=message.id,
                error=outcome.error,
            )
            continue
        held.add(stream)
        if outcome.retryable:
            down.add(name)
    return outcomes


def send_now(
    alerts: Iterable[Alert],
    notifiers: Mapping[str, Notifier],
    *,
    policy: DeliveryPolicy = DEFAULT_POLICY,
    sleep: Sleep = time.sleep,
    rng: Random = random.random,
) -> list[DeliveryOutcome]:
    """Send ``alerts`` to every notifier that accepts them now, without state or outbox.

    For when the store itself cannot be used (a ``store_unwritable`` failure): nothing is
    remembered, so nothing is deduplicated, repeated on schedule or retried on the next run.
    """
    outcomes = []
    for alert in alerts:
        transition: Transition = "firing" if alert.firing else "resolved"
        for name, notifier in notifiers.items():
            if accepts(notifier, alert):
                notification = Notification(alert, transition, name)
                outcomes.append(_attempt(None, notifier, notification, None, policy, sleep, rng))
    return outcomes


def _attempt(
    store: OutboxStore | None,
    notifier: Notifier,
    notification: Notification,
    message_id: int | None,
    policy: DeliveryPolicy,
    sleep: Sleep,
    rng: Random,
) -> DeliveryOutcome:
    """Deliver one notification and record in the outbox (when given) what happened."""
    attempts, error = try_deliver(notifier, notification, policy, sleep=sleep, rng=rng)
    outcome = DeliveryOutcome(
        notifier=notification.receiver,
        fingerprint=notification.alert.fingerprint,
        transition=notification.transition,
        delivered=error is None,
        attempts=attempts,
        message_id=message_id,
        error=None if error is None else str(error),
        retryable=error is not None and error.retryable,
    )
    if error is not None:
        if store is not None and message_id is not None:
            store.attempt_failed(message_id, str(error))
            log.warning("delivery_failed", error=str(error), kept_as_message=message_id)
        else:
            log.warning("delivery_failed", error=str(error))
    else:
        if store is not None and message_id is not None:
            store.mark_delivered(message_id)
        log.info(
            "delivered",
            notifier=notification.receiver,
            transition=notification.transition,
            fingerprint=notification.alert.fingerprint,
        )
    return outcome
