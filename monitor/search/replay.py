"""The ``replay`` search kind: answer every query from a saved run.

Options: ``path`` and ``format`` (``trec``, ``json`` or ``auto``, the default: JSON when the
file starts with ``{`` or ``[``), or instead ``bundled``: a run shipped with the package, named
``<set>/<method>`` (``larkfield/keyword``; see :mod:`monitor.evalset.bundled`).

The file is read by :mod:`monitor.search.saved`, as ``evaluate`` reads a run file: TREC runs
ranked as trec_eval ranks them, JSON ``{qid: [hits best first]}`` or ``{qid: {doc id:
score}}``, and every score a finite number.

The replay needs the query id, so it declares ``takes_query``; it answers from memory, so it
declares ``in_memory`` and the runner calls it without worker threads. A run held as columns
answers the whole eval set in one call (``answer_all``, :mod:`monitor.search.answers`). A
query the run does not hold is answered with no hits, as trec_eval counts it.

A TREC run file is held as the columns of :mod:`monitor.search.trec_columns` (doc ids as
fixed-width bytes, scores as floats, one slice per query): a million-query run costs a few
arrays, not a Python object per line, and a query's hits are built only when it is asked.
A file the column reader leaves to the line reader is read by :mod:`monitor.search.saved`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from monitor.errors import InputError, SearchOutputError, SearchSetupError
from monitor.records import Hit, MetaValue, Query
from monitor.search.base import HitLike, normalise_hits
from monitor.search.options import Options
from monitor.search.saved import FORMATS, load_hits

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from monitor.evalset.columns import EvalColumns
    from monitor.run.answers import Answers
    from monitor.search.trec_columns import TrecColumns


class ReplaySearch:
    """A search that answers each query with its ranking in a saved run."""

    takes_query = True
    #: Every answer is a look-up in the loaded run: the runner needs no thread to wait on it.
    in_memory = True
    #: Every answer is a tuple of Hits checked when the run was read (ids, finite scores).
    checked_hits = True

    def __init__(self, run: Mapping[str, Sequence[HitLike]], *, source: str = "<run>") -> None:
        self.source = source
        rankings: dict[str, tuple[Hit, ...]] = {}
        for qid, ranking in run.items():
            try:
                rankings[str(qid)] = normalise_hits(ranking)
            except SearchOutputError as exc:
                raise InputError(source, f"a ranking for query {qid!r}: {exc.message}") from None
        self._run: _SavedRun = _HitRun(rankings)
        self._queries = len(rankings)

    @classmethod
    def from_file(cls, path: str | Path, format: str = "auto") -> ReplaySearch:
        """Load a TREC or JSON run file; raise InputError where it is malformed."""
        replay = cls({}, source=str(path))
        replay._run = _read(Path(path), format)
        replay._queries = len(replay._run)
        return replay

    def __call__(self, query: Query, k: int) -> tuple[Hit, ...]:
        """Return the saved ranking of ``query.id``, cut to ``k``."""
        return self._run.hits(query.id, k)

    def answer_all(self, queries: EvalColumns, k: int) -> Answers | None:
        """Return every query's saved ranking at once (a TREC run held as columns), or None:
        a run read into mappings is answered query by query."""
        return self._run.answer_all(queries.ids, k)

    def close(self) -> None:
        """Let go of the loaded run (a million-query run holds hundreds of megabytes beside
        what its answers share); a closed replay answers no further query."""
        self._run = _Closed(self.source)

    def stats(self) -> dict[str, MetaValue]:
        """Return where the run came from and how many queries it holds."""
        return {"replay_source": self.source, "replay_queries": self._queries}


class _SavedRun(Protocol):
    """A saved run's rankings, however they were read."""

    def __len__(self) -> int: ...

    def hits(self, qid: str, k: int) -> tuple[Hit, ...]:
        """Return the ranking of ``qid`` cut to ``k`` (no hit for a query it lacks)."""
        ...

    def answer_all(self, query_ids: Sequence[str], k: int) -> Answers | None:
        """Return every query's ranking at once, or None to be asked query by query."""
        ...


class _HitRun:
    """A run's rankings as checked Hit tuples (a JSON run, the line reader's, one given in
    code): their texts and fields are answered with them."""

    def __init__(self, rankings: Mapping[str, tuple[Hit, ...]]) -> None:
        self._rankings = rankings

    def __len__(self) -> int:
        return len(self._rankings)

    def hits(self, qid: str, k: int) -> tuple[Hit, ...]:
        return self._rankings.get(qid, ())[:k]

    def answer_all(self, query_ids: Sequence[str], k: int) -> Answers | None:
        return None


