"""Notifiers against real HTTP receivers on 127.0.0.1, with the real SQLite store.

Each receiver is a :class:`~monitor.alerts.testing.RecordingReceiver`: a stdlib HTTP server
on a free port in a thread that records requests and answers as scripted. Requests go
through real sockets and httpx's real transport.
"""

from __future__ import annotations

import http.client
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor.alerts.build import regression_alert
from monitor.alerts.delivery import DeliveryPolicy
from monitor.alerts.lifecycle import AlertLifecycle
from monitor.alerts.model import Alert, RegressionDetails
from monitor.alerts.notifiers import webhook
from monitor.alerts.outbox import OUTBOX_KIND
from monitor.alerts.registry import build_notifiers
from monitor.alerts.testing import ManualClock, RecordingReceiver, breach, worse
from monitor.config.common import NotifierConfig, ScheduleConfig
from monitor.config.model import EvalSetConfig, SearchConfig, Secret, SuiteConfig
from monitor.store import Store, open_store

SIGNING_KEY = "whsec-0123456789"
FAST = DeliveryPolicy(attempts=3, backoff_seconds=0.01, backoff_max_seconds=0.05)
EVIDENCE = RegressionDetails(
    breach("recall@5", 0.70, 0.81, p_value=0.003, ci_low=-0.15, ci_high=-0.05),
    worse_queries=(worse("q3", "sick leave", 1.0, 0.0, ("d4",), ("d9", "d2")),),
)


@pytest.fixture
def receiver() -> Iterator[RecordingReceiver]:
    """Return a running receiver that answers 200."""
    with RecordingReceiver() as running:
        yield running


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """Return the path of a fresh SQLite store."""
    return tmp_path / "monitor.db"


@pytest.fixture
def clock() -> ManualClock:
    """Return a clock at 2030-01-01 UTC."""
    return ManualClock()


def suite(*notifiers: NotifierConfig) -> SuiteConfig:
    """Return a suite ``nightly`` run hourly with these notifiers."""
    return SuiteConfig(
        name="nightly",
        evalset=EvalSetConfig(bundled="larkfield"),
        search=SearchConfig(kind="replay"),
        metrics=(),
        k=10,
        pipeline="nightly",
        schedule=ScheduleConfig(interval_seconds=3600.0),
        notifiers=notifiers,
    )


def hook(receiver: RecordingReceiver, path: str = "/hook", **options: object) -> NotifierConfig:
    """Return a signed webhook notifier posting to ``receiver``."""
    return NotifierConfig(
        "webhook",
        url=Secret(receiver.url + path),
        secret_env="HOOK_KEY",
        options=options,
    )


def alert(clock: ManualClock) -> Alert:
    """Return the recall@5 regression of ``nightly``, seen now."""
    return regression_alert("nightly", EVIDENCE, at=clock())


def run(
    db: Path,
    config: SuiteConfig,
    clock: ManualClock,
    firing: list[Alert],
    sleeps: list[float] | None = None,
) -> AlertLifecycle:
    """Do what one one-shot job does: open the store, flush the outbox, update, close."""
    store: Store = open_store(db)
    try:
        notifiers = build_notifiers(config, clock=clock, environ={"HOOK_KEY": SIGNING_KEY})
        life = AlertLifecycle(
            store,
            notifiers,
            clock=clock,
            policy=FAST,
            sleep=(sleeps.append if sleeps is not None else lambda s: None),
        )
        life.flush()
        life.update(config.name, "regression", firing)
        return life
    finally:
        store.close()


def pending(db: Path) -> int:
    """Return how many notifications wait in the outbox."""
    with open_store(db) as store:
        return len(store.pending(OUTBOX_KIND))


# --- what arrives --------------------------------------------------------------------------


