"""Every query's ranking at once, as columns: :class:`Answers`, what a search that answers in
bulk returns and what a run's table holds its hits in (:mod:`monitor.run.table`).

Per query the number of hits, and per hit its doc id and score, in the queries' order, best
first. The hits are what the runner keeps of a call per query: cut to k, then repeated ids
dropped at their later positions (``duplicates`` counts them per query).

Doc ids are held as a TREC run's columns hold them (:mod:`monitor.search.trec_columns`):
each id's UTF-8 bytes big-endian in 64-bit words, zero padded (an id holds no NUL byte), so
a million rankings cost a few arrays and no Python object per hit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt


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
