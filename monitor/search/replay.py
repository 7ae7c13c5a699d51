"""The ``replay`` search kind: answer every query from a saved run.

Options: ``path`` and ``format`` (``trec``, ``json`` or ``auto``, the default: JSON when the
file starts with ``{`` or ``[``), or instead ``bundled``: a run shipped with the package, named
``<set>/<method>`` (``larkfield/keyword``; see :mod:`monitor.bundled`).

The file is read by :mod:`monitor.search.saved`, as ``evaluate`` reads a run file: TREC runs
ranked as trec_eval ranks them, JSON ``{qid: [hits best first]}`` or ``{qid: {doc id:
score}}``, and every score a finite number.

The replay needs the query id, so it declares ``takes_query``. A query the run does not
hold is answered with no hits, as trec_eval counts it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from monitor.errors import InputError, SearchOutputError, SearchSetupError
from monitor.records import Hit, MetaValue, Query
from monitor.search.base import HitLike, normalise_hits
from monitor.search.options import Options
from monitor.search.saved import FORMATS, load_hits


class ReplaySearch:
    """A search that answers each query with its ranking in a saved run."""

    takes_query = True

    def __init__(self, run: Mapping[str, Sequence[HitLike]], *, source: str = "<run>") -> None:
        self.source = source
        rankings: dict[str, tuple[Hit, ...]] = {}
        for qid, ranking in run.items():
            try:
                rankings[str(qid)] = normalise_hits(ranking)
            except SearchOutputError as exc:
                raise InputError(source, f"a ranking for query {qid!r}: {exc.message}") from None
        self._run = rankings

    @classmethod
    def from_file(cls, path: str | Path, format: str = "auto") -> ReplaySearch:
        """Load a TREC or JSON run file; raise InputError where it is malformed."""
        # The reader has checked every id and score: its Hit lists need no second check.
        replay = cls({}, source=str(path))
        replay._run = {qid: tuple(hits) for qid, hits in load_hits(path, format).items()}
        return replay

    def __call__(self, query: Query, k: int) -> tuple[Hit, ...]:
        """Return the saved ranking of ``query.id``, cut to ``k``."""
        return self._run.get(query.id, ())[:k]

    def stats(self) -> dict[str, MetaValue]:
        """Return where the run came from and how many queries it holds."""
        return {"replay_source": self.source, "replay_queries": len(self._run)}


def build(options: Mapping[str, object]) -> ReplaySearch:
    """Build a :class:`ReplaySearch` from the ``replay`` kind's options."""
    opts = Options("replay", options)
    bundled = opts.string("bundled")
    path = opts.string("path")
    file_format = opts.string("format", "auto")
    opts.done()
    if bundled is not None:
        opts.spec = f"replay:{bundled}"
        if path is not None:
            raise opts.fail("path", "no path together with 'bundled'", path)
        return _bundled(opts, bundled)
    if path is None:
        raise opts.fail("path", "a run file (or 'bundled': a run shipped with the package)")
    opts.spec = f"replay:{path}"
    if file_format not in FORMATS:
        raise opts.fail("format", " or ".join(FORMATS), file_format)
    try:
        return ReplaySearch.from_file(path, file_format or "auto")
    except InputError as exc:
        raise SearchSetupError(opts.spec, str(exc)) from exc


def _bundled(opts: Options, name: str) -> ReplaySearch:
    """Return a replay of the bundled run ``<set>/<method>``."""
    from monitor import bundled
    from monitor.errors import UsageError

    evalset, _, method = name.partition("/")
    if evalset != "larkfield" or not method:
        raise opts.fail(
            "bundled",
            "larkfield/<method> with a method of " + ", ".join(bundled.LARKFIELD_METHODS),
            name,
        )
    try:
        run = bundled.larkfield_run(method)
    except UsageError as exc:
        raise SearchSetupError(opts.spec, exc.message) from exc
    return ReplaySearch(run, source=f"bundled:{name}")
