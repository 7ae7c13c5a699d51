"""The metric definitions page (``/definitions``): every measure the engine offers, read
from the docstrings of the metric modules that compute it, so the page and the code have
one owner. Each measure has an anchor (``/definitions#bpref``) the simulator links to.
"""

from __future__ import annotations

import functools
import inspect
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from markupsafe import Markup

#: Where a measure's definition is shown.
PAGE = "/definitions"


@dataclass(frozen=True, slots=True)
class Definition:
    """One measure: its name, whether it takes ``@k``, and what it returns."""

    measure: str
    cutoff: str  # "required", "optional" or "none"
    summary: str

    @property
    def href(self) -> str:
        """Return the link to this definition."""
        return href(self.measure)


@dataclass(frozen=True, slots=True)
class Family:
    """The measures one metric module computes, with that module's account of them."""

    name: str
    text: str
    measures: tuple[Definition, ...]


def href(measure: str) -> str:
    """Return the link to the definition of ``measure``."""
    return f"{PAGE}#{measure}"


def summary(measure: str) -> str:
    """Return what ``measure`` returns, in one line (its function's docstring)."""
    for family in families():
        for definition in family.measures:
            if definition.measure == measure:
                return definition.summary
    return ""


def as_html(text: str) -> Markup:
    """Return a docstring as the page shows it: every character escaped, each literal
    (between double backticks) set in ``<code>``, and a paragraph's closing ``::`` (reST's
    "a literal block follows") read as one colon. Text with an unpaired double backtick
    is only escaped."""
    from markupsafe import Markup, escape

    parts = text.split("``")
    if len(parts) % 2 == 0:
        return escape(text)
    out = Markup("")
    for index, part in enumerate(parts):
        if index % 2:
            out += Markup("<code>%s</code>") % part
        else:
            out += escape(re.sub(r"::$", ":", part, flags=re.MULTILINE))
    return out


@functools.cache
def families() -> tuple[Family, ...]:
    """Return the metric modules in the engine's order, each with its measures."""
    from monitor.metrics.engine import FUNCTIONS
    from monitor.metrics.spec import MEASURES

    grouped: dict[str, tuple[str, list[Definition]]] = {}
    for measure, function in FUNCTIONS.items():
        base = _unwrapped(function)
        module = inspect.getmodule(base)
        name = module.__name__ if module is not None else "monitor.metrics"
        text = inspect.cleandoc(module.__doc__ or "") if module is not None else ""
        definition = Definition(measure, MEASURES[measure].value, _summary(function, base))
        grouped.setdefault(name, (text, []))[1].append(definition)
    return tuple(
        Family(name.rsplit(".", 1)[-1].replace("_", " "), text, tuple(found))
        for name, (text, found) in grouped.items()
    )


def _unwrapped(function: Any) -> Any:
    return function.func if isinstance(function, functools.partial) else function


def _summary(function: Any, base: Any) -> str:
    # The first line of the function's docstring, without its imperative "Return".
    line = (inspect.getdoc(base) or "").split("\n", 1)[0].removeprefix("Return ")
    if isinstance(function, functools.partial) and "persistence" in function.keywords:
        head = line.split(" with the given persistence", 1)[0]
        line = f"{head} with persistence p = {function.keywords['persistence']}."
    return line
