"""One connection to a SQL database, used one transaction at a time."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any, Protocol

from monitor.errors import StoreError
from monitor.store.dialect import Dialect


class _Cursor(Protocol):
    rowcount: int
    description: Any

    def execute(self, query: Any, params: Any = ..., /) -> Any: ...
    def executemany(self, query: Any, params_seq: Any, /) -> Any: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> Any: ...
    def close(self) -> Any: ...


class Connection(Protocol):
    """The part of a DB-API connection in autocommit mode that the store uses."""

    def cursor(self) -> Any: ...
    def close(self) -> Any: ...


class Transaction:
    """Run statements inside one open transaction, with ``?`` parameter markers."""

    def __init__(self, cursor: _Cursor, dialect: Dialect, location: str) -> None:
        self._cursor = cursor
        self.dialect = dialect
        self.location = location

    def execute(self, statement: str, params: Sequence[object] = ()) -> int:
        """Run one statement; return the number of rows it changed."""
        self._cursor.execute(self.dialect.sql(statement), tuple(params))
        return self._cursor.rowcount

    def executemany(self, statement: str, rows: Iterable[Sequence[object]]) -> None:
        """Run one statement once per row of parameters."""
        rows = [tuple(row) for row in rows]
        if rows:
            self._cursor.executemany(self.dialect.sql(statement), rows)

    def one(self, statement: str, params: Sequence[object] = ()) -> tuple[Any, ...] | None:
        """Run a query; return its first row, or None."""
        self._cursor.execute(self.dialect.sql(statement), tuple(params))
        row = self._cursor.fetchone()
        return None if row is None else tuple(row)

    def all(self, statement: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        """Run a query; return all its rows."""
        self._cursor.execute(self.dialect.sql(statement), tuple(params))
        return [tuple(row) for row in self._cursor.fetchall()]

    def scalar(self, statement: str, params: Sequence[object] = ()) -> Any:
        """Run a query; return the first column of its first row (None when there is none)."""
        row = self.one(statement, params)
        return None if row is None else row[0]


class Database:
    """A connection, its dialect and where it points, opened in autocommit mode.

    Every read and write runs in :meth:`transaction`, which issues ``BEGIN`` itself, so both
    drivers behave the same: a block commits when it ends and rolls back when it raises. The
    driver's own errors leave as :class:`StoreError`. Transactions are serialised by a lock,
    so a helper thread (the lease renewer of a run lock) may run its own between the owner's.
    """

    def __init__(
        self,
        connection: Connection,
        dialect: Dialect,
        location: str,
        driver_error: type[Exception],
    ) -> None:
        self.connection = connection
        self.dialect = dialect
        self.location = location
        self.driver_error = driver_error
        self._serial = threading.RLock()

    @contextmanager
    def transaction(self, *, write: bool, doing: str = "") -> Iterator[Transaction]:
        """Open a transaction for the block: commit when it ends, roll back when it raises."""
        with self._serial, self._transaction(write=write, doing=doing) as tx:
            yield tx

    @contextmanager
    def _transaction(self, *, write: bool, doing: str) -> Iterator[Transaction]:
        with self.errors(doing):
            cursor = self.connection.cursor()
        try:
            with self.errors(doing):
                cursor.execute(self.dialect.begin_write if write else self.dialect.begin_read)
                try:
                    yield Transaction(cursor, self.dialect, self.location)
                    cursor.execute("COMMIT")
                except BaseException:
                    # Also after a failed COMMIT: SQLite keeps the transaction open then.
                    self._rollback(cursor)
                    raise
        finally:
            cursor.close()

    def execute_outside(self, statements: Iterable[str], doing: str = "") -> None:
        """Run statements outside any transaction (``VACUUM`` refuses to run inside one)."""
        with self._serial, self.errors(doing):
            cursor = self.connection.cursor()
            try:
                for statement in statements:
                    cursor.execute(statement)
                    # A pragma that works row by row (incremental_vacuum) runs as they are read.
                    if cursor.description is not None:
                        cursor.fetchall()
            finally:
                cursor.close()

    @contextmanager
    def errors(self, doing: str = "") -> Iterator[None]:
        """Turn the driver's errors raised in the block into :class:`StoreError`."""
        try:
            yield
        except self.driver_error as exc:
            message = f"{doing}: {exc}" if doing else str(exc)
            raise StoreError(self.location, message.strip()) from exc

    def _rollback(self, cursor: _Cursor) -> None:
        # The error that made us roll back is the one worth raising; a failed rollback
        # (a lost connection, say) only means the server drops the transaction itself.
        with suppress(self.driver_error):
            cursor.execute("ROLLBACK")

    def close(self) -> None:
        """Close the connection."""
        with self._serial:
            self.connection.close()
