"""What an embedder is: texts in, one unit-length vector per text out.

An embedder is any object with a ``model_id`` (the model's name as runs record it and the
query-embedding cache keys it), a ``dimension`` and ``embed(texts)``, which returns a float32
array of shape ``(len(texts), dimension)`` whose rows have unit L2 norm, so that an inner
product is a cosine similarity. ``close()`` releases what it holds (a session, a client).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

#: One vector per text, float32, unit rows.
Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors."""

    @property
    def model_id(self) -> str:
        """Return the model's name, as runs record it and the cache keys it."""
        ...

    @property
    def dimension(self) -> int:
        """Return the length of each vector."""
        ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Return one unit-length float32 row per text, in order."""
        ...

    def close(self) -> None:
        """Release what the embedder holds."""
        ...


def unit_rows(vectors: npt.ArrayLike) -> Vectors:
    """Return ``vectors`` as float32 rows scaled to unit L2 norm (a zero row stays zero)."""
    array = np.array(vectors, dtype=np.float32)  # a copy: the caller's array stays as it is
    if array.ndim != 2:
        array = array.reshape(len(array), -1)
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    np.divide(array, norms, out=array, where=norms > 0)
    return array
