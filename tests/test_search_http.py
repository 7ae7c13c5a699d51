"""The http search kind: request templates, headers, response paths, errors, a real server."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from monitor.errors import SearchCallError, SearchOutputError, SearchSetupError
from monitor.records import Hit
from monitor.runner import run_queries
from monitor.search import build_search
from monitor.search.http import HttpSearch
from monitor.testing import sample_queries

Handler = Callable[[httpx.Request], httpx.Response]


def mock(handler: Handler, **options: Any) -> HttpSearch:
    """Build an http search whose requests go to ``handler``."""
    settings: dict[str, Any] = {
        "url": "http://search.test/search",
        "ids": "results[*].id",
        "transport": httpx.MockTransport(handler),
    }
    search = build_search("http", {**settings, **options})
    assert isinstance(search, HttpSearch)
    return search


def answer(*ids: str) -> Handler:
    """Return a handler answering ``ids`` with descending scores, keeping the requests."""
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        results = [{"id": doc, "score": len(ids) - i} for i, doc in enumerate(ids)]
        return httpx.Response(200, json={"results": results})

    handler.seen = seen  # type: ignore[attr-defined]
    return handler


def test_get_sends_templated_params_and_reads_ids_and_scores() -> None:
    """GET fills {query} and {k} in the params and reads ids and scores by path."""
    handler = answer("a", "b")
    search = mock(handler, params={"q": "{query}", "size": "{k}"}, scores="results[*].score")
    hits = search("refund window", 5)
    request = handler.seen[0]  # type: ignore[attr-defined]
    assert [Hit("a", 2.0), Hit("b", 1.0)] == hits
    assert {"q": ["refund window"], "size": ["5"]} == parse_qs(request.url.query.decode())


def test_post_body_substitution_is_json_safe() -> None:
    """Quotes, backslashes and braces in the query still give valid JSON; "{k}" is a number."""
    handler = answer("a")
    body = '{"query": {"match": {"text": "{query}"}}, "size": "{k}", "note": "top {k}"}'
    search = mock(handler, method="POST", body=body)
    search('say "hi" \\ {k} ünïcode', 3)
    sent = json.loads(handler.seen[0].content)  # type: ignore[attr-defined]
    assert {
        "query": {"match": {"text": 'say "hi" \\ {k} ünïcode'}},
        "size": 3,
        "note": "top 3",
    } == sent


def test_url_placeholders_are_percent_encoded() -> None:
    """{query} in the URL is percent-encoded."""
    handler = answer("a")
    search = mock(handler, url="http://search.test/q/{query}/{k}")
    search("a/b c", 2)
    assert "/q/a%2Fb%20c/2" == handler.seen[0].url.raw_path.decode()  # type: ignore[attr-defined]


def test_headers_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Header values read ${VAR} and {env: VAR} from the environment."""
    monkeypatch.setenv("SEARCH_TOKEN", "s3cret")
    monkeypatch.setenv("TENANT", "acme")
    handler = answer("a")
    search = mock(
        handler,
        headers={"Authorization": "Bearer ${SEARCH_TOKEN}", "X-Tenant": {"env": "TENANT"}},
    )
    search("q", 1)
    request = handler.seen[0]  # type: ignore[attr-defined]
    assert ("Bearer s3cret", "acme") == (
        request.headers["Authorization"],
        request.headers["X-Tenant"],
    )


@pytest.mark.parametrize(
    "headers",
    [
        {"Authorization": "Bearer ${MONITOR_UNSET_VAR}"},
        {"Authorization": {"env": "MONITOR_UNSET_VAR"}},
    ],
    ids=["dollar", "env"],
)
def test_missing_env_var_is_a_setup_error_naming_it(headers: dict[str, object]) -> None:
    """A header that needs an unset variable fails at setup, naming the variable."""
    with pytest.raises(SearchSetupError, match="MONITOR_UNSET_VAR"):
        mock(answer(), headers=headers)


def test_integer_ids_are_read_as_strings() -> None:
    """Engines that number their documents give string ids."""
    search = mock(lambda request: httpx.Response(200, json={"results": [{"id": 7}]}))
    assert [Hit("7")] == search("q", 1)


@pytest.mark.parametrize(
    ("status", "retryable"),
    [(500, True), (503, True), (429, True), (404, False), (400, False)],
)
def test_error_status_is_a_typed_call_error(status: int, retryable: bool) -> None:
    """An error status raises SearchCallError 'HTTPStatusError <status>'; 429 and 5xx retry."""
    search = mock(lambda request: httpx.Response(status, text="nope"))
    with pytest.raises(SearchCallError) as caught:
        search("q", 1)
    assert (f"HTTPStatusError {status}", retryable) == (
        caught.value.error_type,
        caught.value.retryable,
    )


