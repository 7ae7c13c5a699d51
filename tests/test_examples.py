"""The examples: BM25 over Larkfield as a python plug-in, and the ANN recall sweep.

They need the ``examples`` extra (``pip install -e '.[examples]'``) and skip without it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from monitor import evaluate
from monitor.evalset.bundled import larkfield_evalset
from monitor.records import Query
from monitor.runner import RunResult, reference_qrels, run_queries
from monitor.search import build_search

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def bm25_result() -> RunResult:
    """Run the Larkfield set through the BM25 example, built by the python kind."""
    pytest.importorskip("bm25s")
    search = build_search(
        "python",
        {
            "target": "examples.bm25_search:make_search",
            "factory": True,
            "kwargs": {"stopwords": "en"},
            "path": str(ROOT),
        },
    )
    return run_queries(larkfield_evalset(), search, k=10, progress=False)


def test_bm25_answers_every_larkfield_question(bm25_result: RunResult) -> None:
    """The BM25 plug-in answers all 67 questions, with scores, and reports its index."""
    result = bm25_result
    assert (67, 0) == (result.total, result.failed)
    assert 174 == result.search_stats["index_size"]
    assert result.mean_top1_score is not None


def test_bm25_finds_relevant_passages(bm25_result: RunResult) -> None:
    """BM25 puts a relevant passage in the top 10 for most answerable questions."""
    means = evaluate(larkfield_evalset(), bm25_result, metrics=["hit_rate@10"]).means
    assert means["hit_rate@10"] > 0.6


@pytest.mark.slow
def test_bm25_demo_runs_from_the_repository_root() -> None:
    """``python -m examples.bm25_search`` from the repository root prints the comparison."""
    pytest.importorskip("bm25s")
    done = subprocess.run(
        [sys.executable, "-m", "examples.bm25_search"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert 0 == done.returncode, done.stderr
    assert "bm25 (live)" in done.stdout


@pytest.fixture
def examples_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``examples`` importable from the repository root, as when run from there."""
    monkeypatch.syspath_prepend(str(ROOT))


@pytest.mark.slow
@pytest.mark.usefixtures("examples_importable")
def test_ann_recall_rises_with_ef_search() -> None:
    """A larger efSearch gives higher recall@10 against exact search, nearly all at the top."""
    pytest.importorskip("faiss")
    from examples.ann_recall import sweep

    rows = sweep(count=3000, dim=16, queries=60, ef_values=(10, 200), seed=1)
    assert [10, 200] == [row.ef_search for row in rows]
    assert rows[0].recall <= rows[1].recall
    assert rows[1].recall >= 0.95


@pytest.mark.usefixtures("examples_importable")
def test_exact_search_is_its_own_ground_truth() -> None:
    """Exact search measured against itself has recall 1."""
    np = pytest.importorskip("numpy")
    pytest.importorskip("faiss")
    from examples.ann_recall import ExactSearch, make_vectors

    rng = np.random.default_rng(0)
    vectors = make_vectors(500, 8, clusters=5, rng=rng)
    queries = {f"q{i}": vectors[i] for i in range(20)}
    query_set = [Query(qid, qid) for qid in queries]
    exact = ExactSearch(vectors, queries)
    truth = reference_qrels(query_set, exact, k=10, progress=False)
    result = run_queries(query_set, exact, k=10, progress=False)
    assert {"recall@10": 1.0} == evaluate(truth, result, metrics=["recall@10"]).means


def test_the_remote_replay_answers_as_the_replay_after_waiting(tmp_path: Path) -> None:
    """The remote-like replay keeps the saved run's answers, waits before each, and is sent
    its queries from the runner's threads (it declares nothing about memory)."""
    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\nq2 Q0 d3 1 1.0 t\n", encoding="utf-8")
    search = build_search(
        "python",
        {
            "target": "examples.remote_replay:make_search",
            "factory": True,
            "kwargs": {"path": str(path), "milliseconds": 20},
            "path": str(ROOT),
        },
    )
    queries = [Query("q1", "one", {"d1": 1}), Query("q2", "two", {"d3": 1})]
    result = run_queries(queries, search, k=5, concurrency=2, progress=False)
    assert [("d1", "d2"), ("d3",)] == [outcome.retrieved_ids for outcome in result.outcomes]
    assert (2, True) == (result.latency.count, (result.latency.p50 or 0.0) >= 0.02)
