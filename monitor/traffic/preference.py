"""Which of two interleaved searches the clicks prefer, with its uncertainty.

An *outcome* is one impression's verdict from the clicks credited to each team
(:mod:`monitor.traffic.teams`): a *win* when team ``a`` got more clicks, a *loss* when ``b``
did, a *tie* when both got as many (at least one each), and *unclicked* when no credited
click came. Unclicked impressions say nothing about the two searches and are left out of
every figure but the counts.

- The preference is Chapelle et al.'s (TOIS 2012)
  ``delta = (wins + ties / 2) / (wins + losses + ties) - 0.5``: above 0 the clicks prefer
  ``a``, below 0 ``b``; it lies in ``[-0.5, 0.5]``.
- Per session (of the sessions with a credited click): a session wins when its impressions
  hold more wins than losses, loses when fewer, ties when as many; ``session_delta`` is the
  same formula over sessions.
- The interval is a percentile bootstrap of ``delta`` that resamples whole sessions with
  replacement (impressions of one session are not independent), seeded
  (``numpy.random.Generator(PCG64(seed))``).
- The p-value is the exact two-sided sign test of wins against losses (ties left out):
  ``min(1, 2 * P(X <= min(wins, losses)))`` for ``X ~ Binomial(wins + losses, 1/2)``.
- :func:`impressions_needed` sizes a live test: with ``sd`` the standard deviation of the
  per-impression score (1 a win, 1/2 a tie, 0 a loss) over clicked impressions, a test
  needs ``n = ((z_{1-alpha/2} + z_{power}) * sd / delta) ** 2`` clicked impressions for a
  two-sided test at ``alpha`` to find ``delta`` with probability ``power`` (the normal
  approximation), and ``n / clicked share`` impressions.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Final, Literal

from monitor.errors import UsageError

Outcome = Literal["win", "loss", "tie", "unclicked"]

#: Bootstrap resamples unless told otherwise.
ITERATIONS: Final = 2000


def outcome_of(clicks_a: int, clicks_b: int) -> Outcome:
    """Return the outcome of an impression whose teams got ``clicks_a`` and ``clicks_b``."""
    if clicks_a > clicks_b:
        return "win"
    if clicks_b > clicks_a:
        return "loss"
    return "tie" if clicks_a else "unclicked"


@dataclass(frozen=True, slots=True)
class Preference:
    """The clicks' preference between ``a`` and ``b`` over a set of impressions."""

    impressions: int
    wins: int
    losses: int
    ties: int
    sessions: int
    session_wins: int
    session_losses: int
    session_ties: int
    #: None when no impression was clicked (no data, never 0).
    delta: float | None
    session_delta: float | None
    interval: tuple[float, float] | None
    p_value: float
    confidence: float
    #: The standard deviation of the per-impression score (module docstring).
    sd: float | None

    @property
    def clicked(self) -> int:
        """Return the impressions with a credited click: wins, losses and ties."""
        return self.wins + self.losses + self.ties

    @property
    def preferred(self) -> Literal["a", "b"] | None:
        """Return the search the interval prefers, None when it covers 0 (or is no data)."""
        if self.interval is None:
            return None
        low, high = self.interval
        return "a" if low > 0 else "b" if high < 0 else None

    def to_dict(self) -> dict[str, object]:
        """Return the figures as JSON-ready values."""
        return {
            "impressions": self.impressions,
            "clicked": self.clicked,
            "wins_a": self.wins,
            "wins_b": self.losses,
            "ties": self.ties,
            "delta": self.delta,
            "interval": None if self.interval is None else list(self.interval),
            "confidence": self.confidence,
            "p_value": self.p_value,
            "sessions": self.sessions,
            "session_wins_a": self.session_wins,
            "session_wins_b": self.session_losses,
            "session_ties": self.session_ties,
            "session_delta": self.session_delta,
            "preferred": self.preferred,
        }


def delta_of(wins: float, losses: float, ties: float) -> float | None:
    """Return ``(wins + ties / 2) / (wins + losses + ties) - 0.5``, None with no clicked one."""
    clicked = wins + losses + ties
    return None if clicked == 0 else (wins + ties / 2) / clicked - 0.5