def test_transport_errors_are_retryable() -> None:
    """A connection failure raises a retryable error named after the httpx class."""

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    with pytest.raises(SearchCallError) as caught:
        mock(refuse)("q", 1)
    assert ("ConnectError", True) == (caught.value.error_type, caught.value.retryable)


@pytest.mark.parametrize(
    ("response", "message"),
    [
        (httpx.Response(200, text="<html>oops</html>"), "a JSON response"),
        (httpx.Response(200, json={"data": []}), "no key 'results'"),
        (httpx.Response(200, json={"results": [{"id": None}]}), "a string doc id"),
    ],
    ids=["not-json", "no-path", "null-id"],
)
def test_malformed_responses_are_output_errors(response: httpx.Response, message: str) -> None:
    """A body that is not JSON or lacks the ids raises SearchOutputError."""
    with pytest.raises(SearchOutputError, match=message):
        mock(lambda request: response)("q", 1)


def test_scores_must_pair_with_ids() -> None:
    """A scores path that yields another count than the ids path is an output error."""
    body = {"results": [{"id": "a"}], "scores": [1.0, 2.0]}
    search = mock(lambda request: httpx.Response(200, json=body), scores="scores")
    with pytest.raises(SearchOutputError, match="one per id"):
        search("q", 1)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"url": "ftp://x"}, "'url': expected an http:// or https:// URL"),
        ({"method": "PUT"}, "'method': expected GET or POST"),
        ({"ids": "results[x]"}, "'ids'"),
        ({"body": "{not json"}, "'body': expected a JSON template"),
        ({"timeout": 0}, "'timeout': expected a positive number"),
        ({"verify": "/no/such/ca.pem"}, "'verify': cannot read"),
        ({"retries": 3}, "unknown option(s) 'retries'"),
    ],
    ids=["url", "method", "path", "body", "timeout", "ca-bundle", "unknown"],
)
def test_bad_options_are_setup_errors(options: dict[str, object], message: str) -> None:
    """Each invalid option fails at setup with a message naming it."""
    with pytest.raises(SearchSetupError) as caught:
        mock(answer(), **options)
    assert message in str(caught.value)


# -- a real server on 127.0.0.1 --------------------------------------------------------------


class SearchServer(ThreadingHTTPServer):
    """A small JSON search service with endpoints that misbehave on purpose."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), SearchHandler)
        self.attempts: dict[str, int] = {}
        self.client_ports: set[int] = set()
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet when a client gives up on a slow answer."""


class SearchHandler(BaseHTTPRequestHandler):
    """Route a request by its path."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # small answers go out at once, not after a delayed ACK
    server: SearchServer

    def log_message(self, format: str, *args: Any) -> None:
        """Keep the test output quiet."""

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        params = {key: values[0] for key, values in parse_qs(parts.query).items()}
        query, k = params.get("q", ""), int(params.get("k", "10"))
        with self.server.lock:
            self.server.client_ports.add(self.client_address[1])
            attempt = self.server.attempts[query] = self.server.attempts.get(query, 0) + 1
        ranking = {"results": [{"id": f"{query}-{i}", "score": 1.0 / (i + 1)} for i in range(k)]}
        if parts.path == "/search":
            self._json(200, ranking)
        elif parts.path == "/slow":
            time.sleep(0.5)
            self._json(200, ranking)
        elif parts.path == "/flaky":  # 500 on each query's first attempt, then answers
            self._json(500, {"error": "warming"}) if attempt == 1 else self._json(200, ranking)
        elif parts.path == "/down":
            self._json(503, {"error": "down"})
        elif parts.path == "/html":
            self._send(200, b"<html>maintenance</html>", "text/html")
        elif parts.path == "/other":
            self._json(200, {"data": []})
        else:
            self._json(404, {"error": "no route"})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        query, k = body["query"]["match"]["text"], body["size"]
        hits = [{"_id": f"{query}-{i}", "_score": float(k - i)} for i in range(k)]
        self._json(200, {"hits": {"hits": hits}})

    def _json(self, status: int, document: object) -> None:
        self._send(status, json.dumps(document).encode(), "application/json")

    def _send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server() -> Iterator[SearchServer]:
    """Serve the search service on a free port of 127.0.0.1 for one test."""
    service = SearchServer()
    thread = threading.Thread(target=service.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    yield service
    service.shutdown()
    service.server_close()


def real(server: SearchServer, route: str = "/search", **options: Any) -> HttpSearch:
    """Build an http search against ``route`` of the test server."""
    settings = {"url": server.url + route, "params": {"q": "{query}", "k": "{k}"}}
    search = build_search("http", {**settings, "ids": "results[*].id", **options})
    assert isinstance(search, HttpSearch)
    return search


def test_real_server_get_answers_ranked_hits(server: SearchServer) -> None:
    """A GET against a real server returns its ranking with scores."""
    with real(server, scores="results[*].score") as search:
        assert [Hit("q-0", 1.0), Hit("q-1", 0.5)] == search("q", 2)


def test_real_server_post_with_elastic_style_paths(server: SearchServer) -> None:
    """A POST body template and hits.hits[*]._id paths work end to end."""
    with real(
        server,
        "/es",
        method="POST",
        params={},
        body={"query": {"match": {"text": "{query}"}}, "size": "{k}"},
        ids="hits.hits[*]._id",
        scores="hits.hits[*]._score",
    ) as search:
        assert [Hit("q-0", 2.0), Hit("q-1", 1.0)] == search("q", 2)


def test_real_server_connection_is_reused(server: SearchServer) -> None:
    """Sequential queries share one keep-alive connection."""
    with real(server) as search:
        result = run_queries(sample_queries(5), search, k=2, progress=False)
    assert (0, 1) == (result.failed, len(server.client_ports))


def test_real_server_500_then_ok_succeeds_with_retries(server: SearchServer) -> None:
    """A 500 is retried: with one retry every query is answered on its second attempt."""
    with real(server, "/flaky") as search:
        result = run_queries(sample_queries(4), search, k=2, retries=1, backoff=0, progress=False)
    assert (0, 4) == (result.failed, result.retries)
    assert ["sample query 0-0", "sample query 0-1"] == list(result.outcomes[0].retrieved_ids)


def test_real_server_500_without_retries_is_recorded(server: SearchServer) -> None:
    """Without retries a 500 is recorded against the query with its type."""
    with real(server, "/flaky") as search:
        result = run_queries(sample_queries(2), search, k=2, progress=False)
    assert {"HTTPStatusError 500": 2} == result.error_counts


@pytest.mark.slow
def test_real_server_slow_answer_hits_the_http_timeout(server: SearchServer) -> None:
    """A response slower than the http timeout is a ReadTimeout error."""
    with real(server, "/slow", timeout=0.1) as search:
        result = run_queries(sample_queries(1), search, k=2, progress=False)
    assert "ReadTimeout" == result.outcomes[0].error_type


@pytest.mark.slow
def test_real_server_slow_answer_hits_the_runner_timeout(server: SearchServer) -> None:
    """The runner's own timeout abandons a slow call too."""
    with real(server, "/slow") as search:
        result = run_queries(sample_queries(1), search, k=2, timeout=0.1, progress=False)
    assert "timeout" == result.outcomes[0].error_type


