"""Delivery: one classified HTTP attempt, bounded retries with backoff, jitter and Retry-After."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timezone

import httpx
import pytest

from monitor.alerts.base import Notification, NotifierContext
from monitor.alerts.build import failure_alert
from monitor.alerts.delivery import DeliveryPolicy, deliver, try_deliver
from monitor.alerts.http import Poster, retry_after
from monitor.alerts.notifiers import webhook
from monitor.alerts.testing import RecordingNotifier
from monitor.config.common import NotifierConfig
from monitor.config.model import Secret
from monitor.errors import NotifierSetupError, NotifyError, UsageError

T0 = datetime(2030, 1, 1, tzinfo=timezone.utc)
URL = Secret("https://hooks.example.test/services/T000/B000/XXXXSECRETXXXX", "https://***")
ALERT = failure_alert("s", "search_backend_down", "connection refused", at=T0)
NOTE = Notification(ALERT, "firing", "s/test")


def down(retry: float | None = None, status: int | None = 503) -> NotifyError:
    """Return a retryable failure, as a 503 answer gives."""
    return NotifyError("s/test", "busy", retryable=True, status=status, retry_after=retry)


def rejected() -> NotifyError:
    """Return a failure that retrying cannot help, as a 400 answer gives."""
    return NotifyError("s/test", "bad request", status=400)


class Sleeps(list[float]):
    """Records the sleeps asked for instead of sleeping."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def poster(handler: Callable[[httpx.Request], httpx.Response], **kwargs: object) -> Poster:
    """Return a poster to URL whose requests ``handler`` answers."""
    return Poster("s/hook", URL, transport=httpx.MockTransport(handler), **kwargs)  # type: ignore[arg-type]


# --- backoff -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("attempt", "draw", "wait"),
    [(1, 0.0, 0.25), (1, 0.999, 0.49975), (2, 0.0, 0.5), (3, 0.5, 1.5), (10, 0.0, 4.0)],
)
def test_backoff_doubles_with_half_of_it_random_up_to_the_cap(
    attempt: int, draw: float, wait: float
) -> None:
    """The wait is half fixed, half drawn, doubling per attempt up to the cap."""
    assert wait == pytest.approx(DeliveryPolicy().backoff(attempt, draw))


def test_a_policy_needs_at_least_one_attempt() -> None:
    """Zero attempts is a usage error."""
    with pytest.raises(UsageError, match="attempts must be 1 or more"):
        DeliveryPolicy(attempts=0)


# --- retries -------------------------------------------------------------------------------


def test_retryable_failures_are_retried_until_delivered() -> None:
    """Two 503s then success: three attempts, two waits, one delivery."""
    notifier, sleeps = RecordingNotifier("s/test", failures=[down(), down()]), Sleeps()
    attempts = deliver(notifier, NOTE, sleep=sleeps, rng=lambda: 0.0)
    assert (3, [0.25, 0.5], 1) == (attempts, sleeps, len(notifier.sent))


def test_a_rejection_is_not_retried() -> None:
    """A 4xx other than 429 fails at once."""
    notifier, sleeps = RecordingNotifier("s/test", failures=[rejected()]), Sleeps()
    with pytest.raises(NotifyError, match="bad request"):
        deliver(notifier, NOTE, sleep=sleeps)
    assert (1, []) == (len(notifier.calls), sleeps)


def test_retries_are_bounded() -> None:
    """A receiver that stays down gets ``attempts`` tries, then the last error is raised."""
    notifier = RecordingNotifier("s/test", failures=[down()] * 10)
    attempts, error = try_deliver(notifier, NOTE, DeliveryPolicy(attempts=3), sleep=Sleeps())
    assert (3, 3, 503) == (attempts, len(notifier.calls), error.status if error else None)


def test_retry_after_is_honoured_when_longer_than_the_backoff() -> None:
    """A 429 asking for 5 seconds waits 5 seconds."""
    notifier, sleeps = RecordingNotifier("s/test", failures=[down(5.0, 429)]), Sleeps()
    deliver(notifier, NOTE, sleep=sleeps, rng=lambda: 0.0)
    assert [5.0] == sleeps


def test_a_retry_after_beyond_the_bound_leaves_it_to_the_next_run() -> None:
    """A receiver asking for an hour is not waited for."""
    notifier, sleeps = RecordingNotifier("s/test", failures=[down(3600.0, 429)]), Sleeps()
    attempts, error = try_deliver(notifier, NOTE, sleep=sleeps)
    assert (1, [], 3600.0) == (attempts, sleeps, error.retry_after if error else None)