def preference(
    outcomes: Sequence[Outcome],
    sessions: Sequence[str],
    *,
    seed: int = 0,
    iterations: int = ITERATIONS,
    confidence: float = 0.95,
) -> Preference:
    """Return the preference of ``outcomes``, the impression ``i`` in session ``sessions[i]``."""
    import numpy as np

    if len(outcomes) != len(sessions):
        raise UsageError(f"{len(outcomes)} outcomes but {len(sessions)} sessions")
    if iterations < 1:
        raise UsageError(f"bootstrap iterations must be 1 or more, not {iterations}")
    if not 0 < confidence < 1:
        raise UsageError(f"confidence must be above 0 and below 1, not {confidence}")
    per_session: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    column = {"win": 0, "loss": 1, "tie": 2}
    for outcome, session in zip(outcomes, sessions, strict=True):
        if outcome != "unclicked":
            per_session[session][column[outcome]] += 1
    counts = np.array(list(per_session.values()), dtype=np.int64).reshape(-1, 3)
    wins, losses, ties = (int(total) for total in counts.sum(axis=0))
    delta = delta_of(wins, losses, ties)
    net = counts[:, 0] - counts[:, 1]
    session_wins, session_losses = int((net > 0).sum()), int((net < 0).sum())
    session_ties = len(net) - session_wins - session_losses
    sd = None
    if delta is not None:
        clicked = wins + losses + ties
        mean = delta + 0.5
        second = (wins + ties / 4) / clicked
        sd = math.sqrt(max(second - mean * mean, 0.0))
    return Preference(
        impressions=len(outcomes),
        wins=wins,
        losses=losses,
        ties=ties,
        sessions=len(net),
        session_wins=session_wins,
        session_losses=session_losses,
        session_ties=session_ties,
        delta=delta,
        session_delta=delta_of(session_wins, session_losses, session_ties),
        interval=None if delta is None else _bootstrap(counts, seed, iterations, confidence),
        p_value=sign_test(wins, losses),
        confidence=confidence,
        sd=sd,
    )


def _bootstrap(
    counts: object, seed: int, iterations: int, confidence: float
) -> tuple[float, float]:
    """Return the percentile interval of delta over sessions resampled with replacement."""
    import numpy as np

    table = np.asarray(counts, dtype=np.int64)
    # Sessions share a few distinct (wins, losses, ties) rows: a resample is drawn as how
    # many of each (one multinomial draw) rather than one index per session.
    rows, weights = np.unique(table, axis=0, return_counts=True)
    rng = np.random.Generator(np.random.PCG64(seed))
    drawn = rng.multinomial(len(table), weights / weights.sum(), size=iterations) @ rows
    clicked = drawn.sum(axis=1)
    values = (drawn[:, 0] + drawn[:, 2] / 2) / clicked - 0.5
    tail = (1 - confidence) / 2
    low, high = np.quantile(values, [tail, 1 - tail])
    return float(low), float(high)


def sign_test(wins: int, losses: int) -> float:
    """Return the exact two-sided sign test's p-value of ``wins`` against ``losses``."""
    n = wins + losses
    if n == 0 or wins == losses:
        return 1.0
    smaller = min(wins, losses)
    # log P(X = i) by the recurrence C(n, i+1) = C(n, i) (n - i) / (i + 1): no huge integers.
    log_pmf = -n * math.log(2.0)
    total = 0.0
    for i in range(smaller + 1):
        total += math.exp(log_pmf)
        log_pmf += math.log((n - i) / (i + 1))
    return min(1.0, 2.0 * total)


def impressions_needed(
    delta: float | None,
    sd: float | None,
    clicked_share: float,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
) -> int | None:
    """Return the impressions a live test needs to find ``delta`` (module docstring), None
    when there is no difference to find (``delta`` 0 or no data)."""
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise UsageError(f"alpha and power must be above 0 and below 1, not {alpha}, {power}")
    if delta is None or sd is None or delta == 0 or clicked_share <= 0:
        return None
    normal = NormalDist()
    z = normal.inv_cdf(1 - alpha / 2) + normal.inv_cdf(power)
    clicked = (z * sd / delta) ** 2
    return max(1, math.ceil(clicked / clicked_share))
