"""Read query and event logs, row by row, into checked columns.

A log file is NDJSON (``.ndjson``, ``.jsonl``, ``.json``), Parquet (``.parquet``) or flat
CSV (``.csv``), each optionally gzip-compressed (``.gz``). Rows follow the UBI schema:

- queries: ``query_id``, ``user_query``, ``timestamp``, ``client_id``, ``application``
  (optional, default ``default``), ``query_response_hit_ids`` (a list; an empty list is a
  search without results), ``query_attributes.latency_ms`` (optional: the search's latency
  in milliseconds, a number >= 0), and the one field ``logs import --keep-attribute`` names
  (optional in each row: a string or a whole number, kept as text);
- events: ``action_name``, ``query_id``, ``event_attributes.position.ordinal`` (optional),
  ``object.object_id`` (optional), ``timestamp``.

A nested field is read from the nested object (``{"object": {"object_id": ...}}``) or from a
flat column or key spelled with dots (``object.object_id``), as CSV and flat JSONL write it.
In CSV, ``query_response_hit_ids`` is a JSON list or ids separated by commas. Timestamps are
ISO 8601 (a time without zone is UTC). An event without a ``query_id`` is not about a search:
it is counted and left out. A bad row raises InputError naming the file and its line (its
1-based row for Parquet), or is counted and skipped by a :class:`Skipper` with a cap; a
file that cannot be read as a whole (not UTF-8, not Parquet, a truncated ``.gz``) is an
error that is never skipped.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, cast

from monitor.errors import InputError, UsageError
from monitor.io import logical_suffix, open_input
from monitor.traffic.keys import query_key

#: The file formats by their suffix (beneath ``.gz``).
FORMATS = {".ndjson": "ndjson", ".jsonl": "ndjson", ".json": "ndjson", ".parquet": "parquet"}
FORMATS[".csv"] = "csv"

#: The ``application`` of a search that logs none.
DEFAULT_APPLICATION = "default"
_DECIMAL = re.compile(r"[0-9]{1,15}(\.[0-9]{1,15})?", re.ASCII)
#: The query-log field holding a search's latency in milliseconds (optional).
LATENCY_FIELD = "query_attributes.latency_ms"


@dataclass
class Skipper:
    """Skip at most ``cap`` bad rows over an import (0: the first bad row is an error)."""

    cap: int = 0
    skipped: int = 0
    first: InputError | None = None

    def reject(self, error: InputError) -> None:
        """Count ``error``'s row as skipped, or raise: at once (cap 0) or past the cap."""
        if self.cap == 0:
            raise error
        self.skipped += 1
        if self.first is None:
            self.first = error
        if self.skipped > self.cap:
            raise UsageError(
                f"more than {self.cap} bad rows (--skip-bad {self.cap}); the first: {self.first}"
            )


@dataclass
class QueryColumns:
    """The checked searches of an import, column by column, with their impressions."""

    query_id: list[str] = field(default_factory=list)
    user_query: list[str] = field(default_factory=list)
    query_key: list[str] = field(default_factory=list)
    ts: list[datetime] = field(default_factory=list)
    epoch_s: list[float] = field(default_factory=list)
    client_id: list[str] = field(default_factory=list)
    application: list[str] = field(default_factory=list)
    hits: list[int] = field(default_factory=list)
    latency_ms: list[float | None] = field(default_factory=list)
    attribute: list[str | None] = field(default_factory=list)
    #: The field kept as ``attribute`` (None: none is kept).
    attribute_name: str | None = None
    shown_query_id: list[str] = field(default_factory=list)
    shown_rank: list[int] = field(default_factory=list)
    shown_doc: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)

    def __len__(self) -> int:
        return len(self.query_id)


@dataclass
class EventColumns:
    """The checked events of an import, column by column."""

    action_name: list[str] = field(default_factory=list)
    query_id: list[str] = field(default_factory=list)
    position: list[int | None] = field(default_factory=list)
    object_id: list[str | None] = field(default_factory=list)
    ts: list[datetime] = field(default_factory=list)
    without_query: int = 0

    def __len__(self) -> int:
        return len(self.query_id)


def format_of(path: Path) -> str:
    """Return the log format of ``path`` by its suffix, or raise UsageError."""
    suffix = logical_suffix(path)
    if suffix not in FORMATS:
        known = ", ".join(sorted({*FORMATS, *(f"{s}.gz" for s in FORMATS)}))
        raise UsageError(f"{path}: unknown log format {suffix or '(no suffix)'!r}; known: {known}")
    return FORMATS[suffix]


