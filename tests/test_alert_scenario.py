"""A suite through regression, reminder, receiver outage, monitor failure and recovery.

Every hour a one-shot job opens the SQLite store, flushes the outbox, reports its monitor
failures and regressions, and exits. Five notifiers (webhook, Slack, PagerDuty,
Alertmanager and stdout) send to real receivers on 127.0.0.1; the test counts what each got.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from monitor.alerts.base import close_notifiers
from monitor.alerts.build import failure_alert, regression_alert
from monitor.alerts.delivery import DeliveryPolicy
from monitor.alerts.lifecycle import AlertLifecycle
from monitor.alerts.model import Alert, FailureReason, RegressionDetails, failures_checked
from monitor.alerts.registry import build_notifiers
from monitor.alerts.testing import ManualClock, RecordingReceiver, breach
from monitor.config.common import NotifierConfig, ScheduleConfig
from monitor.config.model import EvalSetConfig, SearchConfig, Secret, SuiteConfig
from monitor.store import open_store

EVIDENCE = RegressionDetails(
    breach("ndcg@10", 0.61, 0.74, check="max_relative_drop", threshold=0.1, p_value=0.001)
)


def ndcg_drop(at: datetime) -> Alert:
    """Return the suite's ndcg@10 regression, seen at ``at``."""
    return regression_alert("nightly", EVIDENCE, at=at)


def incident(dedup_key: str) -> str:
    """Return which alert a PagerDuty dedup key is about, in a word."""
    return "ndcg" if dedup_key.endswith(ndcg_drop(ManualClock()()).fingerprint) else "down"


class Job:
    """The one-shot job of suite ``nightly``, run once per :meth:`run` call."""

    def __init__(self, db: Path, receivers: dict[str, RecordingReceiver]) -> None:
        self.db = db
        self.clock = ManualClock()
        self.out = io.StringIO()
        self.receivers = receivers
        self.config = SuiteConfig(
            name="nightly",
            evalset=EvalSetConfig(bundled="larkfield"),
            search=SearchConfig(kind="replay"),
            metrics=(),
            k=10,
            pipeline="nightly",
            schedule=ScheduleConfig(interval_seconds=3600.0),
            notifiers=(
                NotifierConfig(
                    "webhook", url=Secret(receivers["webhook"].url + "/h"), secret_env="KEY"
                ),
                NotifierConfig("slack", url=Secret(receivers["slack"].url + "/s")),
                NotifierConfig(
                    "pagerduty",
                    url=Secret(receivers["pagerduty"].url + "/v2/enqueue"),
                    secret_env="PD_KEY",
                ),
                NotifierConfig("alertmanager", url=Secret(receivers["alertmanager"].url)),
                NotifierConfig("stdout"),
            ),
        )

    def run(self, *, regression: bool, backend_down: bool = False) -> None:
        """Run once at the clock's time, then move the clock one hour on."""
        now = self.clock()
        with open_store(self.db) as store:
            notifiers = build_notifiers(
                self.config,
                clock=self.clock,
                environ={"KEY": "signing-key", "PD_KEY": "pd-routing-key-00000000"},
                stream=self.out,
            )
            life = AlertLifecycle(
                store,
                notifiers,
                clock=self.clock,
                policy=DeliveryPolicy(attempts=2, backoff_seconds=0.0),
                sleep=lambda seconds: None,
            )
            try:
                self._report(life, now, regression=regression, backend_down=backend_down)
            finally:
                close_notifiers(notifiers.values())
        self.clock.advance(hours=1)

    def _report(
        self, life: AlertLifecycle, now: datetime, *, regression: bool, backend_down: bool
    ) -> None:
        """Do what the job does with alerts: flush, then report failures and regressions."""
        life.flush()
        if backend_down:
            down = failure_alert(
                "nightly", FailureReason.SEARCH_BACKEND_DOWN, "connection refused", at=now
            )
            stopped_at = failures_checked(FailureReason.SEARCH_BACKEND_DOWN)
            life.update("nightly", "monitor_failure", [down], evaluated=stopped_at)
            return
        life.update("nightly", "monitor_failure", [], evaluated=failures_checked(None))
        life.update("nightly", "regression", [ndcg_drop(now)] if regression else [])

    def bodies(self, name: str) -> list[Any]:
        """Return the JSON bodies receiver ``name`` accepted, in order."""
        return self.receivers[name].bodies()


