"""Where a store lives, read from a URL or a path: the one parser of store URLs.

The config, :func:`~monitor.store.open_store` and ``report`` all read store URLs here. SQLite
URLs follow the common convention: ``sqlite:///relative/path.db`` (three slashes) is relative,
``sqlite:////abs/path.db`` (four) absolute, ``sqlite:///:memory:`` (or ``sqlite:///``) in
memory; a plain path is a SQLite file. PostgreSQL is ``postgresql://``, ``postgres://`` or
``postgresql+psycopg://`` (the driver the store uses), given to libpq as ``postgresql://``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from monitor.errors import UsageError

#: The URL schemes of a store, in the order messages list them.
SCHEMES: Final = ("sqlite", "postgresql", "postgres", "postgresql+psycopg")
_POSTGRES: Final = frozenset(SCHEMES[1:])
_SQLITE_PREFIX: Final = "sqlite:///"
_MEMORY: Final = ":memory:"


@dataclass(frozen=True)
class StoreLocation:
    """A store's place: a SQLite file (``path`` as written, ``None`` in memory) or a
    PostgreSQL database (``url``, a libpq connection URI)."""

    kind: Literal["sqlite", "postgresql"]
    path: Path | None = None
    url: str | None = None

    @property
    def in_memory(self) -> bool:
        """Return whether this is a SQLite database in memory."""
        return self.kind == "sqlite" and self.path is None


def store_location(url_or_path: str | os.PathLike[str]) -> StoreLocation:
    """Return where ``url_or_path`` puts the store: a URL as :func:`parse_store_url` reads
    it, anything without ``://`` a SQLite file (``:memory:`` in memory)."""
    target = os.fspath(url_or_path)
    if "://" in target:
        return parse_store_url(target)
    if target in ("", _MEMORY):
        return StoreLocation("sqlite")
    return StoreLocation("sqlite", path=Path(target))


def parse_store_url(url: str) -> StoreLocation:
    """Return the store a ``sqlite:`` or PostgreSQL URL names.

    Relative SQLite paths stay relative: the caller knows what they are relative to. Raise
    UsageError, naming the URL without its password, for another scheme or a SQLite URL that
    is not ``sqlite:///...``.
    """
    scheme, sep, _ = url.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in SCHEMES:
        raise UsageError(
            f"store URL {redact(url)!r}: unknown scheme {scheme!r}; "
            f"known schemes: {', '.join(SCHEMES)}"
        )
    if scheme in _POSTGRES:
        return StoreLocation("postgresql", url="postgresql" + url[len(scheme) :])
    if url[: len(_SQLITE_PREFIX)].lower() != _SQLITE_PREFIX:
        raise UsageError(
            f"store URL {redact(url)!r}: expected sqlite:///relative/path.db, "
            "sqlite:////absolute/path.db or sqlite:///:memory:"
        )
    rest = url[len(_SQLITE_PREFIX) :]
    if rest in ("", _MEMORY):
        return StoreLocation("sqlite")
    return StoreLocation("sqlite", path=Path(rest))


def redact(url: str) -> str:
    """Return ``url`` without its password, fit for messages and logs."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:  # an unreadable port or host: show nothing after the scheme
        return f"{url.partition('://')[0]}://***"
    if password is not None:
        host = parts.netloc.rsplit("@", 1)[1]
        parts = parts._replace(netloc=f"{parts.username or ''}:***@{host}")
    if "password=" in parts.query:
        query = parse_qsl(parts.query, keep_blank_values=True)
        hidden = [(name, "***" if name == "password" else value) for name, value in query]
        parts = parts._replace(query=urlencode(hidden, safe="*"))
    return urlunsplit(parts)
