"""Ground truth from a reference search: index recall measured apart from human labels.

Loading a suite's eval set reads its file (or the bundled set) only; judging it by the
reference search is a separate step the job takes before each run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monitor.config import load_config_text
from monitor.config.model import EvalSetConfig, SearchConfig
from monitor.errors import ConfigError, UsageError
from monitor.evalset import EvalSet
from monitor.evalset.bundled import larkfield_evalset
from monitor.evalset.suite import load_evalset
from monitor.job import run_suite
from monitor.runner.reference import judge_by_reference
from monitor.store import open_store

SUITE = """
suites:
  ann:
    evalset:
      bundled: larkfield
      reference: {{kind: replay, bundled: larkfield/rerank}}
      reference_k: 5
    search: {{kind: replay, bundled: larkfield/{method}}}
    metrics: [recall@5]
    rules: []
"""


@pytest.mark.parametrize(("method", "perfect"), [("rerank", True), ("keyword", False)])
def test_recall_is_measured_against_the_reference_top_k(
    tmp_path: Path, method: str, perfect: bool
) -> None:
    """The reference itself scores recall@5 = 1; another search scores below it."""
    suite = load_config_text(SUITE.format(method=method)).suite("ann")
    with open_store(tmp_path / "m.db") as store:
        outcome = run_suite(suite, store, notifiers={})
    recall = outcome.run.means["recall@5"]
    assert perfect == (recall == 1.0)
    assert 67 == outcome.evaluation.counts.evaluated  # every query has reference results


def test_reference_k_needs_a_reference() -> None:
    """reference_k without reference is a config error naming the key."""
    text = SUITE.format(method="rerank").replace(
        "      reference: {kind: replay, bundled: larkfield/rerank}\n", ""
    )
    with pytest.raises(ConfigError, match=r"suites\.ann\.evalset\.reference_k"):
        load_config_text(text)


def test_loading_a_suite_eval_set_keeps_its_own_judgments() -> None:
    """load_evalset reads the bundled set as it is, even when a reference search is named."""
    reference = SearchConfig(kind="replay", bundled="larkfield/keyword")
    config = EvalSetConfig(bundled="larkfield", reference=reference, reference_k=1)
    assert larkfield_evalset() == load_evalset(config)


def test_loading_reads_an_eval_set_file(tmp_path: Path) -> None:
    """load_evalset reads the file a suite names, in its format."""
    evalset = EvalSet("mine")
    evalset.add("q1", "first", relevant={"d1": 2})
    evalset.save(tmp_path / "mine.jsonl")
    loaded = load_evalset(EvalSetConfig(path=tmp_path / "mine.jsonl"))
    assert evalset.fingerprint == loaded.fingerprint


def test_an_unknown_bundled_eval_set_names_the_known_ones() -> None:
    """A bundled name that is not shipped is a usage error listing the known sets."""
    with pytest.raises(UsageError, match="unknown bundled eval set 'nope'; known: larkfield"):
        load_evalset(EvalSetConfig(bundled="nope"))


def test_judging_by_reference_takes_its_top_k_and_keeps_texts_and_metadata(
    tmp_path: Path,
) -> None:
    """Each query's judgments become the reference's top k (grade 1); the rest is kept."""
    evalset = EvalSet("small")
    evalset.add("q1", "first", relevant=["label"], metadata={"team": "web"})
    evalset.add("q2", "second")
    (tmp_path / "exact.json").write_text(json.dumps({"q1": ["a", "b", "c"], "q2": ["c"]}))
    reference = SearchConfig(kind="replay", options={"path": str(tmp_path / "exact.json")})
    judged = judge_by_reference(evalset, reference, 2)
    assert [("q1", "first", {"a": 1, "b": 1}, {"team": "web"}), ("q2", "second", {"c": 1}, {})] == [
        (q.id, q.text, dict(q.judgments), dict(q.metadata)) for q in judged
    ]
