"""JSONL, JSON and YAML eval sets: one object per query, read with line numbers.

Every format holds the same query object::

    {"id": "q1", "query": "text", "relevant": {"d1": 2} | ["d1", ...], "metadata": {...}}

``relevant`` and ``metadata`` are optional; any other key is an error. JSON and YAML hold
either a list of such objects or ``{"name": ..., "queries": [...]}``.

JSONL has one object per line, so its line numbers are exact (read into columns by orjson
when it is installed: :mod:`monitor.evalset._jsonl_columns`). For JSON and YAML the
readers keep the line of every value down to the grades (:class:`Located`), so an error
points at the line of the bad value, not just at the file.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from monitor.errors import InputError
from monitor.evalset._checks import (
    Invalid,
    KeyPath,
    check_id,
    check_text,
    judgments_from,
    metadata_from,
)
from monitor.records import Query

#: The keys of a query object, in the order the writers put them.
FIELDS = ("id", "query", "relevant", "metadata")
#: The keys of the top-level object of a JSON or YAML eval set.
TOP_FIELDS = ("name", "queries")
# Below this depth values are decoded whole: the checks never need finer lines there, and
# it bounds the recursion on hostile input (deep nesting, recursive YAML aliases).
_TRACKED_DEPTH = 5
_JSON_SPACE = re.compile(r"[ \t\n\r]*")
_TOO_DEEP = "values nested a few levels deep at most (the nesting is too deep to read)"
# An integer literal longer than this is kept as a LongInteger, which every check refuses by
# name: Python refuses to convert more than 4,300 digits, and no grade needs 100.
_MAX_INT_DIGITS = 100


class LongInteger:
    """An integer literal too long to be a grade or a metadata value, kept as its length."""

    __slots__ = ("digits",)

    def __init__(self, digits: int) -> None:
        self.digits = digits

    def __repr__(self) -> str:
        return f"an integer of {self.digits} digits"


def _json_int(literal: str) -> int | LongInteger:
    """Return a JSON integer literal as an int, or as a LongInteger when it is too long."""
    digits = len(literal.lstrip("-"))
    return LongInteger(digits) if digits > _MAX_INT_DIGITS else int(literal)


@dataclass(frozen=True, slots=True)
class Entry:
    """One query read from a file, with the line it starts on."""

    line: int | None
    query: Query


@dataclass(slots=True)
class Located:
    """A decoded document and the 1-based line of each value, keyed by its key path."""

    value: object
    lines: dict[KeyPath, int] = field(default_factory=dict)

    def line_of(self, path: KeyPath) -> int | None:
        """Return the line of the value at ``path``, or of its nearest enclosing value."""
        while path not in self.lines and path:
            path = path[:-1]
        return self.lines.get(path)


def query_from_object(obj: object) -> Query:
    """Return the Query that a decoded query object describes, or raise Invalid."""
    if not isinstance(obj, Mapping):
        raise Invalid("a query object with keys " + ", ".join(FIELDS), obj)
    for key in obj:
        if key not in FIELDS:
            expected = "one of the keys " + ", ".join(FIELDS)
            raise Invalid(expected, key, (key,) if isinstance(key, str) else (), labelled=False)
    for key in ("id", "query"):
        if key not in obj:
            raise Invalid(f"a {key!r} key", None)
    try:
        query_id = check_id(obj["id"])
    except Invalid as error:
        raise error.under("id") from None
    try:
        text = check_text(obj["query"])
    except Invalid as error:
        raise error.under("query") from None
    try:
        judgments = judgments_from(obj.get("relevant"))
    except Invalid as error:
        raise error.under("relevant") from None
    try:
        metadata = metadata_from(obj.get("metadata"))
    except Invalid as error:
        raise error.under("metadata") from None
    return Query(query_id, text, judgments, metadata)


def object_from_query(query: Query) -> dict[str, Any]:
    """Return the query object written for ``query`` (binary judgments as a list)."""
    judgments = dict(query.judgments)
    relevant: list[str] | dict[str, int]
    relevant = list(judgments) if all(g == 1 for g in judgments.values()) else judgments
    obj: dict[str, Any] = {"id": query.id, "query": query.text, "relevant": relevant}
    if query.metadata:
        obj["metadata"] = dict(query.metadata)
    return obj


# --- JSONL ---------------------------------------------------------------------------------


def read_jsonl_lines(text: str, source: str) -> Iterator[Entry]:
    """Yield the queries of a JSONL text through the standard library's reader (what
    :func:`~monitor.evalset._jsonl_columns.read_jsonl` reads a text by when orjson cannot)."""
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line, object_pairs_hook=_unique_keys, parse_int=_json_int)
        except json.JSONDecodeError as error:
            raise InputError(
                source, f"one JSON object per line ({error.msg}: column {error.colno})", line=number
            ) from None
        except Invalid as error:
            raise InputError(source, error.describe(), line=number, found=error.found) from None
        except RecursionError:
            raise InputError(source, _TOO_DEEP, line=number) from None
        try:
            query = query_from_object(obj)
        except Invalid as error:
            raise InputError(source, error.describe(), line=number, found=error.found) from None
        yield Entry(number, query)


def write_jsonl(queries: Sequence[Query]) -> str:
    """Return the JSONL text of ``queries``."""
    return "".join(_dumps(object_from_query(query)) + "\n" for query in queries)


# --- JSON and YAML -------------------------------------------------------------------------


def read_json(text: str, source: str) -> tuple[str | None, list[Entry]]:
    """Return the name (if given) and the queries of a JSON text."""
    try:
        document = _JSONReader(text).document()
    except json.JSONDecodeError as error:
        raise InputError(source, f"valid JSON ({error.msg})", line=error.lineno) from None
    except _DuplicateKey as error:
        raise InputError(source, "keys given once", line=error.line, found=error.key) from None
    except RecursionError:
        raise InputError(source, _TOO_DEEP) from None
    return _read_document(document, source)


def write_json(name: str, queries: Sequence[Query]) -> str:
    """Return the JSON text of an eval set, as ``{"name": ..., "queries": [...]}``."""
    document = {"name": name, "queries": [object_from_query(query) for query in queries]}
    return json.dumps(document, ensure_ascii=False, allow_nan=False, indent=2) + "\n"


def read_yaml(text: str, source: str) -> tuple[str | None, list[Entry]]:
    """Return the name (if given) and the queries of a YAML text."""
    try:
        document = _read_yaml_located(text)
    except yaml.MarkedYAMLError as error:
        problem = _yaml_problem(error)
        raise InputError(source, f"valid YAML ({problem})", line=_yaml_line(error)) from None
    except yaml.YAMLError as error:
        raise InputError(source, f"valid YAML ({error})") from None
    except _DuplicateKey as error:
        raise InputError(source, "keys given once", line=error.line, found=error.key) from None
    except RecursionError:
        raise InputError(source, _TOO_DEEP) from None
    if document is None:
        raise InputError(source, "at least one query (the file is empty)", line=1)
    return _read_document(document, source)


def write_yaml(name: str, queries: Sequence[Query]) -> str:
    """Return the YAML text of an eval set, as ``{name: ..., queries: [...]}``."""
    document = {"name": name, "queries": [object_from_query(query) for query in queries]}
    return yaml.dump(document, Dumper=_Dumper, allow_unicode=True, sort_keys=False, width=100)


class _Dumper(yaml.SafeDumper):
    """A safe dumper that double-quotes strings holding Unicode line breaks.

    PyYAML writes NEL, LS and PS unquoted, and reading them back turns them into spaces or
    folds; the double-quoted style escapes them (``\\N``, ``\\L``, ``\\P``).
    """


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    """Represent ``value`` plainly, or double-quoted when it holds a Unicode line break."""
    style = '"' if any(c in value for c in "\x85\u2028\u2029") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def _read_document(document: Located, source: str) -> tuple[str | None, list[Entry]]:
    """Return the name and the queries of a decoded JSON or YAML document."""
    name, items, prefix = _top_level(document, source)
    entries = []
    for index, item in enumerate(items):
        path = (*prefix, index)
        try:
            entries.append(Entry(document.line_of(path), query_from_object(item)))
        except Invalid as error:
            raise InputError(
                source,
                error.describe(*path),
                line=document.line_of((*path, *error.path)),
                found=error.found,
            ) from None
    return name, entries


def _top_level(document: Located, source: str) -> tuple[str | None, list[object], KeyPath]:
    """Return the name, the query objects and their key path prefix of a document."""
    top = document.value
    if isinstance(top, list):
        return None, top, ()
    if not isinstance(top, dict):
        raise InputError(
            source,
            "a list of query objects or an object with 'name' and 'queries'",
            line=document.line_of(()),
            found=top,
        )
    for key in top:
        if key not in TOP_FIELDS:
            raise InputError(
                source,
                "one of the top-level keys " + ", ".join(TOP_FIELDS),
                line=document.line_of((key,)),
                found=key,
            )
    name = top.get("name")
    if name is not None and not isinstance(name, str):
        raise InputError(
            source, "a name that is a string", line=document.line_of(("name",)), found=name
        )
    items = top.get("queries")
    if not isinstance(items, list):
        raise InputError(
            source,
            "a 'queries' key holding a list of query objects",
            line=document.line_of(("queries",)),
            found=items,
        )
    return name, items, ("queries",)


# --- decoding with line numbers ------------------------------------------------------------


class _DuplicateKey(Exception):
    """A mapping gives the same key twice (JSON and YAML would keep only the last)."""

    def __init__(self, key: object, line: int | None) -> None:
        super().__init__(key)
        self.key = key
        self.line = line


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """Return the pairs as a dict; raise Invalid when a key repeats."""
    obj = dict(pairs)  # in C; only a dict shorter than its pairs has a repeated key
    if len(obj) == len(pairs):
        return obj
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise Invalid("keys given once", key)
        seen.add(key)
    return obj  # pragma: no cover - a shorter dict always repeats a key


class _JSONReader:
    """Decode JSON, noting the line of every value down to :data:`_TRACKED_DEPTH`.

    Containers are walked here; scalars and deeper values go to the standard decoder
    (``raw_decode``), so what is accepted is exactly what :func:`json.loads` accepts.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.decoder = json.JSONDecoder(object_pairs_hook=_unique_keys, parse_int=_json_int)
        self.newlines = [match.start() for match in re.finditer("\n", text)]
        self.lines: dict[KeyPath, int] = {}

    def document(self) -> Located:
        """Return the whole text decoded; raise JSONDecodeError on a syntax error."""
        if not self.text.strip():
            raise json.JSONDecodeError("the file is empty", self.text, 0)
        value, end = self._value(self._skip(0), ())
        end = self._skip(end)
        if end != len(self.text):
            raise json.JSONDecodeError("Extra data", self.text, end)
        return Located(value, self.lines)

    def _line(self, position: int) -> int:
        return bisect.bisect_left(self.newlines, position) + 1

    def _skip(self, position: int) -> int:
        match = _JSON_SPACE.match(self.text, position)
        return position if match is None else match.end()

    def _expect(self, position: int, characters: str) -> str:
        found = self.text[position : position + 1]
        if not found or found not in characters:
            wanted = " or ".join(repr(c) for c in characters)
            raise json.JSONDecodeError(f"Expecting {wanted}", self.text, position)
        return found

    def _value(self, position: int, path: KeyPath) -> tuple[object, int]:
        self.lines[path] = self._line(position)
        opening = self.text[position : position + 1]
        if len(path) >= _TRACKED_DEPTH or opening not in ("{", "["):
            try:
                return self.decoder.raw_decode(self.text, position)
            except Invalid as error:
                raise _DuplicateKey(error.found, self._line(position)) from None
        if opening == "[":
            return self._array(position, path)
        return self._object(position, path)

    def _array(self, position: int, path: KeyPath) -> tuple[list[object], int]:
        items: list[object] = []
        position = self._skip(position + 1)
        if self.text.startswith("]", position):
            return items, position + 1
        while True:
            item, position = self._value(position, (*path, len(items)))
            items.append(item)
            position = self._skip(position)
            if self._expect(position, ",]") == "]":
                return items, position + 1
            position = self._skip(position + 1)

    def _object(self, position: int, path: KeyPath) -> tuple[dict[str, object], int]:
        obj: dict[str, object] = {}
        position = self._skip(position + 1)
        if self.text.startswith("}", position):
            return obj, position + 1
        while True:
            self._expect(position, '"')
            key_line = self._line(position)
            key, position = self.decoder.raw_decode(self.text, position)
            if key in obj:
                raise _DuplicateKey(key, key_line)
            position = self._skip(position)
            self._expect(position, ":")
            obj[key], position = self._value(self._skip(position + 1), (*path, key))
            position = self._skip(position)
            if self._expect(position, ",}") == "}":
                return obj, position + 1
            position = self._skip(position + 1)


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, with integers too long to convert kept as LongInteger."""


def _yaml_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> object:
    """Construct a YAML integer, or a LongInteger when its literal is too long."""
    literal = str(node.value)
    if len(literal) > _MAX_INT_DIGITS:
        return LongInteger(len(literal.lstrip("+-")))
    return loader.construct_yaml_int(node)


_Loader.add_constructor("tag:yaml.org,2002:int", _yaml_int)


def _read_yaml_located(text: str) -> Located | None:
    """Return the single YAML document in ``text`` with the line of each value."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        lines: dict[KeyPath, int] = {}
        return Located(_construct(loader, node, (), lines), lines)
    finally:
        loader.dispose()


