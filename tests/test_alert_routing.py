"""The labels the job's alerts carry route them through the shipped Alertmanager example.

``amtool config routes test`` (Debian package ``prometheus-alertmanager``) resolves the
receiver of a label set offline; where amtool is missing these tests skip, or fail when
MONITOR_REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path

import pytest
from conftest import unavailable

from monitor.alerts.build import failure_alert, regression_alert
from monitor.alerts.model import Alert, RegressionDetails
from monitor.alerts.testing import breach
from monitor.config.model import Check

ALERTMANAGER = (
    Path(__file__).resolve().parent.parent / "alerts" / "alertmanager" / "alertmanager.example.yml"
)
T0 = datetime(2030, 1, 1, 9, 0, tzinfo=timezone.utc)
#: The example's receiver for the monitor's alerts (its default receiver is ``default``).
RECEIVER = "retrieval-monitor-webhook"
LABELS = {"team": "search", "env": "prod"}

ALERTS = {
    "quality regression": regression_alert(
        "nightly",
        RegressionDetails(breach("recall@5", 0.70, 0.81, severity="critical")),
        at=T0,
        labels=LABELS,
        pipeline="bm25",
    ),
    "operational regression": regression_alert(
        "nightly",
        RegressionDetails(breach("error_rate", 0.08, None, check=Check.ERROR_RATE_MAX)),
        at=T0,
        labels=LABELS,
    ),
    "monitor failure": failure_alert(
        "nightly", "search_backend_down", "connection refused", at=T0, labels=LABELS
    ),
}


def routed_to(labels: Mapping[str, str]) -> str:
    """Return the receiver the Alertmanager example picks for ``labels``."""
    amtool = shutil.which("amtool")
    if amtool is None:
        unavailable("amtool is not installed (apt-get install prometheus-alertmanager)")
    assert amtool is not None
    matchers = [f"{name}={json.dumps(value)}" for name, value in labels.items()]
    result = subprocess.run(
        [amtool, "config", "routes", "test", f"--config.file={ALERTMANAGER}", *matchers],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if result.returncode != 0:
        pytest.fail(f"amtool failed ({result.returncode}): {result.stderr}")
    return result.stdout.strip()


@pytest.mark.parametrize("alert", ALERTS.values(), ids=ALERTS.keys())
def test_the_jobs_alerts_carry_the_service_label(alert: Alert) -> None:
    """Every alert the job raises is labelled service=retrieval-monitor."""
    assert "retrieval-monitor" == alert.label_set()["service"]


@pytest.mark.parametrize("alert", ALERTS.values(), ids=ALERTS.keys())
def test_the_example_routes_the_jobs_alerts_to_its_webhook(alert: Alert) -> None:
    """The job's alert labels reach the example's receiver for the monitor, not the default."""
    assert RECEIVER == routed_to(alert.label_set())


def test_without_the_service_label_an_alert_reaches_the_default_receiver() -> None:
    """The service label is what routes: the same labels without it go to ``default``."""
    labels = ALERTS["quality regression"].label_set()
    del labels["service"]
    assert "default" == routed_to(labels)
