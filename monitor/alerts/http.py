"""One HTTP POST to a secret URL, with its failure classified and its secrets kept out.

:class:`Poster` makes exactly one attempt (retries are :mod:`monitor.alerts.delivery`'s) and
raises :class:`~monitor.errors.NotifyError`: ``retryable`` for connection errors, timeouts,
5xx and 429 answers (with the receiver's ``Retry-After``), not for other 4xx answers.

It calls the transport directly rather than through ``httpx.Client``: the client logs every
request's full URL at INFO level, and a webhook URL is a credential. The real transport
honours ``HTTPS_PROXY``/``HTTP_PROXY``/``NO_PROXY`` as the client would. Error messages
never hold the URL, and any secret the poster knows (URL, header values, keys) is replaced
by ``***`` in the receiver's answer before it is quoted (:mod:`monitor.secrets`).

Credentials in the URL (``https://user:pass@host/``) are sent as HTTP basic auth (the
``Authorization`` header) and taken out of the URL the request goes to; a URL with
credentials beside an ``Authorization`` header of its own is refused. ``verify`` is TLS
certificate verification, as the http search takes it: true (the system's CA bundle),
false, or the path of a CA bundle file, read when the poster is built.
"""

from __future__ import annotations

import base64
import email.utils
import math
import ssl
import urllib.request
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Final

import httpx

from monitor import __version__
from monitor.alerts.base import Clock, utcnow
from monitor.config.model import Secret
from monitor.errors import NotifierSetupError, NotifyError
from monitor.secrets import Scrubber, url_secrets
from monitor.tls import verifying

USER_AGENT: Final = f"retrieval-monitor/{__version__}"
#: The header that carries a notification's idempotency key.
IDEMPOTENCY_HEADER: Final = "Idempotency-Key"
#: Most characters of a receiver's answer quoted in an error.
QUOTED_CHARS: Final = 200


class Poster:
    """Posts bodies to one URL through one transport.

    ``notifier`` names the notifier in errors; ``headers`` are sent with every request (their
    values count as secrets); ``secrets`` are further strings never to show; ``verify`` is
    true, false or a CA bundle file (used by the real transport only).
    """

    def __init__(
        self,
        notifier: str,
        url: Secret,
        *,
        transport: httpx.BaseTransport | None = None,
        timeout_seconds: float = 10.0,
        headers: Mapping[str, str] | None = None,
        secrets: Iterable[str] = (),
        clock: Clock = utcnow,
        verify: bool | str = True,
    ) -> None:
        self.notifier = notifier
        self._url = url
        try:
            parsed = httpx.URL(url.reveal())
        except (httpx.InvalidURL, ValueError, TypeError):
            raise NotifierSetupError(notifier, f"url {url} is not a valid URL") from None
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise NotifierSetupError(notifier, f"url {url} is not an http(s) URL")
        if not timeout_seconds > 0 or not math.isfinite(timeout_seconds):
            raise NotifierSetupError(notifier, f"timeout must be above 0, not {timeout_seconds}")
        self._headers = {str(k): str(v) for k, v in (headers or {}).items()}
        hidden = [url.reveal(), *secrets]
        if parsed.userinfo:
            if any(name.lower() == "authorization" for name in self._headers):
                raise NotifierSetupError(
                    notifier,
                    f"url {url} carries credentials and option 'headers' an Authorization "
                    "header: give only one of them",
                )
            pair = f"{parsed.username}:{parsed.password}".encode()
            self._headers["authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
            hidden += [parsed.password, parsed.userinfo.decode("ascii"), pair.decode()]
            parsed = parsed.copy_with(userinfo=b"")
            hidden.append(str(parsed))
        self._parsed = parsed
        self._tls = _tls(notifier, verify)
        # Built on first use: a run that sends nothing does not load the CA bundle.
        self._transport = transport
        self._own_transport = transport is None
        self._timeout = httpx.Timeout(timeout_seconds).as_dict()
        # A receiver's error page may quote just the path: a webhook URL's credential.
        self._scrub = Scrubber.of(
            (*url_secrets(url.reveal(), path=True), *hidden, *self._headers.values())
        )
        self._clock = clock

    def post(
        self,
        body: bytes,
        headers: Mapping[str, str] | None = None,
        *,
        idempotency_key: str = "",
    ) -> int:
        """Send ``body`` once; return the 2xx status, or raise NotifyError.

        A non-empty ``idempotency_key`` is sent as the :data:`IDEMPOTENCY_HEADER` header.
        """
        sent = {
            "content-type": "application/json",
            "user-agent": USER_AGENT,
            **self._headers,
            **(headers or {}),
        }
        if idempotency_key:
            sent[IDEMPOTENCY_HEADER] = idempotency_key
        request = httpx.Request(
            "POST",
            self._parsed,
            content=body,
            headers=sent,
            extensions={"timeout": self._timeout},
        )
        if self._transport is None:
            self._transport = _real_transport(self._parsed, self._tls)
        try:
            response = self._transport.handle_request(request)
            try:
                response.read()
            finally:
                response.close()
        except httpx.TimeoutException as exc:
            reason = f"timed out ({type(exc).__name__})"
            raise NotifyError(self.notifier, reason, retryable=True) from None
        except httpx.TransportError as exc:
            reason = f"cannot reach the receiver ({type(exc).__name__}: {self.scrub(str(exc))})"
            raise NotifyError(self.notifier, reason, retryable=True) from None
        status = response.status_code
        if 200 <= status < 300:
            return status
        retryable = status >= 500 or status == 429
        answer = self.scrub(response.text.strip())[:QUOTED_CHARS]
        reason = f"the receiver answered HTTP {status}" + (f": {answer}" if answer else "")
        raise NotifyError(
            self.notifier,
            reason,
            retryable=retryable,
            status=status,
            retry_after=retry_after(response.headers.get("retry-after"), self._clock()),
        )

    def scrub(self, text: str) -> str:
        """Return ``text`` with every secret this poster knows replaced by ``***``."""
        return self._scrub(text)

    def close(self) -> None:
        """Close the transport if the poster made it."""
        if self._own_transport and self._transport is not None:
            self._transport.close()
            self._transport = None

    def __repr__(self) -> str:
        return f"Poster({self.notifier!r}, {self._url})"


def retry_after(value: str | None, now: datetime) -> float | None:
    """Return the seconds a ``Retry-After`` header asks to wait (seconds or an HTTP date)."""
    if value is None:
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        seconds = (when - now).total_seconds()
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


def _tls(notifier: str, verify: bool | str) -> bool | ssl.SSLContext:
    """Return what the transport verifies TLS with: a CA bundle file is read now, so that a
    missing or broken file is a setup error rather than a failure of every delivery."""
    if isinstance(verify, bool):
        return verify
    try:
        context = ssl.create_default_context(cafile=verify)
    except ssl.SSLError as exc:
        reason = exc.reason or type(exc).__name__
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
    else:
        return context
    raise NotifierSetupError(
        notifier, f"option 'verify': cannot read the CA bundle {verify!r} ({reason})"
    )


def _real_transport(url: httpx.URL, tls: bool | ssl.SSLContext = True) -> httpx.BaseTransport:
    """Return a transport for ``url``, through the proxy the environment names for it."""
    proxy = None
    if not urllib.request.proxy_bypass(url.host):
        proxy = urllib.request.getproxies_environment().get(url.scheme)
    # Plain HTTP straight to the receiver never uses TLS: skip loading the CA bundle.
    plain = url.scheme == "http" and proxy is None
    return httpx.HTTPTransport(proxy=proxy, retries=0, verify=False if plain else verifying(tls))
