"""The embedded engine the traffic SQL runs on: DuckDB, from the ``traffic`` extra.

DuckDB is imported only here, when a command opens the traffic database, so a user without
the extra reads one line naming it (never an ImportError's traceback) and every other
command starts without it. :func:`connect` opens (or creates) the database file and its
tables; :func:`rows` runs one statement of :mod:`monitor.traffic.sql` with named parameters
on a :class:`Reader`: a DuckDB connection, or the same tables on Spark
(:class:`monitor.traffic.spark.SparkReader`, ``--engine spark``).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from monitor.errors import UsageError
from monitor.traffic import sql

#: The command that installs what the traffic commands need.
INSTALL = "pip install 'retrieval-monitor[traffic]'"

#: The engines the aggregations run on, as ``--engine`` names them (the first by default).
ENGINES = ("duckdb", "spark")


class Reader(Protocol):
    """What the aggregations read through: ``execute`` returning a DB-API cursor (its
    ``description``, ``fetchall`` and ``fetchone``). A DuckDB connection is one."""

    def execute(self, query: str, parameters: Any = ...) -> Any:
        """Run ``query`` with its ``$name`` ``parameters``; return a cursor of its rows."""


class Connection(Protocol):
    """The part of a DuckDB connection the traffic stage uses."""

    def execute(self, query: str, parameters: object = ...) -> Any:
        """Run ``query`` with ``parameters``; return the connection (its cursor)."""

    def executemany(self, query: str, parameters: object = ...) -> Any:
        """Run ``query`` once for each parameter list of ``parameters``."""

    def register(self, view_name: str, python_object: object) -> Any:
        """Make ``python_object`` (an Arrow table) readable as the view ``view_name``."""

    def unregister(self, view_name: str) -> Any:
        """Drop the view ``view_name`` made by :meth:`register`."""

    def close(self) -> None:
        """Close the connection."""


def duckdb() -> Any:
    """Return the ``duckdb`` module, or raise UsageError naming the extra to install."""
    try:
        return importlib.import_module("duckdb")
    except ImportError:
        raise UsageError(f"the traffic commands need DuckDB: {INSTALL}") from None


def connect(path: Path, *, read_only: bool = False, create: bool = True) -> Connection:
    """Open the traffic database at ``path`` (created with its tables unless ``read_only``
    or not ``create``).

    A missing file opened ``read_only`` or without ``create`` raises UsageError naming it and
    the command that makes one (not as a line to run: only the user knows the log files); a
    file that is not a DuckDB database raises UsageError.
    """
    module = duckdb()
    if (read_only or not create) and not path.is_file():
        raise UsageError(
            f"{path}: no traffic database there; `logs import` with `--db {path}` and the "
            "query and event logs makes it"
        )
    try:
        connection: Connection = module.connect(str(path), read_only=read_only)
    except module.Error as error:
        raise UsageError(f"{path}: cannot open as a DuckDB database: {error}") from None
    if not read_only:
        for statement in sql.SCHEMA:
            connection.execute(statement)
    return connection


def rows(
    connection: Reader, statement: str, parameters: Mapping[str, object] | None = None
) -> list[dict[str, Any]]:
    """Run ``statement`` with the ``$name`` ``parameters`` it uses; return its rows as dicts."""
    used = {name: value for name, value in (parameters or {}).items() if f"${name}" in statement}
    cursor = connection.execute(statement, used)
    names: Sequence[str] = [column[0] for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
