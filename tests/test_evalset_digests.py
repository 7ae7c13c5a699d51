"""The frozen eval set's digests are kept between runs while its files do not change."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

import monitor.job.path
import monitor.job.suite
import monitor.judgments
from monitor.cli import main
from monitor.evalset import digests
from monitor.store import open_store

SUITE = """
store: {{path: {store}}}
suites:
  nightly:
    evalset: {{path: {evalset}}}
    search: {{kind: replay, path: {run}, format: trec}}
    metrics: [mrr@10]
    exporters: []
    notifiers: []
"""

EVALSET = (
    '{"id": "q1", "query": "one", "relevant": {"d1": 1, "d2": 0}}\n'
    '{"id": "q2", "query": "two", "relevant": {"d3": 2}}\n'
)


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    (tmp_path / "evalset.jsonl").write_text(EVALSET, encoding="utf-8")
    (tmp_path / "run.trec").write_text("q1 Q0 d1 1 2 t\nq2 Q0 d9 1 1 t\n", encoding="utf-8")
    config = tmp_path / "monitor.yaml"
    config.write_text(
        textwrap.dedent(
            SUITE.format(
                store=tmp_path / "m.db",
                evalset=tmp_path / "evalset.jsonl",
                run=tmp_path / "run.trec",
            )
        )
    )
    return config


def _count_labels(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    original = monitor.judgments.labels_of

    def counted(evalset: Any) -> Any:
        calls.append(1)
        return original(evalset)

    # Every module of the run path that computes labels, each under the name it imports.
    for module in (monitor.job.suite, monitor.job.path):
        monkeypatch.setattr(module, "labels_of", counted)
    return calls


def _runs(config: Path) -> list[tuple[str, Any]]:
    with open_store(config.parent / "m.db") as store:
        return [
            (store.get_run(row.run_id).evalset_fingerprint, store.run_labels(row.run_id))
            for row in reversed(store.list_runs("nightly"))
        ]


def _run(config: Path) -> int:
    return main(["run", "--config", str(config), "--no-progress"])


def test_a_second_run_of_the_same_file_takes_the_kept_digests(
    suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The digests are computed once; the next run of the same bytes records the same."""
    calls = _count_labels(monkeypatch)
    assert 0 == _run(suite)
    assert 0 == _run(suite)
    assert [1] == calls
    (first, second) = _runs(suite)
    assert first == second


def test_a_changed_file_is_digested_again(suite: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One text changed, same size: the fingerprint computed again tells the change."""
    calls = _count_labels(monkeypatch)
    assert 0 == _run(suite)
    path = suite.parent / "evalset.jsonl"
    path.write_text(EVALSET.replace('"two"', '"TWO"'), encoding="utf-8")
    assert 0 == _run(suite)
    assert [1, 1] == calls
    (first, second) = _runs(suite)
    assert first[0] != second[0]
    assert first[1].queries_fingerprint != second[1].queries_fingerprint


def test_kept_digests_of_another_version_are_not_used(
    suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record written by other definitions of the digests is computed again."""
    calls = _count_labels(monkeypatch)
    assert 0 == _run(suite)
    monkeypatch.setattr(digests, "VERSION", digests.VERSION + 1)
    assert 0 == _run(suite)
    assert [1, 1] == calls


def test_a_file_that_changes_while_it_is_read_is_not_kept(
    suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stat before and after differ: the digests are computed and nothing is kept."""
    stats = iter([((1, 1, 1),), ((2, 2, 2),)] * 4)
    monkeypatch.setattr(digests, "stat_files", lambda config: next(stats))
    assert 0 == _run(suite)
    with open_store(suite.parent / "m.db") as store:
        assert store.get_state(digests.NAMESPACE, "nightly") is None
