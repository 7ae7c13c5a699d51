"""Import query and event logs into the traffic database, once each, keeping only frequent
queries.

:func:`import_logs` stages each file in temporary tables, read by DuckDB's own readers and
checked in SQL (:mod:`monitor.traffic.fast`), or row by row (:mod:`monitor.traffic.rows`)
when those checks find a row they do not accept, so a bad row's error and ``--skip-bad``
read as they always did; it keys the staged searches and stores them with the statements
of :mod:`monitor.traffic.sql` in one transaction. A query key issued by fewer than
``min_distinct_clients`` distinct clients in the files imported together is dropped with its
impressions and events: rare queries may be personal (a name, an address), so they are
never stored. A file whose bytes were imported before is refused, so no search or click is
counted twice.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from monitor.errors import UsageError
from monitor.traffic import fast, sql
from monitor.traffic.engine import Connection
from monitor.traffic.rows import EventColumns, QueryColumns, Skipper, read_events, read_queries

#: The default floor of distinct clients a query key needs to be kept.
MIN_DISTINCT_CLIENTS = 5


@dataclass(frozen=True, slots=True)
class ImportSummary:
    """What an import read, stored and left out."""

    searches_read: int
    searches_stored: int
    rare_queries: int
    rare_searches: int
    searches_known: int
    events_read: int
    events_stored: int
    events_without_query_id: int
    bad_rows_skipped: int
    first_bad_row: str | None = None

    @property
    def events_left_out(self) -> int:
        """Return how many events named a search that is not stored (rare or unknown)."""
        return self.events_read - self.events_stored

    def lines(self) -> list[str]:
        """Return the summary as the lines ``logs import`` prints."""
        return [
            f"searches: {self.searches_read} read, {self.searches_stored} stored, "
            f"{self.rare_searches} dropped as rare (queries below the distinct-client floor: "
            f"{self.rare_queries}), {self.searches_known} already stored",
            f"events: {self.events_read} read, {self.events_stored} stored, "
            f"{self.events_left_out} of searches not stored, "
            f"{self.events_without_query_id} without a query_id",
            f"bad rows skipped: {self.bad_rows_skipped}"
            + (f" (the first: {self.first_bad_row})" if self.first_bad_row else ""),
        ]


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def fingerprint(path: Path) -> str:
    """Return the SHA-256 of the bytes of the file at ``path``."""
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such log file") from None
    except OSError as error:
        raise UsageError(f"{path}: cannot read: {error.strerror or error}") from None
    return digest.hexdigest()


def import_logs(
    connection: Connection,
    queries: Sequence[Path],
    events: Sequence[Path],
    *,
    min_distinct_clients: int = MIN_DISTINCT_CLIENTS,
    skip_bad: int = 0,
    keep_attribute: str | None = None,
    clock: Callable[[], datetime] = _now,
) -> ImportSummary:
    """Store the searches of ``queries`` and the events of ``events``; return the summary.

    ``keep_attribute`` names one more query-log field to keep with each search (dotted for
    nesting, e.g. ``query_attributes.device``): an online suite may segment by it.

    Raise UsageError for a file imported before, a missing file, an unknown format, or more
    bad rows than ``skip_bad``; InputError (file and line) for the first bad row when
    ``skip_bad`` is 0.
    """
    if min_distinct_clients < 1:
        raise UsageError(f"--min-distinct-clients must be 1 or more, not {min_distinct_clients}")
    if skip_bad < 0:
        raise UsageError(f"--skip-bad must be 0 or more, not {skip_bad}")
    if not queries and not events:
        raise UsageError("expected at least one log file (--queries FILE or --events FILE)")
    files = [(path, "queries") for path in queries] + [(path, "events") for path in events]
    prints = [(path, kind, fingerprint(path)) for path, kind in files]
    _refuse_imported(connection, prints)
    skipper = Skipper(skip_bad)
    for statement in fast.STAGING:
        connection.execute(statement)
    try:
        read = _stage(connection, list(queries), list(events), skipper, keep_attribute)
        fast.key_queries(connection)
        return _store(connection, read, prints, min_distinct_clients, skipper, clock())
    finally:
        for name in _STAGED:
            connection.execute(f"DROP TABLE IF EXISTS {name}")


#: The temporary tables an import stages its rows in.
_STAGED = ("staged_queries", "new_queries", "new_impressions", "new_events")


@dataclass
class _Read:
    """What the staging read: searches, events naming a search, events naming none."""

    searches: int = 0
    events: int = 0
    without_query: int = 0


def _stage(
    connection: Connection,
    queries: list[Path],
    events: list[Path],
    skipper: Skipper,
    attribute: str | None = None,
) -> _Read:
    """Stage every file: by DuckDB's readers and SQL checks, or row by row when those find
    a row they do not accept (so its error and ``--skip-bad`` read as the row reader's)."""
    read = _Read()
    for path in queries:
        staged = fast.stage_queries(connection, path, attribute)
        if staged is None:
            columns = QueryColumns(
                seen=fast.staged_ids(connection) if read.searches else set(),
                attribute_name=attribute,
            )
            read_queries([path], columns, skipper)
            _add_queries(connection, columns)
            staged = len(columns)
        read.searches += staged
    for path in events:
        counted = fast.stage_events(connection, path)
        if counted is None:
            event_columns = EventColumns()
            read_events([path], event_columns, skipper)
            _add_events(connection, event_columns)
            counted = (len(event_columns), event_columns.without_query)
        read.events += counted[0]
        read.without_query += counted[1]
    return read


def _add_queries(connection: Connection, queries: QueryColumns) -> None:
    """Add the searches the row reader checked, and their impressions, to the staging."""
    import pyarrow as pa

    searches = pa.table(
        {
            "query_id": pa.array(queries.query_id, pa.string()),
            "user_query": pa.array(queries.user_query, pa.string()),
            "ts": pa.array(queries.ts, pa.timestamp("us")),
            "epoch_s": pa.array(queries.epoch_s, pa.float64()),
            "client_id": pa.array(queries.client_id, pa.string()),
            "application": pa.array(queries.application, pa.string()),
            "hits": pa.array(queries.hits, pa.int32()),
            "latency_ms": pa.array(queries.latency_ms, pa.float64()),
            "attribute_name": pa.array([queries.attribute_name] * len(queries), pa.string()),
            "attribute": pa.array(queries.attribute, pa.string()),
        }
    )
    impressions = pa.table(
        {
            "query_id": pa.array(queries.shown_query_id, pa.string()),
            "rank": pa.array(queries.shown_rank, pa.int32()),
            "doc": pa.array(queries.shown_doc, pa.string()),
        }
    )
    _append(connection, "staged_queries", searches)
    _append(connection, "new_impressions", impressions)


def _add_events(connection: Connection, events: EventColumns) -> None:
    """Add the events the row reader checked to the staging."""
    import pyarrow as pa

    table = pa.table(
        {
            "action_name": pa.array(events.action_name, pa.string()),
            "query_id": pa.array(events.query_id, pa.string()),
            "position": pa.array(events.position, pa.int32()),
            "object_id": pa.array(events.object_id, pa.string()),
            "ts": pa.array(events.ts, pa.timestamp("us")),
        }
    )
    _append(connection, "new_events", table)


def _append(connection: Connection, name: str, table: object) -> None:
    connection.register("rows_read", table)
    try:
        connection.execute(f"INSERT INTO {name} SELECT * FROM rows_read")
    finally:
        connection.unregister("rows_read")


def _refuse_imported(connection: Connection, prints: list[tuple[Path, str, str]]) -> None:
    seen: dict[str, Path] = {}
    for path, _kind, digest in prints:
        if digest in seen:
            raise UsageError(f"{path}: the same bytes as {seen[digest]}, given twice")
        seen[digest] = path
        row = connection.execute(
            "SELECT path, imported_at FROM imported_files WHERE sha256 = ?", [digest]
        ).fetchone()
        if row is not None:
            raise UsageError(
                f"{path}: already imported (as {row[0]}, at {row[1]:%Y-%m-%d %H:%M:%S} UTC); "
                "each file is imported once, so no search or click is counted twice"
            )


def _store(
    connection: Connection,
    read: _Read,
    prints: list[tuple[Path, str, str]],
    min_clients: int,
    skipper: Skipper,
    now: datetime,
) -> ImportSummary:
    connection.execute("BEGIN TRANSACTION")
    try:
        known = _count(
            connection,
            "SELECT count(*) FROM new_queries WHERE query_id IN (SELECT query_id FROM queries)",
        )
        events_before = _count(connection, "SELECT count(*) FROM events")
        connection.execute(sql.STAGE_FRESH, {"min_clients": min_clients})
        rare = connection.execute(
            "SELECT count(DISTINCT query_key), count(*) FROM new_queries WHERE query_key "
            "NOT IN (SELECT query_key FROM fresh) AND query_id NOT IN "
            "(SELECT query_id FROM queries)"
        ).fetchone()
        stored = _count(connection, "SELECT count(*) FROM fresh")
        connection.execute(sql.INSERT_QUERIES)
        connection.execute(sql.INSERT_IMPRESSIONS)
        connection.execute(sql.INSERT_EVENTS)
        events_stored = _count(connection, "SELECT count(*) FROM events") - events_before
        for path, kind, digest in prints:
            rows_read = read.searches if kind == "queries" else read.events
            connection.execute(
                "INSERT INTO imported_files VALUES (?, ?, ?, ?, ?)",
                [digest, str(path), kind, rows_read, now],
            )
        connection.execute("DROP TABLE fresh")
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    return ImportSummary(
        searches_read=read.searches,
        searches_stored=stored,
        rare_queries=int(rare[0]),
        rare_searches=int(rare[1]),
        searches_known=known,
        events_read=read.events,
        events_stored=events_stored,
        events_without_query_id=read.without_query,
        bad_rows_skipped=skipper.skipped,
        first_bad_row=None if skipper.first is None else str(skipper.first),
    )


def _count(connection: Connection, statement: str) -> int:
    return int(connection.execute(statement).fetchone()[0])
