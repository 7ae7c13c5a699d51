"""The ``qdrant`` search kind: nearest neighbours of the query's embedding in a Qdrant
collection, on a server or in qdrant-client's local mode.

Options:

``path`` or ``url`` (one of them, required)
    ``path``: a local-mode folder (qdrant-client runs the collection in-process; it searches
    exactly, so ``hnsw_ef`` and ``exact`` change nothing there). ``url``: a Qdrant server
    (``http://127.0.0.1:6333``), with ``api_key_env`` naming the environment variable
    holding its API key.
``collection`` (required)
    The collection searched.
``id_field`` (default ``doc_id``), ``text_field`` (default ``text``)
    Payload fields holding the doc id and the text; a point without ``id_field`` is named
    by its point id.
``vector_name`` (optional)
    The named vector searched, for a collection with several.
``hnsw_ef`` (optional), ``exact`` (default false)
    Qdrant's search parameters: the HNSW beam width, or a search without the index (the
    exact answer, which an ANN recall compares with; :meth:`QdrantSearch.exact_search`
    gives it beside an ANN search, on the same client).
``filter`` (optional)
    A Qdrant filter as a mapping (``{must: [{key: lang, match: {value: en}}]}``), checked
    when the search is built.
``index_health`` (optional)
    ``{k: 10, sample: 500}`` (or ``true``): each run also measures ``ann_recall@k``
    against the exact search of the same store, over a sample of at most ``sample``
    queries (:mod:`monitor.search.health`).
``embedding`` (default: the packaged MiniLM)
    How queries become vectors (:mod:`monitor.search.vector`).
``timeout`` (default 10)
    Seconds per request to a server.

A hit's score is Qdrant's own: the cosine similarity for a ``Cosine`` collection, the dot
product for ``Dot``, the negated distance for ``Euclid``. ``stats()`` reports ``index_size``
(points counted exactly), ``index_definition`` (the vector parameters and HNSW
configuration, as JSON), and the model; ``corpus_fingerprint()`` the collection, its count
and a digest of that definition (Qdrant keeps no last-update time). The client is made at
the first call, so building connects nowhere. A failed request raises SearchCallError with
the client's class name, retryable for a transport failure.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from monitor.embedding.base import Vectors, vector_module
from monitor.errors import SearchCallError, SearchSetupError
from monitor.records import Hit, MetaValue, Query
from monitor.search.health import HealthOptions, index_health_option
from monitor.search.options import Options
from monitor.search.vector import (
    QueryVectors,
    digest_text,
    embedding_options,
    query_texts,
    query_vectors,
)
from monitor.secrets import Scrubber

#: The namespace of the point ids :func:`load_collection` makes from doc ids.
POINT_NAMESPACE = uuid.UUID("6f1c3c1e-8d4e-5b7a-9a51-3e1f0c2b7d90")


class _Client:
    """The one client a search (and its exact twin) uses, made at first use."""

    def __init__(
        self, path: str | None, url: str | None, api_key: str | None, timeout: float
    ) -> None:
        self.models: Any = vector_module("qdrant_client.models", "qdrant", SearchSetupError)
        self.path, self.url, self.api_key, self.timeout = path, url, api_key, timeout
        self.scrub = Scrubber.of([api_key] if api_key else [])
        self.lock = threading.RLock()
        self._client: Any = None

    @property
    def local(self) -> bool:
        """Return whether the collection runs in local mode (searched exactly)."""
        return self.path is not None

    def get(self) -> Any:
        """Return the client, made at the first call."""
        with self.lock:
            if self._client is None:
                qdrant_client = vector_module("qdrant_client", "qdrant", SearchSetupError)
                if self.path is not None:
                    self._client = qdrant_client.QdrantClient(path=self.path)
                else:
                    self._client = qdrant_client.QdrantClient(
                        url=self.url, api_key=self.api_key, timeout=round(self.timeout)
                    )
            return self._client

    def run(self, work: Any) -> Any:
        """Return ``work(client)``, its failures raised as SearchCallError."""
        try:
            return work(self.get())
        except SearchSetupError:
            raise
        except (ConnectionError, TimeoutError, OSError) as exc:
            raise SearchCallError(
                type(exc).__name__, self.scrub(str(exc) or repr(exc)), retryable=True
            ) from None
        except Exception as exc:  # the client raises its own and httpx's exceptions
            retryable = "Timeout" in type(exc).__name__ or "Connect" in type(exc).__name__
            raise SearchCallError(
                type(exc).__name__, self.scrub(str(exc) or repr(exc))[:300], retryable=retryable
            ) from None

    def close(self) -> None:
        """Close the client (a later call makes a new one)."""
        with self.lock:
            if self._client is not None:
                self._client.close()
                self._client = None


class QdrantSearch:
    """A search function over a Qdrant collection: ``(query, k) -> [Hit, ...]``."""

    #: The cutoff of the run's index health check (:mod:`monitor.search.health`), or None.
    index_health: HealthOptions | None = None

    def __init__(
        self,
        client: _Client,
        vectors: QueryVectors,
        *,
        collection: str,
        id_field: str = "doc_id",
        text_field: str | None = "text",
        vector_name: str | None = None,
        hnsw_ef: int | None = None,
        exact: bool = False,
        filter: Any = None,
    ) -> None:
        self._client = client
        self.vectors = vectors
        self.collection = collection
        self.id_field = id_field
        self.text_field = text_field
        self.vector_name = vector_name
        self.hnsw_ef = hnsw_ef
        self.exact = exact
        self.filter = filter
        self._payload = [id_field] if text_field is None else [id_field, text_field]

    def exact_search(self) -> QdrantSearch:
        """Return the same search done without the index (``exact``), on the same client."""
        return QdrantSearch(
            self._client,
            self.vectors,
            collection=self.collection,
            id_field=self.id_field,
            text_field=self.text_field,
            vector_name=self.vector_name,
            hnsw_ef=self.hnsw_ef,
            exact=True,
            filter=self.filter,
        )

    def prepare(self, queries: Sequence[Query]) -> None:
        """Embed the run's queries in batches before the first call."""
        self.vectors.prepare(query_texts(queries))

    def __call__(self, query: str, k: int) -> list[Hit]:
        """Return the ``k`` points nearest to the query's embedding, best first."""
        (hits,) = self.search_vectors(self.vectors.vector(query)[None, :], k)
        return hits

    def _request(self, vector: Vectors, k: int) -> Any:
        models = self._client.models
        params = None
        if not self._client.local and (self.exact or self.hnsw_ef is not None):
            # Local mode searches exactly and warns about parameters it cannot use.
            params = models.SearchParams(hnsw_ef=self.hnsw_ef, exact=self.exact)
        return models.QueryRequest(
            query=vector.tolist(),
            limit=k,
            using=self.vector_name,
            filter=self.filter,
            params=params,
            with_payload=self._payload,
        )

    def search_vectors(self, vectors: Vectors, k: int) -> list[list[Hit]]:
        """Return the ``k`` nearest points of each vector, in one batch request."""
        requests = [self._request(vector, k) for vector in vectors]

        def work(client: Any) -> list[list[Hit]]:
            if len(requests) == 1:
                request = requests[0]
                answer = client.query_points(
                    self.collection,
                    query=request.query,
                    limit=k,
                    using=self.vector_name,
                    query_filter=self.filter,
                    search_params=request.params,
                    with_payload=self._payload,
                )
                return [self._hits(answer.points)]
            answers = client.query_batch_points(self.collection, requests=requests)
            return [self._hits(answer.points) for answer in answers]

        result: list[list[Hit]] = self._client.run(work)
        return result

    def _hits(self, points: Sequence[Any]) -> list[Hit]:
        hits = []
        for point in points:
            payload = point.payload or {}
            doc = payload.get(self.id_field)
            text = None if self.text_field is None else payload.get(self.text_field)
            hits.append(
                Hit(
                    str(point.id) if doc is None else str(doc),
                    float(point.score),
                    text if isinstance(text, str) else None,
                )
            )
        return hits

    def _definition(self, client: Any) -> tuple[int, str]:
        info = client.get_collection(self.collection)
        count = client.count(self.collection, exact=True).count
        definition = {
            "vectors": _plain(info.config.params.vectors),
            "hnsw": _plain(info.config.hnsw_config),
        }
        return int(count), json.dumps(definition, sort_keys=True, default=str)

    def stats(self) -> dict[str, MetaValue]:
        """Return the points counted, the collection's vector and HNSW parameters, the model."""
        count, definition = self._client.run(self._definition)
        stats: dict[str, MetaValue] = {
            "index_size": count,
            "index_definition": definition,
            **self.vectors.stats(),
        }
        if self.hnsw_ef is not None:
            stats["hnsw_ef"] = self.hnsw_ef
        if self.exact:
            stats["exact"] = True
        return stats

    def corpus_fingerprint(self) -> dict[str, MetaValue]:
        """Return the collection, its point count and a digest of its index parameters."""
        count, definition = self._client.run(self._definition)
        return {"collection": self.collection, "count": count, "index": digest_text(definition)}

    def close(self) -> None:
        """Close the client and the embedder."""
        self._client.close()
        self.vectors.close()


