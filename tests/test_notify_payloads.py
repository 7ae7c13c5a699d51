"""What each built-in notifier sends, seen through an httpx MockTransport."""

from __future__ import annotations

import hashlib
import hmac
import io
import json
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx
import pytest

from monitor.alerts.base import Notification, Notifier, NotifierContext
from monitor.alerts.build import regression_alert
from monitor.alerts.model import Alert, RegressionDetails
from monitor.alerts.notifiers import alertmanager, pagerduty, slack, stdout, webhook
from monitor.alerts.registry import build_notifier
from monitor.alerts.testing import ManualClock, breach, worse
from monitor.alerts.text import alert_annotations
from monitor.config.common import LinksConfig, NotifierConfig
from monitor.config.model import Secret
from monitor.errors import NotifierSetupError

T0 = datetime(2030, 1, 1, 9, 0, tzinfo=timezone.utc)
LINKS = LinksConfig(report="https://r.example/run/7", dashboard="https://d.example", runbook=None)
EVIDENCE = RegressionDetails(
    breach("recall@5", 0.70, 0.81, p_value=0.002),
    worse_queries=(worse("q17", "travel <policy>", 1.0, 0.0, ("d3",), ("d1",)),),
)
FIRING = regression_alert("nightly", EVIDENCE, at=T0, labels={"team": "search"}, links=LINKS)
RESOLVED = FIRING.resolved(T0 + timedelta(hours=2))


class Captured:
    """A MockTransport handler that records requests and answers 200."""

    def __init__(self, status: int = 200) -> None:
        self.requests: list[httpx.Request] = []
        self.status = status

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(self.status)

    @property
    def body(self) -> Any:
        """Return the last request's JSON body."""
        return json.loads(self.requests[-1].content)


def make(
    config: NotifierConfig,
    captured: Captured | None = None,
    *,
    environ: dict[str, str] | None = None,
    clock: ManualClock | None = None,
    interval: float = 3600.0,
) -> Notifier:
    """Build the notifier of ``config`` named ``nightly/test``, sending to ``captured``."""
    context = NotifierContext(
        "nightly/test",
        suite="nightly",
        interval_seconds=interval,
        transport=httpx.MockTransport(captured or Captured()),
        clock=clock or ManualClock(T0),
        environ=environ or {},
    )
    return build_notifier(config, context)


def send(notifier: Notifier, alert: Alert = FIRING, transition: str = "") -> None:
    """Send ``alert`` through ``notifier`` as its natural transition."""
    transition = transition or ("firing" if alert.firing else "resolved")
    notifier.send(Notification(alert, transition, "nightly/test"))  # type: ignore[arg-type]


HOOK = NotifierConfig("webhook", url=Secret("http://127.0.0.1:9/hook"))


# --- webhook -------------------------------------------------------------------------------


def test_webhook_sends_alertmanagers_payload_shape() -> None:
    """The body has exactly the keys of Alertmanager's webhook payload, version 4, and the
    notification's idempotency key."""
    captured = Captured()
    send(make(HOOK, captured))
    assert [
        "version",
        "groupKey",
        "truncatedAlerts",
        "status",
        "receiver",
        "groupLabels",
        "commonLabels",
        "commonAnnotations",
        "externalURL",
        "alerts",
        "idempotencyKey",
    ] == list(captured.body)


def test_webhook_top_level_values() -> None:
    """Version "4", the status, the receiver's name, the group and the external URL."""
    captured = Captured()
    send(make(HOOK, captured))
    body = captured.body
    assert (
        "4",
        "firing",
        "nightly/test",
        0,
        '{}:{alertname="RetrievalRegression", metric="recall@5", '
        'rule="recall@5 max_drop", suite="nightly"}',
        "https://d.example",
    ) == (
        body["version"],
        body["status"],
        body["receiver"],
        body["truncatedAlerts"],
        body["groupKey"],
        body["externalURL"],
    )


def test_webhook_alert_entry_while_firing() -> None:
    """A firing alert has Go's zero time as endsAt, and its fingerprint and labels."""
    captured = Captured()
    send(make(HOOK, captured))
    entry = captured.body["alerts"][0]
    assert {
        "status": "firing",
        "labels": FIRING.label_set(),
        "annotations": alert_annotations(FIRING),
        "startsAt": "2030-01-01T09:00:00.000000Z",
        "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": "https://r.example/run/7",
        "fingerprint": FIRING.fingerprint,
    } == entry


