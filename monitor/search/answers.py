"""Every query's ranking at once, as columns: what a search that answers in bulk returns.

A search that holds its rankings in arrays (a replay of a saved run) can answer a whole eval
set in one call instead of a call per query (:func:`answers_in_bulk`). Its answer is an
:class:`Answers`: per query the number of hits, and per hit its doc id and score, in the
queries' order, best first. The hits are what the runner would have kept of a call per
query: cut to k, then repeated ids dropped at their later positions (``duplicates`` counts
them per query), so a bulk run and a run query by query record the same rankings.

Doc ids are held as :class:`~monitor.search.trec_columns.TrecColumns` holds them: each id's
UTF-8 bytes big-endian in 64-bit words, zero padded (an id holds no NUL byte), so a million
rankings cost a few arrays and no Python object per hit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy.typing as npt

    from monitor.records import Query


@dataclass(frozen=True, slots=True, eq=False)
class Answers:
    """The rankings of a sequence of queries, as columns.

    ``counts[i]`` is how many hits query ``i`` has; its hits are the next ``counts[i]`` rows
    of ``doc_words`` (ids, as described above) and ``scores`` (NaN where a hit has none).
    ``duplicates[i]`` counts the repeated ids dropped from query ``i``'s ranking.
    """

    counts: npt.NDArray[np.int64]
    doc_words: npt.NDArray[np.uint64]
    scores: npt.NDArray[np.float64]
    duplicates: npt.NDArray[np.int64]

    def __post_init__(self) -> None:
        rows = int(self.counts.sum())
        if self.doc_words.ndim != 2 or len(self.doc_words) != rows or len(self.scores) != rows:
            raise ValueError(
                f"answers of {rows} hits need {rows} rows of doc words and scores, not"
                f" {self.doc_words.shape} and {self.scores.shape}"
            )
        if len(self.duplicates) != len(self.counts):
            raise ValueError("answers need a count of duplicates per query")

    def __len__(self) -> int:
        return len(self.counts)

    @property
    def starts(self) -> npt.NDArray[np.int64]:
        """Return each query's first row."""
        return np.cumsum(self.counts) - self.counts

    def doc_ids(self, start: int, end: int) -> list[str]:
        """Return the doc ids of rows ``start`` to ``end``, decoded."""
        width = self.doc_words.shape[1]
        raw = self.doc_words[start:end].astype(">u8").view(f"S{8 * width}").reshape(-1)
        return [value.decode("utf-8") for value in raw.tolist()]


class BulkSearch(Protocol):
    """A search that answers every query in one call (see the module's docstring)."""

    def answer_all(self, queries: Sequence[Query], k: int) -> Answers | None:
        """Return the rankings of ``queries`` cut to ``k``, or None to be asked one by one."""
        ...


def answers_in_bulk(search: object) -> BulkSearch | None:
    """Return ``search`` when it answers from memory and in bulk (``answer_all``), else None."""
    from monitor.search.base import answers_in_memory

    if answers_in_memory(search) and callable(getattr(search, "answer_all", None)):
        return search  # type: ignore[return-value]  # it has answer_all
    return None
