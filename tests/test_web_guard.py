"""What the web app's guard refuses and allows: the Host, sign-in, same-origin writes and
the size and shape of what a request holds.

The store is filled by running the embedded default suite through the job, as `run` does:
run 1 is the seeded rerank baseline, run 2 the keyword run that regressed.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from monitor.cli.serve import web_settings
from monitor.config import default_config
from monitor.errors import UsageError
from monitor.job import run_suite
from monitor.store import open_store
from monitor.web import WebSettings, create_app
from monitor.web.limits import MAX_BODY_BYTES, MAX_JSON_DEPTH, bounded_int
from monitor.web.security import TOKEN_COOKIE

SUITE = "larkfield"
LOOPBACK = "http://127.0.0.1"
TOKEN = "s3cret-token"


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding the seeded rerank baseline (run 1) and a keyword run (run 2)."""
    path = tmp_path_factory.mktemp("guard") / "m.db"
    with open_store(path) as store:
        run_suite(default_config().suite(SUITE), store, progress=False)
    return path


def _client(store_path: Path, base_url: str = LOOPBACK, **options: Any) -> TestClient:
    settings = WebSettings(
        config=default_config(), store=lambda: open_store(store_path), warm=False, **options
    )
    return TestClient(create_app(settings), base_url=base_url)


@pytest.fixture
def client(store_path: Path) -> Iterator[TestClient]:
    with _client(store_path) as c:
        yield c


def _csrf(client: TestClient) -> str:
    page = client.get("/").text
    return page.split('name="csrf-token" content="', 1)[1].split('"', 1)[0]


def _write_headers(client: TestClient) -> dict[str, str]:
    return {"Origin": LOOPBACK, "X-CSRF-Token": _csrf(client)}


# The Host -------------------------------------------------------------------------------


def test_a_request_for_another_host_is_refused_naming_it(client: TestClient) -> None:
    """A page on a rebound name is refused with 421, naming the Host and how to allow it."""
    response = client.get("/", headers={"Host": "rebind.example:8321"})
    assert 421 == response.status_code
    assert "rebind.example:8321" in response.text
    assert "--allow-host rebind.example" in response.text


def test_a_write_for_another_host_is_refused(client: TestClient) -> None:
    """A POST naming another Host is refused before the CSRF check could be passed."""
    headers = {"Host": "rebind.example", "Origin": "http://rebind.example"}
    response = client.post("/api/simulate", json={"docs": []}, headers=headers)
    assert (421, True) == (response.status_code, "rebind.example" in response.json()["error"])


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]", "LOCALHOST."])
def test_loopback_hosts_are_served(store_path: Path, host: str) -> None:
    """The loopback names and addresses are answered whatever address is bound."""
    with _client(store_path, base_url=f"http://{host}") as c:
        assert 200 == c.get("/").status_code


def test_a_loopback_host_naming_another_port_is_refused(client: TestClient) -> None:
    """127.0.0.1 on another port than the connection reached is not this server."""
    response = client.get("/", headers={"Host": "127.0.0.1:9999"})
    assert (421, True) == (response.status_code, "listens on 80" in response.text)


def test_the_bound_address_is_served(store_path: Path) -> None:
    """A server bound to an address answers requests naming that address."""
    with _client(store_path, base_url="http://10.1.2.3", address="10.1.2.3") as c:
        assert 200 == c.get("/").status_code


def test_a_request_without_a_host_is_refused(client: TestClient) -> None:
    """A request naming no Host is refused, saying so."""
    response = client.get("/", headers={"Host": ""})
    assert (421, True) == (response.status_code, "names no Host" in response.text)


def _serve(argv: list[str]) -> argparse.Namespace:
    from monitor.cli import build_parser

    return build_parser().parse_args(["serve", *argv])


def test_the_printed_flag_allows_the_host_as_printed(client: TestClient, store_path: Path) -> None:
    """The --allow-host of a refusal, given to serve as printed, lets that Host in."""
    refused = client.get("/", headers={"Host": "monitor.example.com"}).text
    flag = refused.split("start the server with ", 1)[1].split("<", 1)[0]
    settings = web_settings(_serve(shlex.split(flag)), default_config(), warm=False)
    settings = WebSettings(**{**_fields(settings), "store": lambda: open_store(store_path)})
    with TestClient(create_app(settings), base_url="http://monitor.example.com") as c:
        assert 200 == c.get("/").status_code


