"""Secrets are masked in every message: known values, their encoded forms, and secret shapes."""

from __future__ import annotations

import io
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from monitor.alerts.http import Poster
from monitor.config import load_config
from monitor.config.model import Secret
from monitor.errors import NotifyError, SearchCallError
from monitor.logs import configure_logging, get_logger, hide_secrets
from monitor.records import Query
from monitor.runner import run_queries
from monitor.search import build_search
from monitor.secrets import Scrubber, scrub_shapes, suite_scrubber, url_secrets


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("GET /s?q=x&api_key=abc123&k=10", "GET /s?q=x&api_key=***&k=10"),
        ("https://h/s?sig=Zm9vYmFy&x=1", "https://h/s?sig=***&x=1"),
        ("postgresql://monitor:hunter2@db/monitor", "postgresql://monitor:***@db/monitor"),
        ("https://ghp_token123@github.com/x", "https://***@github.com/x"),
        ("Authorization: Bearer eyJhbGciOiJI", "Authorization: ***"),
        (
            "<pre>GET / HTTP/1.1\nX-Api-Key: k-77aa\n</pre>",
            "<pre>GET / HTTP/1.1\nX-Api-Key: ***\n</pre>",
        ),
        ('{"token": "t-123456", "q": "x"}', '{"token": "***", "q": "x"}'),
        ("{'client_secret': 'cs-9999'}", "{'client_secret': '***'}"),
        ("sent with bearer abcdefgh12345", "sent with bearer ***"),
    ],
)
def test_secret_shapes_are_masked(text: str, expected: str) -> None:
    """Credentials recognisable by their shape are masked without being known."""
    assert expected == scrub_shapes(text)


@pytest.mark.parametrize(
    "text",
    [
        "GET /s?q=hello&k=10 answered 500",
        "option 'token': expected a string",
        "3 of 5 queries failed (60.0%); errors: HTTPStatusError 500 x3",
        "the token bucket is empty",
    ],
)
def test_ordinary_text_is_left_as_it_is(text: str) -> None:
    """Text without a secret passes unchanged."""
    assert text == scrub_shapes(text)


def test_known_values_are_masked_in_their_percent_encoded_forms_too() -> None:
    """A known secret is masked as written, percent-encoded and form-encoded."""
    scrub = Scrubber.of(["a/b c+d"])
    assert "*** *** ***" == scrub("a/b c+d a%2Fb%20c%2Bd a%2Fb+c%2Bd")


def test_short_values_are_not_masked() -> None:
    """A known value under four characters would mask ordinary words: it is left alone."""
    assert "abc" == Scrubber.of(["abc"])("abc")


def test_a_webhook_url_gives_its_path_as_a_secret() -> None:
    """A webhook URL's path is its credential: it is a secret on its own."""
    found = url_secrets("https://hooks.example/services/T0/B0/XYZ", path=True)
    assert {"/services/T0/B0/XYZ", "services/T0/B0/XYZ"} <= found


def test_the_suite_scrubber_knows_every_secret_of_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Search headers, secret params, URL query keys, webhook paths and signing keys are known."""
    monkeypatch.setenv("SIGNING", "signing-key-1")
    (tmp_path / "run.json").write_text("{}")
    (tmp_path / "monitor.yaml").write_text(
        """\
suites:
  nightly:
    evalset: {bundled: larkfield}
    search:
      kind: http
      url: "http://search/s?apikey=url-key-1"
      params: {q: "{query}", token: param-token-1}
      headers: {X-Auth: header-value-1}
      ids: "hits[*].id"
    notifiers:
      - {kind: webhook, url: "https://hooks.example/T0/path-secret-1", secret_env: SIGNING}
