"""Open a store by URL or path: SQLite embedded, PostgreSQL by URL."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from monitor.errors import StoreError, UsageError
from monitor.store.base import Store
from monitor.store.dialect import POSTGRES, SQLITE
from monitor.store.location import redact, store_location
from monitor.store.sql import Database
from monitor.store.sqlstore import SqlStore

#: How long a SQLite writer waits for another to finish before giving up.
SQLITE_BUSY_TIMEOUT_SECONDS = 30.0

#: How long connecting to PostgreSQL may take.
POSTGRES_CONNECT_TIMEOUT_SECONDS = 10

_MEMORY = ":memory:"

# RETURNING arrived in SQLite 3.35 (upserts in 3.24).
_SQLITE_MINIMUM = (3, 35, 0)


def open_store(url_or_path: str | os.PathLike[str]) -> Store:
    """Open (creating and migrating as needed) the store at ``url_or_path``.

    A plain path or a SQLite URL opens a SQLite file, creating its folders. URLs follow the
    common convention: ``sqlite:///relative/path.db`` (three slashes) is relative to the
    working folder, ``sqlite:////abs/path.db`` (four) absolute, ``sqlite:///:memory:`` in memory;
    ``postgresql://user@host:port/db`` opens a PostgreSQL database (needs the ``postgres``
    extra); :mod:`monitor.store.location` reads them. Raise UsageError for a URL it cannot
    read, StoreError when the store cannot be opened, StoreSchemaError when its schema
    is newer than this code.
    """
    location = store_location(url_or_path)
    if location.kind == "postgresql" and location.url is not None:
        return open_postgres(location.url)
    return open_sqlite(Path(_MEMORY) if location.path is None else location.path)


def open_sqlite(path: Path) -> SqlStore:
    """Open the SQLite store at ``path`` in WAL mode with foreign keys on."""
    memory = str(path) == _MEMORY
    if not memory:
        path = path.expanduser().absolute()
    location = f"sqlite:///{path}" if not memory else "sqlite:///:memory:"
    if sqlite3.sqlite_version_info < _SQLITE_MINIMUM:
        needed = ".".join(map(str, _SQLITE_MINIMUM))
        found = sqlite3.sqlite_version
        raise StoreError(location, f"needs SQLite {needed} or newer, found {found}")
    if not memory and path.is_dir():
        raise UsageError(f"store {location}: is a folder; expected a SQLite file (or a URL)")
    try:
        if not memory:
            path.parent.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: autocommit, the store issues BEGIN and COMMIT itself.
        # check_same_thread=False: a scheduler may open the store in one thread and run jobs
        # in another; the Store contract is one thread at a time, not one thread for ever.
        connection = sqlite3.connect(
            path,
            timeout=SQLITE_BUSY_TIMEOUT_SECONDS,
            isolation_level=None,
            check_same_thread=False,
        )
    except (OSError, sqlite3.Error) as exc:
        raise StoreError(location, f"cannot open: {exc}") from exc
    db = Database(connection, SQLITE, location, sqlite3.Error)
    try:
        with db.errors("setting up the connection"):
            _set_up(connection)
        return SqlStore(db)
    except BaseException:
        connection.close()
        raise


def _set_up(connection: sqlite3.Connection) -> None:
    """Set the connection's pragmas, waiting out another opener that holds the file.

    Switching a new file to WAL takes the file for itself, and SQLite answers "database is
    locked" at once to a second connection doing the same, without its busy timeout: openers
    of a new store at once retry, for as long as that timeout, instead of failing.
    """
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_SECONDS
    pause = 0.005
    while True:
        try:
            # Takes effect on a new file (before its first table): freed pages can then be
            # handed back step by step (SqlStore.reclaim_space); older files get it when
            # schema version 5 compacts them.
            connection.execute("PRAGMA auto_vacuum = INCREMENTAL")
            connection.execute("PRAGMA journal_mode = WAL")
            break
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + pause > deadline:
                raise
            time.sleep(pause)
            pause = min(2 * pause, 0.2)
    connection.execute("PRAGMA foreign_keys = ON")
    connection.execute(f"PRAGMA busy_timeout = {int(SQLITE_BUSY_TIMEOUT_SECONDS * 1000)}")
    # In WAL mode NORMAL loses no committed transaction on a crash, only on power loss.
    connection.execute("PRAGMA synchronous = NORMAL")


def open_postgres(url: str) -> SqlStore:
    """Open the PostgreSQL store at ``url`` (a libpq connection URI)."""
    location = redact(url)
    try:
        import psycopg
    except ImportError as exc:
        raise StoreError(
            location, "PostgreSQL needs psycopg: pip install 'retrieval-monitor[postgres]'"
        ) from exc
    try:
        connection = psycopg.connect(
            url, autocommit=True, connect_timeout=POSTGRES_CONNECT_TIMEOUT_SECONDS
        )
    except psycopg.Error as exc:
        raise StoreError(location, f"cannot connect: {exc}") from exc
    try:
        return SqlStore(Database(connection, POSTGRES, location, psycopg.Error))
    except BaseException:
        connection.close()
        raise
