"""Read a suite's ``invariants``: inline, or from the CSV or JSONL file that ``{path: FILE}`` names.

Two kinds of entry, the same in every form::

    invariants:
      - {query: Q34, must_include: [d9a5bd8ea531], within: 5}   # a must-return pair
      - {no_lost_hits: {k: 5}}                                   # a policy over the baseline

A JSONL file holds one such entry per line. A CSV file holds must-return pairs only, with a
header row naming the columns ``query``, ``must_include`` (doc ids separated by spaces),
``within`` and ``severity`` (the last two may be left out or empty). ``within`` defaults to
the suite's search depth ``k`` and may not exceed it, nor may a policy's ``k``: the monitor
never sees deeper than it searched. An error in a file names that file, its line and the
entry's key path (``invariants[2].within``).
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Final

from monitor.config import vocab
from monitor.config.common import Severity
from monitor.config.fields import Fields
from monitor.config.model import InvariantConfig, MustInclude, NoLostHits
from monitor.config.nodes import Node, Scalar, child_path
from monitor.config.sections import alert_severity
from monitor.errors import ConfigError, InputError
from monitor.io import read_bytes_limited

#: The largest invariants file read, in bytes.
MAX_INVARIANT_BYTES: Final = 1 << 24

_ENTRY = "an invariant: {query, must_include, within} or {no_lost_hits: {k}}"
_INTEGER = re.compile(r"[+-]?[0-9]{1,18}", re.ASCII)
#: The most digits of a JSON integer read: a longer literal is refused before conversion.
_MAX_DIGITS: Final = 18
#: How deep a JSONL entry may nest (an entry is two levels deep).
_MAX_DEPTH: Final = 16


def invariants(f: Fields, node: Node | None, depth: int) -> tuple[InvariantConfig, ...]:
    """Read ``invariants``: a list of entries or ``{path: FILE}``; ``depth`` is the suite's
    ``k``, the deepest a ``within`` or a policy's ``k`` may look."""
    if node is None or node.value is None:
        return ()
    if isinstance(node.value, Mapping):
        entries = f.mapping(node, vocab.INVARIANT_FILE_KEYS, "a file of invariants: path")
        path_node = f.require(node, entries, "path", " (a CSV or JSONL file of invariants)")
        path = f.path(path_node, "a CSV or JSONL file of invariants")
        items, reader = _file_entries(f, path_node, path)
        return _entries(reader, items, depth)
    return _entries(
        f, f.sequence(node, f"a list of invariants or {{path: FILE}} ({_ENTRY})"), depth
    )


def _entries(f: Fields, items: tuple[Node, ...], depth: int) -> tuple[InvariantConfig, ...]:
    out: dict[str, tuple[InvariantConfig, Node]] = {}
    for item in items:
        invariant = _entry(f, item, depth)
        if invariant.name in out:
            first = out[invariant.name][1]
            raise f.error(
                item,
                f"each invariant once ({invariant.name} given before, on line {first.line}; "
                "list every doc id of a query in one must_include)",
            )
        out[invariant.name] = (invariant, item)
    return tuple(invariant for invariant, _ in out.values())


def _entry(f: Fields, node: Node, depth: int) -> InvariantConfig:
    keys = dict.fromkeys((*vocab.MUST_INCLUDE_KEYS, *vocab.NO_LOST_HITS_KEYS))
    entries = f.mapping(node, keys, _ENTRY)
    severity: Severity = "warning"
    if "severity" in entries:
        severity = alert_severity(f, entries["severity"])
    if "no_lost_hits" in entries:
        f.mapping(node, vocab.NO_LOST_HITS_KEYS, "a policy: {no_lost_hits: {k}}")
        options = f.mapping(entries["no_lost_hits"], vocab.NO_LOST_HITS_OPTIONS, "k")
        k_node = f.require(entries["no_lost_hits"], options, "k", " (the depth of the policy)")
        return NoLostHits(k=_depth(f, k_node, depth), severity=severity)
    if "query" not in entries and "must_include" not in entries:
        raise f.error(node, _ENTRY)
    f.mapping(node, vocab.MUST_INCLUDE_KEYS, "a must-return pair: query, must_include, within")
    query = f.string(
        f.require(node, entries, "query", " (the id of the query)"),
        "a query id of the eval set (one line)",
        pattern=vocab.TEXT,
    )
    ids_node = f.require(node, entries, "must_include", " (the doc ids the query must return)")
    items = (ids_node,) if isinstance(ids_node.value, str) else f.sequence(ids_node, "doc ids")
    if not items:
        raise f.error(ids_node, "at least one doc id")
    ids: list[str] = []
    for item in items:
        doc = f.string(item, "a doc id (one line)", pattern=vocab.TEXT)
        if doc in ids:
            raise f.error(item, "each doc id once", show=True)
        ids.append(doc)
    within = depth if "within" not in entries else _depth(f, entries["within"], depth)
    return MustInclude(query=query, doc_ids=tuple(ids), within=within, severity=severity)


def _text(text: str, path: str, line: int, source: Path) -> str:
    if "\x00" in text:
        raise ConfigError(source, path, "text without a NUL character", line=line)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(
            source, path, "text of valid Unicode (no lone surrogate)", line=line
        ) from None
    return text


def _depth(f: Fields, node: Node, depth: int) -> int:
    value = f.integer(node, minimum=1)
    if value > depth:
        raise f.error(
            node, f"an integer of at most the suite's k ({depth}, the depth searched)", show=True
        )
    return value