def test_webhook_resolved_entry_ends_when_it_cleared() -> None:
    """A resolved alert is sent with status resolved and its end time."""
    captured = Captured()
    send(make(HOOK, captured), RESOLVED)
    entry = captured.body["alerts"][0]
    assert ("resolved", "resolved", "2030-01-01T11:00:00.000000Z") == (
        captured.body["status"],
        entry["status"],
        entry["endsAt"],
    )


def test_webhook_signature_verifies_over_the_exact_body() -> None:
    """The signature header is HMAC-SHA256 of the body bytes with the secret from the env."""
    captured = Captured()
    config = NotifierConfig("webhook", url=Secret("http://127.0.0.1:9/h"), secret_env="HOOK_KEY")
    send(make(config, captured, environ={"HOOK_KEY": "k3y"}))
    request = captured.requests[-1]
    expected = "sha256=" + hmac.new(b"k3y", request.content, hashlib.sha256).hexdigest()
    assert (expected, True) == (
        request.headers["x-retrieval-monitor-signature"],
        webhook.verify_signature("k3y", request.content, expected),
    )


def test_a_tampered_body_fails_verification() -> None:
    """Changing one byte of the body breaks the signature."""
    signature = webhook.sign("k3y", b'{"status":"firing"}')
    assert False is webhook.verify_signature("k3y", b'{"status":"resolved"}', signature)


def test_webhook_without_secret_is_unsigned() -> None:
    """Without secret_env there is no signature header."""
    captured = Captured()
    send(make(HOOK, captured))
    assert "x-retrieval-monitor-signature" not in captured.requests[-1].headers


def test_a_missing_signing_secret_names_the_variable() -> None:
    """A secret_env whose variable is not set is a setup error naming the variable."""
    config = NotifierConfig("webhook", url=Secret("http://127.0.0.1:9/h"), secret_env="HOOK_KEY")
    with pytest.raises(NotifierSetupError, match="HOOK_KEY"):
        make(config)


def test_webhook_sends_extra_headers() -> None:
    """``headers`` are sent with every request."""
    captured = Captured()
    config = NotifierConfig(
        "webhook",
        url=Secret("http://127.0.0.1:9/h"),
        options={"headers": {"Authorization": Secret("Bearer t")}},
    )
    send(make(config, captured))
    assert "Bearer t" == captured.requests[-1].headers["authorization"]


# --- slack ---------------------------------------------------------------------------------

SLACK = NotifierConfig("slack", url=Secret("https://hooks.example.test/services/X"))


def test_slack_sends_text_and_blocks() -> None:
    """The message has a plain ``text`` and ``blocks``: headline, evidence, links."""
    captured = Captured()
    send(make(SLACK, captured))
    body = captured.body
    assert (
        ":rotating_light: FIRING (warning): nightly: recall@5 dropped from 0.81 to 0.7 "
        "(more than the allowed 0.05)",
        ["section", "section", "context"],
    ) == (body["text"], [block["type"] for block in body["blocks"]])


def test_slack_escapes_its_reserved_characters() -> None:
    """``<``, ``>`` and ``&`` in alert text do not become Slack markup."""
    captured = Captured()
    send(make(SLACK, captured))
    assert "travel &lt;policy&gt;" in captured.body["blocks"][1]["text"]["text"]


def test_slack_links_and_start_in_the_context() -> None:
    """The context line gives the start and the links as Slack links."""
    captured = Captured()
    send(make(SLACK, captured))
    assert (
        "since 2030-01-01T09:00+00:00 | <https://r.example/run/7|report> | "
        "<https://d.example|dashboard>"
    ) == captured.body["blocks"][-1]["elements"][0]["text"]


def test_slack_resolved_is_one_line_and_the_links() -> None:
    """A resolved message drops the evidence."""
    captured = Captured()
    send(make(SLACK, captured), RESOLVED)
    assert ["section", "context"] == [block["type"] for block in captured.body["blocks"]]


def test_slack_resolved_headline_says_the_rule_holds_again() -> None:
    """A resolved message says the rule holds again instead of repeating the firing sentence."""
    captured = Captured()
    send(make(SLACK, captured), RESOLVED)
    expected = ":white_check_mark: RESOLVED (warning): nightly: recall@5 max_drop holds again"
    assert expected == captured.body["text"]


