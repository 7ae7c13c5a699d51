"""Read a log file with DuckDB's own readers and check its rows in SQL: the fast path.

:func:`stage_queries` and :func:`stage_events` read one file with ``read_parquet``,
``read_ndjson_objects`` or ``read_csv`` (gzip-compressed or not), check every row by the
rules of :mod:`monitor.traffic.rows` in SQL (types, required fields, timestamps, hit lists,
query ids logged twice), unnest the hit lists into impressions and add the rows to the
import's staging tables. They stage nothing and return None when a row fails a check or
DuckDB cannot read the file: the caller then reads that file row by row with
:mod:`monitor.traffic.rows`, which names the bad row (file:line, what was expected) and counts
it under ``--skip-bad``, so errors read as they always did.

The checks accept a subset of what the row reader accepts and compute the same values from
it; where the two readers differ, the row goes to the row reader. DuckDB's JSON parser takes
trailing commas and ``nan``, and keeps the first of a key given twice where Python keeps the
last; its CSV reader keeps a ``\\r`` inside a quoted field, which Python's universal newlines
read as ``\\n``; and only the common ISO 8601 forms of a timestamp are parsed here. Lines with
any of these (or a byte-order mark), and files compressed otherwise than by gzip or Parquet
files inside a ``.gz``, are read row by row.

The query key is not computed here: the importer keys the distinct raw texts of every staged
search with :func:`monitor.traffic.keys.query_key`.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, cast

from monitor.io import compression_of, open_input
from monitor.traffic.engine import Connection, duckdb
from monitor.traffic.keys import query_key
from monitor.traffic.rows import DEFAULT_APPLICATION, LATENCY_FIELD, format_of

#: The staging tables of an import, as the statements of :mod:`monitor.traffic.sql` read them
#: (``new_queries`` is made from ``staged_queries`` and the query keys once all are read).
STAGING: Final = (
    """CREATE OR REPLACE TEMP TABLE staged_queries (
        query_id VARCHAR, user_query VARCHAR, ts TIMESTAMP, epoch_s DOUBLE,
        client_id VARCHAR, application VARCHAR, hits INTEGER, latency_ms DOUBLE,
        attribute_name VARCHAR, attribute VARCHAR
    )""",
    "CREATE OR REPLACE TEMP TABLE new_impressions (query_id VARCHAR, rank INTEGER, doc VARCHAR)",
    """CREATE OR REPLACE TEMP TABLE new_events (
        action_name VARCHAR, query_id VARCHAR, position INTEGER, object_id VARCHAR, ts TIMESTAMP
    )""",
)

#: The fields each log kind reads, by the short name the checks below use.
QUERY_FIELDS: Final = {
    "qid": "query_id",
    "uq": "user_query",
    "ts": "timestamp",
    "cid": "client_id",
    "app": "application",
    "hits": "query_response_hit_ids",
    "lat": LATENCY_FIELD,
}
EVENT_FIELDS: Final = {
    "act": "action_name",
    "qid": "query_id",
    "pos": "event_attributes.position.ordinal",
    "obj": "object.object_id",
    "ts": "timestamp",
}

# Python's str.strip() removes these besides the space; DuckDB's trim() removes only spaces,
# so a text holding one is left to the row reader.
_PY_SPACES: Final = (
    r"[\t\n\x0B\f\r\x1C-\x1F\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}"
    r"\x{205F}\x{3000}]"
)
# JSON that DuckDB's parser reads and Python's refuses (or reads otherwise): a trailing
# comma; nan or inf in any case (Python reads NaN, Infinity and -Infinity only: those too are
# left to the row reader, to keep one rule).
_LENIENT_JSON: Final = r"(,\s*[}\]])|((?i)[:,\[]\s*[-+]?(nan|inf|infinity)\s*[,}\]])"
# The timestamps parsed here: date, T or space, time to the second, up to 9 digits of a
# fraction (Python keeps the first 6), and Z or a +HH:MM / +HHMM offset (or none: UTC).
_TIMESTAMP: Final = (
    r"^([1-8][0-9]{3}-[0-9]{2}-[0-9]{2})[T ]((?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9])"
    r"(?:\.([0-9]{1,9}))?(Z|([+-])([01][0-9]|2[0-3]):?([0-5][0-9]))?$"
)
_INT32_MAX: Final = 2_147_483_647
#: The fields read as numbers (their adapters give ``*_num`` for a floating-point value).
_NUMBERS: Final = ("pos", "lat")


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _valid(expression: str) -> str:
    """Return the SQL for 'the text ``expression`` is a JSON array DuckDB and Python read alike'."""
    return (
        f"coalesce(json_valid({expression}) AND NOT regexp_matches({expression}, "
        f"{_literal(_LENIENT_JSON)}) AND json_type({expression}) = 'ARRAY', false)"
    )


def _ids_of_array(expression: str) -> tuple[str, str]:
    """Return SQL for the document ids of the JSON array ``expression`` and whether every
    element is a string or a whole number."""
    types = f"json_type({expression}, '$[*]')"
    ok = (
        f"coalesce(list_bool_and(list_transform({types}, "
        f"lambda t: t IN ('VARCHAR', 'BIGINT', 'UBIGINT'))), true)"
    )
    return f"json_extract_string({expression}, '$[*]')", ok


def _hit_text(text: str) -> str:
    """Return the SQL of the hit list the text ``text`` holds (a JSON list, or ids separated
    by commas), NULL when the row reader must decide."""
    stripped = f"trim({text})"
    ids, ok = _ids_of_array(stripped)
    return (
        f"CASE WHEN regexp_matches({text}, {_literal(_PY_SPACES)}) THEN NULL "
        f"WHEN starts_with({stripped}, '[') THEN "
        f"CASE WHEN {_valid(stripped)} AND {ok} THEN {ids} END "
        f"ELSE list_filter(list_transform(string_split({stripped}, ','), lambda x: trim(x)), "
        "lambda x: x <> '') END"
    )


_PARSED_TIME: Final = (
    "try_cast(tp.d || ' ' || tp.t AS TIMESTAMP)"
    " + to_microseconds(CAST(rpad(tp.f, 6, '0') AS BIGINT))"
    " - to_minutes(CASE tp.sign WHEN '' THEN 0 WHEN '-' THEN -1 ELSE 1 END"
    " * (coalesce(try_cast(tp.oh AS BIGINT), 0) * 60 + coalesce(try_cast(tp.om AS BIGINT), 0)))"
)

#: The start of both logs' checks: the adapter's rows (``{source}``) with the parts of their
#: time text.
_TIMED_SOURCE: Final = f"""
WITH src AS ({{source}}),
t AS (
    SELECT *, regexp_extract(ts_text, {_literal(_TIMESTAMP)},
        ['d', 't', 'f', 'z', 'sign', 'oh', 'om']) AS tp
    FROM src
),
"""

#: The checks of a query log, over the columns an adapter below gives each field: ``*_tag``
#: (missing, str, int, float, time, list or other: the type the row reader would see),
#: ``*_text``, and ``ts_time`` for a typed time, ``hits_list`` and ``hits_ok`` for a list.
_QUERY_CHECKS: Final = (
    _TIMED_SOURCE
    + f"""v AS (
    SELECT guard,
        CASE WHEN qid_tag IN ('str', 'int') AND qid_text <> '' THEN qid_text END AS query_id,
        CASE WHEN uq_tag = 'str' THEN uq_text END AS user_query,
        CASE ts_tag WHEN 'time' THEN ts_time WHEN 'str' THEN {_PARSED_TIME} END AS ts,
        CASE WHEN cid_tag IN ('str', 'int') AND cid_text <> '' THEN cid_text END AS client_id,
        app_tag IN ('missing', 'str', 'int') AS app_ok,
        CASE WHEN app_tag IN ('str', 'int') AND app_text <> '' THEN app_text
            ELSE {_literal(DEFAULT_APPLICATION)} END AS application,
        CASE hits_tag WHEN 'list' THEN CASE WHEN hits_ok THEN hits_list END
            WHEN 'str' THEN {_hit_text("hits_text")} END AS hit_list,
        lat_tag = 'missing' AS lat_none,
        CASE lat_tag
            WHEN 'int' THEN try_cast(lat_text AS DOUBLE)
            WHEN 'float' THEN lat_num
            WHEN 'str' THEN CASE WHEN regexp_matches(lat_text, '^[0-9]{{1,15}}(\\.[0-9]{{1,15}})?$')
                THEN try_cast(lat_text AS DOUBLE) END
        END AS latency,
        attr_tag IN ('missing', 'str', 'int') AS attr_ok,
        CASE WHEN attr_tag IN ('str', 'int') AND attr_text <> '' THEN attr_text END AS attribute
    FROM t
)
SELECT query_id, user_query, ts, CAST(epoch_us(ts) AS DOUBLE) / 1e6 AS epoch_s, client_id,
    application, CAST(len(hit_list) AS INTEGER) AS hits, hit_list,
    CASE WHEN lat_none THEN NULL ELSE latency END AS latency_ms, attribute,
    coalesce(guard OR query_id IS NULL OR user_query IS NULL OR ts IS NULL
        OR client_id IS NULL OR NOT app_ok OR hit_list IS NULL
        OR (NOT lat_none AND (latency IS NULL OR isnan(latency) OR latency < 0))
        OR NOT attr_ok, true) AS bad
