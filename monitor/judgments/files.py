"""Read grades from a file: the filled labeling-queue CSV, JSONL, or TREC qrels.

Every error names the file and line and says what was expected. Rows whose ``grade`` is
left empty (CSV) or null (JSONL) are skipped: a queue may be filled in part. TREC lines
graded ``-1`` (the queue's own "ungraded" mark) are skipped too.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from monitor.errors import InputError
from monitor.evalset._checks import Invalid
from monitor.evalset.trec import grade_from_literal
from monitor.evalset.trec_fields import nul_line, splitter

#: The formats :func:`read_grades` takes; without one the suffix decides.
GRADE_FORMATS = ("csv", "jsonl", "trec")


def read_grades(path: Path, format: str | None = None) -> dict[str, dict[str, int]]:
    """Return query id -> doc id -> grade read from ``path``; raise InputError if bad.

    The same (query, doc) twice with different grades is an error; twice alike, one grade.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(path, f"a readable UTF-8 grades file ({error})") from None
    chosen = format or _guess(path)
    grades: dict[str, dict[str, int]] = {}
    for line, qid, doc, raw in _rows(path, text, chosen):
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            continue
        grade = _grade(path, line, raw)
        if chosen == "trec" and grade == -1:
            continue
        docs = grades.setdefault(qid, {})
        if doc in docs and docs[doc] != grade:
            raise InputError(
                path,
                f"one grade for query {qid!r} doc {doc!r} (an earlier line gave {docs[doc]})",
                line=line,
                found=grade,
            )
        docs[doc] = grade
    return grades


def _guess(path: Path) -> str:
    suffix = path.suffix.lower().lstrip(".")
    if suffix in ("csv", "jsonl"):
        return suffix
    if suffix in ("qrels", "trec", "txt"):
        return "trec"
    raise InputError(path, "a .csv, .jsonl or .qrels file (or give --format)", found=path.suffix)


def _rows(path: Path, text: str, format: str) -> list[tuple[int, str, str, object]]:
    rows: list[tuple[int, str, str, object]] = []
    if format == "csv":
        reader = csv.DictReader(io.StringIO(text))
        missing = {"query_id", "doc_id", "grade"} - set(reader.fieldnames or ())
        if missing:
            raise InputError(
                path, "a header with query_id, doc_id and grade", line=1, found=reader.fieldnames
            )
        for row in reader:
            line = reader.line_num
            rows.append(
                (
                    line,
                    _id(path, line, row["query_id"]),
                    _id(path, line, row["doc_id"]),
                    row["grade"],
                )
            )
        return rows
    if format == "jsonl":
        for line, raw in enumerate(text.splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                item = json.loads(raw)
            except json.JSONDecodeError as error:
                raise InputError(path, f"a JSON object ({error.msg})", line=line) from None
            if not isinstance(item, dict):
                raise InputError(path, "a JSON object", line=line, found=item)
            rows.append(
                (
                    line,
                    _id(path, line, item.get("query_id")),
                    _id(path, line, item.get("doc_id")),
                    item.get("grade"),
                )
            )
        return rows
    if format == "trec":
        # Split as trec_eval splits a qrels line (monitor.evalset.trec_fields), not at every
        # Unicode space or line separator as str.split and str.splitlines do.
        nul = nul_line(text)
        if nul is not None:
            raise InputError(path, "text without NUL bytes", line=nul)
        split = splitter(text)
        for line, raw in enumerate(text.split("\n"), start=1):
            fields = split(raw)
            if not fields or fields[0].startswith("#"):
                continue
            if len(fields) != 4:
                raise InputError(path, "4 fields: qid iteration docid grade", line=line, found=raw)
            rows.append((line, fields[0], fields[2], fields[3]))
        return rows
    raise InputError(path, f"a grades format, one of {', '.join(GRADE_FORMATS)}", found=format)


def _id(path: Path, line: int, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(path, "a non-empty query_id and doc_id", line=line, found=value)
    return value.strip()


def _grade(path: Path, line: int, raw: object) -> int:
    if isinstance(raw, bool):
        raise InputError(path, "an integer grade", line=line, found=raw)
    if isinstance(raw, int):
        return raw
    if isinstance(raw, str):
        try:
            return grade_from_literal(raw.strip())  # ASCII digits only, as the qrels reader
        except Invalid:
            pass
    raise InputError(path, "an integer grade (or an empty one to skip)", line=line, found=raw)