class _Closed:
    """What a closed replay holds instead of its run: every answer is refused."""

    def __init__(self, source: str) -> None:
        self._source = source

    def __len__(self) -> int:
        return 0

    def hits(self, qid: str, k: int) -> tuple[Hit, ...]:
        raise RuntimeError(f"the replay of {self._source} is closed")

    def answer_all(self, query_ids: Sequence[str], k: int) -> Answers | None:
        raise RuntimeError(f"the replay of {self._source} is closed")


class _ColumnRun:
    """A TREC run's rankings as arrays: per query, a range of rows of doc ids and scores."""

    def __init__(self, columns: TrecColumns) -> None:
        import numpy as np

        # Only what answers need is kept: the columns' query codes and row hashes go.
        self._words: npt.NDArray[np.uint64] = columns.doc_words
        self._scores: npt.NDArray[np.float64] = columns.score
        self._copy: npt.NDArray[np.bool_] = columns.copy
        counts = np.bincount(columns.query, minlength=len(columns.query_ids)).astype(np.int64)
        self._counts = counts
        self._firsts = np.cumsum(counts) - counts
        self._query_ids = columns.query_ids
        self._codes = columns.codes  # the reader's own table, not another

    def __len__(self) -> int:
        return len(self._codes)

    def hits(self, qid: str, k: int) -> tuple[Hit, ...]:
        """Return the ranking of ``qid`` (repeated ids kept, as the line reader keeps them),
        cut to ``k``."""
        code = self._codes.get(qid)
        if code is None:
            return ()
        start = int(self._firsts[code])
        end = start + int(self._counts[code])
        # k < 0 cuts as a tuple's slice [:k]: all but the last -k.
        end = min(end, start + k) if k >= 0 else max(start, end + k)
        width = self._words.shape[1]
        # Big-endian words are the id's bytes; numpy's fixed-width bytes drop the zero
        # padding (an id holds no NUL byte: the column reader leaves those to the line reader).
        docs = self._words[start:end].astype(">u8").view(f"S{8 * width}").reshape(-1).tolist()
        return tuple(map(Hit, map(bytes.decode, docs), self._scores[start:end].tolist()))

    def answer_all(self, query_ids: Sequence[str], k: int) -> Answers:
        """Return every query's ranking cut to ``k`` with its later copies dropped, as the
        runner keeps what :meth:`hits` returns."""
        import numpy as np

        from monitor.run.answers import Answers

        n = len(query_ids)
        if n == len(self._query_ids) and tuple(query_ids) == self._query_ids:
            code = np.arange(n, dtype=np.int64)  # the eval set in the run file's order
        else:
            code = np.fromiter((self._codes.get(q, -1) for q in query_ids), np.int64, count=n)
        held = code >= 0
        safe = np.where(held, code, 0)
        taken = np.where(held, np.minimum(self._counts[safe], max(k, 0)), 0)
        offsets = np.cumsum(taken) - taken
        rows = np.repeat(self._firsts[safe] - offsets, taken) + np.arange(int(taken.sum()))
        kept = ~self._copy[rows]
        counts = np.bincount(np.repeat(np.arange(n), taken)[kept], minlength=n).astype(np.int64)
        rows = rows[kept]
        if len(rows) == len(self._words) and bool((rows == np.arange(len(rows))).all()):
            # Every row, in the file's order: the answers share the run's arrays.
            words, scores = self._words, self._scores
        else:
            words, scores = self._words[rows], self._scores[rows]
        return Answers(counts=counts, doc_words=words, scores=scores, duplicates=taken - counts)


def _read(path: Path, format: str) -> _SavedRun:
    """Return the run at ``path``: a TREC run as columns when the column readers read it,
    else as the line reader's (or the JSON reader's) Hit lists."""
    from monitor.search.trec_arrow import read_columns

    # An unknown format is the line reader's to name.
    columns = read_columns(path, format) if format in FORMATS else None
    if columns is None:
        # The reader has checked every id and score: its Hit lists need no second check.
        return _HitRun({qid: tuple(hits) for qid, hits in load_hits(path, format).items()})
    return _ColumnRun(columns)


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
    from monitor.errors import UsageError
    from monitor.evalset import bundled

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
