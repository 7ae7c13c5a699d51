"""What the web app's guard refuses and allows: sign-in and same-origin writes.

The store is filled by running the embedded default suite through the job, as `run` does:
run 1 is the seeded rerank baseline, run 2 the keyword run that regressed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from monitor.config import default_config
from monitor.job import run_suite
from monitor.store import open_store
from monitor.web import WebSettings, create_app
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


# Sign-in --------------------------------------------------------------------------------


def test_pages_keep_the_origin_on_same_origin_requests(client: TestClient) -> None:
    """The referrer policy keeps the origin of same-origin posts (no-referrer makes it null)."""
    assert "same-origin" == client.get("/").headers["referrer-policy"]


def test_a_401_page_links_to_the_sign_in_form(store_path: Path) -> None:
    """A page asked for without the token says so and links to /login."""
    with _client(store_path, auth_token=TOKEN) as c:
        response = c.get("/")
    assert (401, True) == (response.status_code, 'href="/login"' in response.text)


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
