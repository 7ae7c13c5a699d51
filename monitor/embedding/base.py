"""What an embedder is: texts in, one unit-length vector per text out.

An embedder is any object with a ``model_id`` (the model's name as runs record it and the
query-embedding cache keys it), a ``dimension`` and ``embed(texts)``, which returns a float32
array of shape ``(len(texts), dimension)`` whose rows have unit L2 norm, so that an inner
product is a cosine similarity. ``close()`` releases what it holds (a session, a client).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any, Final, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from monitor.errors import SearchSetupError

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


#: The command that installs the embedding runtime and the vector search kinds.
INSTALL: Final = "pip install 'retrieval-monitor[vector]'"


def vector_module(
    name: str, spec: str, error: type[SearchSetupError], install: str = INSTALL
) -> Any:
    """Return the module ``name`` of the ``vector`` extra, or raise ``error`` naming the
    command that installs it, in one line (never an ImportError's traceback)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        raise error(spec, f"needs the Python module {name}: {install}") from None
