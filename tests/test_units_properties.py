"""Invariants of evaluation units, for any corpus, judgments and ranking hypothesis draws.

Each property is one the README states of :func:`monitor.metrics.units.to_units`: a unit of one
passage each changes nothing, a unit counts once at its best rank, a unit is relevant with the
best grade of its passages, and what follows from those for hit rate and recall.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pytest
from hypothesis import given
from hypothesis import strategies as st

from monitor.config.schema import config_schema
from monitor.evalset.corpus import Corpus, Passage
from monitor.metrics.evaluation import evaluate
from monitor.metrics.spec import UNIT_PATTERN
from monitor.metrics.units import to_units, unit_fields, unit_of

CUTS = ("passages", "units")
MEASURES = ("hit_rate", "recall", "precision", "mrr", "ndcg", "map")


@st.composite
def cases(
    draw: st.DrawFn, one_relevant_per_unit: bool = False
) -> tuple[Corpus, dict[str, dict[str, int]], dict[str, list[str]]]:
    """A corpus of up to 12 passages in 3 documents of 2 sections, judgments and a ranking."""
    n = draw(st.integers(1, 12))
    places = draw(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 1)), min_size=n, max_size=n))
    passages = {
        f"p{i}": Passage(f"p{i}", f"text {i}", {"doc_id": f"d{d}", "section": f"s{s}"})
        for i, (d, s) in enumerate(places)
    }
    corpus = Corpus(passages, "c.jsonl")
    ids = sorted(passages)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, list[str]] = {}
    for q in range(draw(st.integers(1, 3))):
        judged = draw(st.lists(st.sampled_from(ids), unique=True, max_size=n))
        grades = {doc: draw(st.integers(0, 2)) for doc in judged}
        if one_relevant_per_unit:
            seen: set[str | None] = set()
            for doc in judged:
                unit = unit_of(corpus, doc, unit_fields("section"))
                if grades[doc] >= 1 and unit in seen:
                    grades[doc] = 0
                elif grades[doc] >= 1:
                    seen.add(unit)
        qrels[f"q{q}"] = grades
        outside = draw(st.lists(st.sampled_from(["x1", "x2"]), unique=True, max_size=2))
        run[f"q{q}"] = draw(st.permutations([*ids, *outside]))[: draw(st.integers(0, n + 2))]
    return corpus, qrels, run


def _means(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, list[str]],
    corpus: Corpus,
    metrics: list[str],
) -> dict[str, float]:
    return evaluate(qrels, run, metrics, corpus=corpus, average="all").means


def _keys(corpus: Corpus, passages: list[str], unit: str) -> list[str]:
    """Return each passage's unit id; one outside the corpus is a unit of its own."""
    # the marker of a unit of its own is private to monitor.metrics.units: the units it stands for
    # are all that matter here, and they can be no corpus unit's id
    return [unit_of(corpus, doc, unit_fields(unit)) or f"\x00passage:{doc}" for doc in passages]


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, abs_tol=1e-12)


@pytest.mark.slow
@given(cases(), st.sampled_from(CUTS), st.sampled_from([1, 3, 5, 10]))
def test_a_unit_of_one_passage_each_scores_as_the_passages_do(
    case: tuple[Corpus, dict[str, dict[str, int]], dict[str, list[str]]], cut: str, k: int
) -> None:
    """Every measure per unit `id` (one passage per unit) equals the measure per passage."""
    corpus, qrels, run = case
    suffix = "[id]" if cut == "passages" else "[id:units]"
    plain = _means(qrels, run, corpus, [f"{m}@{k}" for m in MEASURES])
    units = _means(qrels, run, corpus, [f"{m}@{k}{suffix}" for m in MEASURES])
    assert [True] * len(MEASURES) == [
        _same(plain[f"{m}@{k}"], units[f"{m}@{k}{suffix}"]) for m in MEASURES
    ]


@pytest.mark.slow
@given(cases(), st.sampled_from(["section", "document"]))
def test_a_unit_counts_once_at_the_rank_of_its_best_passage(
    case: tuple[Corpus, dict[str, dict[str, int]], dict[str, list[str]]], unit: str
) -> None:
    """Cut at passages, each unit sits once at its first passage's rank; the length is kept."""
    corpus, qrels, run = case
    _, ranked = to_units(qrels, run, corpus, unit, "passages")
    for qid, passages in run.items():
        expected: dict[str, int] = {}
        for rank, key in enumerate(_keys(corpus, passages, unit), 1):
            expected.setdefault(key, rank)
        units = ranked[qid]
        at = {key: rank for rank, key in enumerate(units, 1) if key in expected}
        assert (len(passages), expected) == (len(units), at)


