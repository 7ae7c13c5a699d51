"""The job path at a generated suite's size: what it stores is what the metric engine says.

The suite is ``benchmarks/bench_job.py``'s (2,000 queries, 20 documents each, one segment
key), run end to end through ``run_suite`` with its replay search and SQLite store. The
array-backed replay, the store's columns and the worse-query ranking are checked beside it.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import random
import sys
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType

import pytest

from monitor.compare.diff import worse_queries
from monitor.config import load_config
from monitor.errors import UsageError
from monitor.evalset import EvalSet
from monitor.job import run_suite
from monitor.metrics.evaluation import evaluate
from monitor.records import Hit, Query
from monitor.search.replay import ReplaySearch
from monitor.search.saved import load_hits
from monitor.store import open_store
from monitor.store.columnar import decode_queries, encode_queries
from monitor.store.records import QueryRecord, RunFigures, RunRecord

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_job.py"
QUERIES = 2000


@pytest.fixture(scope="module")
def suite_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Write the generated suite once for the module."""
    spec = importlib.util.spec_from_file_location("bench_job", BENCH)
    assert spec is not None
    assert spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(spec)
    sys.modules["bench_job"] = module
    spec.loader.exec_module(module)
    folder: Path = module.write_suite(tmp_path_factory.mktemp("suite"), QUERIES, 0)
    return folder


@pytest.mark.slow
def test_stored_per_query_values_equal_the_engines(suite_folder: Path) -> None:
    """Every stored per-query value equals evaluate() on the eval set and run file."""
    suite = load_config(suite_folder / "current.yaml").suite("bench")
    with open_store(suite_folder / "monitor.db") as store:
        outcome = run_suite(suite, store, notifiers={})
        stored = store.per_query_frame(outcome.run_id)
    expected = evaluate(
        suite_folder / "evalset.jsonl", suite_folder / "current.run", list(suite.metrics)
    ).per_query
    names = [str(metric) for metric in suite.metrics]
    assert expected.to_dict() == stored[names].loc[expected.index].to_dict()


@pytest.mark.slow
def test_rankings_numbered_after_the_scoring_are_stored_as_beside_it(
    suite_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run too large to number its rankings beside the scoring numbers them after it, and
    stores the same run: the same per-query values, rankings and means."""
    import monitor.job.path as job

    suite = load_config(suite_folder / "current.yaml").suite("bench")
    stored = []
    for beside in (10**9, 0):
        monkeypatch.setattr(job, "BESIDE_SCORING_MAX_HITS", beside)
        with open_store(tmp_path / f"beside-{beside}.db") as store:
            outcome = run_suite(suite, store, notifiers={})
            stored.append(store.get_run(outcome.run_id))
    together, after = stored
    assert together.means == after.means
    untimed = [[dataclasses.replace(q, latency_seconds=None) for q in r.queries] for r in stored]
    assert untimed[0] == untimed[1]
    assert len(after.queries) == QUERIES


@pytest.mark.slow
def test_a_replayed_file_answers_with_the_hits_it_holds(suite_folder: Path) -> None:
    """The replay of a run file answers each query with the file's hits, best first."""
    replay = ReplaySearch.from_file(suite_folder / "current.run", "trec")
    hits = load_hits(suite_folder / "current.run", "trec")
    assert tuple(hits["q7"][:5]) == replay(Query("q7", "query 7", {}), 5)


T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _random_trec(path: Path, seed: int) -> Path:
    """Write a shuffled TREC run with tied scores, repeated ids and ids of mixed lengths."""
    rng = random.Random(seed)
    lines = []
    for q in range(30):
        for j in range(rng.randint(1, 25)):
            doc = f"doc-{rng.randint(0, 12)}{'é' * rng.randint(0, 9)}"
            lines.append(f"q{q} Q0 {doc} {j + 1} {rng.choice([0.5, 1.25, rng.random()])} t\n")
    rng.shuffle(lines)
    path.write_text("".join(lines), encoding="utf-8")
    return path


def test_replay_of_a_trec_file_answers_as_the_line_reader_ranks(tmp_path: Path) -> None:
    """Every query, at every cutoff, gets the hits the line reader gives, repeats included."""
    path = _random_trec(tmp_path / "run.trec", seed=3)
    replay = ReplaySearch.from_file(path, "trec")
    expected = load_hits(path, "trec")
    for qid, hits in expected.items():
        for k in (1, 5, 100):
            assert tuple(hits[:k]) == replay(Query(qid, "text"), k)


def test_replay_of_a_trec_file_answers_an_unknown_query_with_no_hits(tmp_path: Path) -> None:
    """A query the run does not hold retrieves nothing, and the stats count the run's queries."""
    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 d1 1 2.0 t\nq2 Q0 d2 1 1.0 t\n", encoding="utf-8")
    replay = ReplaySearch.from_file(path, "trec")
    assert () == replay(Query("q9", "text"), 10)
    assert (Hit("d1", 2.0),) == replay(Query("q1", "text"), 10)
    assert 2 == replay.stats()["replay_queries"]


def _run(values: dict[str, float]) -> RunRecord:
    queries = tuple(
        QueryRecord(qid, {"ndcg@10": v}, retrieved_ids=("a", "b"), relevant_ids=("a",))
        for qid, v in values.items()
    )
    return RunRecord(
        suite="s",
        pipeline="p",
        started_at=T0,
        finished_at=T0,
        evalset_fingerprint="sha256:a",
        figures=RunFigures(),
        queries=queries,
    )


def test_worse_queries_keep_the_largest_losses_with_ties_by_query_id() -> None:
    """The top losses come first; equal losses are ordered by query id."""
    before = _run({"q1": 1.0, "q2": 1.0, "q3": 1.0, "q4": 1.0, "q5": 0.5})
    after = _run({"q1": 0.5, "q2": 0.0, "q3": 0.5, "q4": 0.9, "q5": 0.6})
    found = worse_queries(before, after, "ndcg@10", top=3)
    assert ["q2", "q1", "q3"] == [d.query_id for d in found]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (Query("q1", "t", {"d1": True}), "an integer grade"),  # type: ignore[dict-item]
        (Query("q1", "t", {"": 1}), "a non-empty document id"),
        (Query("q1", "t", {"d\ud800": 1}), "valid Unicode"),
        (Query("q1", "t", {}, {"k": float("nan")}), "a finite number"),
        (Query("q1", "\ud800", {}), "valid Unicode"),
        (Query("q1", "t", {}, {"k": [1]}), "a metadata value"),  # type: ignore[dict-item]
    ],
)
def test_a_ready_query_with_a_bad_part_is_still_refused(query: Query, expected: str) -> None:
    """Adding a built Query runs the full checks on anything the quick test does not accept."""
    with pytest.raises(UsageError, match=expected):
        EvalSet("s").add(query)