FROM v
"""
)

#: The checks of an event log, over an adapter's columns as for queries (``pos_num`` for a
#: floating-point ordinal).
_EVENT_CHECKS: Final = (
    _TIMED_SOURCE
    + f"""v AS (
    SELECT guard,
        CASE WHEN act_tag IN ('str', 'int') AND act_text <> '' THEN act_text END AS action_name,
        qid_tag IN ('missing', 'str', 'int') AS qid_ok,
        CASE WHEN qid_tag IN ('str', 'int') AND qid_text <> '' THEN qid_text END AS query_id,
        (pos_tag = 'missing' OR (pos_tag = 'str' AND pos_text = '')
            OR (pos_tag = 'float' AND isnan(pos_num))) AS pos_none,
        CASE pos_tag
            WHEN 'str' THEN CASE WHEN regexp_matches(pos_text, '^[0-9]{{1,9}}$')
                THEN try_cast(pos_text AS INTEGER) END
            WHEN 'int' THEN CASE WHEN try_cast(pos_text AS BIGINT) BETWEEN 0 AND {_INT32_MAX}
                THEN try_cast(pos_text AS INTEGER) END
            WHEN 'float' THEN CASE WHEN NOT isnan(pos_num) AND pos_num = floor(pos_num)
                AND pos_num >= 0 AND pos_num <= {_INT32_MAX} THEN try_cast(pos_num AS INTEGER) END
        END AS position,
        obj_tag IN ('missing', 'str', 'int') AS obj_ok,
        CASE WHEN obj_tag IN ('str', 'int') AND obj_text <> '' THEN obj_text END AS object_id,
        CASE ts_tag WHEN 'time' THEN ts_time WHEN 'str' THEN {_PARSED_TIME} END AS ts
    FROM t
)
SELECT action_name, query_id, CASE WHEN pos_none THEN NULL ELSE position END AS position,
    object_id, ts,
    coalesce(guard OR action_name IS NULL OR NOT qid_ok OR (NOT pos_none AND position IS NULL)
        OR NOT obj_ok OR ts IS NULL, true) AS bad
