"""Find the rank of every relevant judgment in a run: the one input every measure needs.

Every measure the engine offers depends only on where the *relevant* documents sit in the
ranking (non-relevant ones add nothing to any sum), so the engine never sorts or scans whole
runs in Python. For a run given as ``{doc: score}`` it looks up the relevant documents'
scores and counts, with numpy, how many retrieved documents score higher; for a ranked list
it reads positions. String doc ids are resolved once here; the measures then work on flat
integer arrays of size "number of relevant judgments".

Ranking rules (trec_eval's):

- ``{doc: score}``: by score descending, ties broken by doc id descending (byte order, as
  trec_eval's ``strcmp``).
- a list of ids: the order given. A repeated id counts once, at its best position; later
  copies are dropped (the documents below move up) and counted in ``duplicates``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, compress
from operator import attrgetter, methodcaller
from typing import Protocol, TypeAlias, cast

import numpy as np
import numpy.typing as npt

from monitor.errors import InputError

#: Rank given to a relevant document the run did not retrieve.
NOT_RETRIEVED = np.iinfo(np.int64).max

#: Judgments: query id -> doc id -> integer grade (>= 1 relevant).
Qrels: TypeAlias = Mapping[str, Mapping[str, int]]
#: A run: query id -> ranked doc ids (best first) or doc id -> score.
Ranking: TypeAlias = Sequence[str] | Mapping[str, float]
Run: TypeAlias = Mapping[str, Ranking]

IntArray: TypeAlias = npt.NDArray[np.int64]
FloatArray: TypeAlias = npt.NDArray[np.float64]
BoolArray: TypeAlias = npt.NDArray[np.bool_]

# Bound on the cells of one block of padded scores (floats: 128 KB). A block's runs stay in
# cache from reading their scores to looking their relevant docs up, and the search after.
_BLOCK_CELLS = 1 << 14
_values = methodcaller("values")
_get = attrgetter("get")


class Judgments(Protocol):
    """Judgments as the engine reads them: per query (in order) how many docs it judges,
    their grades end to end, and their ids. An eval set's columns are read this way as they
    are (:class:`~monitor.evalset.columns.EvalColumns`); a ``{qid: {doc: grade}}`` mapping
    through :class:`QrelsTable`."""

    @property
    def ids(self) -> Sequence[str]: ...

    @property
    def counts(self) -> IntArray: ...

    @property
    def grades(self) -> IntArray: ...

    def docs(self, selected: BoolArray | None = None) -> Sequence[str]: ...

    def take(self, picked: Sequence[int]) -> Judgments: ...


@dataclass(frozen=True, slots=True, eq=False)
class QrelsTable:
    """A ``{qid: {doc: grade}}`` mapping read as :class:`Judgments`: its grades flattened
    (each checked to be an integer), its docs read from the mapping when asked."""

    ids: Sequence[str]
    judgments: Sequence[Mapping[str, int]]
    counts: IntArray
    grades: IntArray

    @classmethod
    def of(cls, qrels: Qrels) -> QrelsTable:
        """Return the table of ``qrels``; raise InputError for a grade that is no integer."""
        judgments = list(qrels.values())
        counts = np.fromiter(map(len, judgments), dtype=np.int64, count=len(judgments))
        return cls(list(qrels), judgments, counts, _grades(judgments, int(counts.sum())))

    def docs(self, selected: BoolArray | None = None) -> Sequence[str]:
        """Return the judged doc ids end to end (those ``selected``, when given)."""
        every = chain.from_iterable(self.judgments)
        if selected is None or selected.all():
            return list(every)
        return list(compress(every, selected.tolist()))

    def take(self, picked: Sequence[int]) -> QrelsTable:
        """Return the judgments of the queries at positions ``picked``, in that order."""
        judgments = [self.judgments[i] for i in picked]
        counts = np.fromiter(map(len, judgments), dtype=np.int64, count=len(judgments))
        grades = _grades(judgments, int(counts.sum()))
        return QrelsTable([self.ids[i] for i in picked], judgments, counts, grades)


def judgments_of(qrels: Qrels | Judgments) -> Judgments:
    """Return ``qrels`` as :class:`Judgments`: a mapping through :class:`QrelsTable`, columns
    (an eval set's) as they are."""
    return QrelsTable.of(qrels) if isinstance(qrels, Mapping) else qrels


@dataclass(frozen=True, slots=True, eq=False)
class RelevantRanks:
    """Where each relevant judgment of each evaluated query sits in the run.

    The ``m`` entries (one per relevant judgment) are sorted by query, then rank; entries of
    query ``i`` are the ``n_relevant[i]`` consecutive ones starting at ``starts[i]``. The
    ``judged_*`` arrays hold every judgment of the evaluated queries (any grade, negative
    ones included), sorted the same way, when the resolution was asked for them.
    """

    query_ids: tuple[str, ...]
    n_relevant: IntArray  # (n,) R: judgments with grade >= the relevance level
    n_retrieved: IntArray  # (n,) distinct ids the run returned (after max_docs/judged_only)
    duplicates: IntArray  # (n,) repeated ids dropped from the run
    missing: BoolArray  # (n,) the query is absent from the run
    query: IntArray  # (m,) query index of each relevant judgment
    grade: IntArray  # (m,)
    rank: IntArray  # (m,) 1-based rank, NOT_RETRIEVED when absent
    ideal_grade: IntArray  # (m,) grades sorted descending within each query
    relevance_level: int = 1
    judged_query: IntArray | None = None  # (j,) query index of every judgment
    judged_grade: IntArray | None = None  # (j,)
    judged_rank: IntArray | None = None  # (j,)
    _cache: dict[object, npt.NDArray[np.float64]] = field(default_factory=dict, repr=False)

    @property
    def n(self) -> int:
        """Return the number of evaluated queries."""
        return len(self.query_ids)

    @property
    def starts(self) -> IntArray:
        """Return the index of each query's first entry."""
        return np.cumsum(self.n_relevant) - self.n_relevant

    @property
    def position(self) -> IntArray:
        """Return each entry's 0-based position within its query (rank order)."""
        return np.arange(len(self.query), dtype=np.int64) - np.repeat(self.starts, self.n_relevant)

    def retrieved_within(self, k: int | None) -> BoolArray:
        """Return, per entry, whether the document was retrieved at rank <= k (any rank if None)."""
        return self.rank < NOT_RETRIEVED if k is None else self.rank <= k

    def relevant_within(self, k: int | None) -> FloatArray:
        """Return, per query, how many relevant documents were retrieved at rank <= k."""
        key = ("relevant_within", k)
        if key not in self._cache:
            hits = self.retrieved_within(k)
            self._cache[key] = np.bincount(self.query[hits], minlength=self.n).astype(np.float64)
        return self._cache[key]

    def per_relevant(self, values: FloatArray) -> FloatArray:
        """Return ``values`` divided by each query's R, 0 where R is 0."""
        out = np.zeros(self.n, dtype=np.float64)
        np.divide(values, self.n_relevant, out=out, where=self.n_relevant > 0)
        return out

    def judgments(self) -> tuple[IntArray, IntArray, IntArray]:
        """Return every judgment's (query index, grade, rank), sorted by query then rank."""
        if self.judged_query is None or self.judged_grade is None or self.judged_rank is None:
            raise ValueError("these ranks were resolved without the non-relevant judgments")
        return self.judged_query, self.judged_grade, self.judged_rank


@dataclass(frozen=True, slots=True)
class Resolution:
    """The ranks of the evaluated queries plus the counts of queries left aside.

    ``graded`` ranks every judgment with grade >= 1 over the same queries, for the measures
    whose gains are the grades (ndcg, dcg, err): trec_eval's relevance level leaves them be.
    It is ``ranks`` itself when the relevance level is 1.
    """

    ranks: RelevantRanks
    skipped_no_relevant: int
    not_judged: int
    graded: RelevantRanks
    not_in_run: int = 0


#: Ranks judged docs: (query ids, docs per query, docs, each query's index in the judgments'
#: order) -> (rank per doc, and per query the distinct docs retrieved, the copies dropped,
#: whether the run lacks it).
EntryRanker: TypeAlias = Callable[
    [Sequence[str], IntArray, Sequence[str], IntArray],
    tuple[IntArray, IntArray, IntArray, BoolArray],
]


def resolve_with(
    qrels: Qrels | Judgments,
    run_ids: Collection[str],
    rank_entries: EntryRanker,
    *,
    include_no_relevant: bool = False,
    relevance_level: int = 1,
    judged_only: bool = False,
    max_docs: int | None = None,
    with_judged: bool = False,
    only_in_run: bool = False,
) -> Resolution:
    """Rank the judgments of ``qrels`` in a run, as :func:`monitor.metrics.ranked.resolve`
    describes: ``run_ids`` are the run's query ids; ``rank_entries`` ranks the judged docs in
    it (the run's own :meth:`~monitor.metrics.ranked.RankedRun.ranker`).
    ``qrels`` is read as :class:`Judgments` (:func:`judgments_of`): an eval set's columns
    hand their judged docs over as :class:`~monitor.evalset.columns.JudgedDocs`, read from
    the columns' bytes.
    """
    if isinstance(relevance_level, bool) or relevance_level < 1:
        raise InputError("<relevance level>", "an integer >= 1", found=relevance_level)
    if max_docs is not None and (isinstance(max_docs, bool) or max_docs < 1):
        raise InputError("<max docs>", "a positive integer", found=max_docs)
    with_judged = with_judged or judged_only
    table = judgments_of(qrels)
    all_ids, lengths, grades = table.ids, table.counts, table.grades
    relevant = grades >= relevance_level
    owner = np.repeat(np.arange(len(all_ids), dtype=np.int64), lengths)
    n_relevant_all = np.bincount(owner[relevant], minlength=len(all_ids))

    keep = np.ones(len(all_ids), dtype=bool) if include_no_relevant else n_relevant_all > 0
    answerable = int(keep.sum())
    not_in_run = 0
    if only_in_run:
        in_run = np.fromiter((q in run_ids for q in all_ids), dtype=bool, count=len(all_ids))
        not_in_run = int((keep & ~in_run).sum())
        keep &= in_run
    kept = np.flatnonzero(keep)
    query_ids = tuple(map(all_ids.__getitem__, kept.tolist()))

    # The judgments to rank, of the kept queries, grouped by query.
    wanted = (np.ones(len(grades), dtype=bool) if with_judged else grades >= 1) & keep[owner]
    docs = table.docs(wanted)
    doc_grade = grades[wanted]
    n_wanted = np.bincount(owner[wanted], minlength=len(all_ids))[kept]

    ranks, n_retrieved, duplicates, missing = rank_entries(query_ids, n_wanted, docs, kept)
    query = np.repeat(np.arange(len(query_ids), dtype=np.int64), n_wanted)
    if max_docs is not None:
        ranks[ranks > max_docs] = NOT_RETRIEVED
        n_retrieved = np.minimum(n_retrieved, max_docs)
    if judged_only:
        ranks, n_retrieved = _judged_ranks(query, doc_grade, ranks, len(query_ids))

    def build(level: int) -> RelevantRanks:
        rel = doc_grade >= level
        if rel.all():  # the usual case: no copies of the m-sized arrays
            n_rel, q, g, r = n_wanted, query, doc_grade, ranks
        else:
            n_rel = np.bincount(query[rel], minlength=len(query_ids)).astype(np.int64)
            q, g, r = query[rel], doc_grade[rel], ranks[rel]
        order = _by_query(q, r)
        ideal = g[_by_query(q, -g)]
        q, g, r = q[order], g[order], r[order]
        del order
        every: tuple[IntArray | None, ...] = (None, None, None)
        if with_judged and rel.all():  # every judgment is relevant: the same arrays
            every = (q, g, r)
        elif with_judged:
            judged = _by_query(query, ranks)
            every = (query[judged], doc_grade[judged], ranks[judged])
        return RelevantRanks(
            query_ids=query_ids,
            n_relevant=n_rel,
            n_retrieved=n_retrieved,
            duplicates=duplicates,
            missing=missing,
            query=q,
            grade=g,
            rank=r,
            ideal_grade=ideal,
            relevance_level=level,
            judged_query=every[0],
            judged_grade=every[1],
            judged_rank=every[2],
        )

    binary = build(relevance_level)
    judged_ids = frozenset(all_ids)
    return Resolution(
        ranks=binary,
        skipped_no_relevant=len(all_ids) - answerable,
        not_judged=len(run_ids) - sum(map(judged_ids.__contains__, run_ids)),
        graded=binary if relevance_level == 1 else build(1),
        not_in_run=not_in_run,
    )


def _judged_ranks(
    query: IntArray, grade: IntArray, rank: IntArray, n: int
) -> tuple[IntArray, IntArray]:
    """Return ranks and retrieved counts once documents without a grade >= 0 are removed.

    A judged document's new rank is one plus the number of judged documents above it.
    """
    kept = (grade >= 0) & (rank < NOT_RETRIEVED)
    new = np.full(len(rank), NOT_RETRIEVED, dtype=np.int64)
    index = np.flatnonzero(kept)
    order = index[_by_query(query[index], rank[index])]
    counts = np.bincount(query[order], minlength=n).astype(np.int64)
    starts = np.cumsum(counts) - counts
    new[order] = np.arange(len(order), dtype=np.int64) - np.repeat(starts, counts) + 1
    return new, counts


def _by_query(query: IntArray, key: IntArray) -> IntArray:
    """Return the stable order of entries by query, then ``key``: ``np.lexsort((key, query))``.

    Unless the values are extreme, query and key fit one int64 together (a rank not
    retrieved counts as one past the deepest rank), and the order is one stable sort of it:
    entries come grouped by query, and sorting nearly sorted keys is several times faster
    than lexsort's two passes.
    """
    if not len(key):
        return np.zeros(0, dtype=np.int64)
    deepest = int(key.max(initial=0, where=key < NOT_RETRIEVED))
    key = np.minimum(key, deepest + 1)
    low = int(key.min())
    span = deepest + 2 - low
    if (int(query.max()) + 1) * span >= 1 << 62:
        return np.lexsort((key, query))
    return np.argsort(query * span + (key - low), kind="stable")


def _grades(judgments: list[Mapping[str, int]], count: int) -> IntArray:
    """Return all grades flattened, checking that each is an integer."""
    try:
        raw = np.fromiter(chain.from_iterable(map(_values, judgments)), np.float64, count=count)
    except (TypeError, ValueError) as exc:
        raise InputError("<qrels>", "integer grades", found=str(exc)) from None
    grades = raw.astype(np.int64)
    bad = np.flatnonzero(grades != raw)
    if len(bad):
        raise InputError("<qrels>", "integer grades", found=float(raw[bad[0]]))
    return grades


def rank_in_mapping(
    query_ids: Sequence[str],
    n_relevant: IntArray,
    rel_docs: Sequence[str],
    run: Run,
) -> tuple[IntArray, IntArray, IntArray, BoolArray]:
    """Return each relevant doc's rank and, per query, retrieved count, duplicates, absence."""
    rankings = list(map(run.get, query_ids))
    if set(map(type, rankings)) == {dict}:
        return _rank_scored(cast("list[dict[str, float]]", rankings), n_relevant, rel_docs)
    n = len(query_ids)
    ranks = np.full(len(rel_docs), NOT_RETRIEVED, dtype=np.int64)
    n_retrieved = np.zeros(n, dtype=np.int64)
    duplicates = np.zeros(n, dtype=np.int64)
    missing = np.zeros(n, dtype=bool)
    bounds = np.concatenate(([0], np.cumsum(n_relevant))).tolist()

    scored: list[int] = []  # queries whose ranking is a {doc: score} mapping
    scored_runs: list[Mapping[str, float]] = []
    for i, qid in enumerate(query_ids):
        ranking = run.get(qid)
        lo, hi = bounds[i], bounds[i + 1]
        if ranking is None:
            missing[i] = True
        elif isinstance(ranking, str):
            raise InputError("<run>", f"a list of doc ids for query {qid!r}", found=ranking)
        elif isinstance(ranking, Mapping):
            n_retrieved[i] = len(ranking)
            if hi > lo:
                scored.append(i)
                scored_runs.append(ranking)
        else:
            positions, dropped = _positions(ranking)
            n_retrieved[i] = len(positions)
            duplicates[i] = dropped
            ranks[lo:hi] = [positions.get(doc, NOT_RETRIEVED) for doc in rel_docs[lo:hi]]

    if scored:
        is_scored = np.zeros(n, dtype=bool)
        is_scored[scored] = True
        ranks[np.repeat(is_scored, n_relevant)] = _ranks_from_scores(
            scored_runs, rel_docs, np.asarray(bounds)[scored], n_relevant[scored]
        )
    return ranks, n_retrieved, duplicates, missing


def _rank_scored(
    rankings: list[dict[str, float]], n_relevant: IntArray, rel_docs: Sequence[str]
) -> tuple[IntArray, IntArray, IntArray, BoolArray]:
    """Return :func:`rank_in_mapping` of a run whose every ranking is a ``{doc: score}`` dict
    (the usual run given as Python dicts), each step for all queries at once in C."""
    n = len(rankings)
    n_retrieved = np.fromiter(map(len, rankings), dtype=np.int64, count=n)
    scored = np.flatnonzero(n_relevant > 0)
    firsts = (np.cumsum(n_relevant) - n_relevant)[scored]
    ranks = _ranks_from_scores(
        [rankings[i] for i in scored.tolist()], rel_docs, firsts, n_relevant[scored]
    )
    return ranks, n_retrieved, np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)


