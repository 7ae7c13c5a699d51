"""A small path language to pick doc ids and scores out of a JSON response.

A path is dotted keys with optional list steps::

    results[*].id          every element of "results", then its "id"
    hits.hits[*]._id       Elasticsearch / OpenSearch
    data[0].matches[*].id  the first element of "data", then every match's id
    [*]                    every element of a top-level list
    ids                    a key holding a list

``[n]`` takes element n (negative counts from the end) and ``[*]`` takes every element.
Keys may hold any character except ``.``, ``[`` and ``]``; there is no quoting and no
filtering (this is not JSONPath). A path with ``[*]`` gives one value per element; a path
without one must lead to a list, which is the result.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from monitor.errors import SearchOutputError

_STEP = re.compile(r"([^.\[\]]+)|\[(\*|-?\d+)\]|(\.)")
_ALL = "*"


@dataclass(frozen=True, slots=True)
class JsonPath:
    """A compiled path; :meth:`values` applies it to a parsed JSON document."""

    text: str
    steps: tuple[str | int, ...]

    @classmethod
    def parse(cls, text: str) -> JsonPath:
        """Compile ``text``; raise ValueError naming the fault when it is not a path."""
        if not text or text.startswith(".") or text.endswith(".") or ".." in text:
            raise ValueError(f"path {text!r}: expected dotted keys with [n] or [*] steps")
        steps: list[str | int] = []
        position = 0
        after_dot = True
        while position < len(text):
            match = _STEP.match(text, position)
            if match is None:
                raise ValueError(f"path {text!r}: unexpected {text[position]!r} at {position}")
            key, index, dot = match.groups()
            if key is not None:
                if not after_dot:
                    raise ValueError(f"path {text!r}: expected '.' before {key!r}")
                steps.append(key)
                after_dot = False
            elif index is not None:
                steps.append(_ALL if index == _ALL else int(index))
                after_dot = False
            elif dot is not None:
                after_dot = True
            position = match.end()
        return cls(text, tuple(steps))

    @property
    def collects(self) -> bool:
        """Return whether the path has a ``[*]`` step."""
        return _ALL in self.steps

    def values(self, document: object) -> list[object]:
        """Return the values at this path in ``document``; raise SearchOutputError if absent."""
        current: list[object] = [document]
        for depth, step in enumerate(self.steps):
            nxt: list[object] = []
            for value in current:
                if step == _ALL:
                    nxt.extend(self._list(value, depth))
                elif isinstance(step, int):
                    items = self._list(value, depth)
                    if not -len(items) <= step < len(items):
                        raise self._missing(depth, f"no element [{step}] in a list of {len(items)}")
                    nxt.append(items[step])
                else:
                    if not isinstance(value, dict):
                        raise self._missing(depth, f"no object to take {step!r} from")
                    if step not in value:
                        raise self._missing(depth, f"no key {step!r}")
                    nxt.append(value[step])
            current = nxt
        if self.collects:
            return current
        return self._list(current[0], len(self.steps))

    def _list(self, value: object, depth: int) -> list[object]:
        if not isinstance(value, list):
            raise self._missing(depth, f"a {type(value).__name__} where a list was expected")
        return value

    def _missing(self, depth: int, what: str) -> SearchOutputError:
        where = self._prefix(depth) or "the top level"
        return SearchOutputError(f"path {self.text!r} in the response ({what} at {where})")

    def _prefix(self, depth: int) -> str:
        text = ""
        for step in self.steps[:depth]:
            if step == _ALL:
                text += "[*]"
            elif isinstance(step, int):
                text += f"[{step}]"
            else:
                text += ("." if text else "") + step
        return text