FROM v
"""
)


def _json_tag(value: str) -> str:
    return (
        f"CASE json_type({value}) WHEN 'VARCHAR' THEN 'str' WHEN 'BIGINT' THEN 'int' "
        f"WHEN 'UBIGINT' THEN 'int' WHEN 'DOUBLE' THEN 'float' WHEN 'ARRAY' THEN 'list' "
        f"WHEN 'NULL' THEN 'missing' ELSE CASE WHEN {value} IS NULL THEN 'missing' "
        "ELSE 'other' END END"
    )


def _json_source(path: Path, fields: dict[str, str | None]) -> str:
    """Return the adapter of an NDJSON log: each line read whole, its fields by JSON path."""
    paths: list[str] = []
    columns: list[str] = []
    nested: list[str] = []
    for alias, name in fields.items():
        if name is None:  # a field the import does not read
            columns.extend(_text_columns(alias, None))
            continue
        parts = name.split(".")
        # The row reader reads a dotted key first, the nested object only without it.
        flat = f"v[{len(paths) + 1}]"
        paths.append("$." + _quote(name))
        value = flat
        if len(parts) > 1:
            paths.append("$." + ".".join(_quote(part) for part in parts))
            value = f"coalesce({flat}, v[{len(paths)}])"
            nested.extend(
                "$." + ".".join(_quote(part) for part in parts[:depth])
                for depth in range(1, len(parts))
            )
        columns.append(f"{_json_tag(value)} AS {alias}_tag, {value} ->> '$' AS {alias}_text")
        if alias == "ts":
            columns.append("CAST(NULL AS TIMESTAMP) AS ts_time")
        elif alias in _NUMBERS:
            columns.append(f"try_cast({value} AS DOUBLE) AS {alias}_num")
        elif alias == "hits":
            ids, ok = _ids_of_array(value)
            columns.append(f"{ids} AS hits_list, {ok} AS hits_ok")
    objects = ["j", *(f"json_extract(j, {_literal(p)})" for p in dict.fromkeys(nested))]
    duplicated = " OR ".join(
        f"coalesce(len(json_keys({o})) <> len(list_distinct(json_keys({o}))), false)"
        for o in objects
    )
    guard = (
        f"(json_type(j) <> 'OBJECT' OR regexp_matches(j, {_literal(_LENIENT_JSON)}) "
        f"OR contains(j, chr(13)) OR {duplicated})"
    )
    listed = ", ".join(_literal(p) for p in paths)
    return (
        f"SELECT {guard} AS guard, {', '.join(columns)} FROM "
        f"(SELECT json AS j, json_extract(json, [{listed}]) AS v FROM read_ndjson_objects("
        f"{_literal(str(path))}, compression = {_literal(_compression(path))}))"
    )


def _text_columns(alias: str, column: str | None) -> list[str]:
    """Return an adapter's columns of a field read as text (CSV), ``column`` its source."""
    if column is None:
        tag, text = "'missing'", "CAST(NULL AS VARCHAR)"
    else:
        tag = f"CASE WHEN {column} IS NULL OR {column} = '' THEN 'missing' ELSE 'str' END"
        text = column
    columns = [f"{tag} AS {alias}_tag", f"{text} AS {alias}_text"]
    if alias == "ts":
        columns.append("CAST(NULL AS TIMESTAMP) AS ts_time")
    elif alias in _NUMBERS:
        columns.append(f"CAST(NULL AS DOUBLE) AS {alias}_num")
    elif alias == "hits":
        columns.append("CAST(NULL AS VARCHAR[]) AS hits_list, false AS hits_ok")
    return columns


