"""CSV eval sets: columns ``id``, ``query``, ``relevant``, and any others as metadata.

``relevant`` holds ``doc1;doc2`` (grade 1 each) or ``doc1:2;doc2:0``; the grade follows
the last colon, so a doc id may itself hold colons when its grade is written. Items are
stripped of surrounding spaces and empty items are skipped.

Metadata cells are read as strings, and an empty cell means the query has no value for
that column. So a CSV round trip keeps string metadata only: numbers and booleans come
back as their text, and ``None`` or ``""`` come back absent.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Sequence

from monitor.errors import InputError, UsageError
from monitor.evalset._checks import Invalid, check_id, check_text, grade_from_text
from monitor.evalset._documents import Entry
from monitor.records import MetaValue, Query

#: The columns every eval set CSV has, in the order the writer puts them.
COLUMNS = ("id", "query", "relevant")


def read_csv(text: str, source: str) -> Iterator[Entry]:
    """Yield the queries of a CSV text (header first; blank rows are skipped)."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    header: list[str] | None = None
    consumed = 0  # lines read so far: a row starts on the line after them
    while True:
        start = consumed + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            raise InputError(source, f"valid CSV ({error})", line=reader.line_num) from None
        consumed = reader.line_num
        if not any(cell.strip() for cell in row):
            continue
        if header is None:
            header = _header(row, source, start)
            continue
        if len(row) != len(header):
            raise InputError(
                source, f"{len(header)} fields as in the header", line=start, found=len(row)
            )
        yield Entry(start, _query(dict(zip(header, row, strict=True)), source, start))


def write_csv(queries: Sequence[Query]) -> str:
    """Return the CSV text of ``queries``; raise UsageError if one cannot be written."""
    extra: dict[str, None] = {}
    for query in queries:
        for key in query.metadata:
            if key in COLUMNS:
                raise UsageError(
                    f"query {query.id!r}: metadata key {key!r} would clash with a CSV column"
                )
            extra[key] = None
    buffer = io.StringIO(newline="")
    # CRLF as RFC 4180 says: with "\n" the csv module leaves a lone "\r" unquoted.
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow([*COLUMNS, *extra])
    for query in queries:
        if query.id != query.id.strip():
            raise UsageError(f"query id {query.id!r} cannot be written to CSV (surrounding spaces)")
        cells = [_cell(query.metadata.get(key)) for key in extra]
        writer.writerow([query.id, query.text, _relevant_cell(query), *cells])
    return buffer.getvalue()


def _header(row: list[str], source: str, line: int) -> list[str]:
    """Return the column names, checked: required ones present, none empty or repeated."""
    names = [cell.strip() for cell in row]
    for name in COLUMNS:
        if name not in names:
            raise InputError(
                source, f"a header with the columns {', '.join(COLUMNS)}", line=line, found=row
            )
    seen: set[str] = set()
    for name in names:
        if not name:
            raise InputError(source, "a name for every column", line=line, found=row)
        if name in seen:
            raise InputError(source, "column names given once", line=line, found=name)
        seen.add(name)
    return names


def _query(cells: dict[str, str], source: str, line: int) -> Query:
    """Return the Query of one CSV row, or raise InputError naming the column."""
    column = "id"
    try:
        query_id = check_id(cells["id"].strip())
        column = "query"
        text = check_text(cells["query"])
        column = "relevant"
        judgments = _judgments(cells["relevant"])
    except Invalid as error:
        expected = f"{error.expected} in column {column!r}"
        if error.path:
            expected += f" for document {error.path[0]!r}"
        raise InputError(source, expected, line=line, found=error.found) from None
    metadata: dict[str, MetaValue] = {
        key: value for key, value in cells.items() if key not in COLUMNS and value != ""
    }
    return Query(query_id, text, judgments, metadata)


def _judgments(cell: str) -> dict[str, int]:
    """Return doc id -> grade from ``doc1;doc2`` or ``doc1:2;doc2:1``."""
    judgments: dict[str, int] = {}
    for item in cell.split(";"):
        item = item.strip()
        if not item:
            continue
        doc, colon, grade = item.rpartition(":")
        if not colon:
            doc, grade = item, "1"
        doc = check_id(doc.strip(), "document id")
        try:
            value = grade_from_text(grade.strip())
        except Invalid as error:
            raise error.under(doc) from None
        if doc in judgments:
            raise Invalid("document ids listed once", doc)
        judgments[doc] = value
    return judgments


def _relevant_cell(query: Query) -> str:
    """Return the ``relevant`` cell of ``query``; grades are written unless all are 1."""
    for doc in query.judgments:
        if ";" in doc or doc != doc.strip():
            raise UsageError(
                f"query {query.id!r}: document id {doc!r} cannot be written to CSV "
                "(it holds ';' or surrounding spaces)"
            )
    items = query.judgments.items()
    if all(grade == 1 and ":" not in doc for doc, grade in items):
        return ";".join(query.judgments)
    return ";".join(f"{doc}:{grade}" for doc, grade in items)


def _cell(value: MetaValue) -> str:
    """Return the CSV text of a metadata value."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
