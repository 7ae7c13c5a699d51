"""Keep the vectors of texts already embedded, so that a scheduled run embeds nothing twice.

A monitor asks the same frozen queries run after run; embedding them again each time would
cost a model's time (or an endpoint's money) for the same vectors. :class:`CachedEmbedder`
wraps an embedder: a text's vector is looked up by the model id and the SHA-256 of the text,
and only the texts never seen before are embedded, in one batch, then kept.

Each model's vectors live in one file, ``<16 hex digits of the model id's SHA-256>.npz``,
holding the model id, the text digests (32 bytes each) and the float32 rows, written
atomically (:func:`monitor.io.write_bytes_atomic`) and read without pickle. The folder sits
beside the eval-set column cache (:mod:`monitor.evalset.cache`): ``$MONITOR_CACHE_DIR/
embeddings``, else ``$XDG_CACHE_HOME/retrieval-monitor/embeddings`` (``~/.cache/...``). A
file that cannot be read, or holds another model or dimension, is ignored (and replaced); one
that cannot be written is skipped with a warning: the run goes on either way.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from monitor.embedding.base import Embedder, Vectors
from monitor.io import write_bytes_atomic
from monitor.logs import get_logger

log = get_logger("monitor.embedding")

#: The file's format: a change to what a file holds must bump it.
FORMAT = 1


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Return the folder the embedding cache files live in, as the environment names it."""
    env = os.environ if environ is None else environ
    if env.get("MONITOR_CACHE_DIR"):
        return Path(env["MONITOR_CACHE_DIR"]) / "embeddings"
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "retrieval-monitor" / "embeddings"


def text_digest(text: str) -> bytes:
    """Return the SHA-256 of ``text`` in UTF-8 (its key in the cache)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class CachedEmbedder:
    """An embedder that embeds only the texts its cache file does not hold yet.

    ``embedded`` counts the texts it passed to the wrapped embedder, ``reused`` those it
    answered from the cache (both since it was built).
    """

    def __init__(self, embedder: Embedder, directory: Path | None = None) -> None:
        self.embedder = embedder
        self.path = (directory or cache_dir()) / (
            f"v{FORMAT}-{hashlib.sha256(embedder.model_id.encode()).hexdigest()[:16]}.npz"
        )
        self.embedded = 0
        self.reused = 0
        self._rows: dict[bytes, int] = {}
        self._vectors: Vectors | None = None
        self._read()

    @property
    def model_id(self) -> str:
        """Return the wrapped embedder's model id."""
        return self.embedder.model_id

    @property
    def dimension(self) -> int:
        """Return the wrapped embedder's dimension."""
        return self.embedder.dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Return one row per text: kept rows as they are, new texts embedded in one batch."""
        keys = [text_digest(text) for text in texts]
        missing: dict[bytes, str] = {}
        for key, text in zip(keys, texts, strict=True):
            if key not in self._rows and key not in missing:
                missing[key] = text
        if missing:
            fresh = self.embedder.embed(list(missing.values()))
            self._add(list(missing), fresh)
            self.embedded += len(missing)
        self.reused += len(texts) - len(missing)
        held = self._vectors
        if held is None:  # only when no text was asked for
            return np.zeros((0, 0), dtype=np.float32)
        return held[np.fromiter((self._rows[key] for key in keys), np.int64, len(keys))]

    def _add(self, keys: list[bytes], vectors: Vectors) -> None:
        """Keep ``vectors`` under ``keys`` and write the file again."""
        start = len(self._rows)
        held = self._vectors
        if held is not None and held.shape[1] != vectors.shape[1]:
            # The model changed its dimension under the same id: keep only the new rows.
            self._rows, held, start = {}, None, 0
        self._vectors = vectors if held is None else np.concatenate([held, vectors])
        for offset, key in enumerate(keys):
            self._rows[key] = start + offset
        self._write()

    def _read(self) -> None:
        try:
            with np.load(self.path, allow_pickle=False) as held:
                model = str(held["model"])
                digests = held["digests"]
                vectors = held["vectors"]
        except FileNotFoundError:
            return
        except (OSError, ValueError, KeyError, TypeError) as error:
            log.warning("embedding_cache_unreadable", path=str(self.path), error=str(error))
            return
        if (
            model != self.model_id
            or vectors.ndim != 2
            or digests.shape != (len(vectors), 32)
            or digests.dtype != np.uint8
        ):
            log.warning("embedding_cache_ignored", path=str(self.path), model=model)
            return
        self._vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self._rows = {key.tobytes(): row for row, key in enumerate(digests)}

    def _write(self) -> None:
        if self._vectors is None:
            return
        buffer = io.BytesIO()
        # Bytes as uint8 rows: numpy's "S" type would drop a digest's trailing NUL bytes.
        digests = np.frombuffer(b"".join(self._rows), dtype=np.uint8).reshape(-1, 32)
        np.savez(buffer, model=np.array(self.model_id), digests=digests, vectors=self._vectors)
        try:
            write_bytes_atomic(self.path, buffer.getvalue())
        except OSError as error:
            log.warning("embedding_cache_unwritable", path=str(self.path), error=str(error))

    def close(self) -> None:
        """Close the wrapped embedder."""
        self.embedder.close()