def test_the_webhook_payload_arrives_in_alertmanagers_shape(
    receiver: RecordingReceiver, db: Path, clock: ManualClock
) -> None:
    """The receiver gets one version-4 payload with one firing alert."""
    run(db, suite(hook(receiver)), clock, [alert(clock)])
    (body,) = receiver.bodies("/hook")
    assert ("4", "firing", "nightly/webhook", alert(clock).fingerprint) == (
        body["version"],
        body["status"],
        body["receiver"],
        body["alerts"][0]["fingerprint"],
    )


def test_the_receiver_can_verify_the_signature(
    receiver: RecordingReceiver, db: Path, clock: ManualClock
) -> None:
    """The signature header verifies against the exact bytes the receiver read."""
    run(db, suite(hook(receiver)), clock, [alert(clock)])
    (request,) = receiver.accepted
    assert webhook.verify_signature(
        SIGNING_KEY, request.body, request.headers["x-retrieval-monitor-signature"]
    )


def test_slack_pagerduty_and_alertmanager_payloads_arrive(
    receiver: RecordingReceiver, db: Path, clock: ManualClock
) -> None:
    """Each notifier posts its own shape to its own path."""
    config = suite(
        NotifierConfig("slack", url=Secret(receiver.url + "/slack")),
        NotifierConfig(
            "pagerduty",
            url=Secret(receiver.url + "/v2/enqueue"),
            options={"routing_key": Secret("pd-routing-key-0123456789")},
        ),
        NotifierConfig("alertmanager", url=Secret(receiver.url + "/am")),
    )
    run(db, config, clock, [alert(clock)])
    slack_body, pd_body, am_body = (
        receiver.bodies("/slack"),
        receiver.bodies("/v2/enqueue"),
        receiver.bodies("/am/api/v2/alerts"),
    )
    assert (True, "trigger", "nightly") == (
        "blocks" in slack_body[0],
        pd_body[0]["event_action"],
        am_body[0][0]["labels"]["suite"],
    )


def test_pagerduty_resolves_what_it_triggered(
    receiver: RecordingReceiver, db: Path, clock: ManualClock
) -> None:
    """Trigger and resolve carry the same dedup key."""
    config = suite(
        NotifierConfig(
            "pagerduty",
            url=Secret(receiver.url + "/v2/enqueue"),
            options={"routing_key": Secret("pd-routing-key-0123456789")},
        )
    )
    run(db, config, clock, [alert(clock)])
    clock.advance(hours=1)
    run(db, config, clock, [])
    trigger, resolve = receiver.bodies()
    assert (["trigger", "resolve"], trigger["dedup_key"]) == (
        [trigger["event_action"], resolve["event_action"]],
        resolve["dedup_key"],
    )


# --- failures and retries -----------------------------------------------------------------


def test_a_500_is_retried_and_delivered_once(db: Path, clock: ManualClock) -> None:
    """A 500 then a 200: two requests, one delivery, nothing left waiting."""
    with RecordingReceiver([500]) as receiver:
        run(db, suite(hook(receiver)), clock, [alert(clock)])
    assert (2, 1, 0) == (len(receiver.requests), len(receiver.accepted), pending(db))


def test_a_429_waits_as_long_as_asked(db: Path, clock: ManualClock) -> None:
    """A 429 with Retry-After: 2 is retried after two seconds."""
    sleeps: list[float] = []
    with RecordingReceiver([(429, {"Retry-After": "2"}, b"slow down")]) as receiver:
        run(db, suite(hook(receiver)), clock, [alert(clock)], sleeps)
    assert ([2.0], 1) == (sleeps, len(receiver.accepted))


def test_a_400_is_not_retried_and_waits_in_the_outbox(db: Path, clock: ManualClock) -> None:
    """A rejection is tried once and kept, with its error recorded."""
    with RecordingReceiver([400], default=400) as receiver:
        run(db, suite(hook(receiver)), clock, [alert(clock)])
    with open_store(db) as store:
        (message,) = store.pending(OUTBOX_KIND)
    assert (1, 1, "the receiver answered HTTP 400") == (
        len(receiver.requests),
        message.attempts,
        message.last_error.split(": ", 1)[1] if message.last_error else None,
    )


