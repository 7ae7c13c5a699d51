"""The exporters against real servers: Prometheus scrapes the /metrics endpoint and the
Pushgateway, answers PromQL over its HTTP API, and fires the rules through Alertmanager;
node_exporter reads the textfile.

Start the servers with ``eval "$(scripts/start-prometheus-stack.sh start)"``: Prometheus on
127.0.0.1:59090 scrapes the Pushgateway (59091) and a daemon-mode exporter on 127.0.0.1:59108,
loads alerts/prometheus/retrieval-monitor.rules.yml and sends alerts to Alertmanager (59093),
which posts them to a webhook on 127.0.0.1:59089 that a test here serves.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from conftest import unavailable
from prometheus_client.parser import text_string_to_metric_families
from test_alerts_data import dashboard_queries, expand
from test_exporters import make_failure, make_snapshot

from monitor.config.vocab import ONLINE_METRICS
from monitor.exporters import RuleState, push_snapshot, start_http_exporter, write_textfile

pytestmark = pytest.mark.service

#: Where the stack's Prometheus looks for a daemon-mode exporter, and where Alertmanager posts.
EXPORTER = ("127.0.0.1", 59108)
WEBHOOK = ("127.0.0.1", 59089)

#: Longest wait for a value to travel through scrape, rule evaluation and notification.
TIMEOUT = 20.0

#: Gauges with one series per suite.
SINGLE = {
    "retrieval_run_success",
    "retrieval_last_success_timestamp_seconds",
    "retrieval_last_run_timestamp_seconds",
}

T = TypeVar("T")


class Stack:
    """The URLs of the running Prometheus, Pushgateway and Alertmanager, and one client for
    them (plain HTTP on 127.0.0.1: no CA bundle read for each of the many queries)."""

    def __init__(self) -> None:
        self.http = httpx.Client(verify=False)
        names = ("MONITOR_PROMETHEUS_URL", "MONITOR_PUSHGATEWAY_URL", "MONITOR_ALERTMANAGER_URL")
        missing = [name for name in names if not os.environ.get(name)]
        if missing:
            unavailable(
                f'{", ".join(missing)} not set: eval "$(scripts/start-prometheus-stack.sh start)"'
            )
        self.prometheus, self.pushgateway, self.alertmanager = (
            os.environ[n].rstrip("/") for n in names
        )
        for url in (self.prometheus, self.pushgateway, self.alertmanager):
            try:
                self.http.get(f"{url}/-/ready", timeout=2).raise_for_status()
            except httpx.HTTPError as error:
                unavailable(f"{url} is not ready: {error}")
        self.groups: list[str] = []

    def query(self, expr: str) -> dict[str, Any]:
        """Return Prometheus' answer to an instant query (its status and data)."""
        response = self.http.get(
            f"{self.prometheus}/api/v1/query", params={"query": expr}, timeout=5
        )
        answer: dict[str, Any] = response.json()
        return answer

    def values(self, expr: str) -> list[float]:
        """Return the values of an instant query's vector result."""
        answer = self.query(expr)
        assert "success" == answer["status"], answer
        return [float(item["value"][1]) for item in answer["data"]["result"]]

    def push(self, snapshot: Any) -> None:
        """Push a snapshot to the Pushgateway, remembering its group to delete afterwards."""
        self.groups.append(snapshot.suite)
        push_snapshot(snapshot, self.pushgateway)

    def held(self, suite: str) -> dict[str, float]:
        """Return {name: value} of the one-series gauges the Pushgateway holds for ``suite``,
        and recall@5 under ``retrieval_recall_ratio``."""
        text = self.http.get(f"{self.pushgateway}/metrics", timeout=5).text
        return {
            sample.name: sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
            if sample.labels.get("suite") == suite
            and sample.name in SINGLE | {"retrieval_recall_ratio"}
            and sample.labels.get("k") in (None, "5")
        }


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    """Return the running stack; delete the Pushgateway groups the tests pushed."""
    running = Stack()
    yield running
    for suite in running.groups:
        running.http.delete(
            f"{running.pushgateway}/metrics/job/retrieval-monitor/suite/{suite}", timeout=5
        )
    running.http.close()