def _csv_header(path: Path) -> list[str] | None:
    """Return the header of the CSV log as Python's reader reads it, or None when it is not
    one DuckDB reads alike (spread over lines, names given twice, not UTF-8)."""
    try:
        with (
            open_input(path) as raw,
            io.TextIOWrapper(cast("io.BufferedReader", raw), encoding="utf-8") as text,
        ):
            reader = csv.reader(text)
            names = next(reader, None)
            if names is None or reader.line_num != 1 or len(set(names)) != len(names):
                return None
            return names
    except (OSError, EOFError, UnicodeDecodeError, csv.Error):
        return None


def _csv_source(path: Path, fields: dict[str, str | None]) -> str | None:
    """Return the adapter of a flat CSV log, or None when its header is not a plain one."""
    names = _csv_header(path)
    if names is None or not names:
        return None
    given = {name: f"c{number}" for number, name in enumerate(names)}
    columns: list[str] = []
    used: list[str] = []
    for alias, name in fields.items():
        source = None if name is None else given.get(name)
        columns.extend(_text_columns(alias, source))
        if source is not None:
            used.append(f"coalesce(contains({source}, chr(13)), false)")
    spec = ", ".join(f"{_literal(f'c{n}')}: 'VARCHAR'" for n in range(len(names)))
    guard = " OR ".join(used) or "false"
    return (
        f"SELECT ({guard}) AS guard, {', '.join(columns)} FROM read_csv("
        f"{_literal(str(path))}, columns = {{{spec}}}, header = true, auto_detect = false, "
        "delim = ',', quote = '\"', escape = '\"', strict_mode = true, null_padding = false, "
        f"compression = {_literal(_compression(path))})"
    )