def _positions(ranking: Sequence[str]) -> tuple[dict[str, int], int]:
    """Return doc id -> 1-based rank, keeping each id's first position, and the copies dropped."""
    size = len(ranking)
    # Built from the end, so the first occurrence of a repeated id writes last and wins.
    positions = dict(zip(reversed(ranking), range(size, 0, -1), strict=True))
    if len(positions) == size:
        return positions, 0
    unique = dict.fromkeys(ranking)
    return dict(zip(unique, range(1, len(unique) + 1), strict=True)), size - len(unique)


def _ranks_from_scores(
    runs: list[Mapping[str, float]],
    rel_docs: Sequence[str],
    firsts: IntArray,
    counts: IntArray,
) -> IntArray:
    """Return the rank of each relevant doc in its ``{doc: score}`` run (trec_eval order).

    A doc's rank is 1 + the number of docs scoring higher + the number of docs with the same
    score and a greater id; ``rel_docs[firsts[j]:firsts[j] + counts[j]]`` are run ``j``'s
    relevant docs. The first count is a binary search in the run's sorted scores, over
    blocks of queries of similar run length; the rare queries with tied scores are ranked
    exactly in Python.
    """
    lengths = np.fromiter(map(len, runs), dtype=np.int64, count=len(runs))
    offsets = np.concatenate(([0], np.cumsum(counts)))
    out = np.full(int(offsets[-1]), NOT_RETRIEVED, dtype=np.int64)
    tied: list[int] = []
    for block in _blocks(lengths):
        block_docs = _docs_of(rel_docs, firsts[block], counts[block])
        tied.extend(_rank_block(block, runs, lengths, counts, offsets, block_docs, out))
    for j in tied:
        docs = rel_docs[firsts[j] : firsts[j] + counts[j]]
        out[offsets[j] : offsets[j + 1]] = _exact_ranks(runs[j], docs)
    return out