def suite_name() -> str:
    """Return a suite name no other test run uses, so old series never answer a query."""
    return f"svc-{uuid.uuid4().hex[:10]}"


def recent(**changes: Any) -> Any:
    """Return a successful snapshot that finished just now (so no stale alert fires)."""
    now = datetime.now(timezone.utc)
    return make_snapshot(started_at=now - timedelta(seconds=5), finished_at=now, **changes)


def poll(check: Callable[[], T], what: str, timeout: float = TIMEOUT) -> T:
    """Return the first truthy result of ``check``; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    result = check()
    while not result:
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {timeout:.0f} s (last: {result!r})")
        time.sleep(0.25)
        result = check()
    return result


@pytest.mark.slow
def test_prometheus_scrapes_the_http_exporter(stack: Stack) -> None:
    """A snapshot served on 127.0.0.1:59108 is scraped and queryable with its labels."""
    suite = suite_name()
    with start_http_exporter(*EXPORTER) as exporter:
        exporter.update(recent(suite=suite))
        labels = f'suite="{suite}", k="5", job="retrieval-monitor", team="search"'
        expr = f"retrieval_recall_ratio{{{labels}}}"
        assert [0.8] == poll(lambda: stack.values(expr), "scraped value")


@pytest.mark.slow
def test_prometheus_scrapes_a_pushed_run(stack: Stack) -> None:
    """A pushed snapshot is scraped from the Pushgateway with job=retrieval-monitor kept."""
    suite = suite_name()
    stack.push(recent(suite=suite))
    expr = f'retrieval_recall_ratio{{suite="{suite}", k="5", job="retrieval-monitor"}}'
    assert [0.8] == poll(lambda: stack.values(expr), "pushed value")


def test_a_failed_push_keeps_the_last_success_in_the_gateway(stack: Stack) -> None:
    """After a failure the group shows run_success 0 and the last good success and figures."""
    suite = suite_name()
    good = recent(suite=suite)
    stack.push(good)
    later = good.finished_at + timedelta(minutes=1)
    stack.push(make_failure(suite=suite, started_at=later, finished_at=later, last_success_at=None))
    held = stack.held(suite)
    assert (0.0, good.finished_at.timestamp(), later.timestamp(), 0.8) == (
        held["retrieval_run_success"],
        held["retrieval_last_success_timestamp_seconds"],
        held["retrieval_last_run_timestamp_seconds"],
        held["retrieval_recall_ratio"],
    )


def test_a_first_run_that_fails_creates_its_group(stack: Stack) -> None:
    """A suite whose first run fails still reports the failure, with no last success."""
    suite = suite_name()
    now = datetime.now(timezone.utc)
    stack.push(make_failure(suite=suite, started_at=now, finished_at=now, last_success_at=None))
    held = stack.held(suite)
    assert (0.0, None) == (
        held["retrieval_run_success"],
        held.get("retrieval_last_success_timestamp_seconds"),
    )


@pytest.mark.slow
def test_every_dashboard_query_runs_on_prometheus(stack: Stack) -> None:
    """Prometheus accepts each dashboard query, and the panels show the data of a pushed run
    and of an online suite's pushed window."""
    suite, shop = suite_name(), suite_name()
    groups = {("all", "all"): 100, ("web", "all"): 60, ("all", "mobile"): 40}
    online = {(metric, *group): 0.5 for metric in ONLINE_METRICS for group in groups}
    stack.push(recent(suite=suite))
    stack.push(recent(suite=shop, online=online, online_searches=groups, online_no_data=False))
    poll(lambda: stack.values(f'retrieval_run_success{{suite=~"{suite}|{shop}"}}')[1:], "runs")
    empty: list[str] = []
    for where, expr in dashboard_queries():
        named = expr.replace("$suite", suite).replace("$online_suite", shop)
        for filled in expand(named):
            answer = stack.query(filled)
            assert "success" == answer["status"], f"{where}: {filled}: {answer}"
        shown = expand(named.replace("${measure}", "recall").replace("$measure", "recall"))
        if not where.startswith("annotation") and not stack.query(shown[0])["data"]["result"]:
            empty.append(f"{where}: {shown[0]}")
    assert [] == empty