def scenario(job: Job) -> None:
    """Regression for 5 hours, an outage with the backend down, then recovery."""
    for _ in range(5):  # 00:00 - 04:00: the regression fires (a reminder at 04:00)
        job.run(regression=True)
    for receiver in job.receivers.values():  # 05:00: receivers down, search backend down
        receiver.stop()
    job.run(regression=True, backend_down=True)
    for receiver in job.receivers.values():  # 06:00: all back, the regression has cleared
        receiver.start()
    job.run(regression=False)
    job.run(regression=False)  # 07:00: quiet


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Job]:
    """Return the job after the scenario, once for all the tests of this module."""
    receivers = {
        name: RecordingReceiver().start()
        for name in ("webhook", "slack", "pagerduty", "alertmanager")
    }
    try:
        played = Job(tmp_path_factory.mktemp("scenario") / "monitor.db", receivers)
        scenario(played)
        yield played
    finally:
        for receiver in receivers.values():
            receiver.stop()


@pytest.mark.slow
def test_the_webhook_gets_each_transition_once(job: Job) -> None:
    """Firing, one reminder, the failure delivered after the outage, then both resolves."""
    assert [
        ("firing", "ndcg@10 max_relative_drop"),
        ("firing", "ndcg@10 max_relative_drop"),
        ("firing", "search_backend_down"),
        ("resolved", "search_backend_down"),
        ("resolved", "ndcg@10 max_relative_drop"),
    ] == [(b["status"], b["alerts"][0]["labels"]["rule"]) for b in job.bodies("webhook")]


def test_slack_gets_the_same_five_messages(job: Job) -> None:
    """Slack hears of the firing, the reminder, the failure and both resolves."""
    assert [
        ":rotating_light: FIRING (warni",
        ":warning: STILL FIRING (warnin",
        ":rotating_light: FIRING (criti",
        ":white_check_mark: RESOLVED (c",
        ":white_check_mark: RESOLVED (w",
    ] == [b["text"][:30] for b in job.bodies("slack")]


def test_pagerduty_triggers_twice_per_incident_and_resolves_each(job: Job) -> None:
    """The reminder re-triggers the open incident; each incident is resolved once."""
    assert [
        ("trigger", "ndcg"),
        ("trigger", "ndcg"),
        ("trigger", "down"),
        ("resolve", "down"),
        ("resolve", "ndcg"),
    ] == [(b["event_action"], incident(b["dedup_key"])) for b in job.bodies("pagerduty")]


def test_alertmanager_hears_every_run_while_firing(job: Job) -> None:
    """Five hourly refreshes of the regression, then the failure and both resolves."""
    hourly = [f"2030-01-01T{h + 2:02d}:00:00.000000Z" for h in range(5)]
    assert [("ndcg@10 max_relative_drop", ends) for ends in hourly] + [
        ("search_backend_down", "2030-01-01T08:00:00.000000Z"),
        ("search_backend_down", "2030-01-01T06:00:00.000000Z"),
        ("ndcg@10 max_relative_drop", "2030-01-01T06:00:00.000000Z"),
    ] == [(b[0]["labels"]["rule"], b[0]["endsAt"]) for b in job.bodies("alertmanager")]


def test_stdout_never_went_down(job: Job) -> None:
    """The stdout notifier printed each transition as it happened."""
    heads = [line.split(" ")[0:2] for line in job.out.getvalue().splitlines() if line[:1] == "["]
    assert [
        ["[FIRING]", "warning"],
        ["[STILL", "FIRING]"],
        ["[FIRING]", "critical"],
        ["[RESOLVED]", "critical"],
        ["[RESOLVED]", "warning"],
    ] == heads


def test_nothing_is_left_waiting(job: Job) -> None:
    """After recovery the outbox is empty."""
    with open_store(job.db) as store:
        assert [] == store.pending()
