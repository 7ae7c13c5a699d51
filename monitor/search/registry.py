"""Build a search function from a kind and its options.

Built-in kinds are ``python``, ``http`` and ``replay``; third-party packages add kinds
through the entry-point group ``retrieval_monitor.search``, each entry point naming a
:data:`SearchBuilder` (``options -> search function``)::

    [project.entry-points."retrieval_monitor.search"]
    qdrant = "my_package.monitor_plugin:build"

A kind may also be written ``entrypoint:<name>`` (as the config file spells third-party
kinds): that form looks only at entry points. Otherwise a built-in kind wins over an entry
point of the same name.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import TypeAlias, cast

from monitor.errors import SearchSetupError, UnknownSearchKindError
from monitor.search.base import Search

#: Builds a search function from its options; raises SearchSetupError when it cannot.
SearchBuilder: TypeAlias = Callable[[Mapping[str, object]], Search]

#: The entry-point group third-party search kinds register under.
ENTRY_POINT_GROUP = "retrieval_monitor.search"

_ENTRYPOINT_PREFIX = "entrypoint:"

# Modules are imported only when their kind is asked for: httpx stays out of a run that
# replays a file.
_BUILTINS: dict[str, str] = {
    "http": "monitor.search.http",
    "python": "monitor.search.python",
    "replay": "monitor.search.replay",
}


def build_search(kind: str, options: Mapping[str, object]) -> Search:
    """Return the search function of ``kind`` built from ``options``.

    Raise UnknownSearchKindError (naming the known kinds) for an unknown kind, and
    SearchSetupError when the plug-in cannot be built.
    """
    return builder(kind)(options)


def builder(kind: str) -> SearchBuilder:
    """Return the builder registered for ``kind``."""
    name = kind.removeprefix(_ENTRYPOINT_PREFIX)
    if name == kind and kind in _BUILTINS:
        module = importlib.import_module(_BUILTINS[kind])
        return cast(SearchBuilder, module.build)
    plugins = _entry_points()
    if name not in plugins:
        raise UnknownSearchKindError(kind, known_kinds())
    kind = name
    try:
        loaded = plugins[kind].load()
    except Exception as exc:
        raise SearchSetupError(
            repr(kind), f"cannot load entry point {plugins[kind].value!r}: {exc}"
        ) from exc
    if not callable(loaded):
        raise SearchSetupError(repr(kind), f"entry point {plugins[kind].value!r} is not callable")
    return _guarded(kind, loaded)


def known_kinds() -> tuple[str, ...]:
    """Return the built-in and installed search kinds, sorted."""
    return tuple(sorted(set(_BUILTINS) | set(_entry_points())))


def _entry_points() -> dict[str, EntryPoint]:
    return {point.name: point for point in entry_points(group=ENTRY_POINT_GROUP)}


def _guarded(kind: str, build: Callable[[Mapping[str, object]], object]) -> SearchBuilder:
    """Wrap a third-party builder so that its failures become SearchSetupError."""

    def build_checked(options: Mapping[str, object]) -> Search:
        try:
            search = build(options)
        except SearchSetupError:
            raise
        except Exception as exc:
            raise SearchSetupError(repr(kind), f"{type(exc).__name__}: {exc}") from exc
        if not callable(search):
            raise SearchSetupError(
                repr(kind), f"builder returned a {type(search).__name__}, not a search function"
            )
        return cast(Search, search)

    return build_checked
