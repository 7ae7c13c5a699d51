"""The team log of served interleavings, and the clicks it credits to each team.

The team log is a JSONL file, one served interleaving a line, appended as each is served
(the ``interleave`` search kind's ``team_log``)::

    {"query_id": "q-81", "query": "reset password", "seed": 7,
     "ids": ["d3", "d9", "d1"], "teams": ["b", "a", "a"]}

``query_id`` is the key the click log's searches carry (UBI's ``query_id``): scoring joins the
log with the searches and click events of a traffic database (``logs import``) on it. The
team-draft rule credits a click to the team that placed the clicked document; a click
event names the document by ``object_id`` or, without one, by its 1-based ``position`` in the
served list. A click on a document that was not served is not credited (and counted).
Each document counts once per impression, however often it was clicked.

Sessions: a client's searches in one application, a new session after more than
``session_gap`` seconds (1800 by default) between two served searches.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

from monitor.errors import InputError
from monitor.traffic.engine import Connection, rows
from monitor.traffic.interleave import TEAMS, Interleaving, Team
from monitor.traffic.online import CLICK_ACTION
from monitor.traffic.preference import Outcome, outcome_of
from monitor.traffic.sql import INTERLEAVED_CLICKS

#: Seconds between two searches of a client after which a new session starts.
SESSION_GAP: Final = 1800.0


@dataclass(frozen=True, slots=True)
class Served:
    """One served interleaving: the search's id and text, the seed, the merged list."""

    query_id: str
    query: str
    seed: int
    interleaving: Interleaving

    def to_line(self) -> str:
        """Return the team log's line for this interleaving (with its newline)."""
        record = {
            "query_id": self.query_id,
            "query": self.query,
            "seed": self.seed,
            "ids": list(self.interleaving.ids),
            "teams": list(self.interleaving.teams),
        }
        return json.dumps(record, ensure_ascii=False) + "\n"


class TeamLog:
    """Append served interleavings to a JSONL file, one whole line per write."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # Searches may be answered from several threads: a lock keeps each line whole.
        self._lock = threading.Lock()

    def append(self, served: Served) -> None:
        """Append ``served`` as one line, flushed before returning."""
        line = served.to_line()
        with self._lock, self.path.open("a", encoding="utf-8") as out:
            out.write(line)


def read_team_log(path: Path) -> list[Served]:
    """Return the interleavings of the team log at ``path``, a line repeated word for word
    (a replayed run) once; raise InputError naming the line of the first malformed one or
    of another interleaving under a query id seen before."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(path, "a team log (JSONL); no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(path, f"a readable UTF-8 team log: {error}") from None
    served: dict[str, tuple[int, Served]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        item = _served(path, number, line)
        first = served.setdefault(item.query_id, (number, item))
        if first[1] != item:  # the same line again is a replay of one impression: kept once
            raise InputError(
                path,
                f"one interleaving per query_id (another is on line {first[0]})",
                line=number,
                found=item.query_id,
            )
    return [item for _, item in served.values()]


def _served(path: Path, number: int, line: str) -> Served:
    expected = 'an object {"query_id", "query", "seed", "ids", "teams"}'
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise InputError(path, f"{expected}: {error.msg}", line=number) from None
    if not isinstance(record, dict):
        raise InputError(path, expected, line=number, found=record)
    query_id, query, seed = record.get("query_id"), record.get("query", ""), record.get("seed", 0)
    ids, teams = record.get("ids"), record.get("teams")
    if not isinstance(query_id, str) or not query_id:
        raise InputError(path, "a non-empty string 'query_id'", line=number, found=query_id)
    if not isinstance(query, str):
        raise InputError(path, "a string 'query'", line=number, found=query)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError(path, "an integer 'seed'", line=number, found=seed)
    if not isinstance(ids, list) or not all(isinstance(doc, str) and doc for doc in ids):
        raise InputError(path, "'ids': a list of doc id strings", line=number, found=ids)
    if len(set(ids)) != len(ids):
        raise InputError(path, "'ids' without a repeated id", line=number, found=ids)
    if not isinstance(teams, list) or len(teams) != len(ids) or not set(teams) <= set(TEAMS):
        raise InputError(
            path, "'teams': a list of 'a' or 'b', one per id", line=number, found=teams
        )
    return Served(query_id, query, seed, Interleaving(tuple(ids), tuple(cast(list[Team], teams))))


def credit(interleaving: Interleaving, clicked: Iterable[str]) -> tuple[int, int]:
    """Return the clicks on distinct served documents of ``clicked`` credited to a and b."""
    counts = {"a": 0, "b": 0}
    for doc in set(clicked):
        team = interleaving.team_of(doc)
        if team is not None:
            counts[team] += 1
    return counts["a"], counts["b"]


@dataclass(frozen=True, slots=True)
class Scored:
    """The outcome and session of each served interleaving the traffic database holds."""

    outcomes: tuple[Outcome, ...]
    sessions: tuple[str, ...]
    #: Served interleavings whose search is not in the database (not scored).
    missing: int = 0
    #: Clicks on documents that were not served (not credited).
    uncredited: int = 0


def score_clicks(
    connection: Connection,
    served: Sequence[Served],
    *,
    click_action: str = CLICK_ACTION,
    session_gap: float = SESSION_GAP,
) -> Scored:
    """Return the outcome of each of ``served`` from the clicks the database holds."""
    import pyarrow as pa

    by_id = {item.query_id: item for item in served}
    connection.register("served", pa.table({"query_id": pa.array(list(by_id), pa.string())}))
    try:
        found = rows(
            connection,
            INTERLEAVED_CLICKS,
            {"gap_seconds": float(session_gap), "click_action": click_action},
        )
    finally:
        connection.unregister("served")
    clicks: dict[str, list[str]] = {}
    sessions: dict[str, str] = {}
    uncredited = 0
    for row in found:
        query_id = str(row["query_id"])
        sessions[query_id] = _session(row)
        docs = clicks.setdefault(query_id, [])
        doc = _clicked_doc(by_id[query_id].interleaving, row)
        if doc is not None:
            docs.append(doc)
        elif row["object_id"] is not None or row["position"] is not None:
            uncredited += 1  # a click (not the NULL row of a search without one)
    ids = tuple(sorted(clicks))
    outcomes = tuple(outcome_of(*credit(by_id[q].interleaving, clicks[q])) for q in ids)
    return Scored(
        outcomes=outcomes,
        sessions=tuple(sessions[q] for q in ids),
        missing=len(by_id) - len(ids),
        uncredited=uncredited,
    )


def _session(row: Mapping[str, Any]) -> str:
    return json.dumps([row["client_id"], row["application"], int(row["session_number"])])


def _clicked_doc(interleaving: Interleaving, row: Mapping[str, Any]) -> str | None:
    """Return the served document a click row names (by id, else by position), or None."""
    doc, position = row["object_id"], row["position"]
    if doc is not None:
        return str(doc) if doc in interleaving.ids else None
    if position is not None and 1 <= int(position) <= len(interleaving.ids):
        return interleaving.ids[int(position) - 1]
    return None
