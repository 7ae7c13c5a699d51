"""Team-draft interleaving of two rankings (Radlinski, Kurup and Joachims, CIKM 2008).

:func:`team_draft` merges ranking ``a`` and ranking ``b`` (doc ids, best first) into one
list and says which team placed each document. The rules:

- Rounds: the team that has placed fewer documents picks next; when both have placed as
  many, a fair coin decides which picks first. So after every full round each team has
  placed the same number, and a merged list of length ``k`` holds ``ceil(k/2)`` of one team
  and ``floor(k/2)`` of the other whenever both rankings have that many distinct documents.
- A pick is the team's best-ranked document not yet in the merged list: a document the other
  team already placed (or a repeat within the team's own ranking) is skipped, and stays
  credited to the team that placed it.
- Unequal lengths: when one team has nothing left to place, the other fills the remaining
  places with its own unplaced documents, in its order (those places are its own).
- Cap: the merged list stops at ``k`` documents (no cap when ``k`` is None: it runs until
  both rankings are used up).
- The coin is seeded per ``(seed, query, session)``: its flips are the bits of SHA-256 of the
  three (:class:`Coin`; never Python's ``hash``, which changes per process), so the same
  impression is replayed exactly, on any machine.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from monitor.errors import UsageError

Team = Literal["a", "b"]
#: The two teams, in the order their figures are given.
TEAMS: Final[tuple[Team, Team]] = ("a", "b")


@dataclass(frozen=True, slots=True)
class Interleaving:
    """A merged list: each position's doc id and the team that placed it."""

    ids: tuple[str, ...]
    teams: tuple[Team, ...]

    def team_of(self, doc: str) -> Team | None:
        """Return the team that placed ``doc``, None when it was not shown."""
        try:
            return self.teams[self.ids.index(doc)]
        except ValueError:
            return None


class Coin:
    """A fair coin for one impression: the bits of SHA-256 of ``seed``, ``query``,
    ``session`` and a block number (0, 1, ...) separated by NUL, first bit first."""

    def __init__(self, seed: int, query: str, session: str) -> None:
        self._key = f"{seed}\0{query}\0{session}\0".encode("utf-8", "surrogatepass")
        self._block = 0
        self._bits = 0
        self._left = 0

    def flip(self) -> int:
        """Return the next bit: 0 (team a picks first) or 1 (team b)."""
        if not self._left:
            digest = hashlib.sha256(self._key + str(self._block).encode()).digest()
            self._block += 1
            self._bits, self._left = int.from_bytes(digest, "big"), 256
        self._left -= 1
        return (self._bits >> self._left) & 1


def team_draft(
    a: Sequence[str],
    b: Sequence[str],
    k: int | None = None,
    *,
    seed: int = 0,
    query: str = "",
    session: str = "",
) -> Interleaving:
    """Return the team-draft interleaving of ``a`` and ``b`` cut to ``k`` (module rules)."""
    if k is not None and k < 0:
        raise UsageError(f"an interleaving's length must be 0 or more, not {k}")
    coin = Coin(seed, query, session)
    rankings = (a, b)
    cursors = [0, 0]
    placed = [0, 0]
    seen: set[str] = set()
    ids: list[str] = []
    teams: list[Team] = []
    limit = len(a) + len(b) if k is None else k
    while len(ids) < limit:
        live = [_skip(rankings[t], cursors[t], seen) for t in (0, 1)]
        cursors = live
        has_a, has_b = live[0] < len(a), live[1] < len(b)
        if not (has_a or has_b):
            break
        if not has_b:
            team = 0
        elif not has_a:
            team = 1
        elif placed[0] != placed[1]:
            team = 0 if placed[0] < placed[1] else 1
        else:
            # A coin per round (counts level), flipped only then, so a replay flips the same.
            team = coin.flip()
        doc = rankings[team][cursors[team]]
        cursors[team] += 1
        placed[team] += 1
        seen.add(doc)
        ids.append(doc)
        teams.append(TEAMS[team])
    return Interleaving(tuple(ids), tuple(teams))


def _skip(ranking: Sequence[str], cursor: int, seen: set[str]) -> int:
    """Return the position of the first document of ``ranking`` from ``cursor`` on that is
    not in ``seen`` (``len(ranking)`` when there is none)."""
    while cursor < len(ranking) and ranking[cursor] in seen:
        cursor += 1
    return cursor