def _construct(
    loader: yaml.SafeLoader, node: yaml.Node, path: KeyPath, lines: dict[KeyPath, int]
) -> object:
    """Return the value of ``node``, noting lines of plain mappings and lists inside it."""
    lines[path] = node.start_mark.line + 1
    if len(path) >= _TRACKED_DEPTH:
        return loader.construct_object(node, deep=True)
    if isinstance(node, yaml.MappingNode) and node.tag == "tag:yaml.org,2002:map":
        written = sum(key.tag != "tag:yaml.org,2002:merge" for key, _ in node.value)
        loader.flatten_mapping(node)  # put "<<" merged pairs first, as the constructor does
        merged = len(node.value) - written
        obj: dict[object, object] = {}
        seen: set[object] = set()
        for index, (key_node, value_node) in enumerate(node.value):
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, str | int | float | bool) and key is not None:
                raise yaml.constructor.ConstructorError(
                    None, None, "a mapping key must be a scalar", key_node.start_mark
                )
            if index >= merged:  # a written key may override a merged one, not a written one
                if key in seen:
                    raise _DuplicateKey(key, key_node.start_mark.line + 1)
                seen.add(key)
            obj[key] = _construct(loader, value_node, (*path, _part(key)), lines)
        return obj
    if isinstance(node, yaml.SequenceNode) and node.tag == "tag:yaml.org,2002:seq":
        return [
            _construct(loader, item, (*path, index), lines) for index, item in enumerate(node.value)
        ]
    return loader.construct_object(node, deep=True)


def _yaml_problem(error: yaml.MarkedYAMLError) -> str:
    """Return what the YAML parser found wrong, with its context and where that began."""
    problem = error.problem or "a parse error"
    if error.context and error.context_mark is not None:
        return f"{error.context} on line {error.context_mark.line + 1}: {problem}"
    return f"{error.context}: {problem}" if error.context else problem


def _yaml_line(error: yaml.MarkedYAMLError) -> int | None:
    """Return the 1-based line of a YAML error."""
    mark = error.problem_mark or error.context_mark
    return None if mark is None else mark.line + 1


def _part(key: object) -> str | int:
    """Return a mapping key usable in a key path."""
    return key if isinstance(key, str | int) else repr(key)


def _dumps(obj: object) -> str:
    """Return ``obj`` as one line of JSON (UTF-8 text, no NaN)."""
    return json.dumps(obj, ensure_ascii=False, allow_nan=False)
