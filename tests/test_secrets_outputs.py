"""No secret the config holds reaches any output of a run: store, stdout, stderr, gauges, outbox."""

from __future__ import annotations

import http.server
import json
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from monitor.cli import main

pytestmark = pytest.mark.slow

SECRETS = {
    "SEARCH_KEY": "sk-url-4f1d9a7c",
    "SEARCH_TOKEN": "tok-param-8e2b61",
    "SEARCH_BEARER": "bearer-hdr-55c0aa",
    "HOOK_SECRET": "T0001/B0002/hookpath9931",
}


class EchoServer(http.server.ThreadingHTTPServer):
    """A search and a receiver on 127.0.0.1 that fail with pages quoting the request.

    A search request whose URL holds ``failing`` and every POST get a 500 page with the
    request line and headers in it; other search requests get one hit.
    """

    daemon_threads = True

    def __init__(self, failing: str) -> None:
        super().__init__(("127.0.0.1", 0), EchoHandler)
        self.failing = failing

    @property
    def url(self) -> str:
        """Return the base URL."""
        return f"http://127.0.0.1:{self.server_address[1]}"


class EchoHandler(http.server.BaseHTTPRequestHandler):
    """Answers as :class:`EchoServer` says."""

    server: EchoServer

    def log_message(self, format: str, *args: Any) -> None:
        """Keep the test output quiet."""

    def do_GET(self) -> None:
        if self.server.failing not in self.path:
            self._send(200, json.dumps({"hits": [{"id": "d0"}]}).encode(), "application/json")
        else:
            self._echo()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self._echo()

    def _echo(self) -> None:
        page = f"<h1>Internal error</h1><pre>{self.requestline}\n{self.headers}</pre>"
        self._send(500, page.encode(), "text/html")

    def _send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(params=["question+1", "question"], ids=["one-query-fails", "all-fail"])
def echo_server(request: pytest.FixtureRequest) -> Iterator[EchoServer]:
    """Serve an :class:`EchoServer` failing one query, or every query, in a thread."""
    server = EchoServer(request.param)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def write_config(tmp_path: Path, base: str) -> Path:
    """Write a suite whose search and webhook hold secrets in every place a config can.

    One query at a time: a run the error budget stops then has no call still in flight,
    whose thread would outlive the test.
    """
    lines = [
        json.dumps({"id": f"q{i}", "query": f"question {i}", "relevant": [f"d{i}"]})
        for i in range(5)
    ]
    (tmp_path / "evalset.jsonl").write_text("\n".join(lines) + "\n")
    config = tmp_path / "monitor.yaml"
    config.write_text(
        textwrap.dedent(
            f"""\
            store: {{path: {tmp_path / "monitor.db"}}}
            suites:
              nightly:
                evalset: {{path: evalset.jsonl}}
                search:
                  kind: http
                  url: "{base}/search?api_key=${{SEARCH_KEY}}"
                  params: {{q: "{{query}}", token: "${{SEARCH_TOKEN}}"}}
                  headers: {{Authorization: "Bearer ${{SEARCH_BEARER}}"}}
                  ids: "hits[*].id"
                metrics: [recall@1]
                runner: {{concurrency: 1, retries: 0, error_budget: 0.5}}
                exporters:
                  - {{kind: textfile, path: {tmp_path / "gauges.prom"}}}
                notifiers:
                  - {{kind: webhook, url: "{base}/hooks/${{HOOK_SECRET}}"}}
            """
        )
    )
    return config


def leaks(outputs: dict[str, bytes]) -> set[tuple[str, str]]:
    """Return (output, variable) for each secret, or the last part of one, found in an output."""
    return {
        (where, name)
        for where, data in outputs.items()
        for name, value in SECRETS.items()
        for form in {value, value.rsplit("/", 1)[-1]}
        if form.encode() in data
    }


@pytest.mark.parametrize("log_format", ["json", "logfmt"])
def test_a_run_with_failing_queries_shows_no_secret_in_any_output(
    tmp_path: Path,
    echo_server: EchoServer,
    log_format: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A search and a receiver that quote the request in 500 pages leak no secret anywhere."""
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    config = write_config(tmp_path, echo_server.url)
    argv = ["--log-format", log_format, "run", "--config", str(config), "--no-progress"]
    main([*argv, "--format", "json", "--failed-queries", str(tmp_path / "failed.jsonl")])
    main(["runs", "list", "--config", str(config), "--format", "json"])
    out, err = capsys.readouterr()
    outputs = {
        "stdout": out.encode(),
        "stderr": err.encode(),
        "store": _stored(tmp_path / "monitor.db"),
        "gauges": (tmp_path / "gauges.prom").read_bytes(),
    }
    assert b"500" in outputs["store"]  # the failures were recorded, with their messages
    assert set() == leaks(outputs)


def _stored(path: Path) -> bytes:
    """Return the store file's bytes and, decoded, every run's per-query records (kept
    compressed in the file, where a secret would not show as written)."""
    from monitor.store import open_store

    with open_store(path) as store:
        runs = [store.get_run(summary.run_id) for summary in store.list_runs(limit=1000)]
    return path.read_bytes() + repr([run.queries for run in runs]).encode()
