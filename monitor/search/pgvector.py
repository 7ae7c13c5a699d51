"""The ``pgvector`` search kind: nearest neighbours of the query's embedding in a PostgreSQL
table with the ``vector`` extension.

Options:

``url_env`` (required)
    The environment variable holding the connection URL (``postgresql://user:pw@host/db``):
    the password stays out of the config file and out of every message.
``table`` (required), ``id_column`` (default ``id``), ``vector_column`` (default
``embedding``), ``text_column`` (optional), ``updated_column`` (optional)
    Where the vectors are. ``table`` may be ``schema.table``. Ids are read as text.
    ``updated_column``'s largest value goes into the corpus fingerprint.
``distance`` (default ``cosine``)
    ``cosine`` (``<=>``), ``l2`` (``<->``) or ``inner_product`` (``<#>``): the operator the
    index was built for. A hit's score is a similarity, higher is better: ``1 - distance``
    for cosine, the negated distance for l2, the inner product itself for inner_product.
``filter`` (optional)
    A SQL boolean expression over the table's columns (``lang = 'en' AND NOT archived``),
    put in the query's WHERE clause as written. It is trusted config, as the table name is:
    whoever writes the config can run SQL with the connection's rights.
``settings`` (optional)
    Session settings set on the connection before the first query: ``hnsw.ef_search``,
    ``hnsw.iterative_scan`` (``relaxed_order``, ``strict_order``), ``ivfflat.probes``,
    ``ivfflat.iterative_scan`` or any other setting name (set with ``set_config``).
``exact`` (default false)
    Search without the index (``enable_indexscan`` and ``enable_bitmapscan`` off inside
    each query's transaction): the exact answer of the same table, which an ANN recall
    compares with. :meth:`PgVectorSearch.exact_search` gives it beside an ANN search, on the
    same connection.
``index_health`` (optional)
    ``{k: 10, sample: 500}`` (or ``true``): each run also measures ``ann_recall@k``
    against the exact search of the same store, over a sample of at most ``sample``
    queries (:mod:`monitor.search.health`).
``embedding`` (default: the packaged MiniLM)
    How queries become vectors (:mod:`monitor.search.vector`).
``connect_timeout`` (default 10)
    Seconds to wait for the connection.

One connection serves every query (opened at the first, so building connects nowhere),
each query one execution of a prepared statement with the vector sent in pgvector's binary
form; calls from several threads take turns on it. :meth:`PgVectorSearch.search_vectors`
sends many vectors in one pipeline. ``stats()`` reports ``index_size`` (vectors in the
table), ``index_definition`` (the table's vector indexes, from ``pg_indexes``), the model
and the settings; ``corpus_fingerprint()`` the count, the last update and a digest of the
index definitions. A failed query raises SearchCallError with the driver's class name
(``OperationalError``), retryable when the connection failed.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import numpy as np

from monitor.embedding.base import Vectors, vector_module
from monitor.errors import SearchCallError, SearchSetupError
from monitor.records import Hit, MetaValue, Query
from monitor.search.health import HealthOptions, index_health_option
from monitor.search.options import Options
from monitor.search.vector import (
    QueryVectors,
    digest_text,
    embedding_options,
    query_texts,
    query_vectors,
)
from monitor.secrets import Scrubber, url_secrets

#: Each distance: its operator, the operator class of its index, and distance -> score.
DISTANCES: Final[Mapping[str, tuple[str, str, Callable[[float], float]]]] = {
    "cosine": ("<=>", "vector_cosine_ops", lambda distance: 1.0 - distance),
    "l2": ("<->", "vector_l2_ops", lambda distance: -distance),
    "inner_product": ("<#>", "vector_ip_ops", lambda distance: -distance),
}
#: What makes a query exact: no index scan of any kind, so a scan of every row and a sort.
EXACT_SETTINGS: Final = ("enable_indexscan", "enable_bitmapscan", "enable_indexonlyscan")


class _Connection:
    """The one connection a search (and its exact twin) uses, opened at first use, and the
    lock its callers take turns on."""

    def __init__(
        self, url: str, settings: Mapping[str, str], timeout: float, scrub: Scrubber
    ) -> None:
        self.url = url
        self.settings = dict(settings)
        self.timeout = timeout
        self.scrub = scrub
        self.lock = threading.RLock()
        self._connection: Any = None
        self.cursor: Any = None
        self.psycopg: Any = vector_module("psycopg", "pgvector", SearchSetupError)

    def get(self) -> Any:
        """Return the open connection (call with :attr:`lock` held)."""
        if self._connection is None or self._connection.closed:
            psycopg = self.psycopg
            connection = psycopg.connect(
                self.url, autocommit=True, connect_timeout=max(1, round(self.timeout))
            )
            info = psycopg.types.TypeInfo.fetch(connection, "vector")
            if info is None:
                connection.close()
                raise SearchCallError(
                    "SetupError", "the database has no vector type (CREATE EXTENSION vector)"
                )
            connection.adapters.register_dumper(np.ndarray, _dumper(psycopg, info.oid))
            for name, value in self.settings.items():
                connection.execute("SELECT set_config(%s, %s, false)", (name, value))
            self._connection = connection
            # One cursor for the single queries: a cursor per call costs more than the call.
            self.cursor = connection.cursor()
        return self._connection

    def run(self, work: Callable[[Any], Any]) -> Any:
        """Return ``work(connection)``, its driver errors raised as SearchCallError."""
        psycopg = self.psycopg
        with self.lock:
            try:
                return work(self.get())
            except psycopg.OperationalError as exc:
                self.close()  # a broken connection is opened again by the next call
                raise SearchCallError(
                    type(exc).__name__, self.scrub(str(exc).strip()), retryable=True
                ) from None
            except psycopg.Error as exc:
                raise SearchCallError(type(exc).__name__, self.scrub(str(exc).strip())) from None

    def close(self) -> None:
        """Close the connection (a later call opens a new one)."""
        with self.lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None


def _dumper(psycopg: Any, oid: int) -> type:
    """Return a psycopg dumper that sends a float32 array as pgvector's binary ``vector``:
    two 16-bit words (dimension, unused) then the floats, big-endian."""

    class VectorDumper(psycopg.adapt.Dumper):  # type: ignore[misc]  # psycopg is untyped here
        format = psycopg.pq.Format.BINARY

        def dump(self, obj: Vectors) -> bytes:
            return struct.pack(">HH", len(obj), 0) + obj.astype(">f4", copy=False).tobytes()

    VectorDumper.oid = oid
    return VectorDumper


class PgVectorSearch:
    """A search function over a pgvector table: ``(query, k) -> [Hit, ...]``."""

    #: The cutoff of the run's index health check (:mod:`monitor.search.health`), or None.
    index_health: HealthOptions | None = None

    def __init__(
        self,
        connection: _Connection,
        vectors: QueryVectors,
        *,
        table: str,
        id_column: str = "id",
        vector_column: str = "embedding",
        text_column: str | None = None,
        updated_column: str | None = None,
        distance: str = "cosine",
        filter: str | None = None,
        exact: bool = False,
    ) -> None:
        self._db = connection
        self.vectors = vectors
        self.table = table
        self.columns = (id_column, vector_column, text_column, updated_column)
        self.distance = distance
        self.filter = filter
        self.exact = exact
        self._score = DISTANCES[distance][2]
        self._composed = self._query()
        # Rendered once: psycopg would quote every identifier again at each execution.
        self._sql: bytes | None = None

    def _query(self) -> Any:
        """Return the k-nearest query: id, distance (and text), best first."""
        sql = self._db.psycopg.sql
        id_column, vector_column, text_column, _ = self.columns
        operator = sql.SQL(DISTANCES[self.distance][0])
        distance = sql.SQL("{} {} %(vector)b").format(sql.Identifier(vector_column), operator)
        fields = [sql.SQL("{}::text").format(sql.Identifier(id_column)), distance]
        if text_column is not None:
            fields.append(sql.Identifier(text_column))
        where = sql.SQL("")
        if self.filter is not None:
            # Trusted config, put in as written; a literal % (LIKE 'a%') is not a placeholder.
            where = sql.SQL(" WHERE ({})").format(sql.SQL(self.filter.replace("%", "%%")))
        # The exact query's text differs from the ANN one's: psycopg prepares a statement by
        # its text, and a plan PostgreSQL cached for the ANN query (an index scan) would
        # answer the exact one too, whatever its enable_* settings say.
        exact = sql.SQL(" /* exact */" if self.exact else "")
        return sql.SQL("SELECT {} FROM {}{} ORDER BY {} LIMIT %(k)s{}").format(
            sql.SQL(", ").join(fields), _table(sql, self.table), where, distance, exact
        )

    def exact_search(self) -> PgVectorSearch:
        """Return the same search done without the index (the exact answer), sharing this
        search's connection and query vectors."""
        id_column, vector_column, text_column, updated_column = self.columns
        return PgVectorSearch(
            self._db,
            self.vectors,
            table=self.table,
            id_column=id_column,
            vector_column=vector_column,
            text_column=text_column,
            updated_column=updated_column,
            distance=self.distance,
            filter=self.filter,
            exact=True,
        )

    def prepare(self, queries: Sequence[Query]) -> None:
        """Embed the run's queries in batches before the first call."""
        self.vectors.prepare(query_texts(queries))

    def __call__(self, query: str, k: int) -> list[Hit]:
        """Return the ``k`` rows nearest to the query's embedding, best first."""
        (hits,) = self.search_vectors(self.vectors.vector(query)[None, :], k)
        return hits

    def search_vectors(self, vectors: Vectors, k: int) -> list[list[Hit]]:
        """Return the ``k`` nearest rows of each vector, in one pipeline of executions."""
        params = [{"vector": vector, "k": k} for vector in np.asarray(vectors, dtype=np.float32)]
        with_text = self.columns[2] is not None

        def work(connection: Any) -> list[list[Hit]]:
            if self._sql is None:
                self._sql = self._composed.as_bytes(connection)
            if len(params) == 1 and not self.exact:
                cursor = self._db.cursor
                cursor.execute(self._sql, params[0], prepare=True)
                return [self._hits(cursor.fetchall(), with_text)]
            with connection.transaction() if self.exact else _nothing(), connection.cursor() as cur:
                if self.exact:
                    for name in EXACT_SETTINGS:
                        cur.execute("SELECT set_config(%s, 'off', true)", (name,))
                    # A session that turned sequential scans off (to make a small table use
                    # its index) would leave the planner only disabled plans: it takes the
                    # index, and the "exact" answer is the ANN one.
                    cur.execute("SELECT set_config('enable_seqscan', 'on', true)")
                cur.executemany(self._sql, params, returning=True)
                answers = []
                for _ in cur.results():
                    answers.append(self._hits(cur.fetchall(), with_text))
                return answers

        result: list[list[Hit]] = self._db.run(work)
        return result

    def _hits(self, rows: Sequence[tuple[Any, ...]], with_text: bool) -> list[Hit]:
        score = self._score
        if with_text:
            return [Hit(row[0], score(row[1]), row[2]) for row in rows]
        return [Hit(row[0], score(row[1])) for row in rows]

    def _index_definitions(self, connection: Any) -> list[str]:
        schema, _, name = self.table.rpartition(".")
        rows = connection.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = %s"
            " AND schemaname = COALESCE(NULLIF(%s, ''), current_schema())"
            " AND (indexdef ILIKE '%%USING hnsw%%' OR indexdef ILIKE '%%USING ivfflat%%')"
            " ORDER BY indexname",
            (name, schema),
        ).fetchall()
        return [row[0] for row in rows]

    def _count(self, connection: Any) -> tuple[int, object]:
        sql = self._db.psycopg.sql
        _, vector_column, _, updated_column = self.columns
        latest = (
            sql.SQL("NULL")
            if updated_column is None
            else sql.SQL("max({})").format(sql.Identifier(updated_column))
        )
        row = connection.execute(
            sql.SQL("SELECT count({}), {} FROM {}").format(
                sql.Identifier(vector_column), latest, _table(sql, self.table)
            )
        ).fetchone()
        return int(row[0]), row[1]

    def stats(self) -> dict[str, MetaValue]:
        """Return the vectors in the table, its vector indexes, the model and the settings."""

        def work(connection: Any) -> dict[str, MetaValue]:
            count, _ = self._count(connection)
            return {
                "index_size": count,
                "index_definition": "; ".join(self._index_definitions(connection)),
            }

        stats: dict[str, MetaValue] = {**self._db.run(work), **self.vectors.stats()}
        stats.update(self._db.settings)
        stats["distance"] = self.distance
        if self.exact:
            stats["exact"] = True
        return stats

    def corpus_fingerprint(self) -> dict[str, MetaValue]:
        """Return the table, its vector count, last update and index definitions' digest."""

        def work(connection: Any) -> dict[str, MetaValue]:
            count, latest = self._count(connection)
            indexes = "; ".join(self._index_definitions(connection))
            return {
                "table": self.table,
                "count": count,
                "updated_at": None if latest is None else str(latest),
                "index": digest_text(indexes),
            }

        fingerprint: dict[str, MetaValue] = self._db.run(work)
        return fingerprint

    def close(self) -> None:
        """Close the connection and the embedder."""
        self._db.close()
        self.vectors.close()


