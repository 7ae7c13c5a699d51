"""Click judgments: grade (query key, document) pairs from the clicks of the logs.

Only results shown at rank ``max_rank`` or better count, as impressions and as clicks; a
document clicked more than once in one search counts one click. Two models:

- ``coec`` (clicks over expected clicks): the rank CTR of rank r is the share of the
  window's impressions at rank r that were clicked; a pair's expected clicks are the sum,
  over each of its impressions, of the rank CTR at that impression's own rank (not at the
  pair's best rank, which would bias documents shown low toward too low a grade). The score
  is ``(clicks + prior) / (expected + prior)``: the additive ``prior`` pulls a pair with few
  expected clicks toward 1, an average document. Confidence is
  ``expected / (expected + prior)``, the weight the clicks get against the prior.
- ``ctr_share``: the score is the pair's share of its query's clicks, with no position
  correction; confidence is ``query_clicks / (query_clicks + prior)``. A query without a
  click grades nothing.

A pair with fewer than ``min_impressions`` impressions stays unjudged (never grade 0). The
grade is the number of ``cutoffs`` the score reaches: with cutoffs ``(0.5, 1, 2)`` a COEC
below 0.5 is grade 0 and one of 2 or more grade 3.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from monitor.config.windows import EVERYTHING, Window
from monitor.errors import UsageError
from monitor.traffic import sql
from monitor.traffic.engine import Connection, Reader, rows
from monitor.traffic.online import CLICK_ACTION

ClickModel = Literal["coec", "ctr_share"]

#: The models, each with its SQL and its default cut-offs (one grade per cut-off reached).
MODELS: Final[dict[str, tuple[str, tuple[float, ...]]]] = {
    "coec": (sql.COEC, (0.5, 1.0, 2.0)),
    "ctr_share": (sql.CTR_SHARE, (0.1, 0.25, 0.5)),
}


@dataclass(frozen=True, slots=True)
class ClickSettings:
    """How click judgments are made: the model and its parameters."""

    model: ClickModel = "coec"
    max_rank: int = 10
    min_impressions: int = 10
    prior: float = 1.0
    cutoffs: tuple[float, ...] | None = None
    click_action: str = CLICK_ACTION

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise UsageError(f"--model: expected one of {', '.join(MODELS)}, found {self.model!r}")
        if self.max_rank < 1:
            raise UsageError(f"--max-rank must be 1 or more, not {self.max_rank}")
        if self.min_impressions < 1:
            raise UsageError(f"--min-impressions must be 1 or more, not {self.min_impressions}")
        if not (math.isfinite(self.prior) and self.prior >= 0):
            raise UsageError(f"--prior must be a number >= 0, not {self.prior}")
        cutoffs = self.grade_cutoffs
        if not cutoffs or any(b <= a for a, b in itertools.pairwise(cutoffs)):
            raise UsageError(f"--cutoffs must be increasing numbers, not {list(cutoffs)}")
        if not all(math.isfinite(c) for c in cutoffs):
            raise UsageError(f"--cutoffs must be finite numbers, not {list(cutoffs)}")

    @property
    def grade_cutoffs(self) -> tuple[float, ...]:
        """Return the cut-offs in force: the given ones or the model's defaults."""
        return self.cutoffs if self.cutoffs is not None else MODELS[self.model][1]

    @property
    def source(self) -> str:
        """Return the layer source naming the model and every parameter, so it replays."""
        cutoffs = ",".join(f"{c:g}" for c in self.grade_cutoffs)
        return (
            f"clicks:{self.model} max_rank={self.max_rank} min_impressions="
            f"{self.min_impressions} prior={self.prior:g} cutoffs={cutoffs} "
            f"click_action={self.click_action}"
        )


@dataclass(frozen=True, slots=True)
class ClickGrade:
    """One pair's grade with the counts it came from and its confidence."""

    query_key: str
    doc: str
    impressions: int
    clicks: int
    expected: float
    score: float
    confidence: float
    grade: int


def parse_cutoffs(text: str) -> tuple[float, ...]:
    """Return the comma-separated cut-offs ``text`` (``0.5,1,2``) as numbers."""
    try:
        return tuple(float(part) for part in text.split(","))
    except ValueError:
        raise UsageError(
            f"--cutoffs: expected numbers separated by commas, found {text!r}"
        ) from None


def grade_of(score: float, cutoffs: Sequence[float]) -> int:
    """Return how many of ``cutoffs`` ``score`` reaches."""
    return sum(1 for cutoff in cutoffs if score >= cutoff)


def click_grades(
    connection: Reader, settings: ClickSettings, window: Window = EVERYTHING
) -> list[ClickGrade]:
    """Return the graded pairs of ``window`` under ``settings``, by query key then doc."""
    statement = MODELS[settings.model][0]
    found = rows(
        connection,
        statement,
        {
            "start": window.start,
            "end": window.end,
            "click_action": settings.click_action,
            "max_rank": settings.max_rank,
            "min_impressions": settings.min_impressions,
            "prior": float(settings.prior),
        },
    )
    cutoffs = settings.grade_cutoffs
    return [
        ClickGrade(
            query_key=str(row["query_key"]),
            doc=str(row["doc"]),
            impressions=int(row["impressions"]),
            clicks=int(row["clicks"]),
            expected=float(row["expected"]),
            score=float(row["score"]),
            confidence=float(row["confidence"]),
            grade=grade_of(float(row["score"]), cutoffs),
        )
        for row in found
        if row["score"] is not None
    ]


def keep_grades(
    connection: Connection,
    layer_id: int,
    suite: str,
    grades: Sequence[ClickGrade],
    queries: Mapping[str, Sequence[str]],
) -> None:
    """Store ``grades`` with their counts in ``click_grades``, under each eval-set query id
    ``queries`` gives their key, as layer ``layer_id`` of ``suite``."""
    values = [
        [
            layer_id,
            suite,
            query_id,
            item.query_key,
            item.doc,
            item.impressions,
            item.clicks,
            item.expected,
            item.score,
            item.confidence,
            item.grade,
        ]
        for item in grades
        for query_id in queries.get(item.query_key, ())
    ]
    if values:
        connection.executemany(
            "INSERT INTO click_grades VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", values
        )
