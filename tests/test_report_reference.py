"""A report on a suite judged by a reference search reads the judgments its runs were measured
with from the store, and never calls the reference search again.

The reference is a ``python`` search kind pointing at a FakeSearch in a module written for the
test, so its ``calls`` count every query sent to it.
"""

from __future__ import annotations

import itertools
import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor.cli import main
from monitor.config import load_config
from monitor.job import run_suite
from monitor.store import open_store
from monitor.testing import FakeSearch

QUERIES = 5
_names = itertools.count()


@pytest.fixture
def reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path]]:
    """Write a module holding a counting reference search; yield its target and folder."""
    name = f"counting_reference_{next(_names)}"
    folder = tmp_path / "plugins"
    folder.mkdir()
    answers = {f"q{i}": [f"d{i}", f"e{i}"] for i in range(QUERIES)}
    (folder / f"{name}.py").write_text(
        f"from monitor.testing import FakeSearch\n\nsearch = FakeSearch({answers!r})\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(folder))
    yield f"{name}:search", folder
    sys.modules.pop(name, None)


@pytest.fixture
def config(tmp_path: Path, reference: tuple[str, Path]) -> Path:
    """Write a suite of five queries judged by the counting reference's top 2; return it."""
    target, folder = reference
    lines = (
        json.dumps({"id": f"q{i}", "query": f"question {i}", "relevant": ["unused"]})
        for i in range(QUERIES)
    )
    (tmp_path / "evalset.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    run = {f"q{i}": [f"d{i}", "x"] if i else ["x", "y"] for i in range(QUERIES)}
    (tmp_path / "run.json").write_text(json.dumps(run), encoding="utf-8")
    path = tmp_path / "monitor.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            store: {{path: {tmp_path / "m.db"}}}
            suites:
              ann:
                evalset:
                  path: {tmp_path / "evalset.jsonl"}
                  reference: {{kind: python, target: "{target}", path: "{folder}"}}
                  reference_k: 2
                search: {{kind: replay, path: {tmp_path / "run.json"}}}
                metrics: [recall@2]
                rules: [{{metric: recall@2, max_drop: 0.05}}]
            """
        ),
        encoding="utf-8",
    )
    return path


def _calls(target: str) -> int:
    search = sys.modules[target.partition(":")[0]].search
    assert isinstance(search, FakeSearch)
    return len(search.calls)


def _run_twice(config: Path) -> None:
    suite = load_config(config).suite("ann")
    with open_store(config.parent / "m.db") as store:
        for _ in range(2):
            run_suite(suite, store, progress=False, notifiers={})
        store.set_baseline("ann", 1)


def _report(config: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    capsys.readouterr()
    code = main(["report", "--config", str(config), "--suite", "ann", "--format", "json"])
    out = capsys.readouterr().out
    assert 0 == code
    data: dict[str, object] = json.loads(out)
    return data


def test_a_report_makes_no_call_to_the_reference_search(
    config: Path, reference: tuple[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Each run asks the reference once per query; the report asks it nothing."""
    _run_twice(config)
    before = _calls(reference[0])
    _report(config, capsys)
    assert (2 * QUERIES, 0) == (before, _calls(reference[0]) - before)


def test_a_reference_judged_eval_set_does_not_read_as_changed(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The stored judgments stand in for the reference's: the report sees the same eval set."""
    _run_twice(config)
    warnings = _report(config, capsys)["warnings"]
    assert isinstance(warnings, list)
    assert [] == [w for w in warnings if "eval set changed" in w]


def test_a_changed_query_text_still_reads_as_changed(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Editing a query text after the runs makes the report warn that the eval set changed."""
    _run_twice(config)
    evalset = config.parent / "evalset.jsonl"
    evalset.write_text(
        evalset.read_text(encoding="utf-8").replace("question 3", "question three"),
        encoding="utf-8",
    )
    warnings = _report(config, capsys)["warnings"]
    assert isinstance(warnings, list)
    assert 1 == sum("the eval set changed since run 2" in w for w in warnings)
