"""The ``interleave`` search kind: two searches merged by team draft, for a live A/B test.

Options:

``a``, ``b`` (required)
    The two searches, each a mapping written as a suite's ``search`` is: a ``kind`` and that
    kind's options (``{kind: replay, bundled: larkfield/keyword}``). Each is built through
    the search registry, so any kind serves, third-party ones too (not an ``async`` one:
    the merge waits on both answers in turn).
``seed`` (default 0)
    The interleaving's seed: with the query's text and id it seeds the coin
    (:mod:`monitor.traffic.interleave`), so a run is replayed exactly.
``team_log`` (default none)
    A JSONL file each served interleaving is appended to (query id, query, seed, ids,
    teams; :mod:`monitor.traffic.teams`), so the clicks on live traffic can be credited and
    scored later (``interleave score``).

Each query asks both searches for ``k`` hits (enough: a team never needs more than ``k`` of
its own to fill a list of ``k``) and answers with the merged list, each hit as its team gave
it without its score (the two searches' scores are not on one scale). A hit has no slot for
the team that placed it: the team of each position is kept in the team log only.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from monitor.errors import SearchSetupError
from monitor.records import Hit, MetaValue, Query
from monitor.search.base import (
    Search,
    answers_in_memory,
    close_search,
    gives_checked_hits,
    is_async,
    normalise_hits,
    wants_query,
)
from monitor.search.options import Options
from monitor.traffic.interleave import team_draft
from monitor.traffic.teams import Served, TeamLog


class InterleaveSearch:
    """A search that answers with the team-draft interleaving of two searches."""

    takes_query = True

    def __init__(
        self,
        a: Search,
        b: Search,
        *,
        seed: int = 0,
        team_log: Path | None = None,
        labels: tuple[str, str] = ("a", "b"),
    ) -> None:
        self.a, self.b = a, b
        self.seed = seed
        self.labels = labels
        self.team_log = None if team_log is None else TeamLog(team_log)
        # Both answer from memory: so does the merge (appending a line to a local file aside).
        self.in_memory = answers_in_memory(a) and answers_in_memory(b)

    def __call__(self, query: Query, k: int) -> tuple[Hit, ...]:
        """Return the interleaving of both searches' top ``k`` for ``query``."""
        hits_a, hits_b = answer(self.a, query, k), answer(self.b, query, k)
        merged = team_draft(
            [hit.id for hit in hits_a],
            [hit.id for hit in hits_b],
            k,
            seed=self.seed,
            query=query.text,
            session=query.id,
        )
        given = {hit.id: hit for hit in reversed(hits_b)}
        given.update({hit.id: hit for hit in reversed(hits_a)})
        if self.team_log is not None:
            self.team_log.append(Served(query.id, query.text, self.seed, merged))
        return tuple(Hit(doc, None, given[doc].text) for doc in merged.ids)

    def stats(self) -> dict[str, MetaValue]:
        """Return the two searches' specs and the seed, recorded with the run."""
        return {
            "interleave_a": self.labels[0],
            "interleave_b": self.labels[1],
            "interleave_seed": self.seed,
        }

    def close(self) -> None:
        """Close both searches."""
        close_search(self.a)
        close_search(self.b)


def answer(search: Search, query: Query, k: int) -> tuple[Hit, ...]:
    """Return what ``search`` (not async) answers for ``query``, as checked Hits."""
    raw = search(query, k) if wants_query(search) else search(query.text, k)  # type: ignore[arg-type]
    if gives_checked_hits(search) and type(raw) is tuple:
        return raw
    return normalise_hits(raw)


def build(options: Mapping[str, object]) -> InterleaveSearch:
    """Build an :class:`InterleaveSearch` from the ``interleave`` kind's options."""
    opts = Options("interleave", options)
    specs = {team: opts.mapping(team) for team in ("a", "b")}
    seed = opts.typed("seed", int, "an integer seed")
    team_log = opts.string("team_log")
    opts.done()
    first = _built(opts, "a", specs["a"])
    try:
        second = _built(opts, "b", specs["b"])
    except SearchSetupError:
        close_search(first)
        raise
    labels = (_label(specs["a"]), _label(specs["b"]))
    log = None if team_log is None else Path(team_log)
    if log is not None and not log.parent.is_dir():
        raise opts.fail("team_log", "a file in an existing folder", team_log)
    return InterleaveSearch(first, second, seed=seed or 0, team_log=log, labels=labels)


def _built(opts: Options, team: str, spec: Mapping[str, object]) -> Search:
    """Return the search option ``team`` names, built through the registry."""
    from monitor.search.registry import build_search

    kind = spec.get("kind")
    if not isinstance(kind, str) or not kind:
        raise opts.fail(team, "a search: a mapping with a 'kind' and its options", spec or None)
    try:
        search = build_search(kind, {key: value for key, value in spec.items() if key != "kind"})
    except SearchSetupError as error:
        raise SearchSetupError(opts.spec, f"option {team!r}: {error}", option=team) from error
    if is_async(search):
        close_search(search)
        raise opts.fail(team, "a search that answers synchronously (not async def)", kind)
    return search


def _label(spec: Mapping[str, object]) -> str:
    """Return a short name for a search spec: its kind and its one naming option."""
    kind = str(spec.get("kind"))
    for key in ("bundled", "path", "target"):  # never the url: it may hold a credential
        if isinstance(spec.get(key), str):
            return f"{kind}:{spec[key]}"
    return kind
