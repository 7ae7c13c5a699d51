"""A suite run end to end: a drop caused only by unjudged documents sends a labels-needed
notification and no regression alert; the same drop on judged documents still alerts."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor.alerts.testing import RecordingReceiver
from monitor.cli import main
from monitor.compare.overlap import rank_biased_overlap
from tests.test_coverage_verdict import QUERIES, baseline_ranking, judged_ranking, qrels

SUITE = """
store: {{path: {store}}}
suites:
  nightly:
    evalset: {{path: {evalset}}}
    search: {{kind: replay, path: {run}}}
    metrics: [mrr@10]
    rules: [{{metric: mrr@10, max_drop: 0.05}}]
    significance: {{iterations: 1000}}
    coverage: {{severity: info, queue_url: "https://labels.example/{{suite}}/{{run_id}}"}}
    exporters: [{{kind: textfile, path: {prom}}}]
    notifiers: [{{kind: webhook, url: "{url}/hook"}}]
"""


def unjudged_ranking(i: int) -> list[str]:
    """Return query ``i`` with two unjudged documents above the relevant one."""
    return [f"u{i}-a", f"u{i}-b", *baseline_ranking(i)][:10]


def write(tmp_path: Path, receiver: RecordingReceiver, rankings: str) -> Path:
    """Write the eval set, the run file of ``rankings`` and the suite's config."""
    lines = [
        json.dumps({"id": qid, "query": f"question {qid}", "relevant": grades})
        for qid, grades in qrels().items()
    ]
    (tmp_path / "evalset.jsonl").write_text("\n".join(lines) + "\n")
    pick = {"baseline": baseline_ranking, "unjudged": unjudged_ranking, "judged": judged_ranking}
    change = pick[rankings]
    run = {f"q{i:02d}": change(i) if i < 30 else baseline_ranking(i) for i in range(QUERIES)}
    (tmp_path / "run.json").write_text(json.dumps(run))
    config = tmp_path / "monitor.yaml"
    config.write_text(
        textwrap.dedent(SUITE).format(
            store=tmp_path / "m.db",
            evalset=tmp_path / "evalset.jsonl",
            run=tmp_path / "run.json",
            prom=tmp_path / "suite.prom",
            url=receiver.url,
        )
    )
    return config


def sent(receiver: RecordingReceiver) -> list[tuple[str, str, str, str]]:
    """Return each delivered alert's status, alertname, rule and severity."""
    return [
        (p["status"], a["labels"]["alertname"], a["labels"]["rule"], a["labels"]["severity"])
        for p in (json.loads(r.body) for r in receiver.accepted)
        for a in p["alerts"]
    ]


@pytest.fixture
def receiver() -> Iterator[RecordingReceiver]:
    with RecordingReceiver() as running:
        yield running


def pin_baseline(tmp_path: Path, receiver: RecordingReceiver) -> None:
    """Run the baseline rankings once and pin that run."""
    config = write(tmp_path, receiver, "baseline")
    assert 0 == main(["run", "--config", str(config), "--no-progress"])
    assert 0 == main(["baseline", "set", "--config", str(config), "--suite", "nightly", "--latest"])


@pytest.mark.slow
def test_an_unjudged_drop_sends_labels_needed_and_no_regression(
    tmp_path: Path, receiver: RecordingReceiver
) -> None:
    """Unjudged documents above the relevant ones: one labels-needed alert of the configured
    severity, no regression alert."""
    pin_baseline(tmp_path, receiver)
    config = write(tmp_path, receiver, "unjudged")
    assert 0 == main(["run", "--config", str(config), "--no-progress"])
    assert [("firing", "RetrievalLabelsNeeded", "labels_needed", "info")] == sent(receiver)


