"""What keeps the web app safe by default: bearer token, same-origin writes, CSP.

- Every request must name, in its ``Host`` header, a host the server answers to: the
  loopback names and addresses, the address it is bound to, and the names it is told to
  allow. A page on another name that resolves to this server (DNS rebinding) reads nothing.
- With a token, every request needs ``Authorization: Bearer TOKEN`` or the cookie set by
  ``/login`` (a form posting the token, for browsers); without one the app should only be
  bound to a loopback address (the CLI refuses anything else). The cookie holds an HMAC of
  the token under a key of the server's process, never the token itself.
- Every request other than GET/HEAD must come from the app's own origin (``Origin`` or
  ``Sec-Fetch-Site``) and carry the server's CSRF token (``X-CSRF-Token`` header or a
  ``csrf`` form field): a page elsewhere cannot make a browser post to it.
- Every response carries a Content-Security-Policy allowing only the app's own scripts,
  styles and requests, and no framing.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
from collections.abc import Collection, Mapping
from urllib.parse import urlsplit

#: The policy of every page: only what the app itself serves.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)

#: Headers added to every response.
HEADERS: Mapping[str, str] = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    # Same-origin requests keep their origin (a browser's form post then names it in Origin
    # instead of "null"); requests to other sites carry no referrer at all.
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}

#: The cookie ``/login`` sets to the token's HMAC (:func:`session_value`).
TOKEN_COOKIE = "monitor_token"

#: The host names every server answers to: loopback, which no other site can name.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")

#: The addresses that bind every interface, which no request names as its host.
_WILDCARDS = frozenset({"0.0.0.0", "::", ""})

#: What the ``--allow-host`` suggestion of a refusal may hold, so that it runs as printed.
_HOST_NAME = re.compile(r"[a-z0-9.:-]+")

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def token_matches(expected: str, given: str | None) -> bool:
    """Return whether ``given`` is the token, compared in constant time."""
    return given is not None and hmac.compare_digest(expected.encode(), given.encode())


def session_value(key: str, token: str) -> str:
    """Return the session cookie's value for ``token``: its HMAC-SHA256 under ``key``.

    The cookie is then not the token: read from a browser's profile it signs nobody in
    to another process of the server, and it never leaves in a log as the token.
    """
    return hmac.new(key.encode(), token.encode(), hashlib.sha256).hexdigest()


def local_path(given: str | None) -> str:
    """Return ``given`` when it is a path of this server (``/...``), else ``/``: where to go
    after signing in is never another site (``//host``, ``/\\host`` or ``https://...``)."""
    if (
        not given
        or not given.startswith("/")
        or given.startswith(("//", "/\\"))
        or any(ord(char) < 0x20 or ord(char) == 0x7F or char == "\\" for char in given)
    ):
        return "/"
    return given


def bearer(authorization: str | None) -> str | None:
    """Return the token of an ``Authorization: Bearer TOKEN`` header, or None."""
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None


def cross_site(headers: Mapping[str, str], host: str) -> str | None:
    """Return why a write request is refused as cross-site, or None when it is same-origin.

    ``Sec-Fetch-Site`` (sent by current browsers) must be ``same-origin`` when present; an
    ``Origin`` must name this host; one of the two must be there.
    """
    fetch_site = headers.get("sec-fetch-site")
    origin = headers.get("origin")
    if fetch_site is not None and fetch_site not in ("same-origin", "none"):
        return f"Sec-Fetch-Site is {fetch_site!r}, expected 'same-origin'"
    if origin == "null" and fetch_site == "same-origin":
        # A browser names no origin under some referrer policies (and from sandboxed or
        # opaque documents, which it marks cross-site); Sec-Fetch-Site, which no page can
        # set, says this one came from the server's own pages.
        return None
    if origin is not None:
        if origin == "null" or urlsplit(origin).netloc != host:
            return f"Origin {origin!r} is not this server ({host})"
        return None
    if fetch_site is None:
        return "the request names no Origin: expected one from this server"
    return None


def allowed_hosts(address: str, extra: Collection[str]) -> frozenset[str]:
    """Return the host names a server bound to ``address`` answers to: the loopback names,
    the address itself (unless it binds every interface) and the ``extra`` names."""
    names = {*LOOPBACK_HOSTS, *(normal_host(name) for name in extra)}
    if normal_host(address) not in _WILDCARDS:
        names.add(normal_host(address))
    return frozenset(names)


def normal_host(name: str) -> str:
    """Return ``name`` as hosts are compared: lower case, without IPv6 brackets or a
    trailing dot."""
    return name.strip().lower().removeprefix("[").removesuffix("]").rstrip(".")


def host_refusal(
    host: str | None, allowed: Collection[str], local: tuple[str, int] | None
) -> str | None:
    """Return why a request naming ``host`` in its Host header is refused, or None.

    ``allowed`` are the names the server answers to (:func:`allowed_hosts`) and ``local``
    the address and port the connection reached. The address a connection reached is
    allowed too when the Host names it as an address: no other site can name an address,
    so it cannot be a rebound name. A loopback host naming another port than the one the
    connection reached is refused.
    """
    if not host:
        return "the request names no Host: expected this server's address"
    try:
        parts = urlsplit(f"//{host}")
        name, port = parts.hostname or "", parts.port
    except ValueError:
        name, port = "", None
    name = normal_host(name)
    local_name = normal_host(local[0]) if local else ""
    if name and (name in allowed or (name == local_name and _is_address(name))):
        if name in LOOPBACK_HOSTS and port is not None and local and port != local[1]:
            return f"Host {host!r} names port {port}, but this server listens on {local[1]}"
        return None
    shown = ", ".join(sorted(f"[{n}]" if ":" in n else n for n in allowed))
    how = (
        f"; to serve under that name, start the server with --allow-host {name}"
        if name and _HOST_NAME.fullmatch(name)
        else ""
    )
    return f"Host {host!r} is not a name this server answers to ({shown}){how}"


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True
