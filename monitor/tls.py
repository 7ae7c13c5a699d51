"""How the HTTP clients verify TLS: the default CA bundle is read once per process.

An ``httpx`` client given ``verify=True`` builds a new SSL context and reads the whole CA
bundle into it, some tens of milliseconds each time: a search, a judge, an embedder or a
notifier built per run (or per suite of a daemon) would pay it again and again. Every client
of the package takes :func:`verifying` instead, which builds that same context once, with
``httpx.create_ssl_context`` (``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` when set, else certifi's
bundle), and shares it; an SSL context is safe to share between clients and threads. A CA
bundle file a user names is read where the client is built, as before.
"""

from __future__ import annotations

import functools
import ssl


@functools.cache
def default_context() -> ssl.SSLContext:
    """Return the shared context that verifies servers against the default CA bundle."""
    import httpx

    return httpx.create_ssl_context()


def verifying(verify: bool | ssl.SSLContext = True) -> bool | ssl.SSLContext:
    """Return what to pass an ``httpx`` client as ``verify``: the shared default context for
    ``True``, anything else as given."""
    return default_context() if verify is True else verify
