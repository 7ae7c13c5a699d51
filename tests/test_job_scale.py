"""The job path at a generated suite's size: what it stores is what the metric engine says.

The suite is ``benchmarks/bench_job.py``'s (2,000 queries, 20 documents each, one segment
key), run end to end through ``run_suite`` with its replay search and SQLite store.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from monitor.config import load_config
from monitor.evaluation import evaluate
from monitor.job import run_suite
from monitor.records import Query
from monitor.search.replay import ReplaySearch
from monitor.search.saved import load_hits
from monitor.store import open_store

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


def test_a_replayed_file_answers_with_the_hits_it_holds(suite_folder: Path) -> None:
    """The replay of a run file answers each query with the file's hits, best first."""
    replay = ReplaySearch.from_file(suite_folder / "current.run", "trec")
    hits = load_hits(suite_folder / "current.run", "trec")
    assert tuple(hits["q7"][:5]) == replay(Query("q7", "query 7", {}), 5)