def _plain(value: Any) -> Any:
    """Return a client model as plain JSON data."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_none=True)
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    return value


def build(options: Mapping[str, object]) -> QdrantSearch:
    """Build a :class:`QdrantSearch` from the ``qdrant`` kind's options."""
    opts = Options("qdrant", options)
    collection = opts.required_string("collection")
    opts.spec = f"qdrant:{collection}"
    path = opts.string("path")
    url = opts.string("url")
    if (path is None) == (url is None):
        raise opts.fail("path", "either 'path' (local mode) or 'url' (a server), not both")
    if url is not None and not url.startswith(("http://", "https://")):
        raise opts.fail("url", "an http:// or https:// URL", url)
    api_key = opts.env_string("api_key_env")
    id_field = opts.string("id_field", "doc_id") or "doc_id"
    text_field = opts.string("text_field", "text")
    vector_name = opts.string("vector_name")
    hnsw_ef = opts.typed("hnsw_ef", int, "an integer of at least 1")
    if hnsw_ef is not None and hnsw_ef < 1:
        raise opts.fail("hnsw_ef", "an integer of at least 1", hnsw_ef)
    exact = opts.flag("exact", default=False)
    health_k = index_health_option(opts)
    raw_filter = opts.mapping("filter")
    timeout = opts.seconds("timeout", 10.0) or 10.0
    embedding = embedding_options(opts)
    opts.done()
    client = _Client(path, url, api_key, timeout)  # names the extra when missing
    query_filter = None
    if raw_filter:
        try:
            query_filter = client.models.Filter.model_validate(dict(raw_filter))
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            reason = str(exc).splitlines()[0]
            raise opts.fail("filter", f"a Qdrant filter ({reason})") from None
    search = QdrantSearch(
        client,
        query_vectors(opts, embedding),
        collection=collection,
        id_field=id_field,
        text_field=text_field,
        vector_name=vector_name,
        hnsw_ef=hnsw_ef,
        exact=exact,
        filter=query_filter,
    )
    search.index_health = health_k
    return search