@pytest.mark.slow
def test_the_labels_needed_alert_says_what_to_label_and_where(
    tmp_path: Path, receiver: RecordingReceiver
) -> None:
    """Its description counts the documents and queries and names the command and queue."""
    pin_baseline(tmp_path, receiver)
    assert 0 == main(
        ["run", "--config", str(write(tmp_path, receiver, "unjudged")), "--no-progress"]
    )
    (request,) = receiver.accepted
    (alert,) = json.loads(request.body)["alerts"]
    text = alert["annotations"]["description"]
    assert "60 unjudged documents entered the top 10 in 30 of 40 queries" in text
    todo = f"retrieval-monitor judgments todo --config {tmp_path / 'monitor.yaml'} --suite nightly"
    assert f"{todo} --run 2" in text
    assert "https://labels.example/nightly/2" in text


@pytest.mark.slow
def test_the_labels_needed_command_runs_as_printed_from_anywhere(
    tmp_path: Path, receiver: RecordingReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command in the alert, run as printed from another folder, lists the 60 pairs."""
    pin_baseline(tmp_path, receiver)
    main(["run", "--config", str(write(tmp_path, receiver, "unjudged")), "--no-progress"])
    (request,) = receiver.accepted
    (alert,) = json.loads(request.body)["alerts"]
    command = shlex.split(alert["annotations"]["todo"])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "monitor", *command[1:]],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ("retrieval-monitor", 0, "60 unjudged pairs") == (
        command[0],
        done.returncode,
        done.stderr.strip().splitlines()[-1],
    )


def test_an_unjudged_drop_does_not_fail_the_quality_gate(
    tmp_path: Path, receiver: RecordingReceiver
) -> None:
    """--fail-on-regression exits 0 on unjudged: labels are needed, nothing is proven worse."""
    pin_baseline(tmp_path, receiver)
    config = write(tmp_path, receiver, "unjudged")
    assert 0 == main(["run", "--config", str(config), "--no-progress", "--fail-on-regression"])


@pytest.mark.slow
def test_the_same_drop_on_judged_documents_alerts_a_regression(
    tmp_path: Path, receiver: RecordingReceiver
) -> None:
    """Judged non-relevant documents above the relevant ones: the regression alert fires."""
    pin_baseline(tmp_path, receiver)
    config = write(tmp_path, receiver, "judged")
    assert 4 == main(["run", "--config", str(config), "--no-progress", "--fail-on-regression"])
    assert [("firing", "RetrievalRegression", "mrr@10 max_drop", "warning")] == sent(receiver)


@pytest.mark.slow
def test_labels_needed_resolves_when_coverage_is_back(
    tmp_path: Path, receiver: RecordingReceiver
) -> None:
    """A later run with the judged rankings again resolves the labels-needed alert."""
    pin_baseline(tmp_path, receiver)
    main(["run", "--config", str(write(tmp_path, receiver, "unjudged")), "--no-progress"])
    main(["run", "--config", str(write(tmp_path, receiver, "baseline")), "--no-progress"])
    assert ["firing", "resolved"] == [status for status, *_ in sent(receiver)]


@pytest.mark.slow
def test_the_gauges_say_labels_are_needed_and_how_far_the_rankings_moved(
    tmp_path: Path, receiver: RecordingReceiver
) -> None:
    """The textfile holds retrieval_labels_needed 1 and the mean RBO of the top 10."""
    pin_baseline(tmp_path, receiver)
    main(["run", "--config", str(write(tmp_path, receiver, "unjudged")), "--no-progress"])
    text = (tmp_path / "suite.prom").read_text()
    moved = rank_biased_overlap(baseline_ranking(0), unjudged_ranking(0), 10)
    mean = (30 * moved + 10 * 1.0) / QUERIES
    assert 'retrieval_labels_needed{pipeline="nightly",suite="nightly"} 1.0' in text
    line = next(x for x in text.splitlines() if x.startswith("retrieval_rank_biased_overlap"))
    assert mean == pytest.approx(float(line.rsplit(" ", 1)[1]))
    assert 'k="10"' in line