def _file_entries(f: Fields, node: Node, path: Path) -> tuple[tuple[Node, ...], Fields]:
    """Return the entries of an invariants file as nodes, and the readers of that file."""
    suffix = path.suffix.lower()
    if suffix not in vocab.INVARIANT_FILE_SUFFIXES:
        raise f.error(node, "a file ending in .csv or .jsonl", show=True)
    try:
        data = read_bytes_limited(path, MAX_INVARIANT_BYTES)
    except FileNotFoundError:
        raise f.error(node, "an existing CSV or JSONL file", found=str(path)) from None
    except InputError as exc:
        raise f.error(node, exc.expected, found=str(path)) from None
    except OSError as exc:
        raise f.error(node, "a readable file", found=f"{path} ({exc.strerror})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(path, "(file)", f"UTF-8 text ({exc.reason})", line=line) from None
    reader = Fields(str(path), path.parent, check_files=f.check_files)
    rows = _csv_rows(path, text) if suffix == ".csv" else _jsonl_rows(path, text)
    return rows, reader


def _csv_lines(path: Path, text: str) -> Iterator[tuple[int, list[str]]]:
    """Yield each CSV row with the line it ends on; refuse CSV the csv module cannot read."""
    rows = csv.reader(io.StringIO(text, newline=""))
    try:
        for cells in rows:
            yield rows.line_num, cells
    except csv.Error as exc:
        # The csv module refuses a field over its limit (131072 characters); the limit is
        # process-wide, so it is reported rather than raised.
        raise ConfigError(path, "(file)", f"valid CSV ({exc})", line=rows.line_num) from None


def _csv_rows(path: Path, text: str) -> tuple[Node, ...]:
    rows = _csv_lines(path, text)
    _, header = next(rows, (1, None))
    if header is None:
        raise ConfigError(path, "(header)", "a header row: query,must_include,within", line=1)
    columns = [name.strip() for name in header]
    for name in columns:
        if name not in vocab.INVARIANT_CSV_COLUMNS:
            known = ", ".join(vocab.INVARIANT_CSV_COLUMNS)
            raise ConfigError(path, "(header)", f"columns among {known}", line=1, found=name)
    for name in columns:
        if columns.count(name) > 1:
            raise ConfigError(path, "(header)", f"the column {name!r} once", line=1)
    for name in ("query", "must_include"):
        if name not in columns:
            raise ConfigError(path, "(header)", f"the column {name!r}", line=1)
    out: list[Node] = []
    for line, cells in rows:
        if not any(cell.strip() for cell in cells):
            continue
        where = child_path("invariants", len(out))
        if len(cells) != len(columns):
            raise ConfigError(
                path, where, f"{len(columns)} cells, as the header has", line=line, found=len(cells)
            )
        entry: dict[str, Node] = {}
        for name, cell in zip(columns, cells, strict=True):
            cell = cell.strip()
            if not cell and name in ("within", "severity"):
                continue
            at = child_path(where, name)
            if name == "must_include":
                docs = tuple(
                    Node(doc, child_path(at, i), line) for i, doc in enumerate(cell.split())
                )
                entry[name] = Node(docs, at, line)
            elif name == "within" and _INTEGER.fullmatch(cell):
                entry[name] = Node(int(cell), at, line)
            else:
                entry[name] = Node(cell, at, line)
        out.append(Node(entry, where, line))
    return tuple(out)


def _jsonl_rows(path: Path, text: str) -> tuple[Node, ...]:
    out: list[Node] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        where = child_path("invariants", len(out))
        try:
            value = json.loads(raw, parse_int=_json_int, object_pairs_hook=_unique_keys)
        except RecursionError:
            raise ConfigError(
                path, where, f"a JSON object nested at most {_MAX_DEPTH} deep", line=number
            ) from None
        except ValueError as exc:
            reason = getattr(exc, "msg", str(exc))
            raise ConfigError(
                path, where, f"one JSON object per line ({reason})", line=number
            ) from None
        out.append(_node(value, where, number, path))
    return tuple(out)


def _json_int(literal: str) -> int:
    if len(literal.lstrip("-")) > _MAX_DIGITS:
        raise ValueError(f"an integer of at most {_MAX_DIGITS} digits, found {len(literal)}")
    return int(literal)


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise ValueError("each key once")
    return found


def _node(value: object, path: str, line: int, source: Path, depth: int = 0) -> Node:
    """Return a JSON value as a Node tree, every part of it on ``line``; refuse text that is
    not valid Unicode or holds a NUL, and nesting past a few levels."""
    if depth > _MAX_DEPTH:
        raise ConfigError(
            source, path, f"a JSON object nested at most {_MAX_DEPTH} deep", line=line
        )
    if isinstance(value, dict):
        return Node(
            {
                _text(str(key), path, line, source): _node(
                    item, child_path(path, str(key)), line, source, depth + 1
                )
                for key, item in value.items()
            },
            path,
            line,
        )
    if isinstance(value, list):
        return Node(
            tuple(
                _node(item, child_path(path, i), line, source, depth + 1)
                for i, item in enumerate(value)
            ),
            path,
            line,
        )
    if isinstance(value, str):
        return Node(_text(value, path, line, source), path, line)
    scalar: Scalar = (
        value if isinstance(value, str | int | float | bool) or value is None else str(value)
    )
    return Node(scalar, path, line)
