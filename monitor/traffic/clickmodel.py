"""Offline interleaving: simulated users click two interleaved rankings by the judgments.

Each simulated impression draws a query uniformly (seeded) from the judged queries,
interleaves the two rankings of it by team draft (:mod:`monitor.traffic.interleave`, the
impression's number as its session) and lets a click model click the merged list, the
clicks credited to the team that placed each document. A document's grade is its judgment
(unjudged and negative grades count as 0, grades above the last listed as the last).

Click models (``attractiveness[g]``: the chance a user who examines a result of grade ``g``
clicks it; defaults ``0.05, 0.3, 0.6, 0.9`` for grades 0 to 3):

- ``pbm`` (position-based, the default): rank ``r`` is examined with probability
  ``1 / r ** eta`` (``eta`` 1 by default) whatever happens elsewhere, and a result is
  clicked when examined and attractive.
- ``cascade`` (a dependent click model): the user reads from the top, clicks each result
  with ``attractiveness[g]`` and, after a click on grade ``g``, stops with ``stop[g]``
  (defaults ``0.1, 0.3, 0.6, 0.9``); without a stop they read on to the end of the list.

The result is scored as live clicks are (:mod:`monitor.traffic.preference`): every impression
is its own session, and the figures include how many live impressions a test needs.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from monitor.errors import UsageError
from monitor.traffic.interleave import team_draft
from monitor.traffic.preference import (
    ITERATIONS,
    Outcome,
    Preference,
    impressions_needed,
    outcome_of,
)
from monitor.traffic.preference import preference as preference_of

ModelKind = Literal["pbm", "cascade"]
#: The click models by name.
MODEL_KINDS: Final[tuple[ModelKind, ...]] = ("pbm", "cascade")


@dataclass(frozen=True, slots=True)
class ClickModel:
    """A click model and its parameters (module docstring)."""

    kind: ModelKind = "pbm"
    attractiveness: tuple[float, ...] = (0.05, 0.3, 0.6, 0.9)
    stop: tuple[float, ...] = (0.1, 0.3, 0.6, 0.9)
    eta: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in MODEL_KINDS:
            raise UsageError(
                f"--click-model: expected one of {', '.join(MODEL_KINDS)}, found {self.kind!r}"
            )
        for name in ("attractiveness", "stop"):
            values = getattr(self, name)
            if not values or not all(math.isfinite(p) and 0 <= p <= 1 for p in values):
                raise UsageError(f"{name}: expected probabilities from 0 to 1, found {values}")
        if not (math.isfinite(self.eta) and self.eta >= 0):
            raise UsageError(f"eta: expected a number >= 0, found {self.eta}")

    def clicks(self, grades: Sequence[int], rng: random.Random) -> list[int]:
        """Return the 0-based positions clicked in a list of results with ``grades``."""
        clicked: list[int] = []
        for position, grade in enumerate(grades):
            attract = _at(self.attractiveness, grade)
            if self.kind == "pbm":
                if rng.random() < (position + 1) ** -self.eta and rng.random() < attract:
                    clicked.append(position)
            elif rng.random() < attract:
                clicked.append(position)
                if rng.random() < _at(self.stop, grade):
                    break
        return clicked


def _at(values: tuple[float, ...], grade: int) -> float:
    return values[min(max(grade, 0), len(values) - 1)]


@dataclass(frozen=True, slots=True)
class Simulation:
    """What a simulated interleaving test found, and what a live one would need."""

    preference: Preference
    queries: int
    k: int
    model: ClickModel
    alpha: float
    power: float
    #: Impressions a live test needs (None: no difference to find).
    needed: int | None

    @property
    def clicked_share(self) -> float:
        """Return the share of impressions with a credited click."""
        found = self.preference
        return found.clicked / found.impressions if found.impressions else 0.0


def simulate(
    a: Mapping[str, Sequence[str]],
    b: Mapping[str, Sequence[str]],
    judgments: Mapping[str, Mapping[str, int]],
    *,
    impressions: int,
    seed: int = 0,
    model: ClickModel | None = None,
    k: int = 10,
    alpha: float = 0.05,
    power: float = 0.8,
    iterations: int = ITERATIONS,
) -> Simulation:
    """Simulate ``impressions`` interleavings of rankings ``a`` and ``b`` (query id -> ids
    best first; a query one of them lacks has no results there) clicked by ``model``, with
    ``iterations`` bootstrap resamples for the interval."""
    model = model or ClickModel()
    if impressions < 1:
        raise UsageError(f"--impressions must be 1 or more, not {impressions}")
    if k < 1:
        raise UsageError(f"-k must be 1 or more, not {k}")
    queries = sorted(judgments)
    if not queries:
        raise UsageError("the judgments hold no query to simulate")
    rng = random.Random(seed)
    outcomes: list[Outcome] = []
    for number in range(impressions):
        query = queries[rng.randrange(len(queries))]
        merged = team_draft(
            a.get(query, ()), b.get(query, ()), k, seed=seed, query=query, session=str(number)
        )
        grades = judgments[query]
        shown = [grades.get(doc, 0) for doc in merged.ids]
        counts = [0, 0]
        for position in model.clicks(shown, rng):
            counts[merged.teams[position] == "b"] += 1
        outcomes.append(outcome_of(counts[0], counts[1]))
    sessions = [str(n) for n in range(impressions)]
    found = preference_of(outcomes, sessions, seed=seed, iterations=iterations)
    share = found.clicked / impressions
    return Simulation(
        preference=found,
        queries=len(queries),
        k=k,
        model=model,
        alpha=alpha,
        power=power,
        needed=impressions_needed(found.delta, found.sd, share, alpha=alpha, power=power),
    )
