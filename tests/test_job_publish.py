"""A suite run end to end: its gauges reach the exporters and its alerts the receivers."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

from monitor.alerts.delivery import DEFAULT_POLICY, Delivery
from monitor.alerts.testing import RecordingReceiver
from monitor.cli import main
from monitor.config import load_config
from monitor.job import run_suite
from monitor.store import open_store

SUITE = """
store: {{path: {store}}}
suites:
  nightly:
    evalset: {{bundled: larkfield}}
    search: {{kind: replay, bundled: larkfield/{method}}}
    baseline: {{bundled_run: larkfield/rerank}}
    metrics: [mrr@10, recall@5]
    rules: [{{metric: mrr@10, max_drop: 0.05}}]
    significance: {{iterations: 1000}}
    exporters: [{{kind: textfile, path: {prom}}}]
    notifiers: [{{kind: webhook, url: "{url}/hook"}}]
"""


def write(tmp_path: Path, receiver: RecordingReceiver, method: str) -> Path:
    """Write the suite's config replaying the bundled run ``method``."""
    config = tmp_path / "monitor.yaml"
    config.write_text(
        textwrap.dedent(SUITE).format(
            store=tmp_path / "m.db", method=method, prom=tmp_path / "suite.prom", url=receiver.url
        )
    )
    return config


def statuses(receiver: RecordingReceiver) -> list[tuple[str, list[str]]]:
    """Return each delivered payload's status and its alerts' rule labels."""
    out = []
    for request in receiver.accepted:
        payload = json.loads(request.body)
        out.append((payload["status"], [a["labels"]["rule"] for a in payload["alerts"]]))
    return out


@pytest.fixture
def receiver() -> Iterator[RecordingReceiver]:
    with RecordingReceiver() as running:
        yield running


@pytest.mark.slow
def test_regression_fires_once_and_resolves_on_recovery(
    tmp_path: Path, receiver: RecordingReceiver
) -> None:
    """Two bad runs notify once; a good run sends the resolve."""
    bad = write(tmp_path, receiver, "keyword")
    assert 0 == main(["run", "--config", str(bad), "--no-progress"])
    assert 0 == main(["run", "--config", str(bad), "--no-progress"])
    good = write(tmp_path, receiver, "rerank")
    assert 0 == main(["run", "--config", str(good), "--no-progress"])
    assert [("firing", ["mrr@10 max_drop"]), ("resolved", ["mrr@10 max_drop"])] == statuses(
        receiver
    )


@pytest.mark.slow
def test_an_undelivered_alert_waits_in_the_outbox(
    tmp_path: Path, receiver: RecordingReceiver
) -> None:
    """With the receiver down the alert is kept and delivered, once, by the next run; the
    retries back off through the injected sleep, never the real one."""
    config = load_config(write(tmp_path, receiver, "keyword"))
    waits: list[float] = []
    delivery = Delivery(sleep=waits.append)
    with open_store(config.store.url.reveal()) as store:
        receiver.stop()
        first = run_suite(config.suite("nightly"), store, progress=False, delivery=delivery)
        receiver.start()
        second = run_suite(config.suite("nightly"), store, progress=False, delivery=delivery)
    assert (1, 0) == (first.published.undelivered, second.published.undelivered)
    assert DEFAULT_POLICY.attempts - 1 == len(waits)
    assert [("firing", ["mrr@10 max_drop"])] == statuses(receiver)


def test_the_textfile_holds_the_run_and_its_baseline(
    tmp_path: Path, receiver: RecordingReceiver
) -> None:
    """The textfile exporter writes the run's gauges, the baseline and the regression flag."""
    main(["run", "--config", str(write(tmp_path, receiver, "keyword")), "--no-progress"])
    text = (tmp_path / "suite.prom").read_text()
    assert 'retrieval_mrr_ratio{k="10",pipeline="nightly",suite="nightly"} 0.66219' in text
    assert 'retrieval_baseline_ratio{k="10",measure="mrr",pipeline="nightly",suite="nightly"}' in (
        text
    )
    assert 'retrieval_regression_detected{pipeline="nightly",rule="mrr@10 max_drop"' in text


def test_metrics_out_writes_the_exposition(tmp_path: Path, receiver: RecordingReceiver) -> None:
    """--metrics-out writes the run's gauges, with a success flag of 1."""
    config = write(tmp_path, receiver, "keyword")
    out = tmp_path / "run.prom"
    assert 0 == main(["run", "--config", str(config), "--no-progress", "--metrics-out", str(out)])
    assert 'retrieval_run_success{pipeline="nightly",suite="nightly"} 1.0' in out.read_text()


def test_a_pushgateway_that_is_down_exits_1_and_keeps_the_run(
    tmp_path: Path, receiver: RecordingReceiver, capsys: pytest.CaptureFixture[str]
) -> None:
    """A failed push is reported with exit 1; the run is stored all the same."""
    config = write(tmp_path, receiver, "keyword")
    config.write_text(
        config.read_text().replace(
            "exporters: [", "exporters: [{kind: pushgateway, url: 'http://127.0.0.1:9'}, "
        )
    )
    assert 1 == main(["run", "--config", str(config), "--no-progress"])
    assert "export failed: pushgateway" in capsys.readouterr().err
    main(["runs", "list", "--config", str(config), "--format", "json"])
    runs = json.loads(capsys.readouterr().out)
    assert ["nightly", "larkfield/rerank"] == [r["pipeline"] for r in runs]


def test_the_injected_clock_dates_the_alerts(tmp_path: Path, receiver: RecordingReceiver) -> None:
    """An alert raised by run_suite starts at the time of the clock it was given."""
    config = load_config(write(tmp_path, receiver, "keyword"))
    moment = datetime(2030, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    with open_store(config.store.url.reveal()) as store:
        run_suite(config.suite("nightly"), store, progress=False, clock=lambda: moment)
    (request,) = receiver.accepted
    (alert,) = json.loads(request.body)["alerts"]
    assert moment == datetime.fromisoformat(alert["startsAt"].replace("Z", "+00:00"))