def test_a_plugin_crash_becomes_a_notify_error_naming_only_its_type() -> None:
    """An unexpected exception is reported by type (its text may hold a secret)."""

    class Broken:
        def send(self, notification: Notification) -> None:
            raise RuntimeError(URL.reveal())

    attempts, error = try_deliver(Broken(), NOTE, sleep=Sleeps())
    assert (1, "notifier s/test: the notifier failed with RuntimeError") == (attempts, str(error))


# --- one HTTP attempt ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "retryable"),
    [(500, True), (502, True), (503, True), (429, True), (400, False), (404, False), (410, False)],
)
def test_status_codes_are_classified(status: int, retryable: bool) -> None:
    """5xx and 429 may pass; other 4xx answers are rejections."""
    with pytest.raises(NotifyError) as caught:
        poster(lambda request: httpx.Response(status)).post(b"{}")
    assert (retryable, status) == (caught.value.retryable, caught.value.status)


def test_a_2xx_answer_is_delivered() -> None:
    """Any 2xx answer counts as delivered."""
    assert 202 == poster(lambda request: httpx.Response(202)).post(b"{}")


@pytest.mark.parametrize(
    "failure",
    [
        httpx.ConnectError("[Errno 111] Connection refused"),
        httpx.ReadTimeout("timed out"),
        httpx.RemoteProtocolError("Server disconnected without sending a response."),
    ],
)
def test_connection_failures_are_retryable(failure: Exception) -> None:
    """Refused connections, timeouts and dropped connections may pass."""

    def fail(request: httpx.Request) -> httpx.Response:
        raise failure

    with pytest.raises(NotifyError) as caught:
        poster(fail).post(b"{}")
    assert (True, None) == (caught.value.retryable, caught.value.status)


def test_retry_after_is_read_from_the_answer() -> None:
    """The Retry-After header of a 429 becomes the error's ``retry_after``."""
    answer = httpx.Response(429, headers={"Retry-After": "7"})
    with pytest.raises(NotifyError) as caught:
        poster(lambda request: answer).post(b"{}")
    assert 7.0 == caught.value.retry_after


@pytest.mark.parametrize(
    ("header", "seconds"),
    [("12", 12.0), ("Tue, 01 Jan 2030 00:00:30 GMT", 30.0), ("-4", 0.0), ("soon", None)],
)
def test_retry_after_takes_seconds_or_a_date(header: str, seconds: float | None) -> None:
    """Retry-After is seconds or an HTTP date; nonsense is ignored."""
    assert seconds == retry_after(header, T0)


def test_each_attempt_carries_the_timeout() -> None:
    """Every request is sent with the configured timeout."""
    seen: list[dict[str, float]] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request.extensions["timeout"])
        return httpx.Response(200)

    poster(record, timeout_seconds=2.5).post(b"{}")
    assert {"connect": 2.5, "read": 2.5, "write": 2.5, "pool": 2.5} == seen[0]


def test_errors_never_show_the_url_or_secrets_even_when_the_receiver_echoes_them() -> None:
    """A receiver quoting the URL or a header value in its answer has it masked."""
    echo = f"no such hook {URL.reveal()} (token Bearer-s3cr3t)"
    with pytest.raises(NotifyError) as caught:
        poster(
            lambda request: httpx.Response(404, text=echo),
            headers={"Authorization": "Bearer-s3cr3t"},
        ).post(b"{}")
    message = str(caught.value)
    assert (False, False, True) == (
        URL.reveal() in message,
        "s3cr3t" in message,
        message.startswith("notifier s/hook: the receiver answered HTTP 404: no such hook ***"),
    )


def test_a_bad_url_is_refused_without_showing_it() -> None:
    """A URL that is not http(s) is a setup error that shows only the masked form."""
    with pytest.raises(NotifierSetupError) as caught:
        Poster("s/hook", Secret("ftp://user:pw@host/x", "ftp://***"))
    assert "notifier s/hook: url ftp://*** is not an http(s) URL" == str(caught.value)


def test_httpx_never_logs_the_url(caplog: pytest.LogCaptureFixture) -> None:
    """Sending logs nothing that holds the webhook URL, at any level."""
    caplog.set_level(logging.DEBUG)
    config = NotifierConfig("webhook", url=URL)
    context = NotifierContext(
        "s/hook", transport=httpx.MockTransport(lambda r: httpx.Response(200))
    )
    webhook.build(config, context).send(NOTE)
    assert [] == [r.getMessage() for r in caplog.records if "SECRET" in r.getMessage()]