def _blocks(lengths: IntArray) -> Iterable[IntArray]:
    """Yield groups of query indices, by run length, whose padded score matrix (rows times
    the longest run) holds at most ``_BLOCK_CELLS`` cells, or is one run."""
    order = np.argsort(lengths, kind="stable")
    longest = np.maximum(lengths[order], 1)
    start = 0
    while start < len(order):
        # The next runs are no shorter: a block holds at most this many of them.
        window = longest[start : start + max(_BLOCK_CELLS // int(longest[start]), 1)]
        cells = np.arange(1, len(window) + 1) * window
        end = start + max(int(np.searchsorted(cells, _BLOCK_CELLS, side="right")), 1)
        yield order[start:end]
        start = end


def _rank_block(
    block: IntArray,
    runs: list[Mapping[str, float]],
    lengths: IntArray,
    counts: IntArray,
    offsets: IntArray,
    docs: Iterable[Iterable[str]],
    out: IntArray,
) -> list[int]:
    """Rank the relevant docs of one block of queries (``docs``, those of each query) into
    ``out``; return the queries with ties.

    The block's scores are read first, then each relevant doc's score is looked up in its
    run: the runs and their scores are still in cache, read from memory once for both.
    """
    block_runs = [runs[j] for j in block.tolist()]
    block_len = lengths[block]
    width = max(int(block_len.max()), 1)
    try:
        flat = np.fromiter(
            chain.from_iterable(map(_values, block_runs)), np.float64, count=int(block_len.sum())
        )
        # None, a doc the run does not hold, becomes NaN. A list converted at once is faster
        # than np.fromiter converting each value as it is looked up.
        looked = list(chain.from_iterable(map(map, map(_get, block_runs), docs)))
        wanted = np.fromiter(looked, np.float64, count=len(looked))
        del looked
    except (TypeError, ValueError) as exc:
        raise InputError("<run>", "numeric scores", found=str(exc)) from None
    if np.isnan(flat).any():
        raise InputError("<run>", "numeric scores", found="NaN")
    scores = _pad(flat, block_len, width, -np.inf)
    scores.sort(axis=1)  # ascending, the padding first
    del flat

    block_cnt = counts[block]
    row = np.repeat(np.arange(len(block), dtype=np.int64), block_cnt)
    entries = np.arange(len(row), dtype=np.int64) + np.repeat(
        offsets[block] - (np.cumsum(block_cnt) - block_cnt), block_cnt
    )
    found = ~np.isnan(wanted)  # a retrieved doc: its score is one of its row's
    row, entries, wanted = row[found], entries[found], wanted[found]
    cells = scores.ravel()
    at_most = _at_most(cells, row * width, width, wanted)
    out[entries] = width - at_most + 1
    # A tie: the cell before the last one <= the doc's score holds that score too.
    below = np.maximum(at_most - 2, 0)
    tie = (at_most >= 2) & (cells[row * width + below] == wanted)
    tied: list[int] = block[np.unique(row[tie])].tolist()
    return tied


def _docs_of(docs: Sequence[str], firsts: IntArray, counts: IntArray) -> Iterable[Sequence[str]]:
    """Return the slices ``docs[firsts[i]:firsts[i] + counts[i]]``, one per query."""
    return map(docs.__getitem__, map(slice, firsts.tolist(), (firsts + counts).tolist()))


def _at_most(cells: FloatArray, base: IntArray, width: int, wanted: FloatArray) -> IntArray:
    """Return, per wanted value, how many of the ``width`` sorted cells from its ``base``
    are <= it: a binary search of all the values at once, a halving step per pass (each
    pass in place, on arrays of the values' length)."""
    count = np.zeros(len(wanted), dtype=np.int64)
    probe = np.empty_like(count)
    inside = np.empty(len(wanted), dtype=bool)
    ok = np.empty(len(wanted), dtype=bool)
    step = 1 << (width.bit_length() - 1)
    while step:
        np.add(count, step, out=probe)
        np.less_equal(probe, width, out=inside)
        np.minimum(probe, width, out=probe)
        probe += base
        probe -= 1
        np.less_equal(cells[probe], wanted, out=ok)
        ok &= inside
        np.add(count, step, out=count, where=ok)
        step >>= 1
    return count


def _pad(flat: FloatArray, lengths: IntArray, width: int, fill: float) -> FloatArray:
    """Return a (len(lengths), width) matrix with row i holding the next lengths[i] values."""
    rows = len(lengths)
    if rows and bool((lengths == width).all()):
        return flat.reshape(rows, width)
    dense = np.full((rows, width), fill, dtype=np.float64)
    dense[np.arange(width) < lengths[:, None]] = flat
    return dense


def _exact_ranks(ranking: Mapping[str, float], docs: Sequence[str]) -> list[int]:
    """Return the ranks of ``docs`` in ``ranking`` sorted by score, then doc id, descending."""
    ordered = sorted(ranking.items(), key=lambda item: (item[1], item[0]), reverse=True)
    positions = {doc: rank for rank, (doc, _) in enumerate(ordered, start=1)}
    return [positions.get(doc, NOT_RETRIEVED) for doc in docs]