@pytest.mark.slow
@given(cases(), st.sampled_from(["section", "document"]))
def test_collapsing_to_units_lists_each_unit_once_in_order_of_first_passage(
    case: tuple[Corpus, dict[str, dict[str, int]], dict[str, list[str]]], unit: str
) -> None:
    """Cut at units, the ranking is the distinct units by their first passage."""
    corpus, qrels, run = case
    _, ranked = to_units(qrels, run, corpus, unit, "units")
    for qid, passages in run.items():
        assert list(dict.fromkeys(_keys(corpus, passages, unit))) == ranked[qid]


@pytest.mark.slow
@given(cases(), st.sampled_from(["section", "document"]))
def test_a_unit_is_judged_with_the_best_grade_of_its_passages(
    case: tuple[Corpus, dict[str, dict[str, int]], dict[str, list[str]]], unit: str
) -> None:
    """Each unit's grade is the highest grade of its judged passages."""
    corpus, qrels, run = case
    judged, _ = to_units(qrels, run, corpus, unit)
    fields = unit_fields(unit)
    for qid, grades in qrels.items():
        best: dict[str, int] = {}
        for doc, grade in grades.items():
            key = unit_of(corpus, doc, fields)
            assert key is not None
            best[key] = max(grade, best.get(key, grade))
        assert best == judged[qid]


@pytest.mark.slow
@given(cases(), st.sampled_from(CUTS), st.sampled_from([1, 3, 5]))
def test_the_hit_rate_per_unit_is_never_below_the_hit_rate_per_passage(
    case: tuple[Corpus, dict[str, dict[str, int]], dict[str, list[str]]], cut: str, k: int
) -> None:
    """A relevant passage in the top k brings its relevant unit into the top k."""
    corpus, qrels, run = case
    name = f"hit_rate@{k}[section]" if cut == "passages" else f"hit_rate@{k}[section:units]"
    result = evaluate(qrels, run, [f"hit_rate@{k}", name], corpus=corpus)
    plain, units = result.values.values()
    assert [True] * len(plain) == [u >= p for p, u in zip(plain, units, strict=True)]


@pytest.mark.slow
@given(cases(one_relevant_per_unit=True), st.sampled_from(CUTS), st.sampled_from([1, 3, 5]))
def test_recall_per_unit_is_never_below_recall_per_passage_with_one_relevant_passage_each(
    case: tuple[Corpus, dict[str, dict[str, int]], dict[str, list[str]]], cut: str, k: int
) -> None:
    """Where each relevant section holds one relevant passage, section recall@k >= recall@k."""
    corpus, qrels, run = case
    name = f"recall@{k}[section]" if cut == "passages" else f"recall@{k}[section:units]"
    result = evaluate(qrels, run, [f"recall@{k}", name], corpus=corpus)
    plain, units = result.values.values()
    assert [True] * len(plain) == [u >= p - 1e-12 for p, u in zip(plain, units, strict=True)]


@pytest.mark.slow
@given(cases(), st.sampled_from([1, 3, 5]))
def test_cutting_at_units_never_lowers_unit_recall(
    case: tuple[Corpus, dict[str, dict[str, int]], dict[str, list[str]]], k: int
) -> None:
    """k distinct units reach at least as many relevant units as k returned passages."""
    corpus, qrels, run = case
    names = [f"recall@{k}[document]", f"recall@{k}[document:units]"]
    passages, units = evaluate(qrels, run, names, corpus=corpus).values.values()
    assert [True] * len(passages) == [u >= p - 1e-12 for p, u in zip(passages, units, strict=True)]


def test_the_config_schema_takes_the_unit_pattern_from_the_metric_names() -> None:
    """The suite key unit is checked by the very pattern metric names use."""
    unit = config_schema()["$defs"]["suite"]["properties"]["unit"]
    assert f"^(?:{UNIT_PATTERN.pattern})$" == unit["anyOf"][0]["pattern"]