"""
    )
    suite = load_config(tmp_path / "monitor.yaml").suite("nightly")
    scrub = suite_scrubber(suite)
    text = "url-key-1 param-token-1 header-value-1 /T0/path-secret-1 signing-key-1"
    assert "*** *** *** *** ***" == scrub(text)


def test_a_plugins_error_is_recorded_without_its_secrets() -> None:
    """A search error quoting a known secret and a shaped one is recorded masked."""

    def search(query: str, k: int) -> list[str]:
        raise RuntimeError(f"GET /x?api_key=shape-key-1 failed for user known-value-1 ({query})")

    result = run_queries([Query("q1", "hi")], search, scrub=Scrubber.of(["known-value-1"]))
    expected = "GET /x?api_key=*** failed for user *** (hi)"
    assert expected == result.outcomes[0].error_message


class EchoHandler(BaseHTTPRequestHandler):
    """Answers 500 with a page quoting the request line and headers."""

    def log_message(self, format: str, *args: Any) -> None:
        """Keep the test output quiet."""

    def do_GET(self) -> None:
        self.server.paths.append(self.path)  # type: ignore[attr-defined]
        body = f"<pre>{self.requestline}\n{self.headers}</pre>".encode()
        self.send_response(500)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET


@pytest.fixture
def echo() -> Iterator[ThreadingHTTPServer]:
    """Serve :class:`EchoHandler` on 127.0.0.1; its ``paths`` lists the request paths."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), EchoHandler)
    server.paths = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def base(server: ThreadingHTTPServer) -> str:
    """Return the server's base URL."""
    return f"http://127.0.0.1:{server.server_address[1]}"


def test_a_search_error_page_quoting_the_request_shows_no_secret(
    echo: ThreadingHTTPServer,
) -> None:
    """The http search masks its URL key, secret params and header values in its errors."""
    options = {
        "url": f"{base(echo)}/s?key=url-key-1",
        "params": {"q": "{query}", "signature": "sig-value-1"},
        "headers": {"X-Custom": "header-value-1"},
        "ids": "hits[*].id",
    }
    search = build_search("http", options)
    with pytest.raises(SearchCallError) as caught:
        search("hello", 3)
    message = caught.value.message
    assert "hello" in message
    assert [] == [s for s in ("url-key-1", "sig-value-1", "header-value-1") if s in message]


def test_a_receiver_answer_quoting_the_webhook_path_shows_no_secret(
    echo: ThreadingHTTPServer,
) -> None:
    """A receiver's 500 page that quotes only the path does not reveal it."""
    url = f"{base(echo)}/hooks/T0/path-secret-1"
    with pytest.raises(NotifyError) as caught:
        Poster("s/hook", Secret(url)).post(b"{}")
    assert "POST *** HTTP/1.1" in str(caught.value)
    assert "path-secret-1" not in str(caught.value)


@pytest.fixture
def root_logging() -> Iterator[None]:
    """Put the root logger's handlers, its level and httpx's back after the test."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    quiet = {name: logging.getLogger(name).level for name in ("httpx", "httpcore")}
    yield
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)
    for name, old in quiet.items():
        logging.getLogger(name).setLevel(old)


@pytest.mark.usefixtures("root_logging")
def test_log_lines_mask_known_and_shaped_secrets() -> None:
    """A log line masks the values it was taught and secret-shaped text."""
    stream = io.StringIO()
    configure_logging("logfmt", stream=stream)
    hide_secrets(Scrubber.of(["known-value-1"]))
    get_logger("tests.secrets").warning("failed", error="known-value-1 at /s?token=t-77")
    assert "known-value-1" not in stream.getvalue()
    assert "t-77" not in stream.getvalue()


@pytest.mark.usefixtures("root_logging")
def test_httpx_request_lines_stay_below_info(echo: ThreadingHTTPServer) -> None:
    """httpx logs each URL at INFO; configured logging keeps those lines out."""
    stream = io.StringIO()
    configure_logging("logfmt", stream=stream, level=logging.DEBUG)
    with httpx.Client() as client:
        client.get(f"{base(echo)}/s?api_key=key-in-url-1")
    assert "key-in-url-1" not in stream.getvalue()


@pytest.mark.usefixtures("root_logging")
def test_httpx_lines_asked_for_are_still_scrubbed(echo: ThreadingHTTPServer) -> None:
    """A program that turns httpx's INFO lines on gets their URL keys masked."""
    stream = io.StringIO()
    configure_logging("json", stream=stream)
    logging.getLogger("httpx").setLevel(logging.INFO)
    with httpx.Client() as client:
        client.get(f"{base(echo)}/s?api_key=key-in-url-1")
    assert "HTTP Request" in stream.getvalue()
    assert "key-in-url-1" not in stream.getvalue()
