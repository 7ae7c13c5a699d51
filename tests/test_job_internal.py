"""A fault of the monitor itself while it measures a run fails the run loudly: a
monitor-fault alert, the failure gauges, and exit 1, never a config error's exit 2."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from monitor.alerts.testing import RecordingReceiver
from monitor.cli import main
from monitor.errors import UsageError

SUITE = """
store: {{path: {store}}}
suites:
  nightly:
    evalset: {{bundled: larkfield}}
    search: {{kind: replay, bundled: larkfield/keyword}}
    metrics: [mrr@10]
    rules: [{{metric: mrr@10, max_drop: 0.05}}]
    exporters: [{{kind: textfile, path: {prom}}}]
    notifiers: [{{kind: webhook, url: "{url}/hook"}}]
"""


def _config(tmp_path: Path, receiver: RecordingReceiver) -> Path:
    path = tmp_path / "monitor.yaml"
    text = SUITE.format(store=tmp_path / "m.db", prom=tmp_path / "run.prom", url=receiver.url)
    path.write_text(textwrap.dedent(text))
    return path


def _fault_rules(receiver: RecordingReceiver) -> list[str]:
    return [
        alert["labels"]["rule"]
        for request in receiver.accepted
        for alert in json.loads(request.body)["alerts"]
    ]


def _check_fails(*args: object, **kwargs: object) -> None:
    raise UsageError("mean_top1_score must be finite")


def _bug(*args: object, **kwargs: object) -> None:
    raise RuntimeError("a bug")


@pytest.mark.parametrize(
    ("target", "fault"),
    [
        ("monitor.job.path.run_record", _check_fails),
        ("monitor.job.path.compare_runs", _check_fails),
    ],
    ids=["record", "comparison"],
)
def test_a_failed_check_of_the_monitors_own_figures_alerts_and_exits_1(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    target: str,
    fault: object,
) -> None:
    """A check that refuses the monitor's own figures is a monitor fault: alerted, exit 1."""
    monkeypatch.setattr(target, fault)
    with RecordingReceiver() as receiver:
        code = main(["run", "--config", str(_config(tmp_path, receiver)), "--no-progress"])
    assert (1, ["monitor_fault"]) == (code, _fault_rules(receiver))
    assert "the monitor failed while" in capsys.readouterr().err
    assert "retrieval_run_success" in (tmp_path / "run.prom").read_text()
    assert (
        'retrieval_run_success{pipeline="nightly",suite="nightly"} 0.0'
        in (tmp_path / "run.prom").read_text()
    )


def test_a_bug_inside_a_run_still_alerts_and_exports_its_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unexpected exception inside a run raises the monitor-fault alert and exits 1."""
    monkeypatch.setattr("monitor.job.path.compare_runs", _bug)
    with RecordingReceiver() as receiver:
        code = main(["run", "--config", str(_config(tmp_path, receiver)), "--no-progress"])
    assert (1, ["monitor_fault"]) == (code, _fault_rules(receiver))
    text = (tmp_path / "run.prom").read_text()
    assert 'retrieval_run_success{pipeline="nightly",suite="nightly"} 0.0' in text