class _nothing:
    """A context manager that does nothing (an ANN query needs no transaction)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _table(sql: Any, table: str) -> Any:
    """Return ``schema.table`` (or ``table``) as a quoted identifier."""
    return sql.Identifier(*table.split(".", 1))


def build(options: Mapping[str, object]) -> PgVectorSearch:
    """Build a :class:`PgVectorSearch` from the ``pgvector`` kind's options."""
    opts = Options("pgvector", options)
    table = opts.required_string("table")
    opts.spec = f"pgvector:{table}"
    url = opts.env_string("url_env")
    if url is None:
        raise opts.fail("url_env", "the environment variable holding the connection URL")
    if not url.startswith(("postgresql://", "postgres://")):
        raise opts.fail("url_env", "a variable holding a postgresql:// URL")
    id_column = opts.string("id_column", "id") or "id"
    vector_column = opts.string("vector_column", "embedding") or "embedding"
    text_column = opts.string("text_column")
    updated_column = opts.string("updated_column")
    distance = opts.string("distance", "cosine") or "cosine"
    if distance not in DISTANCES:
        raise opts.fail("distance", " or ".join(DISTANCES), distance)
    filter_sql = opts.string("filter")
    settings = _settings(opts)
    exact = opts.flag("exact", default=False)
    health_k = index_health_option(opts)
    timeout = opts.seconds("connect_timeout", 10.0) or 10.0
    embedding = embedding_options(opts)
    opts.done()
    scrub = Scrubber.of(url_secrets(url, path=False))
    connection = _Connection(url, settings, timeout, scrub)  # names the extra when missing
    vectors = query_vectors(opts, embedding)
    search = PgVectorSearch(
        connection,
        vectors,
        table=table,
        id_column=id_column,
        vector_column=vector_column,
        text_column=text_column,
        updated_column=updated_column,
        distance=distance,
        filter=filter_sql,
        exact=exact,
    )
    search.index_health = health_k
    return search


