"""A search URL's own query string and the ``params`` option are both sent."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from monitor.search import build_search


class QueryRecorder(BaseHTTPRequestHandler):
    """Records each request's raw query string and answers one hit."""

    def log_message(self, format: str, *args: Any) -> None:
        """Keep the test output quiet."""

    def do_GET(self) -> None:
        self.server.queries.append(self.path.partition("?")[2])  # type: ignore[attr-defined]
        body = b'{"hits": [{"id": "d1"}]}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def recorder() -> Iterator[ThreadingHTTPServer]:
    """Serve :class:`QueryRecorder` on 127.0.0.1; its ``queries`` lists the query strings."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), QueryRecorder)
    server.queries = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    ("url_query", "params", "expected"),
    [
        ("api_key=a%2Fb&index=docs", {"q": "{query}"}, "api_key=a%2Fb&index=docs&q=red+fox"),
        ("index=docs", {}, "index=docs"),
        ("index=docs&k=3", {"k": "{k}", "q": "{query}"}, "index=docs&k=5&q=red+fox"),
        ("q={query}", {"lang": "en"}, "q=red%20fox&lang=en"),
    ],
    ids=["both-kept", "url-only", "params-win-a-repeated-name", "placeholder-in-url"],
)
def test_the_urls_query_is_kept_before_the_params(
    recorder: ThreadingHTTPServer, url_query: str, params: dict[str, str], expected: str
) -> None:
    """The URL's parameters come first as written, then ``params``, which win a repeated name."""
    url = f"http://127.0.0.1:{recorder.server_address[1]}/search?{url_query}"
    search = build_search("http", {"url": url, "params": params, "ids": "hits[*].id"})
    search("red fox", 5)
    assert [expected] == recorder.queries  # type: ignore[attr-defined]
