"""A verification sample: a stratified random share of a judge's grades for people to grade
blind.

The population is the (query, doc) pairs the judge source graded that no person has graded
yet (a pair people graded is verified already). Strata are the judge's grade, crossed with
the query's value of the suite's first segment key when it has one (``(none)`` for a query
without it). **Allocation is proportional**: the sample is ``round(share * population)``
pairs (at least 1), split over the strata by their sizes with the largest remainders
rounded up, and then every non-empty stratum gets at least one pair (so a rare grade is
always checked, and the sample may exceed the share by a few pairs). Within a stratum the
pairs are drawn without replacement by ``random.Random(seed)``, from the pairs in query and
doc id order, the strata taken in order: the same seed and layers give the same sample.

With ``by="query"`` the unit drawn is a query instead: a share of the queries with an
unverified judge grade (strata: the segment value alone), each with every one of its
unverified judge grades, so that graded back it is a *verified query*
(:mod:`monitor.judgments.calibrated`): the random sample of queries the judge-corrected
figures of ``alert_labels: calibrated`` need.

The sample is written blind, as labeling-queue items (:class:`~monitor.judgments.todo.
TodoItem`) in query then doc order: neither the judge's grade nor the stratum is in the
file, and the order tells nothing of them. Grading it back is ``judgments add`` with a human
layer; the agreement then has the overlap.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from monitor.errors import UsageError
from monitor.evalset import EvalSet
from monitor.judgments.merge import merged
from monitor.judgments.todo import DocText, TodoItem, no_doc_text, todo_items
from monitor.store import JudgmentLayer, RunRecord

if TYPE_CHECKING:
    from monitor.config.model import SuiteConfig
    from monitor.store import Store

#: The segment value of a query whose metadata lacks the segment key.
NO_SEGMENT = "(none)"


@dataclass(frozen=True, slots=True)
class Stratum:
    """One stratum: the judge's grade (None when queries are drawn), the segment value (None
    without a segment), how many units (pairs, or queries) it holds and how many were drawn."""

    grade: int | None
    segment: str | None
    size: int
    drawn: int

    def describe(self) -> str:
        """Return ``grade 1, language=de: 3 of 27`` (``queries, language=de: ...``)."""
        what = "queries" if self.grade is None else f"grade {self.grade}"
        where = "" if self.segment is None else f", {self.segment}"
        return f"{what}{where}: {self.drawn} of {self.size}"


@dataclass(frozen=True, slots=True)
class VerifySample:
    """The drawn pairs (blind queue items, by query then doc), the strata and the population."""

    items: tuple[TodoItem, ...]
    strata: tuple[Stratum, ...]
    population: int


def unverified(
    frozen: EvalSet, layers: Sequence[JudgmentLayer], judge: str
) -> dict[tuple[str, str], int]:
    """Return (query, doc) -> grade for the pairs ``judge`` graded and no person has."""
    human = merged(frozen, [layer for layer in layers if layer.kind == "human"])
    out: dict[tuple[str, str], int] = {}
    for layer in layers:
        if layer.kind != "judge" or layer.source != judge:
            continue
        for qid, docs in layer.grades.items():
            query = human.get(qid)
            if query is None:
                continue
            for doc, grade in docs.items():
                if doc not in query.judgments:
                    out.setdefault((qid, doc), grade)
    return out


def allocate(sizes: Sequence[int], share: float) -> list[int]:
    """Return how many to draw from strata of ``sizes``: ``round(share * total)`` (at least
    1) split proportionally by largest remainder, then at least one per non-empty stratum."""
    if not 0 < share <= 1:
        raise UsageError(f"expected a share above 0 of at most 1, found {share!r}")
    total = sum(sizes)
    if not total:
        return [0 for _ in sizes]
    wanted = max(1, round(share * total))
    exact = [wanted * size / total for size in sizes]
    counts = [math.floor(x) for x in exact]
    order = sorted(range(len(sizes)), key=lambda i: (-(exact[i] - counts[i]), i))
    for i in order[: wanted - sum(counts)]:
        counts[i] += 1
    return [
        min(size, max(count, 1 if size else 0)) for count, size in zip(counts, sizes, strict=True)
    ]


def verify_sample(
    frozen: EvalSet,
    layers: Sequence[JudgmentLayer],
    judge: str,
    *,
    share: float = 0.1,
    seed: int = 0,
    segment: str | None = None,
    runs: Sequence[RunRecord] = (),
    depth: int = 10,
    doc_text: DocText = no_doc_text,
    by: Literal["pair", "query"] = "pair",
) -> VerifySample:
    """Draw the verification sample of ``judge``'s unverified grades (see the module).

    ``runs`` (the latest run and its baseline) give each item its best rank and pipelines
    where their top ``depth`` holds it (else rank 0, no pipeline); ``doc_text`` its text;
    ``by`` whether pairs or whole queries are drawn.
    """
    population = unverified(frozen, layers, judge)
    # The units drawn: a pair, or a query's id alone; each stands for the pairs it holds.
    groups: dict[tuple[int | None, str | None], list[tuple[str, ...]]] = {}
    pairs_of: dict[tuple[str, ...], list[tuple[str, str]]] = {}
    for (qid, doc), grade in sorted(population.items()):
        value = None
        if segment is not None:
            found = frozen[qid].metadata.get(segment)
            value = f"{segment}={NO_SEGMENT if found is None else found}"
        unit: tuple[str, ...] = (qid, doc) if by == "pair" else (qid,)
        if unit not in pairs_of:
            groups.setdefault((grade if by == "pair" else None, value), []).append(unit)
        pairs_of.setdefault(unit, []).append((qid, doc))
    keys = sorted(groups, key=lambda key: (key[0] or 0, key[1] or ""))
    counts = allocate([len(groups[key]) for key in keys], share) if keys else []
    rng = random.Random(seed)
    drawn: list[tuple[str, str]] = []
    strata = []
    for key, count in zip(keys, counts, strict=True):
        for unit in rng.sample(groups[key], count):
            drawn += pairs_of[unit]
        strata.append(Stratum(key[0], key[1], len(groups[key]), count))
    human = merged(frozen, [layer for layer in layers if layer.kind == "human"])
    pooled = {
        (item.query_id, item.doc_id): item
        for item in todo_items(human, runs, depth=depth, doc_text=no_doc_text)
    }
    items = []
    for qid, doc in sorted(drawn):
        known = pooled.get((qid, doc))
        items.append(
            TodoItem(
                query_id=qid,
                query=frozen[qid].text,
                doc_id=doc,
                best_rank=known.best_rank if known is not None else 0,
                pipelines=known.pipelines if known is not None else (),
                doc_text=doc_text(doc),
            )
        )
    return VerifySample(tuple(items), tuple(strata), len(population))


def suite_verify_sample(
    suite: SuiteConfig,
    store: Store,
    frozen: EvalSet,
    *,
    share: float = 0.1,
    seed: int = 0,
    by: Literal["pair", "query"] = "pair",
) -> VerifySample:
    """Draw the verification sample of ``suite``'s judge from ``store``: its layers, its latest
    run and baseline for each item's rank, its first segment key for the strata, its corpus
    for the texts. Raise UsageError when the suite has no judge."""
    from monitor.judgments.judges import judge_source
    from monitor.judgments.suite import doc_texts

    if suite.judge is None:
        raise UsageError(f"suite {suite.name!r} has no judge whose grades to verify")
    runs = [run for run in (store.latest_run(suite.name),) if run is not None]
    baseline = store.get_baseline(suite.name)
    if baseline is not None and all(baseline.run_id != run.run_id for run in runs):
        runs.append(baseline)
    return verify_sample(
        frozen,
        store.layers(suite.name),
        judge_source(suite.judge),
        share=share,
        seed=seed,
        segment=suite.segments[0] if suite.segments else None,
        runs=runs,
        depth=suite.k,
        doc_text=doc_texts(suite),
        by=by,
    )
