"""Fakes for the query drift tests: a hashed bag-of-words embedder, query texts drawn from a
vocabulary, and a traffic database of two weeks of queries from two vocabularies."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import numpy as np

from monitor.embedding.base import Vectors, unit_rows
from tests.traffic_logs import T0, search, write_ndjson

WORDS_A = [f"alpha{i}" for i in range(30)]
WORDS_B = [f"beta{i}" for i in range(30)]


class HashedWords:
    """A fake embedder: each word hashed to a fixed random direction, a text their unit sum."""

    model_id = "hashed-words"
    dimension = 32

    def __init__(self) -> None:
        self.calls: list[int] = []

    def _word(self, word: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
        return np.random.default_rng(seed).standard_normal(self.dimension)

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls.append(len(texts))
        return unit_rows([sum(self._word(w) for w in text.split()) for text in texts])

    def close(self) -> None:
        pass


def texts(words: Sequence[str], n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(words, size=3)) for _ in range(n)]


def write_logs(folder: Path) -> Path:
    """Write a traffic database of a week of WORDS_A queries, then a week of WORDS_B ones."""
    from monitor.traffic.engine import connect
    from monitor.traffic.importer import import_logs

    rows = []
    for week, words in enumerate((WORDS_A, WORDS_B)):
        for j, text in enumerate(texts(words, 90, seed=week)):
            at = T0 + timedelta(days=7 * week, minutes=j)
            rows.append(search(f"w{week}-{j}", text, ["d1"], client=f"c{j}", at=at))
    path = folder / "logs.duckdb"
    connection = connect(path)
    try:
        import_logs(
            connection, [write_ndjson(folder / "q.ndjson", rows)], [], min_distinct_clients=1
        )
    finally:
        connection.close()
    return path
