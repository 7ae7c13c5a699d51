"""Invariants on the bundled Larkfield set: keyword search checked against the rerank baseline.

The baseline is the bundled rerank run (a seed baseline), the current run replays the bundled
keyword run; both are measured and stored by :func:`monitor.job.run_suite`.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from monitor.compare import compare_runs
from monitor.config import MustInclude, NoLostHits, load_config
from monitor.evalset.bundled import data_path
from monitor.job import run_suite
from monitor.store import open_store
from monitor.store.records import RunRecord

SUITE = """
store: {{path: {store}}}
suites:
  nightly:
    evalset: {{bundled: larkfield}}
    search: {{kind: replay, bundled: larkfield/{method}}}
    baseline: {{bundled_run: larkfield/rerank}}
    metrics: [recall@5]
    rules: []
    invariants: {invariants}
"""


def config_file(tmp_path: Path, method: str, invariants: str = "[]") -> Path:
    """Write a suite replaying the bundled run ``method`` against the rerank baseline."""
    path = tmp_path / "monitor.yaml"
    text = SUITE.format(store=tmp_path / "m.db", method=method, invariants=invariants)
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunRecord, RunRecord]:
    """Return the stored keyword run and its rerank baseline."""
    tmp_path = tmp_path_factory.mktemp("larkfield")
    config = load_config(config_file(tmp_path, "keyword"))
    with open_store(config.store.url.reveal()) as store:
        outcome = run_suite(config.suite("nightly"), store, progress=False)
        baseline = store.get_baseline("nightly")
    assert baseline is not None
    return outcome.run, baseline


def lost_hits_from_the_bundled_files(k: int) -> list[str]:
    """Return, from the bundled JSON files alone, the queries whose rerank top ``k`` holds a
    relevant passage and whose keyword top ``k`` holds none."""
    folder = data_path("larkfield")
    rerank = json.loads((folder / "runs" / "rerank.json").read_text())
    keyword = json.loads((folder / "runs" / "keyword.json").read_text())
    lost = []
    for line in (folder / "evalset.jsonl").read_text().splitlines():
        query = json.loads(line)
        relevant = set(query["relevant"])
        if relevant & set(rerank[query["id"]][:k]) and not relevant & set(keyword[query["id"]][:k]):
            lost.append(query["id"])
    return lost


def test_no_lost_hits_names_the_queries_that_lost_their_hit(
    runs: tuple[RunRecord, RunRecord],
) -> None:
    """``no_lost_hits@5`` breaches with exactly the queries the bundled files say lost their
    hit, Q34 among them."""
    current, baseline = runs
    comparison = compare_runs(current, baseline, [], invariants=[NoLostHits(5)])
    (outcome,) = comparison.invariants
    expected = lost_hits_from_the_bundled_files(5)
    assert "Q34" in expected
    assert "breach" == outcome.status
    assert expected == [query.query_id for query in outcome.queries]
    assert "regression" == comparison.verdict
    assert comparison.regression


def test_a_lost_hit_lists_what_was_expected_and_retrieved(
    runs: tuple[RunRecord, RunRecord],
) -> None:
    """Q34's breach names the baseline's hit and the keyword run's top 5."""
    current, baseline = runs
    (outcome,) = compare_runs(current, baseline, [], invariants=[NoLostHits(5)]).invariants
    q34 = next(query for query in outcome.queries if query.query_id == "Q34")
    top5 = json.loads((data_path("larkfield") / "runs" / "keyword.json").read_text())["Q34"][:5]
    assert ("d9a5bd8ea531",) == q34.expected_ids
    assert tuple(top5) == q34.retrieved_ids
    assert ("d9a5bd8ea531",) == q34.missing_ids


def test_the_baseline_against_itself_loses_no_hit(runs: tuple[RunRecord, RunRecord]) -> None:
    """The rerank run compared with itself keeps every hit: ``ok``, verdict ``ok``."""
    _, baseline = runs
    comparison = compare_runs(baseline, baseline, [], invariants=[NoLostHits(5)])
    assert ["ok"] == [outcome.status for outcome in comparison.invariants]
    assert "ok" == comparison.verdict


def test_a_must_include_pair_that_holds_is_ok(runs: tuple[RunRecord, RunRecord]) -> None:
    """Q01's two relevant passages are in the keyword run's top 3: ``ok``."""
    current, baseline = runs
    pair = MustInclude("Q01", ("8a7eb02f2b10", "2cfecbd4b92e"), 3)
    comparison = compare_runs(current, baseline, [], invariants=[pair])
    assert ["ok"] == [outcome.status for outcome in comparison.invariants]
    assert not comparison.regression


