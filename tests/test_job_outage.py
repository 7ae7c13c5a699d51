"""A total outage of the search is the loudest case: every form alerts and exports.

Each form is served by a real search service on 127.0.0.1 that answers the `http` search
kind: no hits for any query, and a score of ``1e400`` (JSON's way to overflow a double)
among answers that all miss, are completed runs that exit 0 with their rules firing; HTTP
503 for every query measures nothing whatever the error budget (1.0 here): a failed run,
the ``not_measured`` alert, exit 3.
"""

from __future__ import annotations

import json
import textwrap
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from monitor.alerts.testing import RecordingReceiver
from monitor.cli import main
from monitor.store import open_store

pytestmark = pytest.mark.slow

QUERIES = 40
EVALSET = "\n".join(
    json.dumps({"id": f"q{i}", "query": f"question {i}", "relevant": [f"d{i}"]})
    for i in range(QUERIES)
)
#: Every query hits, the last two only at rank two: per-query mrr of 1 and 0.5, so a total
#: outage's deltas are -1 and -0.5 and their unclipped t interval reaches below -1.
BASELINE = {f"q{i}": [f"d{i}", "x"] if i < QUERIES - 2 else ["x", f"d{i}"] for i in range(QUERIES)}

#: What the search service answers for a query text: an HTTP status and a JSON body.
Answer = Callable[[str], tuple[int, str]]


def no_hits(query: str) -> tuple[int, str]:
    return 200, '{"hits": []}'


def down(query: str) -> tuple[int, str]:
    return 503, '{"error": "unavailable"}'


def overflowing_score(query: str) -> tuple[int, str]:
    score = "1e400" if query == "question 0" else "1.5"
    return 200, f'{{"hits": [{{"id": "x", "score": {score}}}]}}'


def huge_scores(query: str) -> tuple[int, str]:
    return 200, '{"hits": [{"id": "x", "score": 1e308}]}'


def infinite_scores_of_both_signs(query: str) -> tuple[int, str]:
    score = "1e400" if query == "question 0" else "-1e400" if query == "question 1" else "1.5"
    return 200, f'{{"hits": [{{"id": "x", "score": {score}}}]}}'


