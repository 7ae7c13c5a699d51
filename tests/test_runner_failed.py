"""The failed-query log and ground truth taken from a reference search."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monitor import evaluate
from monitor.cli import main
from monitor.errors import SearchBackendError, UsageError
from monitor.evalset.bundled import larkfield_evalset
from monitor.metrics.evaluation import EvaluationResult
from monitor.metrics.failed import failed_queries, write_failed_queries
from monitor.records import Query
from monitor.runner import RunResult, reference_qrels, run_queries
from monitor.search import build_search
from monitor.testing import FakeSearch

QUERIES = [
    Query("q1", "hit", {"a": 1, "b": 1}),
    Query("q2", "miss", {"a": 1}),
    Query("q3", "half", {"a": 1, "b": 1}),
    Query("q4", "error", {"a": 1}),
    Query("q5", "unanswerable"),
]
QRELS = {q.id: dict(q.judgments) for q in QUERIES}
MEASURED = ["hit_rate@10", "recall@10", "mrr@10"]


def result_with_misses() -> RunResult:
    """Run QUERIES: q1 finds both, q2 none, q3 one of two, q4 fails, q5 has no relevant."""
    search = FakeSearch(
        {"q1": ["a", "b"], "q2": ["x", "y", "z", "w", "v", "u"], "q3": ["b", "x"], "q5": []},
        failures={"q4": TimeoutError("slow")},
    )
    return run_queries(QUERIES, search, k=10, progress=False)


def misses() -> tuple[RunResult, EvaluationResult]:
    """Return the run of QUERIES with misses and its evaluation, as the job measures it."""
    result = result_with_misses()
    return result, evaluate(QRELS, result, MEASURED)


def test_misses_and_errors_are_listed_in_query_order() -> None:
    """Queries with no hit and failed queries are listed; answered hits are not."""
    records = failed_queries(*misses())
    assert [("q2", "miss"), ("q4", "error")] == [(r["query_id"], r["reason"]) for r in records]


def test_recall_floor_adds_low_recall_queries() -> None:
    """With a recall floor, queries below it are listed too."""
    records = failed_queries(*misses(), recall_floor=0.75)
    assert ["q2", "q3", "q4"] == [r["query_id"] for r in records]
    assert ("low_recall", 0.5) == (records[1]["reason"], records[1]["recall@10"])


def test_a_record_holds_the_top_five_ids_and_the_relevant_ones() -> None:
    """Each record has the query, its top-5 ids, the relevant ids and the metric values."""
    miss = failed_queries(*misses())[0]
    assert {
        "query_id": "q2",
        "query": "miss",
        "reason": "miss",
        "hit_rate@10": 0.0,
        "recall@10": 0.0,
        "top_ids": ["x", "y", "z", "w", "v"],
        "relevant_ids": ["a"],
        "error_type": None,
        "error_message": None,
    } == miss


def test_write_failed_queries_writes_json_lines(tmp_path: Path) -> None:
    """The log is one JSON object per line, and the count is returned."""
    path = tmp_path / "logs" / "failed.jsonl"
    count = write_failed_queries(*misses(), path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert (2, ["q2", "q4"]) == (count, [json.loads(line)["query_id"] for line in lines])


def test_write_failed_queries_replaces_an_old_log(tmp_path: Path) -> None:
    """A run without misses leaves an empty log, never the previous run's."""
    path = tmp_path / "failed.jsonl"
    path.write_text('{"query_id": "old"}\n', encoding="utf-8")
    result = run_queries(QUERIES[:1], FakeSearch({"q1": ["a"]}), progress=False)
    write_failed_queries(result, evaluate(QRELS, result, MEASURED), path)
    assert ("", []) == (path.read_text(encoding="utf-8"), list(tmp_path.glob(".*tmp")))


def _larkfield_keyword() -> RunResult:
    search = build_search("replay", {"bundled": "larkfield/keyword"})
    return run_queries(larkfield_evalset(), search, k=10, progress=False)