def _settings(opts: Options) -> dict[str, str]:
    """Return the session settings as names to text values."""
    settings: dict[str, str] = {}
    for name, value in opts.mapping("settings").items():
        if isinstance(value, bool):
            settings[name] = "on" if value else "off"
        elif isinstance(value, int | float | str) and str(value):
            settings[name] = str(value)
        else:
            raise opts.fail(f"settings.{name}", "a number, a string or true/false", value)
    return settings


def load_table(
    url: str,
    table: str,
    ids: Sequence[str],
    texts: Sequence[str],
    vectors: Vectors,
    *,
    distance: str = "cosine",
    m: int = 16,
    ef_construction: int = 64,
) -> None:
    """Replace ``table`` by one holding the passages and their vectors, with an HNSW index.

    The table has ``id`` (text, the primary key), ``text``, ``embedding`` (``vector(d)``)
    and ``updated_at`` (when the row was loaded); the index is built for ``distance``
    (``m`` and ``ef_construction`` as pgvector names them), after the rows are copied in, in
    one transaction. Raise SearchSetupError without the extra, SearchCallError (its message
    without the URL's password) when the database refuses.
    """
    if distance not in DISTANCES:
        raise SearchSetupError("pgvector", f"distance: expected {' or '.join(DISTANCES)}")
    scrub = Scrubber.of(url_secrets(url, path=False))
    psycopg: Any = vector_module("psycopg", "pgvector", SearchSetupError)
    sql = psycopg.sql
    name = _table(sql, table)
    opclass = sql.SQL(DISTANCES[distance][1])
    dimension = int(vectors.shape[1])
    try:
        with psycopg.connect(url) as connection, connection.transaction():
            connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
            connection.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(name))
            connection.execute(
                sql.SQL(
                    "CREATE TABLE {} (id text PRIMARY KEY, text text, embedding vector({}),"
                    " updated_at timestamptz NOT NULL DEFAULT now())"
                ).format(name, sql.Literal(dimension))
            )
            copy = sql.SQL("COPY {} (id, text, embedding) FROM STDIN").format(name)
            with connection.cursor() as cursor, cursor.copy(copy) as rows:
                for doc, text, vector in zip(ids, texts, vectors, strict=True):
                    rows.write_row((doc, text, "[" + ",".join(map(repr, vector.tolist())) + "]"))
            connection.execute(
                sql.SQL(
                    "CREATE INDEX ON {} USING hnsw (embedding {})"
                    " WITH (m = {}, ef_construction = {})"
                ).format(name, opclass, sql.Literal(m), sql.Literal(ef_construction))
            )
            connection.execute(sql.SQL("ANALYZE {}").format(name))
    except psycopg.Error as exc:
        raise SearchCallError(type(exc).__name__, scrub(str(exc).strip())) from None
