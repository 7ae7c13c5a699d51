"""Embedders: what turns query and passage texts into vectors for the vector search kinds.

An embedder is built from an ``embedding`` mapping by its ``kind``: ``onnx`` (the default: the
packaged all-MiniLM-L6-v2, or a model file the user names; :mod:`monitor.embedding.onnx`) or
``http`` (an OpenAI-compatible ``/v1/embeddings`` endpoint; :mod:`monitor.embedding.http`).
Third-party packages add kinds through the entry-point group
``retrieval_monitor.embedding``, each naming an :data:`EmbedderBuilder` (``options ->
embedder``); both are loaded as :mod:`monitor.plugins` loads every plug-in kind, and nothing
is imported until a kind is asked for. :mod:`monitor.embedding.cache` keeps the vectors of
texts already embedded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final, TypeAlias, cast

from monitor.embedding.base import INSTALL, Embedder, Vectors, unit_rows
from monitor.errors import EmbedderSetupError, UnknownEmbedderKindError
from monitor.plugins import PluginKinds

#: Builds an embedder from its options; raises EmbedderSetupError when it cannot.
EmbedderBuilder: TypeAlias = Callable[[Mapping[str, object]], Embedder]

#: The entry-point group third-party embedding kinds register under.
ENTRY_POINT_GROUP: Final = "retrieval_monitor.embedding"
#: The kind an ``embedding`` mapping without ``kind`` is.
DEFAULT_KIND: Final = "onnx"

#: The built-in embedding kinds: alias to ``module:attr``.
BUILTINS: Final[Mapping[str, str]] = {
    "http": "monitor.embedding.http:build",
    "onnx": "monitor.embedding.onnx:build",
}


def _broken(kind: str, reason: str) -> EmbedderSetupError:
    return EmbedderSetupError(repr(kind), reason)


#: The embedding kinds: :data:`BUILTINS` and the entry points of :data:`ENTRY_POINT_GROUP`.
KINDS: Final = PluginKinds(ENTRY_POINT_GROUP, BUILTINS, UnknownEmbedderKindError, _broken)


def open_embedder(options: Mapping[str, object]) -> Embedder:
    """Return the embedder ``options`` describe (``kind`` default ``onnx``).

    Raise EmbedderSetupError (naming the option at fault, or the extra to install) when it
    cannot be built.
    """
    if not isinstance(options, Mapping):
        raise EmbedderSetupError("", f"expected a mapping of options, found {options!r}")
    kind = options.get("kind", DEFAULT_KIND)
    if not isinstance(kind, str) or not kind:
        raise EmbedderSetupError(
            repr(kind), "option 'kind': expected an embedding kind", option="kind"
        )
    plugin = KINDS.load(kind)
    build = cast(EmbedderBuilder, plugin.target)
    if plugin.builtin:
        return build(options)
    try:
        embedder = build(options)
    except EmbedderSetupError:
        raise
    except Exception as exc:
        raise EmbedderSetupError(repr(kind), f"{type(exc).__name__}: {exc}") from exc
    if not isinstance(embedder, Embedder):
        raise EmbedderSetupError(
            repr(kind), f"builder returned a {type(embedder).__name__}, not an embedder"
        )
    return embedder


def known_kinds() -> tuple[str, ...]:
    """Return the built-in and installed embedding kinds, sorted."""
    return KINDS.known_kinds()


__all__ = [
    "BUILTINS",
    "DEFAULT_KIND",
    "ENTRY_POINT_GROUP",
    "INSTALL",
    "KINDS",
    "Embedder",
    "EmbedderBuilder",
    "Vectors",
    "known_kinds",
    "open_embedder",
    "unit_rows",
]
