"""A run as a calibrated comparison reads it: scored with people's labels and the judge's.

With ``alert_labels: calibrated`` the quality rules read the judge-corrected figures of
:mod:`monitor.compare.ppi`, which need each run scored twice from its stored rankings:

- **human**: the frozen set with the human layers (the ``human`` view);
- **judge**: the same with the suite judge's grade on *every* pair it graded, a person's
  grade of the same pair notwithstanding (the ``all`` view keeps the person's, which would
  hide the judge's error on exactly the pairs people verified).

A query is **judged** when the judge graded at least one document of its top k, and
**verified** when people graded every one of those too (a pair the judge graded and people
graded since, from ``judgments verify`` or ``judgments add``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from monitor.evalset import EvalSet
from monitor.judgments.judges import judge_source
from monitor.judgments.merge import merged
from monitor.judgments.rescore import rescore
from monitor.records import Query
from monitor.store import JudgmentLayer, RunRecord, Store

if TYPE_CHECKING:
    from monitor.config.model import SuiteConfig
    from monitor.evalset.corpus import Corpus


@dataclass(frozen=True, slots=True, eq=False)
class CalibratedViews:
    """One run scored with people's labels only (``human``) and with the judge's on every
    pair it graded (``judge``), the queries with a judge grade in the run's top k
    (``judged``) and those of them people verified (``verified``)."""

    human: RunRecord
    judge: RunRecord
    judged: frozenset[str]
    verified: frozenset[str]


def judge_labelled(frozen: EvalSet, layers: Sequence[JudgmentLayer], source: str) -> EvalSet:
    """Return ``frozen`` with the human layers, then the grades of judge ``source`` on every
    pair it graded."""
    human = merged(frozen, [layer for layer in layers if layer.kind == "human"])
    grades = _judge_grades(layers, source)
    if not grades:
        return human
    out = EvalSet(frozen.name)
    for query in human:
        mine = grades.get(query.id)
        judgments = query.judgments if not mine else {**query.judgments, **mine}
        out.add(Query(query.id, query.text, judgments, query.metadata))
    return out


def calibrated_views(
    store: Store,
    suite: SuiteConfig,
    frozen: EvalSet,
    run: RunRecord,
    *,
    corpus: Corpus | None = None,
) -> CalibratedViews:
    """Return ``run`` scored both ways, with its judged and verified queries (see the
    module's docstring); a suite without judge has none judged."""
    layers = store.layers(suite.name)
    human_set = merged(frozen, [layer for layer in layers if layer.kind == "human"])
    source = judge_source(suite.judge) if suite.judge is not None else None
    grades = _judge_grades(layers, source) if source is not None else {}
    judge_set = human_set
    if source is not None and grades:
        judge_set = judge_labelled(frozen, layers, source)
    human = rescore(run, human_set, corpus=corpus)
    judge = human if judge_set is human_set else rescore(run, judge_set, corpus=corpus)
    judged: set[str] = set()
    verified: set[str] = set()
    by_people = {query.id: query.judgments for query in human_set}
    for query in run.queries:
        mine = grades.get(query.query_id)
        if not mine or query.error_type is not None:
            continue
        top = [doc for doc in query.retrieved_ids[: suite.k] if doc in mine]
        if not top:
            continue
        judged.add(query.query_id)
        people = by_people.get(query.query_id, {})
        if all(doc in people for doc in top):
            verified.add(query.query_id)
    return CalibratedViews(human, judge, frozenset(judged), frozenset(verified))


def _judge_grades(layers: Sequence[JudgmentLayer], source: str | None) -> dict[str, dict[str, int]]:
    """Return query -> doc -> grade of the judge ``source``'s layers (a pair graded once)."""
    out: dict[str, dict[str, int]] = {}
    for layer in layers:
        if layer.kind != "judge" or layer.source != source:
            continue
        for qid, docs in layer.grades.items():
            row = out.setdefault(qid, {})
            for doc, grade in docs.items():
                row.setdefault(doc, int(grade))
    return out