def _fields(settings: WebSettings) -> dict[str, Any]:
    return {name: getattr(settings, name) for name in settings.__dataclass_fields__}


def test_serve_refuses_an_allowed_host_that_is_no_host_name() -> None:
    """--allow-host takes a host name: a URL is refused, naming the option."""
    with pytest.raises(UsageError, match="--allow-host 'http://x/'"):
        web_settings(_serve(["--allow-host", "http://x/"]), default_config())


# Sign-in --------------------------------------------------------------------------------


def test_pages_keep_the_origin_on_same_origin_requests(client: TestClient) -> None:
    """The referrer policy keeps the origin of same-origin posts (no-referrer makes it null)."""
    assert "same-origin" == client.get("/").headers["referrer-policy"]


def test_a_401_page_links_to_the_sign_in_form(store_path: Path) -> None:
    """A page asked for without the token says so and links to /login, coming back to it."""
    with _client(store_path, auth_token=TOKEN) as c:
        response = c.get(f"/suites/{SUITE}?page=1")
    link = f'href="/login?next=/suites/{SUITE}%3Fpage%3D1"'
    assert (401, True) == (response.status_code, link in response.text)


def test_signing_in_comes_back_to_the_page_asked_for(store_path: Path) -> None:
    """The form's next path is where a successful sign-in redirects."""
    with _client(store_path, auth_token=TOKEN) as c:
        form = c.get(f"/login?next=/suites/{SUITE}%3Fpage%3D1").text
        login = c.post(
            "/login",
            data={"token": TOKEN, "next": f"/suites/{SUITE}?page=1"},
            headers={"Origin": LOOPBACK},
            follow_redirects=False,
        )
    assert 'name="next" value="/suites/larkfield?page=1"' in form
    assert (303, f"/suites/{SUITE}?page=1") == (login.status_code, login.headers["location"])


@pytest.mark.parametrize(
    "elsewhere", ["//evil.example/", "https://evil.example/", "/\\evil.example", "/\tx", ""]
)
def test_signing_in_never_redirects_to_another_site(store_path: Path, elsewhere: str) -> None:
    """A next path that is not one of this server's sends the browser to / instead."""
    with _client(store_path, auth_token=TOKEN) as c:
        login = c.post(
            "/login",
            data={"token": TOKEN, "next": elsewhere},
            headers={"Origin": LOOPBACK},
            follow_redirects=False,
        )
    assert "/" == login.headers["location"]


def _sign_in(client: TestClient, headers: dict[str, str]) -> Any:
    return client.post("/login", data={"token": TOKEN}, headers=headers, follow_redirects=False)


def test_a_browser_form_post_naming_a_null_origin_signs_in(store_path: Path) -> None:
    """Origin 'null' with Sec-Fetch-Site same-origin (set by the browser alone) is let in."""
    with _client(store_path, auth_token=TOKEN) as c:
        login = _sign_in(c, {"Origin": "null", "Sec-Fetch-Site": "same-origin"})
        after = c.get("/").status_code
    assert (303, 200) == (login.status_code, after)


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "null"},
        {"Origin": "null", "Sec-Fetch-Site": "cross-site"},
        {"Origin": "null", "Sec-Fetch-Site": "same-site"},
    ],
)
def test_a_null_origin_from_elsewhere_is_refused(store_path: Path, headers: dict[str, str]) -> None:
    """Origin 'null' without Sec-Fetch-Site saying same-origin is refused as cross-site."""
    with _client(store_path, auth_token=TOKEN) as c:
        response = _sign_in(c, headers)
    assert (403, True) == (response.status_code, "cross-site" in response.text)


def test_the_session_cookie_is_not_the_token(store_path: Path) -> None:
    """Signing in sets a cookie derived from the token, never the token itself."""
    with _client(store_path, auth_token=TOKEN) as c:
        login = _sign_in(c, {"Origin": LOOPBACK})
    cookie = login.cookies[TOKEN_COOKIE]
    assert (False, 64) == (TOKEN in cookie, len(cookie))


def test_a_cookie_holding_the_raw_token_is_refused(store_path: Path) -> None:
    """Only the server's derived value signs in by cookie; the token there is a 401."""
    with _client(store_path, auth_token=TOKEN) as c:
        c.cookies.set(TOKEN_COOKIE, TOKEN)
        assert 401 == c.get("/").status_code