def records(path: Path) -> Iterator[tuple[int, Mapping[str, Any] | InputError]]:
    """Yield each row of the log file at ``path`` with its line (or row), or the error."""
    kind = format_of(path)
    if kind == "parquet":
        yield from _parquet_records(path)
        return
    with (
        open_input(path) as raw,
        io.TextIOWrapper(cast("io.BufferedReader", raw), encoding="utf-8") as text,
    ):
        try:
            if kind == "csv":
                yield from _csv_records(path, text)
            else:
                yield from _json_records(path, text)
        except UnicodeDecodeError as error:  # the rest of the file is unreadable: never skipped
            raise UsageError(f"{path}: expected UTF-8 text, found {error.reason}") from None


def _json_records(path: Path, text: io.TextIOBase) -> Iterator[tuple[int, Any]]:
    for number, line in enumerate(text, 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as error:
            yield number, InputError(path, "a JSON object", line=number, found=error.msg)
            continue
        if isinstance(value, dict):
            yield number, value
        else:
            yield number, InputError(path, "a JSON object", line=number, found=value)


def _csv_records(path: Path, text: io.TextIOBase) -> Iterator[tuple[int, Any]]:
    reader = csv.DictReader(text)
    for row in reader:
        if None in row:
            found = f"{len(row) - 1 + len(row[None])} fields"
            expected = f"{len(reader.fieldnames or [])} fields, as the header has"
            yield reader.line_num, InputError(path, expected, line=reader.line_num, found=found)
            continue
        yield reader.line_num, {key: value for key, value in row.items() if value != ""}


def _parquet_records(path: Path) -> Iterator[tuple[int, Any]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        with open_input(path) as raw:
            table = pq.read_table(pa.BufferReader(raw.read()))
    except (pa.ArrowException, ValueError) as error:  # the whole file: never skipped
        raise UsageError(f"{path}: expected a Parquet file, found {error}") from None
    yield from enumerate(table.to_pylist(), 1)


def value(record: Mapping[str, Any], name: str) -> Any:
    """Return the field ``name`` (dotted for nesting) of ``record``, or None when missing."""
    if name in record:
        return record[name]
    current: Any = record
    for part in name.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return None
        current = current[part]
    return current


class _Bad(Exception):
    """A field of a row is not what it should be: what was expected, and what was found."""

    def __init__(self, name: str, expected: str, found: object) -> None:
        super().__init__(name)
        self.expected = f"{name} as {expected}"
        self.found = found


def _optional_text(record: Mapping[str, Any], name: str) -> str | None:
    found = value(record, name)
    if found is None or found == "":
        return None
    if isinstance(found, bool) or not isinstance(found, str | int):
        raise _Bad(name, "a string", found)
    return str(found)


def _text(record: Mapping[str, Any], name: str) -> str:
    found = _optional_text(record, name)
    if found is None:
        raise _Bad(name, "a non-empty string", "nothing")
    return found


def _timestamp(record: Mapping[str, Any]) -> datetime:
    found = value(record, "timestamp")
    if isinstance(found, datetime):
        stamp = found
    elif isinstance(found, str):
        try:
            stamp = datetime.fromisoformat(found.strip().replace("Z", "+00:00"))
        except ValueError:
            raise _Bad("timestamp", "an ISO 8601 time", found) from None
    else:
        raise _Bad("timestamp", "an ISO 8601 time", found if found is not None else "nothing")
    if stamp.tzinfo is not None:
        stamp = stamp.astimezone(timezone.utc).replace(tzinfo=None)
    return stamp


def _ordinal(record: Mapping[str, Any]) -> int | None:
    name = "event_attributes.position.ordinal"
    found = value(record, name)
    if found is None or found == "" or (isinstance(found, float) and math.isnan(found)):
        return None  # NaN: a missing value of a numeric column written by pandas
    if isinstance(found, str) and found.strip().isdigit():
        return int(found)
    if isinstance(found, float) and found.is_integer():
        found = int(found)
    if isinstance(found, bool) or not isinstance(found, int) or found < 0:
        raise _Bad(name, "a whole number >= 0", found)
    return found


def _latency(record: Mapping[str, Any]) -> float | None:
    found = value(record, LATENCY_FIELD)
    if found is None or found == "":
        return None
    if isinstance(found, str) and _DECIMAL.fullmatch(found):  # CSV: every field is text
        found = float(found)
    if (
        isinstance(found, bool)
        or not isinstance(found, int | float)
        or math.isnan(found)
        or math.isinf(found)
        or found < 0
    ):
        raise _Bad(LATENCY_FIELD, "a number of milliseconds >= 0", found)
    return float(found)


def _hit_ids(record: Mapping[str, Any]) -> list[str]:
    name = "query_response_hit_ids"
    found = value(record, name)
    if found is None:
        raise _Bad(name, "a list of document ids", "nothing")
    if isinstance(found, str):
        stripped = found.strip()
        if stripped.startswith("["):
            try:
                found = json.loads(stripped)
            except json.JSONDecodeError:
                raise _Bad(name, "a JSON list of document ids", found) from None
        else:
            found = [part.strip() for part in stripped.split(",") if part.strip()]
    if not isinstance(found, list) or not all(
        isinstance(doc, str | int) and not isinstance(doc, bool) for doc in found
    ):
        raise _Bad(name, "a list of document ids", found)
    return [str(doc) for doc in found]


def read_queries(paths: list[Path], columns: QueryColumns, skipper: Skipper) -> None:
    """Add the searches of the query logs ``paths`` to ``columns``."""
    for path in paths:
        _read(path, skipper, lambda record: _add_query(record, columns))


def read_events(paths: list[Path], columns: EventColumns, skipper: Skipper) -> None:
    """Add the events of the event logs ``paths`` to ``columns``."""
    for path in paths:
        _read(path, skipper, lambda record: _add_event(record, columns))


def _read(path: Path, skipper: Skipper, add: Callable[[Mapping[str, Any]], None]) -> None:
    try:
        found = records(path)
        for number, record in found:
            if isinstance(record, InputError):
                skipper.reject(record)
                continue
            try:
                add(record)
            except _Bad as bad:
                skipper.reject(InputError(path, bad.expected, line=number, found=bad.found))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such log file") from None
    except (OSError, EOFError) as error:  # unreadable, or a corrupt or truncated .gz
        raise UsageError(
            f"{path}: cannot read: {getattr(error, 'strerror', None) or error}"
        ) from None


def _add_query(record: Mapping[str, Any], columns: QueryColumns) -> None:
    query_id = _text(record, "query_id")
    text = value(record, "user_query")
    if not isinstance(text, str):
        raise _Bad("user_query", "a string", text if text is not None else "nothing")
    stamp = _timestamp(record)
    client = _text(record, "client_id")
    application = _optional_text(record, "application") or DEFAULT_APPLICATION
    hits = _hit_ids(record)
    latency = _latency(record)
    attribute = (
        None if columns.attribute_name is None else _optional_text(record, columns.attribute_name)
    )
    if query_id in columns.seen:
        raise _Bad("query_id", "an id not logged before", query_id)
    columns.seen.add(query_id)
    columns.query_id.append(query_id)
    columns.user_query.append(text)
    columns.query_key.append(query_key(text))
    columns.ts.append(stamp)
    columns.epoch_s.append(stamp.replace(tzinfo=timezone.utc).timestamp())
    columns.client_id.append(client)
    columns.application.append(application)
    columns.hits.append(len(hits))
    columns.latency_ms.append(latency)
    columns.attribute.append(attribute)
    shown: set[str] = set()
    for rank, doc in enumerate(hits, 1):
        if doc in shown:  # a document listed twice was seen at its first place; the others keep
            continue  # the places they were shown at
        shown.add(doc)
        columns.shown_query_id.append(query_id)
        columns.shown_rank.append(rank)
        columns.shown_doc.append(doc)


def _add_event(record: Mapping[str, Any], columns: EventColumns) -> None:
    action = _text(record, "action_name")
    query_id = _optional_text(record, "query_id")
    position = _ordinal(record)
    object_id = _optional_text(record, "object.object_id")
    stamp = _timestamp(record)
    if query_id is None:
        columns.without_query += 1
        return
    columns.action_name.append(action)
    columns.query_id.append(query_id)
    columns.position.append(position)
    columns.object_id.append(object_id)
    columns.ts.append(stamp)