class SearchService(ThreadingHTTPServer):
    """A search service that answers every query as ``answer`` says."""

    daemon_threads = True

    def __init__(self, answer: Answer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.answer = answer

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/search"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: SearchService

    def log_message(self, format: str, *args: Any) -> None:
        """Keep the test output quiet."""

    def do_GET(self) -> None:
        query = parse_qs(urlsplit(self.path).query).get("q", [""])[0]
        status, body = self.server.answer(query)
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def receiver() -> Iterator[RecordingReceiver]:
    with RecordingReceiver() as running:
        yield running


def serve(answer: Answer) -> Iterator[SearchService]:
    service = SearchService(answer)
    thread = threading.Thread(target=service.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield service
    finally:
        service.shutdown()
        service.server_close()


def write_config(tmp_path: Path, search: str, receiver: RecordingReceiver, budget: float) -> Path:
    """Write a suite watching mrr, the error rate and the zero-result rate; return its path."""
    config = tmp_path / "monitor.yaml"
    config.write_text(
        textwrap.dedent(
            f"""\
            store: {{path: {tmp_path / "monitor.db"}}}
            suites:
              nightly:
                evalset: {{path: {tmp_path / "evalset.jsonl"}}}
                search: {search}
                metrics: [mrr, recall@1]
                runner: {{retries: 0, error_budget: {budget}}}
                rules:
                  - {{metric: mrr, max_drop: 0.05}}
                  - {{error_rate_max: 0.1}}
                  - {{zero_result_rate_max: 0.1}}
                significance: {{iterations: 500}}
                exporters: [{{kind: textfile, path: {tmp_path / "suite.prom"}}}]
                notifiers: [{{kind: webhook, url: "{receiver.url}/hook"}}]
            """
        )
    )
    return config


def run(config: Path) -> int:
    return main(["run", "--config", str(config), "--no-progress"])


def pin_baseline(tmp_path: Path, receiver: RecordingReceiver) -> None:
    """Run the good ranking once and pin it as the suite's baseline."""
    (tmp_path / "evalset.jsonl").write_text(EVALSET + "\n")
    (tmp_path / "good.json").write_text(json.dumps(BASELINE))
    good = write_config(tmp_path, f"{{kind: replay, path: {tmp_path / 'good.json'}}}", receiver, 0)
    assert 0 == run(good)
    assert 0 == main(["baseline", "set", "--suite", "nightly", "--config", str(good)])


def firing(receiver: RecordingReceiver) -> set[str]:
    """Return the rules of every alert the receiver was told is firing."""
    rules = set()
    for body in receiver.bodies():
        if body["status"] == "firing":
            rules.update(alert["labels"]["rule"] for alert in body["alerts"])
    return rules


def outage(
    tmp_path: Path, receiver: RecordingReceiver, answer: Answer, budget: float
) -> tuple[int, str]:
    """Pin a good baseline, run against the outage; return the exit code and the textfile."""
    pin_baseline(tmp_path, receiver)
    for service in serve(answer):
        search = (
            f"{{kind: http, url: '{service.url}', params: {{q: '{{query}}'}}, "
            "ids: 'hits[*].id', scores: 'hits[*].score'}"
        )
        code = run(write_config(tmp_path, search, receiver, budget))
    return code, (tmp_path / "suite.prom").read_text()


SUCCESS = 'retrieval_run_success{pipeline="nightly",suite="nightly"} 1.0'


@pytest.mark.parametrize(
    ("answer", "budget", "alerts"),
    [
        (no_hits, 0.05, {"mrr max_drop", "zero_result_rate_max"}),
        (overflowing_score, 0.05, {"mrr max_drop"}),
        (infinite_scores_of_both_signs, 0.05, {"mrr max_drop"}),
    ],
    ids=["no hits", "score 1e400", "scores 1e400 and -1e400"],
)
def test_a_total_outage_exits_0_exports_its_gauges_and_alerts(
    tmp_path: Path, receiver: RecordingReceiver, answer: Answer, budget: float, alerts: set[str]
) -> None:
    """A completed run against a dead search exits 0, exports its gauges and fires its rules."""
    code, gauges = outage(tmp_path, receiver, answer, budget)
    assert (0, True) == (code, SUCCESS in gauges)
    assert alerts <= firing(receiver)


FAILED = 'retrieval_run_success{pipeline="nightly",suite="nightly"} 0.0'


def test_a_backend_down_within_the_budget_is_not_measured(
    tmp_path: Path, receiver: RecordingReceiver
) -> None:
    """Every query failing within an error budget of 1.0 measured nothing: exit 3, the
    not_measured alert, the failure gauges."""
    code, gauges = outage(tmp_path, receiver, down, 1.0)
    assert (3, True, True) == (code, FAILED in gauges, "not_measured" in firing(receiver))


def test_a_backend_down_within_the_budget_exports_its_failed_queries(
    tmp_path: Path, receiver: RecordingReceiver
) -> None:
    """Every query failing within an error budget of 1.0 exports 40 failed queries, ratio 1."""
    _, gauges = outage(tmp_path, receiver, down, 1.0)
    assert 'retrieval_queries_failed{pipeline="nightly",suite="nightly"} 40.0' in gauges
    assert 'retrieval_error_ratio{pipeline="nightly",suite="nightly"} 1.0' in gauges


def test_an_outage_that_was_not_measured_is_never_pinned(
    tmp_path: Path, receiver: RecordingReceiver
) -> None:
    """``baseline set`` after an unmeasured outage pins the last measured run, not it."""
    outage(tmp_path, receiver, down, 1.0)
    config = tmp_path / "monitor.yaml"
    assert 0 == main(["baseline", "set", "--suite", "nightly", "--config", str(config)])
    with open_store(tmp_path / "monitor.db") as store:
        latest = store.latest_run("nightly", status=None)
        pinned = store.get_baseline("nightly")
    assert ("failed", "ok") == (
        latest.status if latest else None,
        pinned.status if pinned else None,
    )


def mostly_down(answered: int) -> Answer:
    """Return an answer that serves the first ``answered`` queries and fails the others."""

    def answer(query: str) -> tuple[int, str]:
        number = int(query.rsplit(" ", 1)[-1])
        return (
            (200, f'{{"hits": [{{"id": "d{number}", "score": 1}}]}}')
            if number < answered
            else down(query)
        )

    return answer


@pytest.mark.parametrize(("answered", "code"), [(2, 3), (19, 3), (20, 0)])
def test_a_run_answering_fewer_than_half_its_queries_is_not_measured(
    tmp_path: Path, receiver: RecordingReceiver, answered: int, code: int
) -> None:
    """Under an error budget of 0.99, 2 or 19 of 40 answered is not measured (exit 3); 20 is
    half, runner.min_measured's default, and measures."""
    found, _ = outage(tmp_path, receiver, mostly_down(answered), 0.99)
    assert (code, code == 3) == (found, "not_measured" in firing(receiver))


def test_top1_scores_whose_sum_overflows_export_their_mean(
    tmp_path: Path, receiver: RecordingReceiver
) -> None:
    """Forty top-1 scores of 1e308 export the mean 1e308: their sum overflows, their mean not."""
    code, gauges = outage(tmp_path, receiver, huge_scores, 0.05)
    assert (0, True) == (
        code,
        'retrieval_top1_score{pipeline="nightly",suite="nightly"} 1e+308' in gauges,
    )


def test_gauges_the_snapshot_rejects_are_an_unexpected_error_not_a_config_error(
    tmp_path: Path, receiver: RecordingReceiver, capsys: pytest.CaptureFixture[str]
) -> None:
    """A segment with more values than a label may take fails the snapshot after the run was
    stored: exit 1 naming it, the regression alert sent, the attempt's gauges exported."""
    queries = 70
    (tmp_path / "evalset.jsonl").write_text(
        "\n".join(
            json.dumps(
                {
                    "id": f"q{i}",
                    "query": f"question {i}",
                    "relevant": [f"d{i}"],
                    "metadata": {"topic": f"t{i}"},
                }
            )
            for i in range(queries)
        )
    )
    (tmp_path / "good.json").write_text(json.dumps({f"q{i}": [f"d{i}"] for i in range(queries)}))
    (tmp_path / "bad.json").write_text(json.dumps({f"q{i}": ["x"] for i in range(queries)}))
    config = write_config(
        tmp_path, f"{{kind: replay, path: {tmp_path / 'good.json'}}}", receiver, 0
    )
    text = config.read_text().replace("metrics: [", "segments: [topic]\n    metrics: [")
    config.write_text(text)
    assert 0 == run(config)
    main(["baseline", "set", "--suite", "nightly", "--config", str(config)])
    config.write_text(text.replace("good.json", "bad.json"))
    capsys.readouterr()
    code = run(config)
    err = capsys.readouterr().err
    gauges = (tmp_path / "suite.prom").read_text()
    assert (1, True) == (code, "segment 'topic' has 70 values" in err)
    assert {"mrr max_drop"} <= firing(receiver)
    assert 'retrieval_run_success{pipeline="nightly",suite="nightly"} 0.0' in gauges