def test_a_ready_valid_query_is_kept_as_given() -> None:
    """A valid built Query is added with its judgments and metadata unchanged."""
    query = Query("q1", "tëxt", {"d1": 2, "d2": 0, "d3": -1}, {"k": "v", "n": 1.5, "b": True})
    added = EvalSet("s").add(query)
    assert query == added
    assert {"d1": 2, "d2": 0, "d3": -1} == dict(added.judgments)
    assert {"k": "v", "n": 1.5, "b": True} == dict(added.metadata)


def test_the_store_columns_read_back_rankings_that_share_documents() -> None:
    """Rankings sharing ids, relevant-only ids and empty rankings read back as written."""
    queries = (
        QueryRecord("q1", {"m": 0.5}, retrieved_ids=("b", "a"), relevant_ids=("c",)),
        QueryRecord("q2", {}, retrieved_ids=(), relevant_ids=(), error_type="timeout"),
        QueryRecord("q3", {"m": 1.0}, retrieved_ids=("a", "é", "c"), relevant_ids=("a", "z")),
    )
    assert queries == decode_queries(encode_queries(queries))


@pytest.mark.slow
def test_a_run_that_keeps_no_outcomes_compares_as_one_that_does(suite_folder: Path) -> None:
    """Letting go of the hits once stored leaves the outcome without them and every stored
    value, mean and verdict as they are with them."""
    suite = load_config(suite_folder / "current.yaml").suite("bench")
    with open_store(suite_folder / "monitor.db") as store:
        kept = run_suite(suite, store, notifiers={})
        dropped = run_suite(suite, store, notifiers={}, keep_outcomes=False)
        assert kept.result is not None
        assert dropped.result is None
        assert kept.run.means == dropped.run.means
        assert kept.comparison.verdict == dropped.comparison.verdict
        assert kept.comparison.overlap == dropped.comparison.overlap
        kept_values = store.per_query_frame(kept.run_id).drop(columns="latency_seconds")
        dropped_values = store.per_query_frame(dropped.run_id).drop(columns="latency_seconds")
    assert kept_values.to_dict() == dropped_values.to_dict()