@pytest.mark.slow
def test_a_receiver_that_never_answers_times_out(db: Path, clock: ManualClock) -> None:
    """A receiver that accepts connections and never answers is given up on in time."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/hook"
        config = suite(NotifierConfig("webhook", url=Secret(url), options={"timeout": 0.2}))
        started = time.monotonic()
        run(db, config, clock, [alert(clock)])
        took = time.monotonic() - started
    with open_store(db) as store:
        (message,) = store.pending(OUTBOX_KIND)
    assert (True, "notifier nightly/webhook: timed out (ReadTimeout)") == (
        took < 5.0,
        message.last_error,
    )


def test_secrets_stay_out_of_the_outbox_and_its_errors(db: Path, clock: ManualClock) -> None:
    """Neither the URL's secret path nor the signing key is stored with a waiting message."""
    with RecordingReceiver([404], default=404) as receiver:
        config = suite(hook(receiver, "/services/T0/B0/SECRETPATH"))
        run(db, config, clock, [alert(clock)])
    with open_store(db) as store:
        (message,) = store.pending(OUTBOX_KIND)
    stored = f"{dict(message.payload)} {message.key} {message.last_error}"
    assert (False, False) == ("SECRETPATH" in stored, SIGNING_KEY in stored)


# --- outage and recovery -------------------------------------------------------------------


def test_a_stopped_receiver_answers_nothing_on_a_connection_opened_before() -> None:
    """Stopping ends the kept-alive connections too: the next request on one is not recorded,
    and no thread of the receiver is left running."""
    before = set(threading.enumerate())
    receiver = RecordingReceiver().start()
    connection = http.client.HTTPConnection("127.0.0.1", receiver.port, timeout=5)

    def post() -> None:
        connection.request("POST", "/hook", body=b"{}")
        connection.getresponse().read()

    try:
        post()
        receiver.stop()
        with pytest.raises(ConnectionError):
            post()
    finally:
        connection.close()
    assert (1, []) == (
        len(receiver.requests),
        [t.name for t in threading.enumerate() if t not in before],
    )


def test_an_outage_is_bridged_by_the_outbox(db: Path, clock: ManualClock) -> None:
    """Down: kept. Up again: the next run delivers it once, and no duplicate follows."""
    receiver = RecordingReceiver().start()
    config = suite(hook(receiver))
    receiver.stop()
    run(db, config, clock, [alert(clock)])
    waiting_while_down = pending(db)
    receiver.start()
    try:
        for _ in range(3):
            clock.advance(hours=1)
            run(db, config, clock, [alert(clock)])
    finally:
        receiver.stop()
    assert (1, ["firing"], 0) == (
        waiting_while_down,
        [b["status"] for b in receiver.bodies()],
        pending(db),
    )


def test_a_resolve_during_an_outage_arrives_after_its_firing(db: Path, clock: ManualClock) -> None:
    """Firing while up, resolved while down: the resolve is delivered after recovery."""
    receiver = RecordingReceiver().start()
    config = suite(hook(receiver))
    run(db, config, clock, [alert(clock)])
    receiver.stop()
    clock.advance(hours=1)
    run(db, config, clock, [])
    receiver.start()
    try:
        clock.advance(hours=1)
        run(db, config, clock, [])
    finally:
        receiver.stop()
    assert ["firing", "resolved"] == [b["status"] for b in receiver.bodies()]


def test_reminders_respect_the_repeat_interval(
    receiver: RecordingReceiver, db: Path, clock: ManualClock
) -> None:
    """Hourly runs for 9 hours with repeat_interval 4h: three messages at 0h, 4h and 8h."""
    config = suite(hook(receiver, repeat_interval="4h"))
    seen = []
    for _ in range(9):
        before = len(receiver.accepted)
        run(db, config, clock, [alert(clock)])
        if len(receiver.accepted) > before:
            seen.append(clock().hour)
        clock.advance(hours=1)
    assert [0, 4, 8] == seen
