"""Indented JSON written a piece at a time, for reports of a million rows (``run --format json``).

The standard library's indented encoder runs in Python, a call per value, and it cannot take
:class:`~monitor.records.DictRows` without listing every row first. Here only the containers
that hold other containers are walked in Python; a container of scalars is written by one
``json.dumps`` call, and a list of flat rows of one key order (a report's row per query) a
block of rows per call, each row on a line of its own. The document reads back as the one
``json.dumps(value, indent=2)`` writes (NaN and the infinities written as it writes them);
only the whitespace inside those rows differs."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from itertools import chain
from typing import cast

from monitor.records import DictRows

#: The types ``json.dumps`` writes as one token each: a container of these alone has no
#: container inside it.
_SCALARS = frozenset((str, int, float, bool, type(None)))

#: How many items of a list (rows of a table) are written at once: bounds the rows built and
#: the text held at a time.
_BLOCK = 4096

#: Between the items of a container written by one call: a raw newline, which ``json.dumps``
#: never writes inside a string (it escapes control characters), so each one is a separator.
_LINES = ("\n", ": ")


def json_pieces(value: object) -> Iterator[str]:
    """Yield the pieces of ``value`` as indented JSON (two spaces), lists of rows included.

    Rows built when read (:class:`~monitor.records.DictRows`) are written as the list they
    stand for, a block at a time: never all held at once. A value ``json.dumps`` refuses is
    refused with its error, once the pieces before it are yielded.
    """
    return _pieces(value, "\n")


def _pieces(value: object, newline: str) -> Iterator[str]:
    """Yield ``value`` written at the indentation that ``newline`` ends with."""
    if isinstance(value, dict):
        yield from _object(value, newline)
    elif isinstance(value, list | tuple | DictRows):
        yield from _array(value, newline)
    else:
        yield json.dumps(value)


def _object(items: dict[object, object], newline: str) -> Iterator[str]:
    """Yield a dict, a key a line: by one call when its values are scalars."""
    if not items:
        yield "{}"
        return
    inner = newline + "  "
    if set(map(type, items.values())) <= _SCALARS:
        text = json.dumps(items, separators=_LINES)[1:-1]
        yield "{" + inner + text.replace("\n", "," + inner) + newline + "}"
        return
    opening = "{"
    for key, item in items.items():
        yield opening + inner + _label(key) + ": "
        yield from _pieces(item, inner)
        opening = ","
    yield newline + "}"


def _array(items: Sequence[object], newline: str) -> Iterator[str]:
    """Yield a list, an item a line, a block of items at a time."""
    if not items:
        yield "[]"
        return
    inner = newline + "  "
    between = "," + inner
    yield "[" + inner
    for start in range(0, len(items), _BLOCK):
        if start:
            yield between
        block = items[start : start + _BLOCK]
        text = _flat_block(block, between)
        if text is not None:
            yield text
            continue
        for i, item in enumerate(block):
            if i:
                yield between
            yield from _pieces(item, inner)
    yield newline + "]"


def _flat_block(block: Sequence[object], between: str) -> str | None:
    """Return ``block`` written by one call, ``between`` its items, if its items are scalars
    or rows (dicts of scalars, string keys in one order, a row a line); None if they are not."""
    kinds = set(map(type, block))
    if kinds <= _SCALARS:
        return json.dumps(block, separators=_LINES)[1:-1].replace("\n", between)
    if kinds != {dict}:
        return None
    rows = cast("Sequence[dict[object, object]]", block)  # kinds is {dict}
    keys = tuple(rows[0])
    # Keys of strings alone: 1 and True are one key to a set, not to json.dumps.
    if not keys or set(map(type, keys)) != {str} or set(map(tuple, rows)) != {keys}:
        return None
    values = list(chain.from_iterable(map(dict.values, rows)))
    if not set(map(type, values)) <= _SCALARS:
        return None
    # The values alone, a token each, with the keys laid between them: a row's keys are
    # written once, not once a row.
    tokens = json.dumps(values, separators=_LINES)[1:-1].split("\n")
    labels = [json.dumps(key) + ": " for key in keys]
    after = [", " + label for label in labels[1:]]
    after.append("}" + between + "{" + labels[0])
    laid = [""] * (2 * len(tokens))
    laid[0::2] = tokens
    laid[1::2] = after * len(rows)
    laid[-1] = "}"
    return "{" + labels[0] + "".join(laid)


def _label(key: object) -> str:
    """Return ``key`` as ``json.dumps`` writes a dict's key (numbers, booleans and None as
    strings); refuse any other key as it does."""
    if type(key) is str:
        return json.dumps(key)
    return json.dumps({key: None})[1 : -len(": null}")]