def test_the_log_reads_the_runs_evaluation_without_evaluating_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given an evaluation that measured hit_rate@k and recall@k, nothing is evaluated again."""
    evalset = larkfield_evalset()
    result = _larkfield_keyword()
    evaluation = evaluate(evalset, result)  # the default metrics, as the job measures them
    hits = evaluation.per_query["hit_rate@10"]

    def refuse(*args: object, **kwargs: object) -> EvaluationResult:
        raise AssertionError("evaluate was called again")

    monkeypatch.setattr("monitor.metrics.evaluation.evaluate", refuse)
    count = write_failed_queries(result, evaluation, tmp_path / "failed.jsonl")
    assert int((hits == 0).sum()) == count


def test_an_evaluation_without_the_log_metrics_writes_the_same_lines(tmp_path: Path) -> None:
    """A run measured on other metrics gets the same log, hit_rate and recall measured apart."""
    evalset = larkfield_evalset()
    result = _larkfield_keyword()
    full, other = tmp_path / "full.jsonl", tmp_path / "other.jsonl"
    write_failed_queries(result, evaluate(evalset, result), full, recall_floor=0.9)
    write_failed_queries(result, evaluate(evalset, result, ["mrr@10"]), other, recall_floor=0.9)
    assert full.read_text(encoding="utf-8") == other.read_text(encoding="utf-8")


def test_graded_judgments_give_the_same_lines_measured_apart(tmp_path: Path) -> None:
    """Grades above 1 count as relevant like grade 1, so measuring apart changes nothing."""
    graded = [Query("g1", "graded", {"a": 3, "b": 1, "c": 0}), Query("g2", "none", {"a": 2})]
    qrels = {q.id: dict(q.judgments) for q in graded}
    result = run_queries(graded, FakeSearch({"g1": ["c", "b"], "g2": ["x"]}), progress=False)
    full, other = tmp_path / "full.jsonl", tmp_path / "other.jsonl"
    write_failed_queries(result, evaluate(qrels, result, MEASURED), full, recall_floor=0.9)
    write_failed_queries(result, evaluate(qrels, result, ["ndcg@10"]), other, recall_floor=0.9)
    assert full.read_text(encoding="utf-8") == other.read_text(encoding="utf-8")


@pytest.mark.slow
def test_run_with_failed_queries_evaluates_no_more_than_without(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`run --failed-queries` writes its log from the job's evaluation, not from a new one."""
    import monitor.metrics.evaluation

    calls: list[object] = []
    real = monitor.metrics.evaluation.evaluate

    def counting(*args: object, **kwargs: object) -> EvaluationResult:
        calls.append(args)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("monitor.metrics.evaluation.evaluate", counting)
    monkeypatch.chdir(tmp_path)  # no ./config/monitor.yaml: the embedded default suite
    counts = []
    for name, extra in (("plain", []), ("logged", ["--failed-queries", "failed.jsonl"])):
        calls.clear()
        main(["run", "--store", str(tmp_path / f"{name}.db"), "--no-progress", *extra])
        counts.append(len(calls))
    capsys.readouterr()
    assert (counts[0], True) == (counts[1], (tmp_path / "failed.jsonl").is_file())


def test_recall_floor_must_be_a_share() -> None:
    """A recall floor outside [0, 1] is a usage error."""
    with pytest.raises(UsageError, match="recall_floor"):
        failed_queries(*misses(), recall_floor=5)


def test_reference_qrels_take_the_reference_top_k() -> None:
    """Ground truth is each query's top k under the reference search, grade 1."""
    reference = FakeSearch({"q1": ["a", "b", "c"], "q2": ["c"]})
    qrels = reference_qrels(QUERIES[:2], reference, k=2)
    assert {"q1": {"a": 1, "b": 1}, "q2": {"c": 1}} == qrels


def test_reference_qrels_measure_an_approximate_search() -> None:
    """Recall@k of an approximate search against exact search's top k."""
    exact = FakeSearch({"q1": ["a", "b"], "q2": ["c", "d"]})
    approximate = FakeSearch({"q1": ["a", "x"], "q2": ["d", "c"]})
    truth = reference_qrels(QUERIES[:2], exact, k=2)
    result = run_queries(QUERIES[:2], approximate, k=2, progress=False)
    assert {"recall@2": 0.75} == evaluate(truth, result, metrics=["recall@2"]).means


def test_reference_qrels_refuse_incomplete_ground_truth() -> None:
    """A reference search that fails for a query raises SearchBackendError."""
    reference = FakeSearch(failures={"q2": RuntimeError("index offline")})
    with pytest.raises(SearchBackendError, match="q2: RuntimeError: index offline"):
        reference_qrels(QUERIES[:2], reference, k=2)
