"""Plug-in kinds: built-in aliases and third-party entry points, loaded one way.

A plug-in point (search functions, notifiers) declares a :class:`PluginKinds`: its
entry-point group and a table of built-in aliases, each a plain ``"module:attr"`` string as
an entry point's value is. Built-ins are loaded as entry points of that table, third parties
as the entry points installed in the group, so both go through
:meth:`importlib.metadata.EntryPoint.load` (as APScheduler 3.x loads its own triggers and
third-party ones). Nothing is imported until a kind is asked for, so reading a config that
names kinds imports no plug-in.

A kind is resolved as follows: a built-in alias wins over an entry point of the same name;
``entrypoint:<name>`` looks only at entry points; any other name is an installed entry point
or unknown.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Final, TypeAlias

#: How a config names a third-party kind explicitly: ``entrypoint:<name>``.
ENTRYPOINT_PREFIX: Final = "entrypoint:"
#: ``entrypoint:<name>`` as the config accepts it.
ENTRYPOINT: Final = re.compile(r"entrypoint:[A-Za-z0-9_][A-Za-z0-9_.-]*")

#: Returns the entry points installed in a group.
Discover: TypeAlias = Callable[[str], Iterable[EntryPoint]]
#: Builds the plug-in point's error for an unknown kind from the kind and the known ones.
UnknownKind: TypeAlias = Callable[[str, tuple[str, ...]], Exception]
#: Builds the plug-in point's error for a kind that does not load from the kind and why.
BrokenKind: TypeAlias = Callable[[str, str], Exception]


def installed(group: str) -> tuple[EntryPoint, ...]:
    """Return the entry points installed in ``group``."""
    return tuple(entry_points(group=group))


@dataclass(frozen=True)
class Plugin:
    """A loaded kind: the kind as asked for, its entry point, its target, whether built in."""

    kind: str
    point: EntryPoint
    target: Callable[..., object]
    builtin: bool

    @property
    def name(self) -> str:
        """Return the kind's name without the ``entrypoint:`` prefix."""
        return self.point.name


@dataclass(frozen=True)
class PluginKinds:
    """The kinds of one plug-in point: built-in aliases and an entry-point group.

    ``builtins`` maps each alias to ``"module:attr"``; ``unknown`` and ``broken`` build the
    plug-in point's own errors; ``discover`` lists installed entry points (swap it in tests).
    """

    group: str
    builtins: Mapping[str, str]
    unknown: UnknownKind
    broken: BrokenKind
    discover: Discover = installed

    def builtin_kinds(self) -> tuple[str, ...]:
        """Return the built-in aliases, sorted; reads no package metadata."""
        return tuple(sorted(self.builtins))

    def entry_points(self) -> dict[str, EntryPoint]:
        """Return the installed entry points of the group by name."""
        return {point.name: point for point in self.discover(self.group)}

    def known_kinds(self) -> tuple[str, ...]:
        """Return the built-in and installed kinds, sorted."""
        return tuple(sorted(set(self.builtins) | set(self.entry_points())))

    def find(self, kind: str) -> tuple[EntryPoint, bool] | None:
        """Return the entry point ``kind`` resolves to and whether it is built in; else None."""
        name = kind.removeprefix(ENTRYPOINT_PREFIX)
        if name == kind and kind in self.builtins:
            return EntryPoint(kind, self.builtins[kind], self.group), True
        point = self.entry_points().get(name)
        return None if point is None else (point, False)

    def load(self, kind: str) -> Plugin:
        """Return the plug-in ``kind`` names, imported.

        Raise ``unknown`` (with the known kinds) for a kind that resolves to nothing and
        ``broken`` for one whose target cannot be imported or is not callable.
        """
        found = self.find(kind)
        if found is None:
            raise self.unknown(kind, self.known_kinds())
        point, builtin = found
        try:
            target = point.load()
        except Exception as exc:
            reason = f"cannot load entry point {point.value!r}: {type(exc).__name__}: {exc}"
            raise self.broken(kind, reason) from exc
        if not callable(target):
            raise self.broken(kind, f"entry point {point.value!r} is not callable")
        return Plugin(kind=kind, point=point, target=target, builtin=builtin)
