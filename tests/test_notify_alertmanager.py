"""The Alertmanager notifier against a real Alertmanager.

The Alertmanager is at ``MONITOR_ALERTMANAGER_URL`` (default http://127.0.0.1:59093); the
tests skip when it does not answer (and fail under ``MONITOR_REQUIRE_SERVICES=1``). To run
one by hand (Debian package ``prometheus-alertmanager``)::

    printf 'route: {receiver: blackhole}\\nreceivers: [{name: blackhole}]\\n' > am.yml
    prometheus-alertmanager --config.file=am.yml --storage.path=am-data \\
        --web.listen-address=127.0.0.1:59093 --cluster.listen-address=

Each test uses its own suite name, so alerts left by earlier runs do not interfere.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import unavailable

from monitor.alerts.base import close_notifiers
from monitor.alerts.build import regression_alert
from monitor.alerts.lifecycle import AlertLifecycle
from monitor.alerts.model import Alert, RegressionDetails
from monitor.alerts.registry import build_notifiers
from monitor.alerts.testing import breach, no_sleep
from monitor.config.common import LinksConfig, NotifierConfig, ScheduleConfig
from monitor.config.model import EvalSetConfig, SearchConfig, Secret, SuiteConfig
from monitor.store import open_store

pytestmark = pytest.mark.service

URL = os.environ.get("MONITOR_ALERTMANAGER_URL", "http://127.0.0.1:59093").rstrip("/")
EVIDENCE = RegressionDetails(breach("recall@10", 0.62, 0.80, threshold=0.1, p_value=0.004))


@pytest.fixture(scope="module")
def alertmanager() -> str:
    """Return the Alertmanager's URL, or skip when it is not ready."""
    try:
        ready = httpx.get(f"{URL}/-/ready", timeout=2.0)
    except httpx.HTTPError as exc:
        unavailable(f"no Alertmanager at {URL} ({type(exc).__name__})")
    if ready.status_code != 200:
        unavailable(f"Alertmanager at {URL} is not ready (HTTP {ready.status_code})")
    return URL


@pytest.fixture
def suite(alertmanager: str) -> SuiteConfig:
    """Return a suite with a name of its own, run every 15 minutes, alerting Alertmanager."""
    return SuiteConfig(
        name=f"am-{uuid.uuid4().hex[:12]}",
        evalset=EvalSetConfig(bundled="larkfield"),
        search=SearchConfig(kind="replay"),
        metrics=(),
        k=10,
        pipeline="am-test",
        schedule=ScheduleConfig(interval_seconds=900.0),
        notifiers=(NotifierConfig("alertmanager", url=Secret(alertmanager)),),
        labels={"team": "search"},
        links=LinksConfig(report="https://reports.example/run/1"),
    )


@pytest.fixture
def lifecycle(suite: SuiteConfig, tmp_path: Path) -> Iterator[AlertLifecycle]:
    """Return a lifecycle over the suite's notifiers and a fresh SQLite store."""
    notifiers = build_notifiers(suite)
    with open_store(tmp_path / "monitor.db") as store:
        yield AlertLifecycle(store, notifiers, sleep=no_sleep)
    close_notifiers(notifiers.values())


def active(suite: str) -> list[dict[str, Any]]:
    """Return the active alerts of ``suite`` as Alertmanager's v2 API lists them."""
    answer = httpx.get(
        f"{URL}/api/v2/alerts",
        params={"filter": f'suite="{suite}"', "active": "true"},
        timeout=5.0,
    )
    answer.raise_for_status()
    return list(answer.json())


def regression(suite: SuiteConfig) -> Alert:
    """Return the suite's recall@10 regression, seen now."""
    return regression_alert(
        suite.name,
        EVIDENCE,
        at=datetime.now(timezone.utc),
        labels=suite.labels,
        links=suite.links,
    )


def test_a_firing_alert_shows_up_with_its_labels(
    suite: SuiteConfig, lifecycle: AlertLifecycle
) -> None:
    """Alertmanager lists the alert, identified by its labels."""
    report = lifecycle.update(suite.name, "regression", [regression(suite)])
    (listed,) = active(suite.name)
    assert ([True], regression(suite).label_set()) == (
        [d.delivered for d in report.deliveries],
        listed["labels"],
    )


def test_a_firing_alert_carries_its_annotations_and_link(
    suite: SuiteConfig, lifecycle: AlertLifecycle
) -> None:
    """The summary, evidence and report link arrive as annotations and generatorURL."""
    lifecycle.update(suite.name, "regression", [regression(suite)])
    (listed,) = active(suite.name)
    assert (regression(suite).summary, "0.004", "https://reports.example/run/1", "active") == (
        listed["annotations"]["summary"],
        listed["annotations"]["p_value"],
        listed["generatorURL"],
        listed["status"]["state"],
    )


def test_a_firing_alert_stays_active_for_two_intervals(
    suite: SuiteConfig, lifecycle: AlertLifecycle
) -> None:
    """endsAt is about 30 minutes away for a suite run every 15 minutes."""
    lifecycle.update(suite.name, "regression", [regression(suite)])
    (listed,) = active(suite.name)
    ends = datetime.fromisoformat(listed["endsAt"].replace("Z", "+00:00"))
    left = ends - datetime.now(timezone.utc)
    assert timedelta(minutes=29) < left <= timedelta(minutes=30, seconds=5)


def test_a_resolved_alert_is_no_longer_active(
    suite: SuiteConfig, lifecycle: AlertLifecycle
) -> None:
    """After the condition clears, Alertmanager no longer lists the alert as active."""
    lifecycle.update(suite.name, "regression", [regression(suite)])
    listed_while_firing = len(active(suite.name))
    report = lifecycle.update(suite.name, "regression", [])
    assert (1, ["resolved"], []) == (
        listed_while_firing,
        [p.transition for p in report.planned],
        active(suite.name),
    )


def test_alertmanager_keeps_one_alert_across_runs(
    suite: SuiteConfig, lifecycle: AlertLifecycle
) -> None:
    """Sent again on each run, the alert stays one alert with its first start."""
    first = regression(suite)
    lifecycle.update(suite.name, "regression", [first])
    lifecycle.update(suite.name, "regression", [regression(suite)])
    (listed,) = active(suite.name)
    started = datetime.fromisoformat(listed["startsAt"].replace("Z", "+00:00"))
    assert abs(started - first.starts_at) < timedelta(milliseconds=1)