def point_id(doc_id: str) -> str:
    """Return the point id :func:`load_collection` gives ``doc_id`` (a UUID made from it)."""
    return str(uuid.uuid5(POINT_NAMESPACE, doc_id))


def load_collection(
    collection: str,
    ids: Sequence[str],
    texts: Sequence[str],
    vectors: Vectors,
    *,
    path: str | None = None,
    url: str | None = None,
    api_key: str | None = None,
    m: int = 16,
    ef_construct: int = 100,
) -> None:
    """Replace ``collection`` by one holding the passages (payload ``doc_id`` and ``text``)
    and their vectors, cosine distance, with an HNSW index of ``m`` and ``ef_construct``."""
    client = _Client(path, url, api_key, 60.0)
    models = client.models

    def work(qdrant: Any) -> None:
        if qdrant.collection_exists(collection):
            qdrant.delete_collection(collection)
        qdrant.create_collection(
            collection,
            vectors_config=models.VectorParams(
                size=int(vectors.shape[1]), distance=models.Distance.COSINE
            ),
            hnsw_config=models.HnswConfigDiff(m=m, ef_construct=ef_construct),
        )
        qdrant.upload_collection(
            collection,
            vectors=vectors,
            payload=[{"doc_id": doc, "text": text} for doc, text in zip(ids, texts, strict=True)],
            ids=[point_id(doc) for doc in ids],
            wait=True,
        )

    try:
        client.run(work)
    finally:
        client.close()