def _parquet_columns(alias: str, column: str | None, kind: Any) -> list[str]:
    """Return an adapter's columns of a Parquet field: ``kind`` its Arrow type."""
    import pyarrow as pa

    if column is None or kind is None or pa.types.is_null(kind):
        return _text_columns(alias, None)
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    text = f"CAST({column} AS VARCHAR)"
    num = "CAST(NULL AS DOUBLE)"
    time = "CAST(NULL AS TIMESTAMP)"
    hits, hits_ok = "CAST(NULL AS VARCHAR[])", "false"
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        tag = "str"
    elif pa.types.is_integer(kind):
        tag = "int"
    elif pa.types.is_floating(kind) and not pa.types.is_float16(kind):
        tag, num = "float", f"CAST({column} AS DOUBLE)"
    elif pa.types.is_timestamp(kind) and kind.unit in ("s", "ms", "us"):
        tag = "time"  # a zone: the instant, in UTC; none: the time as written
        time = f"make_timestamp(epoch_us({column}))" if kind.tz else f"CAST({column} AS TIMESTAMP)"
    elif (pa.types.is_list(kind) or pa.types.is_large_list(kind)) and (
        pa.types.is_string(kind.value_type)
        or pa.types.is_large_string(kind.value_type)
        or pa.types.is_integer(kind.value_type)
    ):
        tag = "list"
        hits = f"CAST({column} AS VARCHAR[])"
        hits_ok = f"len(list_filter({column}, lambda e: e IS NULL)) = 0"
    else:
        tag = "other"
    columns = [
        f"CASE WHEN {column} IS NULL THEN 'missing' ELSE '{tag}' END AS {alias}_tag",
        f"{text if tag in ('str', 'int') else 'CAST(NULL AS VARCHAR)'} AS {alias}_text",
    ]
    if alias == "ts":
        columns.append(f"{time} AS ts_time")
    elif alias in _NUMBERS:
        columns.append(f"{num} AS {alias}_num")
    elif alias == "hits":
        columns.append(f"{hits} AS hits_list, {hits_ok} AS hits_ok")
    return columns


class _ByRows(Exception):
    """The file is one the row reader must read."""


def _parquet_field(schema: Any, name: str) -> tuple[str | None, Any]:
    """Return the SQL of the field ``name`` of a Parquet log and its Arrow type, as the row
    reader finds it: a column of that (dotted) name, else the nested struct fields; (None,
    None) when it finds none. Raise _ByRows for a struct whose fields repeat a name."""
    import pyarrow as pa

    if name in schema.names:
        return _quote(name), schema.field(name).type
    first, *rest = name.split(".")
    if not rest or first not in schema.names:
        return None, None
    kind = schema.field(first).type
    expression = _quote(first)
    for part in rest:
        if not pa.types.is_struct(kind):
            return None, None  # not a mapping: the row reader finds nothing there
        names = [kind.field(i).name for i in range(kind.num_fields)]
        if len(set(names)) != len(names):
            raise _ByRows
        if part not in names:
            return None, None
        kind = kind.field(part).type
        expression = f"struct_extract({expression}, {_literal(part)})"
    return expression, kind


