"""How HTTP notifiers reach their receivers: URL credentials as basic auth, and TLS
verification through ``verify`` (true, false or a CA bundle file).

The HTTPS receiver serves ``tests/data/tls/receiver.pem`` (self-signed for 127.0.0.1; the
command that made it is in ``tests/data/tls/README.md``).
"""

from __future__ import annotations

import base64
import http.server
import ssl
import threading
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from monitor.alerts.base import Notification, Notifier, NotifierContext
from monitor.alerts.build import failure_alert
from monitor.alerts.registry import build_notifier
from monitor.alerts.testing import RecordingReceiver
from monitor.config import load_config_text
from monitor.config.common import NotifierConfig
from monitor.config.model import Secret
from monitor.errors import NotifierSetupError, NotifyError

TLS = Path(__file__).parent / "data" / "tls"
CA = TLS / "receiver.pem"
T0 = datetime(2030, 1, 1, tzinfo=timezone.utc)
NOTE = Notification(
    failure_alert("nightly", "search_backend_down", "refused", at=T0), "firing", "nightly/test"
)


def notifier(kind: str, url: str, **options: Any) -> Notifier:
    """Build a ``kind`` notifier posting to ``url`` through real connections."""
    if kind == "pagerduty":
        options.setdefault("routing_key", Secret("R0UTINGKEY"))
    config = NotifierConfig(kind, url=Secret(url), options=options)
    return build_notifier(config, NotifierContext("nightly/test", timeout_seconds=5.0))


def basic(user: str, password: str) -> str:
    """Return the Authorization header value of HTTP basic auth."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


# --- credentials in the URL ----------------------------------------------------------------


@pytest.mark.parametrize("kind", ["alertmanager", "webhook", "slack", "pagerduty"])
def test_url_credentials_are_sent_as_basic_auth(kind: str) -> None:
    """``http://user:pass@host`` arrives as an Authorization header, not in the request line."""
    with RecordingReceiver() as receiver:
        url = receiver.url.replace("http://", "http://monitor:s3cr%40t-pw@") + "/am"
        notifier(kind, url).send(NOTE)
    (request,) = receiver.accepted
    assert (basic("monitor", "s3cr@t-pw"), False) == (
        request.headers.get("authorization"),
        "s3cr" in request.path,
    )


def test_url_credentials_never_show_in_errors_even_when_the_receiver_echoes_them() -> None:
    """A 400 that quotes the password and the header is reported with both masked."""
    secret = basic("monitor", "s3cret-pw")
    answer = (400, {}, f"bad auth s3cret-pw {secret}".encode())
    with RecordingReceiver([answer]) as receiver:
        url = receiver.url.replace("http://", "http://monitor:s3cret-pw@")
        with pytest.raises(NotifyError) as raised:
            notifier("alertmanager", url).send(NOTE)
    assert (False, False) == ("s3cret-pw" in str(raised.value), secret in str(raised.value))


def test_url_credentials_beside_an_authorization_header_are_refused() -> None:
    """Two sources of credentials are a setup error that names both, not the password."""
    with pytest.raises(NotifierSetupError, match="carries credentials") as raised:
        notifier(
            "alertmanager",
            "https://monitor:s3cret-pw@am.example",
            headers={"Authorization": "Bearer tok"},
        )
    assert "s3cret-pw" not in str(raised.value)


def test_a_url_without_credentials_sends_no_authorization() -> None:
    """No userinfo, no Authorization header."""
    with RecordingReceiver() as receiver:
        notifier("alertmanager", receiver.url).send(NOTE)
    assert "authorization" not in receiver.accepted[0].headers


# --- verify ----------------------------------------------------------------------------------


class _Accepting(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        """Keep the test output quiet."""


@pytest.fixture(scope="module")
def https_url() -> Iterator[str]:
    """Return the URL of an HTTPS receiver on 127.0.0.1 with a self-signed certificate."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Accepting)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(CA, TLS / "receiver.key")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}/hook"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.mark.parametrize("kind", ["alertmanager", "webhook", "slack", "pagerduty"])
def test_a_ca_bundle_in_verify_trusts_the_receivers_certificate(kind: str, https_url: str) -> None:
    """With ``verify: <its CA file>``, a receiver with a private certificate is reached."""
    notifier(kind, https_url, verify=str(CA)).send(NOTE)


def test_the_system_bundle_does_not_trust_a_private_certificate(https_url: str) -> None:
    """By default the certificate is verified, and a self-signed one fails, retryably."""
    with pytest.raises(NotifyError, match="cannot reach the receiver") as raised:
        notifier("webhook", https_url).send(NOTE)
    assert raised.value.retryable


def test_verify_false_skips_certificate_checks(https_url: str) -> None:
    """``verify: false`` reaches a receiver whose certificate nobody vouches for."""
    notifier("webhook", https_url, verify=False).send(NOTE)


def test_a_missing_ca_bundle_is_a_setup_error_naming_option_and_file(tmp_path: Path) -> None:
    """A CA file that is not there fails when the notifier is built, naming it."""
    missing = tmp_path / "nope.pem"
    with pytest.raises(NotifierSetupError, match=r"option 'verify'.*nope\.pem"):
        notifier("webhook", "https://hooks.example/x", verify=str(missing))


@pytest.mark.parametrize("value", [1, "", ["ca.pem"]])
def test_verify_takes_only_a_boolean_or_a_file(value: object) -> None:
    """Another kind of value is a setup error saying what is expected."""
    with pytest.raises(NotifierSetupError, match="true, false or the path of a CA bundle"):
        notifier("slack", "https://hooks.example/x", verify=value)


def test_a_relative_ca_bundle_is_read_from_the_configs_folder(tmp_path: Path) -> None:
    """``verify: certs/ca.pem`` in a config means that file beside the config."""
    text = (
        "suites:\n  s:\n    evalset: {bundled: larkfield}\n    search: {kind: replay,"
        " bundled: larkfield/keyword}\n    notifiers:\n      - {kind: webhook, url:"
        " 'https://h.example/x', verify: certs/ca.pem}\n"
    )
    config = load_config_text(text, base_dir=tmp_path)
    (hook,) = config.suites["s"].notifiers
    assert str(tmp_path / "certs" / "ca.pem") == hook.options["verify"]
