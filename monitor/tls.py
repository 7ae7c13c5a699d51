"""How the HTTP clients verify TLS: the default CA bundle is read once per process.

An ``httpx`` client given ``verify=True`` builds a new SSL context and reads the whole CA
bundle into it, some tens of milliseconds each time: a search, a judge, an embedder or a
notifier built per run (or per suite of a daemon) would pay it again and again. Every client
of the package takes :func:`verifying` instead, which builds the same context as ``httpx``
does for ``verify=True`` (``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` when set, else certifi's
bundle) on first use and shares it; an SSL context is safe to share between clients and
threads. A CA bundle file a user names is read where the client is built, as before.
"""

from __future__ import annotations

import functools
import os
import ssl


@functools.cache
def default_context() -> ssl.SSLContext:
    """Return the shared context that verifies servers against the default CA bundle."""
    if os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    if os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=os.environ["SSL_CERT_DIR"])
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


def verifying(verify: bool | ssl.SSLContext = True) -> bool | ssl.SSLContext:
    """Return what to pass an ``httpx`` client as ``verify``: the shared default context for
    ``True``, anything else as given."""
    return default_context() if verify is True else verify
