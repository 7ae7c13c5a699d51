"""The ``http`` embedder: an OpenAI-compatible embeddings endpoint.

It sends ``POST {url}/v1/embeddings`` with ``{"model": ..., "input": [texts]}`` and reads
``data[*].embedding`` (put back in the order of each item's ``index``). Options:

``url`` (required)
    The server's base URL (``http://127.0.0.1:8080``); a URL already ending in
    ``/v1/embeddings`` is taken as it is.
``model`` (required)
    The model name the server knows.
``api_key_env``
    The environment variable holding the API key, sent as ``Authorization: Bearer ...``.
``batch_size`` (default 64), ``timeout`` (default 30 seconds)
    Texts per request, and seconds to connect and to read one answer.

Vectors are scaled to unit length (an endpoint's are usually unit already). The model id is
``http:<model>``. A failed request raises :class:`~monitor.errors.EmbeddingCallError` with
the status (``HTTPStatusError 429``) or the transport failure's class name; 429, 5xx and
transport failures are retryable. No message holds the key: each passes through a scrubber
that knows it. A caller may pass ``transport`` (an ``httpx.BaseTransport``) in tests.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import httpx
import numpy as np

from monitor.embedding.base import Vectors, unit_rows
from monitor.errors import EmbedderSetupError, EmbeddingCallError
from monitor.search.options import Options
from monitor.secrets import Scrubber
from monitor.tls import verifying

_PATH = "/v1/embeddings"


class HttpEmbedder:
    """Embeds texts by asking an OpenAI-compatible ``/v1/embeddings`` endpoint."""

    def __init__(
        self,
        url: str,
        model: str,
        *,
        api_key: str | None = None,
        batch_size: int = 64,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = url if url.rstrip("/").endswith(_PATH) else url.rstrip("/") + _PATH
        self.model = model
        self.batch_size = batch_size
        self.scrub = Scrubber.of([api_key] if api_key else [])
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(timeout),
            verify=verifying(),
            transport=transport,
        )
        self._dimension: int | None = None

    @property
    def model_id(self) -> str:
        """Return ``http:<model>``."""
        return f"http:{self.model}"

    @property
    def dimension(self) -> int:
        """Return the length of each vector (asked of the endpoint once, if no call has yet)."""
        if self._dimension is None:
            self.embed(["dimension"])
        return self._dimension or 0

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Return one unit-length float32 row per text, in order, a request per batch."""
        batches = [
            self._request(list(texts[start : start + self.batch_size]))
            for start in range(0, len(texts), self.batch_size)
        ]
        if not batches:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        vectors = unit_rows(np.concatenate(batches))
        self._dimension = vectors.shape[1]
        return vectors

    def _request(self, texts: list[str]) -> Vectors:
        """Send one batch and return its vectors, in the order of ``texts``."""
        try:
            response = self._client.post(self.url, json={"model": self.model, "input": texts})
        except httpx.TransportError as exc:
            raise EmbeddingCallError(
                type(exc).__name__, self.scrub(str(exc) or repr(exc)), retryable=True
            ) from None
        except httpx.HTTPError as exc:
            raise EmbeddingCallError(
                type(exc).__name__, self.scrub(str(exc) or repr(exc))
            ) from None
        status = response.status_code
        if status >= 400:
            answer = self.scrub(response.text)[:200]
            raise EmbeddingCallError(
                f"HTTPStatusError {status}",
                f"POST {self.url} answered {status} {response.reason_phrase}: {answer}",
                status=status,
                retryable=status == 429 or status >= 500,
            )
        try:
            return _vectors(response.json(), len(texts))
        except (ValueError, TypeError, KeyError) as exc:
            raise EmbeddingCallError(
                "EmbeddingOutputError",
                f"expected {{'data': [{{'index', 'embedding'}}, ...]}} with one vector per "
                f"text: {self.scrub(str(exc))[:120]}",
                status=status,
            ) from None

    def close(self) -> None:
        """Close the HTTP client and its connections."""
        self._client.close()


def _vectors(document: Any, count: int) -> Vectors:
    """Return the vectors of an embeddings answer, ordered by their ``index``."""
    items = document["data"]
    if not isinstance(items, list) or len(items) != count:
        raise ValueError(f"{count} items in 'data', found {len(items)}")
    ordered = sorted(items, key=lambda item: int(item.get("index", 0)))
    array = np.array([item["embedding"] for item in ordered], dtype=np.float32)
    if array.ndim != 2 or not np.isfinite(array).all():
        raise ValueError("vectors of one length holding finite numbers")
    return array


def build(options: Mapping[str, object]) -> HttpEmbedder:
    """Build an :class:`HttpEmbedder` from the ``http`` kind's options."""
    opts = Options("http", options, error=EmbedderSetupError)
    opts.raw("kind")
    url = opts.required_string("url")
    if not url.startswith(("http://", "https://")):
        raise opts.fail("url", "an http:// or https:// URL", url)
    model = opts.required_string("model")
    api_key = opts.env_string("api_key_env")
    batch_size = opts.integer("batch_size", 64)
    timeout = opts.seconds("timeout", 30.0) or 30.0
    transport = opts.typed("transport", httpx.BaseTransport, "an httpx transport")
    opts.done()
    return HttpEmbedder(
        url, model, api_key=api_key, batch_size=batch_size, timeout=timeout, transport=transport
    )
