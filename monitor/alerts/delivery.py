"""Deliver one notification with bounded retries: exponential backoff with jitter.

:func:`deliver` calls a notifier's ``send`` until it succeeds, the error is not retryable
(a 4xx answer other than 429, a bad payload), the attempts run out, or the receiver asks to
wait longer (``Retry-After``) than :attr:`DeliveryPolicy.retry_after_max_seconds`: a one-shot
job should not sleep for minutes, and the outbox tries again on the next run.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from monitor.alerts.base import Notification, Notifier
from monitor.errors import NotifyError, UsageError

#: Sleeps for the given seconds; tests inject one that records instead.
Sleep = Callable[[float], None]
#: Returns a float in [0, 1); tests inject a fixed one.
Random = Callable[[], float]


@dataclass(frozen=True, slots=True)
class DeliveryPolicy:
    """How hard to try one notification before leaving it to the next run.

    Attempt ``n`` (from 1) that fails with a retryable error waits
    ``min(backoff_max_seconds, backoff_seconds * 2 ** (n - 1))``, of which the second half is
    random (jitter), or the receiver's ``Retry-After`` when that is longer.
    """

    attempts: int = 4
    backoff_seconds: float = 0.5
    backoff_max_seconds: float = 8.0
    retry_after_max_seconds: float = 30.0
    #: Runs in which a receiver may reject (4xx) an outbox message before it is given up.
    max_rejections: int = 5

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise UsageError(f"delivery attempts must be 1 or more, not {self.attempts}")
        if self.max_rejections < 1:
            raise UsageError(f"max_rejections must be 1 or more, not {self.max_rejections}")
        for name in ("backoff_seconds", "backoff_max_seconds", "retry_after_max_seconds"):
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise UsageError(f"delivery {name} must be 0 or more, not {value}")

    def backoff(self, attempt: int, draw: float) -> float:
        """Return the wait after failed attempt ``attempt`` for a random ``draw`` in [0, 1)."""
        ceiling = min(self.backoff_max_seconds, self.backoff_seconds * 2.0 ** (attempt - 1))
        return ceiling / 2 + draw * ceiling / 2


#: The policy used unless another is given.
DEFAULT_POLICY: Final = DeliveryPolicy()


@dataclass(frozen=True, slots=True)
class Delivery:
    """How a run delivers its notifications: the retry policy, and the sleep and random
    draw its backoff uses (a test passes a sleep that only records)."""

    policy: DeliveryPolicy = DEFAULT_POLICY
    sleep: Sleep = time.sleep
    rng: Random = random.random


def deliver(
    notifier: Notifier,
    notification: Notification,
    policy: DeliveryPolicy = DEFAULT_POLICY,
    *,
    sleep: Sleep = time.sleep,
    rng: Random = random.random,
) -> int:
    """Send ``notification`` through ``notifier``; return the number of attempts it took.

    Raise NotifyError with the last failure when it was not delivered.
    """
    attempts, error = try_deliver(notifier, notification, policy, sleep=sleep, rng=rng)
    if error is not None:
        raise error
    return attempts


def try_deliver(
    notifier: Notifier,
    notification: Notification,
    policy: DeliveryPolicy = DEFAULT_POLICY,
    *,
    sleep: Sleep = time.sleep,
    rng: Random = random.random,
) -> tuple[int, NotifyError | None]:
    """Send ``notification`` as :func:`deliver` does; return the attempts made and the last
    failure (None when delivered).

    An exception other than NotifyError from a third-party notifier becomes a NotifyError
    that names only its type (its message might hold a secret), and is not retried.
    """
    attempt = 0
    while True:
        attempt += 1
        try:
            notifier.send(notification)
        except NotifyError as exc:
            error = exc
        except Exception as exc:
            failed = f"the notifier failed with {type(exc).__name__}"
            return attempt, NotifyError(notification.receiver, failed)
        else:
            return attempt, None
        if not error.retryable or attempt >= policy.attempts:
            return attempt, error
        wait = policy.backoff(attempt, rng())
        if error.retry_after is not None:
            if error.retry_after > policy.retry_after_max_seconds:
                return attempt, error
            wait = max(wait, error.retry_after)
        sleep(wait)
