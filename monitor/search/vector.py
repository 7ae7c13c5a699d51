"""What the vector search kinds (``pgvector``, ``qdrant``) share: their query vectors.

A vector kind reads an ``embedding`` mapping among its options (``kind``, default ``onnx``,
and that embedder's options: :mod:`monitor.embedding`), plus ``cache`` (default true): the
query-embedding cache of :mod:`monitor.embedding.cache`, so that a scheduled run embeds
only queries it never embedded before. :class:`QueryVectors` embeds the run's queries in
batches when the runner hands them over (``prepare``), and a query it was not handed on its
own when it is asked for.

An error in the ``embedding`` mapping is the search's SearchSetupError with the option
``embedding.<key>``, so ``config validate`` names its line.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping, Sequence
from typing import Final

import numpy as np

from monitor.embedding import open_embedder
from monitor.embedding.base import Embedder, Vectors
from monitor.embedding.cache import CachedEmbedder
from monitor.errors import EmbedderSetupError, SearchSetupError
from monitor.records import MetaValue, Query
from monitor.search.options import Options

#: Texts embedded per call when a run's queries are prepared.
PREPARE_BATCH: Final = 4096


class QueryVectors:
    """The vectors of query texts: embedded in batches by :meth:`prepare`, kept in memory.

    ``embedder`` is usually a :class:`~monitor.embedding.cache.CachedEmbedder`.
    """

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._held: dict[str, Vectors] = {}
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        """Return the embedding model's id."""
        return self.embedder.model_id

    def prepare(self, texts: Sequence[str]) -> None:
        """Embed every text not held yet, in batches, and hold the vectors."""
        wanted = [text for text in dict.fromkeys(texts) if text not in self._held]
        for start in range(0, len(wanted), PREPARE_BATCH):
            batch = wanted[start : start + PREPARE_BATCH]
            vectors = self.embed(batch)
            with self._lock:
                self._held.update(zip(batch, vectors, strict=True))

    def vector(self, text: str) -> Vectors:
        """Return the unit vector of ``text`` (1-d), embedding it if it is not held."""
        held = self._held.get(text)
        if held is not None:
            return held
        vector: Vectors = self.embed([text])[0]
        with self._lock:
            self._held[text] = vector
        return vector

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Return the vectors of ``texts`` from the embedder (one call, serialised: neither a
        session nor the cache file is shared between threads)."""
        with self._lock:
            return np.ascontiguousarray(self.embedder.embed(texts), dtype=np.float32)

    def stats(self) -> dict[str, MetaValue]:
        """Return the model id and, with a cache, the texts embedded and reused this run."""
        stats: dict[str, MetaValue] = {"model_version": self.model_id}
        if isinstance(self.embedder, CachedEmbedder):
            stats["embedded_queries"] = self.embedder.embedded
            stats["cached_queries"] = self.embedder.reused
        return stats

    def close(self) -> None:
        """Close the embedder."""
        self.embedder.close()


def embedding_options(opts: Options) -> dict[str, object]:
    """Return the ``embedding`` option (empty when absent: the packaged model), read before
    :meth:`Options.done` so that a misspelt option is refused before a model loads."""
    options = dict(opts.mapping("embedding"))
    cache = options.get("cache", True)
    if not isinstance(cache, bool):
        raise opts.fail("embedding.cache", "true or false", cache)
    return options


def query_vectors(opts: Options, options: Mapping[str, object]) -> QueryVectors:
    """Return the query vectors ``options`` (:func:`embedding_options`) describe, cached
    unless their ``cache`` is false."""
    options = dict(options)
    cache = options.pop("cache", True)
    try:
        embedder = open_embedder(options)
    except EmbedderSetupError as exc:
        option = "embedding" if exc.option is None else f"embedding.{exc.option}"
        raise SearchSetupError(opts.spec, str(exc), option=option) from exc
    return QueryVectors(CachedEmbedder(embedder) if cache else embedder)


def query_texts(queries: Sequence[Query]) -> list[str]:
    """Return the texts of ``queries`` (what :meth:`QueryVectors.prepare` takes)."""
    return [query.text for query in queries]


def digest_text(text: str) -> str:
    """Return a short SHA-256 of ``text`` for a corpus fingerprint (an index definition)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
