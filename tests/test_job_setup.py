"""A run sets up its eval set and its search side by side: a broken eval set is still the
fault reported, and a search built for nothing is closed."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from monitor.cli import main

SEARCH = """
closed = []


class Search:
    def __call__(self, text, k):
        return ["d1"]

    def close(self):
        closed.append(True)


def make():
    return Search()


def broken():
    raise RuntimeError("the index is missing")
"""

SUITE = """
store: {{path: {store}}}
suites:
  nightly:
    evalset: {{path: {evalset}}}
    search: {{kind: python, target: "setup_search:{target}", factory: true, path: {folder}}}
    metrics: [mrr@10]
    exporters: []
    notifiers: []
"""


def _run(tmp_path: Path, evalset_text: str, target: str) -> int:
    (tmp_path / "setup_search.py").write_text(SEARCH, encoding="utf-8")
    evalset = tmp_path / "evalset.jsonl"
    evalset.write_text(evalset_text, encoding="utf-8")
    config = tmp_path / "monitor.yaml"
    config.write_text(
        textwrap.dedent(
            SUITE.format(store=tmp_path / "m.db", evalset=evalset, target=target, folder=tmp_path)
        )
    )
    sys.modules.pop("setup_search", None)
    return main(["run", "--config", str(config), "--no-progress"])


GOOD = '{"id": "q1", "query": "one", "relevant": ["d1"]}\n'
BAD = '{"id": "q1", "query": "one", "relevant": ["d1"]}\n{"id": "q2", "query": \n'


def test_a_broken_eval_set_is_reported_when_the_search_fails_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both broken: the eval set's fault is the one reported, with its file and line."""
    code = _run(tmp_path, BAD, "broken")
    err = capsys.readouterr().err
    assert code != 0
    assert "evalset.jsonl" in err
    assert "evalset.jsonl:2:" in err
    assert "the index is missing" not in err


def test_the_search_built_for_a_broken_eval_set_is_closed(tmp_path: Path) -> None:
    """The eval set fails while the search was built beside it: the search is closed."""
    assert 0 != _run(tmp_path, BAD, "make")
    assert [True] == sys.modules["setup_search"].closed


def test_a_search_that_cannot_be_built_fails_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A good eval set and a search whose factory raises: the search's fault is reported."""
    code = _run(tmp_path, GOOD, "broken")
    assert code != 0
    assert "the index is missing" in capsys.readouterr().err


def test_a_good_run_closes_its_search_once(tmp_path: Path) -> None:
    """Set up side by side, the run answers and closes its search once."""
    assert 0 == _run(tmp_path, GOOD, "make")
    assert [True] == sys.modules["setup_search"].closed