def test_slack_resolved_message_does_not_repeat_the_firing_sentence() -> None:
    """No part of a resolved message says that recall dropped."""
    captured = Captured()
    send(make(SLACK, captured), RESOLVED)
    assert False is ("dropped" in json.dumps(captured.body))


def test_slack_reminders_say_still_firing() -> None:
    """A repeat reads STILL FIRING."""
    captured = Captured()
    send(make(SLACK, captured), FIRING, "repeat")
    assert captured.body["text"].startswith(":warning: STILL FIRING")


def test_slack_passes_channel() -> None:
    """``channel`` goes into the body."""
    captured = Captured()
    config = NotifierConfig("slack", url=SLACK.url, options={"channel": "#search"})
    send(make(config, captured))
    assert "#search" == captured.body["channel"]


def test_slack_message_stays_short() -> None:
    """A long description is cut so the message stays within Slack's block limit."""
    many = tuple(worse(f"q{i}", "x" * 80, 1.0, 0.0, ("d",), ("e",), metric="m") for i in range(40))
    evidence = RegressionDetails(breach("m", 0.1, 0.5, threshold=0.1), worse_queries=many)
    long_alert = regression_alert("s", evidence, at=T0)
    captured = Captured()
    send(make(SLACK, captured), long_alert)
    detail = captured.body["blocks"][1]["text"]["text"]
    assert (True, True) == (len(detail) <= slack.MAX_DETAIL_CHARS, detail.endswith("..."))


# --- alertmanager ----------------------------------------------------------------------------

AM = NotifierConfig("alertmanager", url=Secret("http://127.0.0.1:9/prefix/"))


def test_alertmanager_posts_a_list_to_the_v2_api() -> None:
    """The body is a list of one postable alert, sent to <url>/api/v2/alerts."""
    captured = Captured()
    send(make(AM, captured))
    assert ("/prefix/api/v2/alerts", 1) == (captured.requests[-1].url.path, len(captured.body))


def test_alertmanager_keeps_a_firing_alert_alive_for_two_intervals() -> None:
    """While firing, endsAt is now plus twice the suite's interval."""
    captured, clock = Captured(), ManualClock(T0 + timedelta(hours=5))
    send(make(AM, captured, clock=clock, interval=900.0))
    posted = captured.body[0]
    assert {
        "labels": FIRING.label_set(),
        "annotations": alert_annotations(FIRING),
        "startsAt": "2030-01-01T09:00:00.000000Z",
        "endsAt": "2030-01-01T14:30:00.000000Z",
        "generatorURL": "https://r.example/run/7",
    } == posted


def test_alertmanager_resolves_with_the_end_time() -> None:
    """A resolved alert is posted with endsAt when it cleared."""
    captured = Captured()
    send(make(AM, captured, clock=ManualClock(T0 + timedelta(hours=9))), RESOLVED)
    assert "2030-01-01T11:00:00.000000Z" == captured.body[0]["endsAt"]


def test_alertmanager_is_told_on_every_run() -> None:
    """Its reminder interval is 0, so each run refreshes endsAt."""
    assert 0.0 == getattr(make(AM), "repeat_interval", None)


def test_alertmanager_ends_after_can_be_set() -> None:
    """``ends_after`` replaces the two intervals."""
    captured = Captured()
    config = NotifierConfig("alertmanager", url=AM.url, options={"ends_after": 60})
    send(make(config, captured))
    assert "2030-01-01T09:01:00.000000Z" == captured.body[0]["endsAt"]


# --- pagerduty ----------------------------------------------------------------------------

PD_KEY = "R0UT1NGKEY0123456789abcdef012345"
PAGER = NotifierConfig("pagerduty", url=Secret("http://127.0.0.1:9/v2/enqueue"), secret_env="PD")


def test_pagerduty_triggers_with_a_dedup_key_from_the_identity() -> None:
    """A firing alert is a trigger event with the routing key from the environment."""
    captured = Captured()
    send(make(PAGER, captured, environ={"PD": PD_KEY}))
    body = captured.body
    payload = body.pop("payload")
    assert {
        "routing_key": PD_KEY,
        "event_action": "trigger",
        "dedup_key": f"retrieval-monitor/nightly/{FIRING.fingerprint}",
        "client": "retrieval-monitor",
        "client_url": "https://d.example",
        "links": [
            {"href": "https://r.example/run/7", "text": "report"},
            {"href": "https://d.example", "text": "dashboard"},
        ],
    } == body
    assert (FIRING.summary, "retrieval-monitor/nightly", "warning", "nightly") == (
        payload["summary"],
        payload["source"],
        payload["severity"],
        payload["component"],
    )