def test_a_must_include_pair_that_breaks_is_a_breach(runs: tuple[RunRecord, RunRecord]) -> None:
    """Q34 must return d9a5bd8ea531 within 5; the keyword run does not: a breach naming it."""
    current, baseline = runs
    pair = MustInclude("Q34", ("d9a5bd8ea531",), 5)
    comparison = compare_runs(current, baseline, [], invariants=[pair])
    (outcome,) = comparison.invariants
    assert "breach" == outcome.status
    assert ["Q34"] == [query.query_id for query in outcome.queries]
    assert ("d9a5bd8ea531",) == outcome.queries[0].missing_ids
    assert "regression" == comparison.verdict


def test_a_pair_that_holds_deeper_breaks_at_a_shallower_depth(
    runs: tuple[RunRecord, RunRecord],
) -> None:
    """Q01's second passage is third in the keyword run: within 3 holds, within 2 breaks."""
    current, _ = runs
    held = compare_runs(current, None, [], invariants=[MustInclude("Q01", ("2cfecbd4b92e",), 3)])
    broke = compare_runs(current, None, [], invariants=[MustInclude("Q01", ("2cfecbd4b92e",), 2)])
    assert ("ok", "breach") == (held.invariants[0].status, broke.invariants[0].status)


def test_a_query_the_eval_set_lacks_is_a_skipped_invariant(
    runs: tuple[RunRecord, RunRecord],
) -> None:
    """A pair for an unknown query id is skipped, its message naming the id."""
    current, baseline = runs
    comparison = compare_runs(current, baseline, [], invariants=[MustInclude("Q999", ("x",), 5)])
    (outcome,) = comparison.invariants
    assert "skipped" == outcome.status
    assert "Q999" in outcome.message
    assert not comparison.regression


def test_a_failed_query_breaks_no_invariant_and_is_named_as_skipped(
    runs: tuple[RunRecord, RunRecord],
) -> None:
    """Q34 failing in the current run leaves it out of both invariants, named as skipped."""
    current, baseline = runs
    failed = tuple(
        replace(q, retrieved_ids=(), error_type="timeout") if q.query_id == "Q34" else q
        for q in current.queries
    )
    comparison = compare_runs(
        replace(current, queries=failed),
        baseline,
        [],
        invariants=[MustInclude("Q34", ("d9a5bd8ea531",), 5), NoLostHits(5)],
    )
    pair, policy = comparison.invariants
    assert "skipped" == pair.status
    assert "Q34" in pair.message
    assert "Q34" not in [query.query_id for query in policy.queries]
    assert "skipped 1 the search failed for: Q34" in policy.message


def test_no_lost_hits_is_skipped_without_a_baseline(runs: tuple[RunRecord, RunRecord]) -> None:
    """With no baseline, or one of another eval set, the policy cannot be checked."""
    current, baseline = runs
    other = replace(baseline, evalset_fingerprint="sha256:other")
    for approved in (None, other):
        comparison = compare_runs(current, approved, [], invariants=[NoLostHits(5)])
        assert ["skipped"] == [outcome.status for outcome in comparison.invariants]


def test_invariants_are_in_the_comparisons_dictionary_form(
    runs: tuple[RunRecord, RunRecord],
) -> None:
    """``to_dict`` lists each invariant with its breaching queries, expected and retrieved."""
    current, baseline = runs
    pair = MustInclude("Q34", ("d9a5bd8ea531",), 5)
    (entry,) = compare_runs(current, baseline, [], invariants=[pair]).to_dict()["invariants"]
    assert ("must_include Q34", "must_include", "breach") == (
        entry["name"],
        entry["kind"],
        entry["status"],
    )
    assert ["d9a5bd8ea531"] == entry["queries"][0]["missing_ids"]


def test_a_scheduled_run_checks_the_suites_invariants(tmp_path: Path) -> None:
    """``run_suite`` passes the suite's invariants to the comparison."""
    invariants = "[{query: Q34, must_include: [d9a5bd8ea531], within: 5}]"
    config = load_config(config_file(tmp_path, "keyword", invariants))
    with open_store(config.store.url.reveal()) as store:
        outcome = run_suite(config.suite("nightly"), store, progress=False)
    assert ["must_include Q34"] == [i.name for i in outcome.comparison.invariant_breaches]
