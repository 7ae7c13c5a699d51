"""Notifications are at least once: every delivery of one notification carries one key.

Receivers are :class:`~monitor.alerts.testing.RecordingReceiver` servers on 127.0.0.1 and
the store is the real SQLite one, as a one-shot job uses them.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import httpx
import pytest

from monitor.alerts.base import Notification, NotifierContext, notification_key
from monitor.alerts.build import failure_alert, regression_alert
from monitor.alerts.delivery import DeliveryPolicy
from monitor.alerts.lifecycle import AlertLifecycle
from monitor.alerts.model import Alert, RegressionDetails
from monitor.alerts.outbox import OUTBOX_KIND, enqueue, notification_from
from monitor.alerts.registry import build_notifier, build_notifiers
from monitor.alerts.testing import ManualClock, MemoryStore, RecordingReceiver, breach
from monitor.config.common import NotifierConfig, ScheduleConfig
from monitor.config.model import EvalSetConfig, SearchConfig, Secret, SuiteConfig
from monitor.store import open_store

FAST = DeliveryPolicy(attempts=2, backoff_seconds=0.0, backoff_max_seconds=0.0)
EVIDENCE = RegressionDetails(breach("recall@5", 0.70, 0.81))
T0 = datetime(2030, 1, 1, tzinfo=timezone.utc)
KEY = "idempotency-key"


def suite(receiver: RecordingReceiver, **options: object) -> SuiteConfig:
    """Return a suite ``nightly`` run hourly with a webhook notifier posting to ``receiver``."""
    return SuiteConfig(
        name="nightly",
        evalset=EvalSetConfig(bundled="larkfield"),
        search=SearchConfig(kind="replay"),
        metrics=(),
        k=10,
        pipeline="nightly",
        schedule=ScheduleConfig(interval_seconds=3600.0),
        notifiers=(NotifierConfig("webhook", url=Secret(receiver.url + "/hook"), options=options),),
    )


def run(db: Path, config: SuiteConfig, clock: ManualClock, firing: list[Alert]) -> None:
    """Do what one one-shot job does: open the store, flush the outbox, update, close."""
    with open_store(db) as store:
        life = AlertLifecycle(
            store, build_notifiers(config, clock=clock), clock=clock, policy=FAST, sleep=no_wait
        )
        life.flush()
        life.update(config.name, "regression", firing)


def no_wait(seconds: float) -> None:
    """Do not sleep between attempts."""


def keys(receiver: RecordingReceiver) -> list[str]:
    """Return the Idempotency-Key header of every request the receiver got, in order."""
    return [request.headers[KEY] for request in receiver.requests]


def test_a_retried_delivery_carries_the_same_key(tmp_path: Path) -> None:
    """A 503 then a 200: both requests carry one key."""
    clock = ManualClock()
    with RecordingReceiver([503]) as receiver:
        run(
            tmp_path / "m.db",
            suite(receiver),
            clock,
            [regression_alert("nightly", EVIDENCE, at=T0)],
        )
    first, second = keys(receiver)
    assert (first, 1) == (second, len(receiver.accepted))


def test_a_later_reminder_carries_another_key(tmp_path: Path) -> None:
    """The firing (retried after a 503) and the reminder an hour later: two keys, not three."""
    clock, db = ManualClock(), tmp_path / "m.db"
    with RecordingReceiver([503]) as receiver:
        config = suite(receiver, repeat_interval="1h")
        alert = regression_alert("nightly", EVIDENCE, at=clock())
        run(db, config, clock, [alert])
        clock.advance(hours=1)
        run(db, config, clock, [alert])
    firing, retried, reminder = keys(receiver)
    assert (firing, 2) == (retried, len({firing, reminder}))


def test_a_message_kept_in_the_outbox_keeps_its_key_on_a_later_run(tmp_path: Path) -> None:
    """Two 503s in one run, accepted on the next: three requests, one key."""
    clock, db = ManualClock(), tmp_path / "m.db"
    with RecordingReceiver([503, 503]) as receiver:
        config = suite(receiver)
        alert = regression_alert("nightly", EVIDENCE, at=clock())
        run(db, config, clock, [alert])
        clock.advance(hours=1)
        run(db, config, clock, [alert])
    assert (1, 3, 1) == (len(set(keys(receiver))), len(receiver.requests), len(receiver.accepted))


def test_firing_reminders_and_resolve_each_have_their_own_key(tmp_path: Path) -> None:
    """Firing, two reminders and the resolve of one episode: four different keys."""
    clock, db = ManualClock(), tmp_path / "m.db"
    with RecordingReceiver() as receiver:
        config = suite(receiver, repeat_interval="1h")
        alert = regression_alert("nightly", EVIDENCE, at=clock())
        for firing in ([alert], [alert], [alert], []):
            run(db, config, clock, firing)
            clock.advance(hours=1)
    statuses = [body["status"] for body in receiver.bodies()]
    assert (["firing"] * 3 + ["resolved"], 4) == (statuses, len(set(keys(receiver))))


def test_the_webhook_body_carries_the_key_of_its_header(tmp_path: Path) -> None:
    """The webhook payload's idempotencyKey is the Idempotency-Key header."""
    with RecordingReceiver() as receiver:
        run(
            tmp_path / "m.db",
            suite(receiver),
            ManualClock(),
            [regression_alert("nightly", EVIDENCE, at=T0)],
        )
    (request,) = receiver.accepted
    assert request.headers[KEY] == request.json()["idempotencyKey"]


