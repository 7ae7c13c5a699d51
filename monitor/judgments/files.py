"""Read grades from a file: the filled labeling-queue CSV, JSONL, or TREC qrels.

Every error names the file and line and says what was expected. Rows whose ``grade`` is
left empty (CSV) or null (JSONL) are skipped: a queue may be filled in part. TREC lines
graded ``-1`` (the queue's own "ungraded" mark) are skipped too.

A grade is an integer of 64 bits (as the eval sets hold them) written in ASCII digits: an
Arabic-Indic or full-width digit, ``1_0`` and ``"2"`` in JSON are refused. Ids are non-empty
strings of valid Unicode without control characters (a NUL among them). A grades file is
a regular file (or a pipe) of at most :data:`MAX_GRADES_BYTES` bytes.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from monitor.errors import InputError
from monitor.evalset._checks import GRADE_MAX, GRADE_MIN, Invalid
from monitor.evalset.trec import grade_from_literal
from monitor.evalset.trec_fields import nul_line, splitter
from monitor.io import MAX_INPUT_BYTES, read_bytes_limited

#: The formats :func:`read_grades` takes; without one the suffix decides.
GRADE_FORMATS = ("csv", "jsonl", "trec")
#: The largest grades file read, in bytes (decompressed), as for eval sets.
MAX_GRADES_BYTES = MAX_INPUT_BYTES

_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
#: The most digits a grade has (GRADE_MAX has 19); a longer literal is never converted.
_GRADE_DIGITS = len(str(GRADE_MAX))
_RANGE = f"an integer grade from {GRADE_MIN} to {GRADE_MAX}"


class _TooLong(ValueError):
    """A JSON integer literal with more digits than any grade."""


def read_grades(path: Path, format: str | None = None) -> dict[str, dict[str, int]]:
    """Return query id -> doc id -> grade read from ``path``; raise InputError if bad.

    The same (query, doc) twice with different grades is an error; twice alike, one grade.
    """
    chosen = format or _guess(path)
    text = _read(path)
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


def _read(path: Path) -> str:
    """Return the text of a grades file: a regular file or a pipe, bounded, UTF-8."""
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        raise InputError(path, "a readable grades file", found=error.strerror) from None
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
        kind = "a folder" if stat.S_ISDIR(mode) else "a device or socket"
        raise InputError(path, "a regular grades file", found=kind)
    try:
        data = read_bytes_limited(path, MAX_GRADES_BYTES)
    except OSError as error:
        raise InputError(path, "a readable grades file", found=error.strerror) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        bad = data[error.start : error.end]
        raise InputError(path, "UTF-8 text", line=line, found=bad) from None


def _guess(path: Path) -> str:
    suffix = path.suffix.lower().lstrip(".")
    if suffix in ("csv", "jsonl"):
        return suffix
    if suffix in ("qrels", "trec", "txt"):
        return "trec"
    raise InputError(path, "a .csv, .jsonl or .qrels file (or give --format)", found=path.suffix)


def _rows(path: Path, text: str, format: str) -> list[tuple[int, str, str, object]]:
    if format == "csv":
        return _csv_rows(path, text)
    if format == "jsonl":
        return _jsonl_rows(path, text)
    if format == "trec":
        # Split as trec_eval splits a qrels line (monitor.evalset.trec_fields), not at every
        # Unicode space or line separator as str.split and str.splitlines do.
        nul = nul_line(text)
        if nul is not None:
            raise InputError(path, "text without NUL bytes", line=nul)
        split = splitter(text)
        rows: list[tuple[int, str, str, object]] = []
        for line, raw in enumerate(text.split("\n"), start=1):
            fields = split(raw)
            if not fields or fields[0].startswith("#"):
                continue
            if len(fields) != 4:
                raise InputError(path, "4 fields: qid iteration docid grade", line=line, found=raw)
            rows.append((line, _id(path, line, fields[0]), _id(path, line, fields[2]), fields[3]))
        return rows
    raise InputError(path, f"a grades format, one of {', '.join(GRADE_FORMATS)}", found=format)


def _csv_rows(path: Path, text: str) -> list[tuple[int, str, str, object]]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows: list[tuple[int, str, str, object]] = []
    header: list[str] | None = None
    try:
        for cells in reader:
            line = reader.line_num
            if not any(cell.strip() for cell in cells):
                continue
            if header is None:
                header = _header(path, cells, line)
                continue
            row = dict(zip(header, cells, strict=False))
            rows.append(
                (
                    line,
                    _id(path, line, row.get("query_id")),
                    _id(path, line, row.get("doc_id")),
                    row.get("grade"),
                )
            )
    except csv.Error as error:
        # The csv module refuses a field over its limit (131072 characters) here; the
        # limit is process-wide, so it is reported, not raised.
        raise InputError(path, f"valid CSV ({error})", line=reader.line_num) from None
    if header is None:
        raise InputError(path, "a header with query_id, doc_id and grade", line=1)
    return rows


def _header(path: Path, cells: list[str], line: int) -> list[str]:
    names = [cell.strip() for cell in cells]
    missing = {"query_id", "doc_id", "grade"} - set(names)
    if missing:
        raise InputError(path, "a header with query_id, doc_id and grade", line=line, found=cells)
    for name in ("query_id", "doc_id", "grade"):
        if names.count(name) > 1:
            raise InputError(
                path, f"the column {name!r} once in the header", line=line, found=cells
            )
    return names


def _jsonl_rows(path: Path, text: str) -> list[tuple[int, str, str, object]]:
    rows: list[tuple[int, str, str, object]] = []
    decoder = json.JSONDecoder(object_pairs_hook=_unique_keys, parse_int=_json_int)
    for line, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            item = decoder.decode(raw)
        except json.JSONDecodeError as error:
            raise InputError(path, f"a JSON object ({error.msg})", line=line) from None
        except _TooLong:
            raise InputError(path, _RANGE, line=line, found="an integer of more digits") from None
        except ValueError as error:  # a key given twice
            raise InputError(path, f"a JSON object ({error})", line=line) from None
        except RecursionError:
            raise InputError(path, "a JSON object nested a few levels deep", line=line) from None
        if not isinstance(item, dict):
            raise InputError(path, "a JSON object", line=line, found=type(item).__name__)
        grade = item.get("grade")
        if isinstance(grade, str):
            raise InputError(path, "a JSON integer grade (not a string)", line=line, found=grade)
        rows.append(
            (
                line,
                _id(path, line, item.get("query_id")),
                _id(path, line, item.get("doc_id")),
                grade,
            )
        )
    return rows


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        keys = [key for key, _ in pairs]
        twice = next(key for key in keys if keys.count(key) > 1)
        raise ValueError(f"the key {twice!r} given twice")
    return found


def _json_int(literal: str) -> int:
    if len(literal.lstrip("-")) > _GRADE_DIGITS:
        raise _TooLong(literal[:20])
    return int(literal)


def _id(path: Path, line: int, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(path, "a non-empty query_id and doc_id", line=line, found=value)
    text = value.strip()
    if _CONTROL.search(text):
        raise InputError(
            path, "ids without control characters (NUL among them)", line=line, found=text
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(path, "ids of valid Unicode (no lone surrogate)", line=line) from None
    return text


def _grade(path: Path, line: int, raw: object) -> int:
    """Return ``raw`` as a grade within 64 bits; refuse anything else."""
    if isinstance(raw, bool):
        raise InputError(path, "an integer grade", line=line, found=raw)
    grade: int | None = None
    if isinstance(raw, int):
        grade = raw
    elif isinstance(raw, str) and _INTEGER.fullmatch(raw.strip()):
        digits = raw.strip().lstrip("+-0")
        if len(digits) > _GRADE_DIGITS:
            raise InputError(path, _RANGE, line=line, found=f"{len(digits)} digits")
        try:
            grade = grade_from_literal(raw.strip())  # ASCII digits only, as the qrels reader
        except Invalid:
            grade = None
    if grade is None:
        raise InputError(path, "an integer grade (or an empty one to skip)", line=line, found=raw)
    if not GRADE_MIN <= grade <= GRADE_MAX:
        raise InputError(path, _RANGE, line=line, found=grade)
    return grade
