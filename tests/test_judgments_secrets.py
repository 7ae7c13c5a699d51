"""A judge's secrets (its headers, its URL's credentials) are masked wherever its failure is
told, and `config validate` builds the judge as a run would, naming the key it refuses."""

from __future__ import annotations

import json
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from monitor.cli import main
from monitor.config import load_config

KEY = "sk-judge-7f3a9c1e5b"
PASSWORD = "pw-judge-42ab"


class EchoServer:
    """A chat server that refuses every request with a body quoting the key it was sent."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                said = {"error": f"credential {self.headers.get('X-Judge-Key')} has no quota"}
                body = json.dumps(said).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        port = self.server.server_port
        self.url = f"http://judge:{PASSWORD}@127.0.0.1:{port}/v1/chat/completions"


@pytest.fixture
def echo() -> Iterator[EchoServer]:
    server = EchoServer()
    thread = threading.Thread(target=server.server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield server
    server.server.shutdown()
    server.server.server_close()
    thread.join(timeout=5)


def write_config(tmp_path: Path, judge: str) -> Path:
    """Write a one-suite config whose ``judge`` section is ``judge`` (from line 8 on)."""
    config = tmp_path / "monitor.yaml"
    body = textwrap.dedent(
        f"""\
        store: {{path: {tmp_path / "monitor.db"}}}
        suites:
          larkfield:
            evalset: {{bundled: larkfield}}
            search: {{kind: replay, bundled: larkfield/keyword}}
            baseline: {{bundled_run: larkfield/rerank}}
            significance: {{iterations: 200}}
            judge:
        """
    )
    config.write_text(body + textwrap.indent(textwrap.dedent(judge).strip() + "\n", "      "))
    return config


def http_judge(url: str) -> str:
    return f"""\
        kind: http
        id: llm
        url: '{url}'
        model: tiny
        max_per_run: 2
        headers: {{X-Judge-Key: '${{JUDGE_KEY}}'}}
    """


def test_the_suite_scrubber_knows_the_judge_headers_and_url_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A header value read from the environment and the URL's password are both masked."""
    from monitor.secrets import suite_scrubber

    monkeypatch.setenv("JUDGE_KEY", KEY)
    config = write_config(tmp_path, http_judge(f"http://u:{PASSWORD}@h/v1"))
    scrub = suite_scrubber(load_config(config).suite("larkfield"))
    assert "bare *** and *** here" == scrub(f"bare {KEY} and {PASSWORD} here")


def test_a_failing_http_judge_never_shows_its_key(
    tmp_path: Path,
    echo: EchoServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The server quotes the key in its refusal; the run's output and logs show it masked."""
    monkeypatch.setenv("JUDGE_KEY", KEY)
    config = write_config(tmp_path, http_judge(echo.url))
    assert 0 == main(["run", "--config", str(config), "--no-progress"])
    captured = capsys.readouterr()
    said = captured.out + captured.err
    (line,) = [text for text in said.splitlines() if "judge failed" in text]
    assert (False, False, True) == (KEY in said, PASSWORD in said, "credential ***" in line)


def test_a_failing_http_judge_keeps_its_key_out_of_the_stored_report(
    tmp_path: Path, echo: EchoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The report composed from the store after the run holds no judge secret."""
    from monitor.report.compose import compose_report
    from monitor.store import open_store

    monkeypatch.setenv("JUDGE_KEY", KEY)
    config = write_config(tmp_path, http_judge(echo.url))
    assert 0 == main(["run", "--config", str(config), "--no-progress"])
    with open_store(tmp_path / "monitor.db") as store:
        report = compose_report(store, load_config(config).suite("larkfield"))
        stored = json.dumps([run.__repr__() for run in [store.get_run(2)]])
    text = repr(report) + stored
    assert (False, False) == (KEY in text, PASSWORD in text)


@pytest.mark.parametrize(
    ("judge", "key", "line"),
    [
        ("kind: http\nmodel: tiny", "suites.larkfield.judge", 8),
        ("kind: http\nurl: 'http://h/v1'\ntimeout_seconds: 0", "judge.timeout_seconds", 11),
        ("kind: http\nurl: 'http://h/v1'\nheaders: {X-K: [a, b]}", "judge.headers", 11),
        ("kind: python\ntarget: 'no_such_module_here:judge'", "suites.larkfield.judge", 8),
        ("kind: 'entrypoint:no-such-judge'", "suites.larkfield.judge", 8),
    ],
    ids=["no url", "timeout", "headers", "python import", "entry point"],
)
def test_a_judge_that_would_not_build_fails_validate_at_its_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], judge: str, key: str, line: int
) -> None:
    """`config validate` builds the judge: a refused option exits 2 naming file, line, key."""
    config = write_config(tmp_path, judge)
    assert 2 == main(["config", "validate", str(config)])
    error = capsys.readouterr().err
    assert (True, True, False) == (
        f"{config}:{line}: " in error,
        f"{key}: expected a judge that builds" in error,
        "Traceback" in error,
    )


def test_a_refused_judge_option_does_not_show_the_judge_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A judge refused at validate time is reported without its header value."""
    monkeypatch.setenv("JUDGE_KEY", KEY)
    config = write_config(tmp_path, http_judge("http://h/v1") + "timeout_seconds: -1\n")
    assert 2 == main(["config", "validate", str(config)])
    assert KEY not in capsys.readouterr().err


def test_a_judge_that_builds_passes_validate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An http judge with a URL and headers validates (building it connects nowhere)."""
    monkeypatch.setenv("JUDGE_KEY", KEY)
    config = write_config(tmp_path, http_judge("http://127.0.0.1:9/v1"))
    assert 0 == main(["config", "validate", str(config)])