class Captured:
    """A MockTransport handler that records requests and answers 202."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(202)


@pytest.mark.parametrize(
    "config",
    [
        NotifierConfig("webhook", url=Secret("http://127.0.0.1:9/hook")),
        NotifierConfig("slack", url=Secret("https://hooks.slack.test/services/T/B/X")),
        NotifierConfig("alertmanager", url=Secret("http://127.0.0.1:9093")),
        NotifierConfig("pagerduty", options={"routing_key": Secret("R0UTINGKEY")}),
    ],
    ids=lambda config: config.kind,
)
def test_every_http_notifier_sends_the_key_as_a_header(config: NotifierConfig) -> None:
    """Each HTTP notifier sends the notification's key as Idempotency-Key."""
    captured = Captured()
    context = NotifierContext("nightly/test", transport=httpx.MockTransport(captured))
    note = Notification(regression_alert("nightly", EVIDENCE, at=T0), "firing", "nightly/test")
    build_notifier(config, context).send(note)
    assert note.idempotency_key == captured.requests[0].headers[KEY]


def test_slack_carries_the_key_in_its_context_block() -> None:
    """Slack's body keeps the key as the context block's block_id."""
    captured = Captured()
    context = NotifierContext("nightly/test", transport=httpx.MockTransport(captured))
    config = NotifierConfig("slack", url=Secret("https://hooks.slack.test/services/T/B/X"))
    note = Notification(regression_alert("nightly", EVIDENCE, at=T0), "firing", "nightly/test")
    build_notifier(config, context).send(note)
    blocks = json.loads(captured.requests[0].content)["blocks"]
    assert note.idempotency_key == blocks[-1]["block_id"]


def test_the_key_is_derived_from_receiver_alert_episode_and_transition() -> None:
    """The same notification built twice has one key; another transition, another key."""
    alert = failure_alert("nightly", "search_backend_down", "refused", at=T0)
    firing = Notification(alert, "firing", "nightly/hook")
    assert (firing.idempotency_key, False) == (
        Notification(alert, "firing", "nightly/hook").idempotency_key,
        firing.idempotency_key == Notification(alert, "repeat", "nightly/hook").idempotency_key,
    )


def test_a_reminder_replacing_a_waiting_one_keeps_its_key() -> None:
    """Enqueued twice while the first still waits, a reminder keeps the first key."""
    store = MemoryStore()
    alert = failure_alert("nightly", "search_backend_down", "refused", at=T0)
    enqueue(store, Notification(alert, "repeat", "nightly/hook"))
    first = store.pending(OUTBOX_KIND)[0].payload["idempotency_key"]
    enqueue(store, Notification(alert, "repeat", "nightly/hook"))
    (message,) = store.pending(OUTBOX_KIND)
    assert first == message.payload["idempotency_key"]


def test_a_reminder_after_a_delivered_one_gets_a_new_key() -> None:
    """Once a reminder was delivered, the next reminder of the episode has another key."""
    store = MemoryStore()
    alert = failure_alert("nightly", "search_backend_down", "refused", at=T0)
    first_id = enqueue(store, Notification(alert, "repeat", "nightly/hook"))
    store.mark_delivered(first_id)
    enqueue(store, Notification(alert, "repeat", "nightly/hook"))
    first, second = (m.payload["idempotency_key"] for m in store.messages)
    assert (True, False) == (bool(second), first == second)


def test_an_outbox_payload_without_a_key_reads_with_the_derived_one() -> None:
    """A message written before keys were kept is sent with the key its alert gives."""
    alert = failure_alert("nightly", "search_backend_down", "refused", at=T0)
    data = {"version": 1, "notifier": "nightly/hook", "transition": "firing"}
    note = notification_from({**data, "alert": alert.to_dict()})
    assert notification_key("nightly/hook", alert, "firing") == note.idempotency_key


def test_a_run_killed_before_saving_its_state_sends_no_second_firing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run killed after queuing a firing but before saving the alert state: the next run
    delivers the queued firing and sends no second one under a new key; the resolve that
    follows comes under the incident's own key."""
    clock, db = ManualClock(), tmp_path / "m.db"
    with RecordingReceiver() as receiver:
        config = suite(receiver)
        alert = regression_alert("nightly", EVIDENCE, at=clock())
        with open_store(db) as store:
            life = AlertLifecycle(store, build_notifiers(config, clock=clock), clock=clock)

            def killed(*args: object, **kwargs: object) -> None:
                raise KeyboardInterrupt  # the kill, between the outbox and the state

            monkeypatch.setattr(store, "put_state", killed)
            with pytest.raises(KeyboardInterrupt):
                life.update(config.name, "regression", [alert])
        monkeypatch.undo()
        clock.advance(hours=1)
        run(db, config, clock, [regression_alert("nightly", EVIDENCE, at=clock())])
        clock.advance(hours=1)
        run(db, config, clock, [])
    statuses = [body["status"] for body in receiver.bodies()]
    firing, resolved = keys(receiver)
    assert (["firing", "resolved"], True) == (statuses, firing != resolved)