def test_pagerduty_resolves_the_same_dedup_key() -> None:
    """A resolved alert is a resolve event with the trigger's dedup key."""
    captured = Captured()
    notifier = make(PAGER, captured, environ={"PD": PD_KEY})
    send(notifier)
    send(notifier, RESOLVED)
    trigger, resolve = (json.loads(r.content) for r in captured.requests)
    assert {
        "routing_key": PD_KEY,
        "event_action": "resolve",
        "dedup_key": trigger["dedup_key"],
    } == resolve


def test_pagerduty_takes_the_routing_key_option() -> None:
    """``routing_key`` (a secret from config) works instead of secret_env."""
    captured = Captured()
    config = NotifierConfig("pagerduty", url=PAGER.url, options={"routing_key": Secret(PD_KEY)})
    send(make(config, captured))
    assert PD_KEY == captured.body["routing_key"]


def test_pagerduty_defaults_to_the_events_api() -> None:
    """Without ``url`` events go to PagerDuty's Events API v2."""
    captured = Captured()
    send(make(NotifierConfig("pagerduty", secret_env="PD"), captured, environ={"PD": PD_KEY}))
    assert pagerduty.EVENTS_URL == str(captured.requests[-1].url)


def test_pagerduty_without_a_routing_key_is_a_setup_error() -> None:
    """A PagerDuty notifier needs a routing key."""
    with pytest.raises(NotifierSetupError, match="needs 'routing_key' or 'secret_env'"):
        make(NotifierConfig("pagerduty"))


def test_pagerduty_errors_never_show_the_routing_key() -> None:
    """A receiver echoing the routing key has it masked in the error."""

    def echo(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, text=f"invalid routing key {PD_KEY}")

    context = NotifierContext("nightly/pd", transport=httpx.MockTransport(echo))
    notifier = pagerduty.build(
        NotifierConfig("pagerduty", options={"routing_key": PD_KEY}), context
    )
    with pytest.raises(Exception, match="invalid routing key \\*\\*\\*") as caught:
        send(notifier)
    assert PD_KEY not in str(caught.value)


# --- stdout ---------------------------------------------------------------------------------


def test_stdout_writes_the_plain_text() -> None:
    """The stdout notifier writes the alert's terminal form and a newline."""
    out = io.StringIO()
    notifier = stdout.build(NotifierConfig("stdout"), NotifierContext("s/stdout", stream=out))
    send(notifier, RESOLVED)
    (first, *_) = out.getvalue().splitlines()
    assert "[RESOLVED] warning nightly: recall@5 max_drop holds again" == first


# --- options --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (NotifierConfig("slack", url=SLACK.url, options={"chanel": "#x"}), "unknown option"),
        (NotifierConfig("stdout", options={"colour": True}), "known options: none"),
        (NotifierConfig("webhook"), "needs a 'url'"),
        (NotifierConfig("webhook", url=Secret("not a url")), "not an http"),
        (NotifierConfig("alertmanager", url=AM.url, options={"ends_after": -1}), "above 0"),
        (
            NotifierConfig("webhook", url=HOOK.url, options={"headers": {"X": 1}}),
            "map names to strings",
        ),
    ],
)
def test_bad_options_are_setup_errors(config: NotifierConfig, message: str) -> None:
    """Each built-in notifier checks its own options."""
    with pytest.raises(NotifierSetupError, match=message):
        make(config)


@pytest.mark.parametrize("module", [webhook, slack, alertmanager, pagerduty])
def test_notifier_reprs_hold_no_url(module: Any) -> None:
    """A notifier's repr names it, never its URL."""
    config = NotifierConfig(
        module.__name__.rsplit(".", 1)[1],
        url=Secret("http://127.0.0.1:9/SECRETPATH"),
        options={"routing_key": PD_KEY} if module is pagerduty else {},
    )
    assert "SECRETPATH" not in repr(make(config))
