"""The ``replay`` search kind: answer every query from a saved run.

Options: ``path`` and ``format`` (``trec``, ``json`` or ``auto``, the default: JSON when the
file starts with ``{`` or ``[``), or instead ``bundled``: a run shipped with the package, named
``<set>/<method>`` (``larkfield/keyword``; see :mod:`monitor.bundled`).

A TREC run line is ``qid Q0 docno rank score tag``. As in trec_eval the rank column is
ignored: each query's documents are ranked by score descending, ties broken by doc id in
descending byte order. A JSON run is ``{qid: [hits best first]}`` (doc id strings or
``{"id", "score", "text"}`` objects) or ``{qid: {doc id: score}}`` (ranked like a TREC run).

The replay needs the query id, so it declares ``takes_query``. A query the run does not
hold is answered with no hits, as trec_eval counts it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from monitor.errors import InputError, SearchOutputError, SearchSetupError
from monitor.records import Hit, MetaValue, Query
from monitor.search.base import HitLike, normalise_hits
from monitor.search.options import Options

_FORMATS = ("auto", "trec", "json")


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
        return cls(load_run(path, format), source=str(path))

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
    if file_format not in _FORMATS:
        raise opts.fail("format", " or ".join(_FORMATS), file_format)
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


def load_run(path: str | Path, format: str = "auto") -> dict[str, list[Hit]]:
    """Read a TREC or JSON run as ``{qid: [Hit, ...] best first}``; raise InputError."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(path, "UTF-8 text", found=f"byte {exc.start}") from None
    except OSError as exc:
        raise InputError(path, "a readable run file", found=exc.strerror) from None
    if format == "json" or (format == "auto" and text.lstrip().startswith(("{", "["))):
        return _json_run(path, text)
    from monitor.search.saved import load_scored_trec_run

    return {
        qid: [Hit(doc, score) for doc, score in pairs]
        for qid, pairs in load_scored_trec_run(path).items()
    }


def _json_run(path: Path, text: str) -> dict[str, list[Hit]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(path, f"valid JSON ({exc.msg})", line=exc.lineno) from None
    if not isinstance(data, dict):
        raise InputError(path, "a JSON object {query id: ranking}", found=type(data).__name__)
    run: dict[str, list[Hit]] = {}
    for qid, ranking in data.items():
        if isinstance(ranking, dict):
            if not all(
                isinstance(score, int | float) and not isinstance(score, bool)
                for score in ranking.values()
            ):
                raise InputError(path, f"numeric scores for query {qid!r}", found=ranking)
            pairs = sorted(((float(score), doc) for doc, score in ranking.items()), reverse=True)
            run[qid] = [Hit(doc, score) for score, doc in pairs]
            continue
        try:
            run[qid] = list(normalise_hits(ranking))
        except SearchOutputError as exc:
            raise InputError(path, f"a ranking for query {qid!r}: {exc.message}") from None
    return run