def _parquet_source(path: Path, fields: dict[str, str | None]) -> str | None:
    """Return the adapter of a Parquet log, or None when its schema is one to read by rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except (pa.ArrowException, OSError, ValueError):
        return None
    if len(set(schema.names)) != len(schema.names):
        return None
    columns: list[str] = []
    for alias, name in fields.items():
        if name is None:
            columns.extend(_text_columns(alias, None))
            continue
        try:
            column, kind = _parquet_field(schema, name)
        except _ByRows:
            return None
        columns.extend(_parquet_columns(alias, column, kind))
    return f"SELECT false AS guard, {', '.join(columns)} FROM read_parquet({_literal(str(path))})"


def _compression(path: Path) -> str:
    return "gzip" if compression_of(path) == ".gz" else "none"


def _source(path: Path, fields: dict[str, str | None]) -> str | None:
    """Return the adapter SQL of the log at ``path``, or None when it is read by rows."""
    kind = format_of(path)
    compression = compression_of(path)
    if compression not in (None, ".gz") or (kind == "parquet" and compression is not None):
        return None
    if kind == "parquet":
        return _parquet_source(path, fields)
    if kind == "csv":
        return _csv_source(path, fields)
    if _starts_with_bom(path):
        return None
    return _json_source(path, fields)


def _starts_with_bom(path: Path) -> bool:
    try:
        with open_input(path) as raw:
            return raw.read(3) == b"\xef\xbb\xbf"
    except (OSError, EOFError):
        return True  # the row reader names the error


def _checked(
    connection: Connection, path: Path, fields: dict[str, str | None], checks: str
) -> bool:
    """Read the log at ``path`` into the temporary table ``file_rows``; return whether every
    row passed the checks (False: the table is dropped and the file is read by rows)."""
    source = _source(path, fields)
    if source is None:
        return False
    error = duckdb().Error
    try:
        connection.execute(
            "CREATE OR REPLACE TEMP TABLE file_rows AS " + checks.replace("{source}", source)
        )
        bad = connection.execute("SELECT bool_or(bad) FROM file_rows").fetchone()[0]
    except error:
        connection.execute("DROP TABLE IF EXISTS file_rows")
        return False
    if bad:
        connection.execute("DROP TABLE file_rows")
        return False
    return True


def stage_queries(connection: Connection, path: Path, attribute: str | None = None) -> int | None:
    """Add the searches of the query log ``path`` and their impressions to the staging
    tables, keeping the field ``attribute`` when one is named; return how many, or None
    (nothing staged) when the file must be read by rows."""
    fields: dict[str, str | None] = {**QUERY_FIELDS, "attr": attribute}
    if not _checked(connection, path, fields, _QUERY_CHECKS):
        return None
    try:
        rows, distinct, known = connection.execute(
            "SELECT count(*), count(DISTINCT query_id), "
            "(SELECT count(*) FROM file_rows WHERE query_id IN "
            "(SELECT query_id FROM staged_queries)) FROM file_rows"
        ).fetchone()
        if rows != distinct or known:  # an id logged twice: the row reader names the second
            return None
        connection.execute(
            "INSERT INTO staged_queries SELECT query_id, user_query, ts, epoch_s, client_id, "
            "application, hits, latency_ms, $name, attribute FROM file_rows",
            {"name": attribute},
        )
        # A document listed twice was shown at its first place; the others keep theirs.
        connection.execute(
            "INSERT INTO new_impressions SELECT query_id, rank, doc FROM ("
            "SELECT query_id, hit_list, unnest(hit_list) AS doc, "
            "CAST(generate_subscripts(hit_list, 1) AS INTEGER) AS rank FROM file_rows) "
            "WHERE list_position(hit_list, doc) = rank"
        )
        return int(rows)
    finally:
        connection.execute("DROP TABLE file_rows")


def stage_events(connection: Connection, path: Path) -> tuple[int, int] | None:
    """Add the events of the event log ``path`` that name a search to the staging tables;
    return how many, and how many named none, or None when the file must be read by rows."""
    if not _checked(connection, path, dict(EVENT_FIELDS), _EVENT_CHECKS):
        return None
    try:
        staged, without = connection.execute(
            "SELECT count(query_id), count(*) - count(query_id) FROM file_rows"
        ).fetchone()
        connection.execute(
            "INSERT INTO new_events SELECT action_name, query_id, position, object_id, ts "
            "FROM file_rows WHERE query_id IS NOT NULL"
        )
        return int(staged), int(without)
    finally:
        connection.execute("DROP TABLE file_rows")


def staged_ids(connection: Connection) -> set[str]:
    """Return the query ids staged so far (for the row reader's check of ids logged twice)."""
    return {
        str(row[0]) for row in connection.execute("SELECT query_id FROM staged_queries").fetchall()
    }


def key_queries(connection: Connection) -> None:
    """Make ``new_queries``: the staged searches with their query key, computed once for
    each distinct raw text by :func:`~monitor.traffic.keys.query_key` and joined back."""
    import pyarrow as pa

    found = connection.execute("SELECT DISTINCT user_query FROM staged_queries").fetchall()
    texts: Sequence[str] = [row[0] for row in found]
    keys = pa.table(
        {
            "user_query": pa.array(texts, pa.string()),
            "query_key": pa.array([query_key(text) for text in texts], pa.string()),
        }
    )
    connection.register("query_keys", keys)
    try:
        connection.execute(
            "CREATE OR REPLACE TEMP TABLE new_queries AS SELECT s.query_id, s.user_query, "
            "k.query_key, s.ts, s.epoch_s, s.client_id, s.application, s.hits, s.latency_ms, "
            "s.attribute_name, s.attribute "
            "FROM staged_queries s JOIN query_keys k ON k.user_query = s.user_query"
        )
    finally:
        connection.unregister("query_keys")