def test_the_session_cookie_is_http_only_and_same_site_strict(store_path: Path) -> None:
    """The cookie is out of scripts' reach and never sent by another site's requests."""
    with _client(store_path, auth_token=TOKEN) as c:
        header = _sign_in(c, {"Origin": LOOPBACK}).headers["set-cookie"].lower()
    assert (True, True, False) == (
        "httponly" in header,
        "samesite=strict" in header,
        "secure" in header,
    )


def test_the_session_cookie_is_secure_over_https(store_path: Path) -> None:
    """Served over https, the cookie is only ever sent over https."""
    with _client(store_path, base_url="https://127.0.0.1", auth_token=TOKEN) as c:
        header = _sign_in(c, {"Origin": "https://127.0.0.1"}).headers["set-cookie"]
    assert "secure" in header.lower()


def test_a_wrong_token_sets_no_cookie(store_path: Path) -> None:
    """A form posting another token is answered 401 without a cookie."""
    with _client(store_path, auth_token=TOKEN) as c:
        response = c.post("/login", data={"token": "nope"}, headers={"Origin": LOOPBACK})
    assert (401, None) == (response.status_code, response.headers.get("set-cookie"))


# What a request holds -------------------------------------------------------------------


def test_a_body_over_the_limit_is_a_413(client: TestClient) -> None:
    """A body larger than 1 MiB is refused before any handler reads it."""
    body = b"[" + b"0," * (MAX_BODY_BYTES // 2) + b"0]"
    headers = {**_write_headers(client), "Content-Type": "application/json"}
    response = client.post("/api/simulate", content=body, headers=headers)
    assert (413, True) == (response.status_code, "1 MiB" in response.json()["error"])


def test_a_streamed_body_over_the_limit_is_a_413(client: TestClient) -> None:
    """A body sent in chunks without a length is cut off at the limit too."""

    def chunks() -> Iterator[bytes]:
        for _ in range(MAX_BODY_BYTES // 65536 + 2):
            yield b" " * 65536

    response = client.post("/api/simulate", content=chunks(), headers=_write_headers(client))
    assert 413 == response.status_code


@pytest.mark.parametrize("url", ["/api/simulate", "/api/labels"])
@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 100_000])
def test_deep_json_is_a_400(store_path: Path, url: str, depth: int) -> None:
    """JSON nested deeper than the limit (or than the parser's stack) is refused with 400."""
    body = '{"docs": ' + "[" * depth + "]" * depth + "}"
    with _client(store_path, allow_labeling=True) as c:
        response = c.post(url, content=body, headers=_write_headers(c))
    assert (400, True) == (response.status_code, "JSON" in response.json()["error"])


@pytest.mark.parametrize(
    "url",
    [
        f"/suites/{SUITE}/runs/{2**64}",
        f"/suites/{SUITE}/runs/{2**63}/queries/Q34",
        f"/suites/{SUITE}?page={2**64}",
        f"/simulator?suite={SUITE}&run={2**64}&query=Q34",
    ],
)
def test_an_id_past_64_bits_in_an_address_is_a_404(client: TestClient, url: str) -> None:
    """A run id or page number past 64 bits is a 404 saying so, never a 500."""
    response = client.get(url)
    assert (404, True) == (response.status_code, "at most 64 bits" in response.text)


@pytest.mark.parametrize("url", ["/api/simulate", "/api/labels"])
def test_an_integer_past_64_bits_in_a_body_is_a_400(store_path: Path, url: str) -> None:
    """A grade or cutoff past 64 bits is refused with 400 naming the limit."""
    body = {"suite": SUITE, "query_id": "Q34", "doc_id": "d", "grade": 2**64, "k": 2**70}
    with _client(store_path, allow_labeling=True) as c:
        response = c.post(url, json=body, headers=_write_headers(c))
    assert (400, True) == (response.status_code, "64 bits" in response.json()["error"])


@pytest.mark.parametrize(("raw", "expected"), [(str(-(2**63)), -(2**63)), (2**63 - 1, 2**63 - 1)])
def test_the_64_bit_bounds_themselves_are_integers(raw: object, expected: int) -> None:
    """The smallest and largest 64-bit integers are accepted as they are."""
    assert expected == bounded_int(raw, "run id")
