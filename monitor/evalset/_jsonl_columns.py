"""JSONL eval sets read by orjson into columns, a block of lines at a time, when orjson is
installed and every line is a well-formed query; else line by line by the standard reader
(:func:`monitor.evalset._documents.read_jsonl_lines`), so the errors are the same either way.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from typing import Any

import numpy as np

from monitor.evalset._checks import GRADE_MAX, GRADE_MIN
from monitor.evalset._documents import FIELDS, Entry, read_jsonl_lines
from monitor.evalset.columns import EvalColumns
from monitor.records import MetaValue
from monitor.texts import layout_of

_FIELD_SET = frozenset(FIELDS)
#: The types of a metadata value as orjson decodes them.
_SCALARS = frozenset((str, int, float, bool, type(None)))
#: A string's closing quote before a colon: how every key of a JSON object ends.
_KEY_END = re.compile(r'"[ \t\r]*:')
_SPACED_QUOTE = re.compile(r'"[ \t\r]')
# How much text the orjson reader decodes and checks at once: a few thousand lines.
_BLOCK_CHARS = 1 << 20
# orjson reads an integer literal beyond 64 bits as a float at least this large.
_INT64_BOUND = 2.0**63


@dataclass(frozen=True, slots=True)
class Columns:
    """The queries of a file read whole, in file order, and the line each starts on."""

    queries: EvalColumns
    lines: tuple[int | None, ...]


def read_jsonl(text: str, source: str) -> Columns | Iterator[Entry]:
    """Return the queries of a JSONL text, one object per non-blank line.

    With orjson installed, a text of well-formed queries is read by :func:`_quick_jsonl`
    into columns; any fault sends the whole text through :func:`read_jsonl_lines`, which yields
    one entry at a time, so every error is the same, and on the same line, with orjson or
    without.
    """
    quick = _quick_jsonl(text)
    return read_jsonl_lines(text, source) if quick is None else quick


def _quick_jsonl(text: str) -> Columns | None:
    """Return the queries of a JSONL text parsed by orjson, or None for :func:`read_jsonl_lines`
    to read it: orjson is not installed, or a line is not a well-formed query.

    orjson refuses whatever the standard reader would refuse (NaN, lone surrogates), but
    keeps the last of a repeated key and reads an integer beyond 64 bits as a float. So the
    text must hold exactly one key-ending quote (a ``"`` then ``:``) per key decoded: each
    key written, a repeated one too, ends with one, and a string may only add more; and a
    float as large as 2**63 may have been written as an integer, which the standard reader
    keeps.

    Each check runs over a whole column (every id, every grade, ...) rather than query by
    query, for a block of lines at a time: a set of a million queries is checked in a few
    passes in C, and only one block's lines and decoded objects are held beside the queries
    (the whole file's would double the peak memory of the load).
    """
    try:
        import orjson
    except ImportError:  # optional: the standard reader reads every file too
        return None
    if "\\u0000" in text:  # a NUL, refused in an id by the standard reader's checks
        return None
    parts: list[EvalColumns] = []
    numbers: list[int] = []
    keys = 0
    start, first = 0, 1  # where the block starts in the text, and its first line's number
    while start < len(text):
        end = text.find("\n", start + _BLOCK_CHARS)
        end = len(text) if end < 0 else end
        lines = text[start:end].split("\n")
        written: list[str] = lines
        at: Iterable[int] = range(first, first + len(lines))
        if "" in lines or any(map(str.isspace, lines)):  # blank lines, the last one at least
            pairs = [(number, line) for number, line in enumerate(lines, first) if line.strip()]
            written, at = [line for _, line in pairs], [number for number, _ in pairs]
        block = _quick_block(written, orjson.loads, orjson.dumps)
        if block is None:
            return None
        parts.append(block[0])
        keys += block[1]
        numbers += at
        start, first = end + 1, first + len(lines)
    if _key_ends(text) != keys:
        return None
    return Columns(EvalColumns.concatenate(parts), tuple(numbers))


def _quick_block(
    lines: list[str], loads: Callable[[str], Any], dumps: Callable[[Any], bytes]
) -> tuple[EvalColumns, int] | None:
    """Return the queries of non-blank JSONL lines and how many keys they decode to, or None
    unless every line is a well-formed query (see :func:`_quick_jsonl`).

    ``dumps`` writes a decoded value back as JSON (``orjson.dumps``): queries whose metadata
    is written alike share one metadata dict.
    """
    try:
        objs = list(map(loads, lines))
    except ValueError:  # orjson.JSONDecodeError is one
        return None
    if set(map(type, objs)) - {dict} or not all(map(_FIELD_SET.issuperset, objs)):
        return None
    ids = [obj.get("id") for obj in objs]
    texts = [obj.get("query") for obj in objs]
    if set(map(type, ids)) - {str} or "" in ids or set(map(type, texts)) - {str}:
        return None
    judgments = _quick_judgments([obj.get("relevant") for obj in objs])
    metadata = _quick_metadata([obj.get("metadata") for obj in objs], dumps)
    if judgments is None or metadata is None:
        return None
    listed, graded = judgments
    keys = sum(map(len, objs)) + sum(map(len, metadata)) + sum(map(len, graded))
    return _block_columns(ids, texts, listed, metadata), keys


def _block_columns(
    ids: list[str],
    texts: list[str],
    judgments: list[dict[str, int]],
    metadata: list[dict[str, MetaValue]],
) -> EvalColumns:
    """Return a block's checked queries as columns: its judgments' doc ids end to end as
    bytes, the decoded dicts let go with the block."""
    docs = list(chain.from_iterable(judgments))
    lengths, data = layout_of(docs)
    grades = list(chain.from_iterable(map(dict.values, judgments)))
    return EvalColumns(
        tuple(ids),
        tuple(texts),
        tuple(metadata),
        np.fromiter(map(len, judgments), dtype=np.int64, count=len(judgments)),
        lengths.astype(np.int64),
        data,
        np.array(grades, dtype=np.int64),
    )


def _shared(
    metadata: list[dict[str, MetaValue]], keys: Sequence[Hashable]
) -> list[dict[str, MetaValue]]:
    """Return ``metadata`` with the dicts of one key (``keys[i]`` is ``metadata[i]``'s)
    replaced by the first of them.

    A suite's metadata is mostly a few categories repeated (``{"kind": "howto"}``): one dict
    for each distinct mapping instead of one per query saves a dict and its strings per
    query. Each is frozen behind a read-only view, so no query can change another's.
    """
    first: dict[Hashable, dict[str, MetaValue]] = {}
    return list(map(first.setdefault, keys, metadata))  # one hash of each key


def _quick_judgments(
    values: list[Any],
) -> tuple[list[dict[str, int]], list[dict[str, int]]] | None:
    """Return each query's judgments and the ones written as objects, from the decoded
    ``relevant`` values, or None unless every one is well-formed (or absent)."""
    kinds = set(map(type, values))
    if kinds == {dict}:  # the common case: every query graded, read in C
        graded: list[dict[str, int]] = values  # orjson's own dicts: frozen as they are
        judgments = graded
    elif kinds <= {dict, list, type(None)}:
        graded = [value for value in values if type(value) is dict]
        judgments = []
        empty: dict[str, int] = {}
        for value in values:
            if type(value) is list:
                try:
                    listed = dict.fromkeys(value, 1)
                except TypeError:  # an unhashable item: the standard reader names it
                    return None
                if len(listed) != len(value) or not set(map(type, listed)) <= {str}:
                    return None
                judgments.append(listed)
            else:
                judgments.append(empty if value is None else value)
    else:
        return None
    if any(map(dict.__contains__, judgments, repeat(""))):
        return None
    grades = list(chain.from_iterable(map(dict.values, graded)))
    if grades and (
        set(map(type, grades)) != {int} or min(grades) < GRADE_MIN or max(grades) > GRADE_MAX
    ):
        return None
    return judgments, graded


def _quick_metadata(
    values: list[Any], dumps: Callable[[Any], bytes]
) -> list[dict[str, MetaValue]] | None:
    """Return each query's metadata from the decoded ``metadata`` values, or None unless
    every one is well-formed (or absent).

    Queries whose metadata is equal, value types included, share one dict (see
    :func:`_shared`). Strings and None are equal only to their own type, so their items
    are the key; a number's is its JSON text (``dumps``), which tells ``1``, ``1.0`` and
    ``true`` apart where the items would not (equal, and of one hash).
    """
    empty: dict[str, MetaValue] = {}
    kinds = set(map(type, values))
    if not kinds <= {dict, type(None)}:
        return None
    metadata: list[dict[str, MetaValue]]
    metadata = [empty if value is None else value for value in values]
    if any(map(dict.__contains__, metadata, repeat(""))):
        return None
    items = list(chain.from_iterable(map(dict.values, metadata)))
    scalars = set(map(type, items))
    if not scalars <= _SCALARS:
        return None
    if float in scalars:
        floats = [item for item in items if type(item) is float]
        if not all(map(math.isfinite, floats)) or max(map(abs, floats)) >= _INT64_BOUND:
            return None
    if scalars <= _TEXTS:
        return _shared(metadata, list(map(tuple, map(dict.items, metadata))))
    return _shared(metadata, list(map(dumps, metadata)))


#: The metadata values whose items tell equal mappings apart exactly.
_TEXTS = frozenset((str, type(None)))


def _key_ends(text: str) -> int:
    """Return how many key-ending quotes (``"`` then ``:``, JSON spaces between) ``text`` has."""
    if _SPACED_QUOTE.search(text):  # one pass, where three substring tests took two
        return len(_KEY_END.findall(text))
    return text.count('":')  # in C, and the same count when no quote is followed by a space
