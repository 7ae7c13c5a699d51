"""Build a search function from a kind and its options.

Built-in kinds are the aliases of :data:`BUILTINS` (``python``, ``http``, ``replay`` and
``interleave``); third-party packages add kinds through the entry-point group
``retrieval_monitor.search``, each entry point naming a :data:`SearchBuilder`
(``options -> search function``)::

    [project.entry-points."retrieval_monitor.search"]
    qdrant = "my_package.monitor_plugin:build"

Both are loaded the same way (:mod:`monitor.plugins`). A kind may also be written
``entrypoint:<name>`` (as the config file spells third-party kinds): that form looks only at
entry points. Otherwise a built-in kind wins over an entry point of the same name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final, TypeAlias, cast

from monitor.errors import SearchSetupError, UnknownSearchKindError
from monitor.plugins import PluginKinds
from monitor.search.base import Search

#: Builds a search function from its options; raises SearchSetupError when it cannot.
SearchBuilder: TypeAlias = Callable[[Mapping[str, object]], Search]

#: The entry-point group third-party search kinds register under.
ENTRY_POINT_GROUP: Final = "retrieval_monitor.search"

#: The built-in search kinds, the one list of them (the config reads it): alias to
#: ``module:attr``. Modules are imported only when their kind is asked for: httpx stays out
#: of a run that replays a file.
BUILTINS: Final[Mapping[str, str]] = {
    "http": "monitor.search.http:build",
    "interleave": "monitor.search.interleave:build",
    "python": "monitor.search.python:build",
    "replay": "monitor.search.replay:build",
}


def _broken(kind: str, reason: str) -> SearchSetupError:
    return SearchSetupError(repr(kind), reason)


#: The search kinds: :data:`BUILTINS` and the entry points of :data:`ENTRY_POINT_GROUP`.
KINDS: Final = PluginKinds(ENTRY_POINT_GROUP, BUILTINS, UnknownSearchKindError, _broken)


def build_search(kind: str, options: Mapping[str, object]) -> Search:
    """Return the search function of ``kind`` built from ``options``.

    Raise UnknownSearchKindError (naming the known kinds) for an unknown kind, and
    SearchSetupError when the plug-in cannot be built.
    """
    return builder(kind)(options)


def builder(kind: str) -> SearchBuilder:
    """Return the builder registered for ``kind``."""
    plugin = KINDS.load(kind)
    if plugin.builtin:
        return cast(SearchBuilder, plugin.target)
    return _guarded(plugin.name, plugin.target)


def known_kinds() -> tuple[str, ...]:
    """Return the built-in and installed search kinds, sorted."""
    return KINDS.known_kinds()


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