class Webhook(BaseHTTPRequestHandler):
    """Collect the JSON bodies Alertmanager posts."""

    received: list[dict[str, Any]]

    def do_POST(self) -> None:
        """Keep the body and answer 200."""
        length = int(self.headers.get("Content-Length", "0"))
        self.received.append(json.loads(self.rfile.read(length)))
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet."""


@pytest.fixture
def webhook() -> Iterator[list[dict[str, Any]]]:
    """Serve the webhook Alertmanager posts to; return the payloads it received."""
    received: list[dict[str, Any]] = []
    handler = type("Handler", (Webhook,), {"received": received})
    try:
        server = ThreadingHTTPServer(WEBHOOK, handler)
    except OSError as error:
        pytest.fail(f"cannot listen on {WEBHOOK[0]}:{WEBHOOK[1]} for the webhook: {error}")
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
    )
    thread.start()
    yield received
    server.shutdown()
    server.server_close()


@pytest.mark.slow
def test_a_regression_reaches_the_webhook_through_alertmanager(
    stack: Stack, webhook: list[dict[str, Any]]
) -> None:
    """A pushed critical regression fires RetrievalRegressionDetected as critical, posted on."""
    suite = suite_name()
    stack.push(recent(suite=suite, rules={"recall@5 max_drop": RuleState(True, "critical")}))

    def delivered() -> list[dict[str, Any]]:
        return [
            alert
            for payload in list(webhook)
            for alert in payload["alerts"]
            if alert["labels"].get("suite") == suite
            and alert["labels"]["alertname"] == "RetrievalRegressionDetected"
        ]

    [alert] = poll(delivered, "alert at the webhook")
    assert ("firing", "recall@5 max_drop", "critical", "retrieval-monitor") == (
        alert["status"],
        alert["labels"]["rule"],
        alert["labels"]["severity"],
        alert["labels"]["service"],
    )


@pytest.fixture
def node_exporter(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """Run node_exporter with only its textfile collector on a free port of 127.0.0.1."""
    binary = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
    if binary is None:
        unavailable("node_exporter is not installed (apt-get install prometheus-node-exporter)")
    assert binary is not None
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    folder = tmp_path / "textfile"
    folder.mkdir()
    process = subprocess.Popen(
        [
            binary,
            "--collector.disable-defaults",
            "--collector.textfile",
            f"--collector.textfile.directory={folder}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield f"http://127.0.0.1:{port}/metrics", folder
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_node_exporter_serves_the_textfile(node_exporter: tuple[str, Path]) -> None:
    """node_exporter reads the .prom file without error and serves the suite's gauges."""
    url, folder = node_exporter
    write_textfile(recent(suite="nightly"), folder / "retrieval-monitor.prom")
    write_textfile(recent(suite="hourly"), folder / "retrieval-monitor.prom")

    def scraped() -> dict[tuple[str, str], float]:
        try:
            text = httpx.get(url, timeout=2).text
        except httpx.HTTPError:
            return {}
        return {
            (sample.name, sample.labels.get("suite", "")): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
            if sample.name in {"node_textfile_scrape_error", "retrieval_run_success"}
        }

    got = poll(scraped, "node_exporter answer")
    assert {
        ("node_textfile_scrape_error", ""): 0.0,
        ("retrieval_run_success", "nightly"): 1.0,
        ("retrieval_run_success", "hourly"): 1.0,
    } == got
