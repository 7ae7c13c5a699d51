"""Ground truth from a reference search: index recall measured apart from human labels."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.config import load_config_text
from monitor.errors import ConfigError
from monitor.job import run_suite
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