@pytest.mark.parametrize(
    ("route", "error_type"),
    [
        ("/html", "SearchOutputError"),
        ("/other", "SearchOutputError"),
        ("/down", "HTTPStatusError 503"),
    ],
    ids=["not-json", "missing-path", "down"],
)
def test_real_server_malformed_answers_are_per_query_errors(
    server: SearchServer, route: str, error_type: str
) -> None:
    """Non-JSON bodies, missing paths and error statuses fail the query, not the run."""
    with real(server, route) as search:
        result = run_queries(sample_queries(2), search, k=2, progress=False)
    assert {error_type: 2} == result.error_counts


def test_unreachable_server_is_a_retryable_connect_error() -> None:
    """A port nobody listens on gives a ConnectError that was retried."""
    search = build_search(
        "http", {"url": f"http://127.0.0.1:{closed_port()}/search", "ids": "results[*].id"}
    )
    result = run_queries(sample_queries(1), search, k=2, retries=1, backoff=0, progress=False)
    assert ("ConnectError", 1) == (result.outcomes[0].error_type, result.retries)


def closed_port() -> int:
    """Return a port of 127.0.0.1 that was free a moment ago and that nobody listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_error_message_never_shows_the_query_string() -> None:
    """A failing status is reported without the URL's query (it may carry an API key)."""
    transport = httpx.MockTransport(lambda request: httpx.Response(503, text="busy"))
    search = build_search(
        "http",
        {
            "url": "http://127.0.0.1:1/search",
            "params": {"q": "{query}", "api_key": "s3cret"},
            "ids": "hits[*].id",
            "transport": transport,
        },
    )
    with pytest.raises(SearchCallError) as caught:
        search("refund policy", 5)
    assert "s3cret" not in str(caught.value)
    assert "http://127.0.0.1:1/search answered 503" in str(caught.value)


@pytest.mark.parametrize(
    "body",
    [
        '{"results": [{"id": "a", "score": ' + "9" * 5000 + "}]}",
        "[" * 200_000 + "]" * 200_000,
    ],
    ids=["5000-digit-score", "nested-200000-deep"],
)
def test_an_answer_json_cannot_hold_fails_the_query_not_the_run(body: str) -> None:
    """A body Python's JSON reader refuses (a huge number, deep nesting) is an output error."""
    search = mock(lambda request: httpx.Response(200, content=body.encode()))
    with pytest.raises(SearchOutputError, match="expected a JSON response"):
        search("q", 10)
