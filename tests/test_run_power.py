"""`retrieval-monitor run` gives each drop rule's minimal detectable drop, as `report` does.

The default suite's first run stores the seeded rerank baseline (run 1) and a keyword run
(run 2); the figures come from their stored per-query values.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from monitor.cli import main
from monitor.cli.run import _powers
from monitor.compare.power import rule_powers
from monitor.config import default_config
from monitor.job import run_suite
from monitor.store import RunRecord, open_store

SUITE = "larkfield"


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str], *options: str) -> str:
    capsys.readouterr()
    main(["run", "--store", str(tmp_path / "m.db"), "--no-progress", *options])
    return capsys.readouterr().out


@pytest.fixture(autouse=True)
def _no_local_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the default config, whatever the working folder holds


def test_the_text_output_gives_the_power_beside_each_drop_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each max_drop and max_relative_drop rule line ends its message with its power."""
    out = _run(tmp_path, capsys)
    lines = [line for line in out.splitlines() if line.startswith("  [")]
    with_power = [line.split("] ")[1].split(":")[0] for line in lines if "80% power" in line]
    assert ["recall@5 max_drop", "mrr@10 max_drop", "ndcg@10 max_relative_drop"] == with_power
    assert "this set of 59 answerable queries detects drops of 0.13 or more with 80% power" in out


def test_the_json_output_lists_the_figures_the_stored_runs_give(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The JSON's power list is rule_powers of the stored baseline and run, figure by figure."""
    out = _run(tmp_path, capsys, "--format", "json")
    # the suite's stdout notifier prints its alerts first
    report: dict[str, Any] = json.loads(out[out.index('{\n  "suites"') :])["suites"][0]
    suite = default_config().suite(SUITE)
    with open_store(tmp_path / "m.db") as store:
        baseline, run = store.get_run(1), store.get_run(report["run_id"])
    expected = rule_powers(suite.rules, baseline, run, suite.significance.alpha)
    assert [f.to_dict() for f in expected.values()] == report["power"]
    assert 0.13 == round(report["power"][0]["minimal_detectable_drop"], 2)


def test_the_figures_read_no_run_when_the_outcome_holds_the_baseline(tmp_path: Path) -> None:
    """_powers takes the compared baseline from the outcome: the store is not read."""
    suite = default_config().suite(SUITE)
    with open_store(tmp_path / "m.db") as store:
        outcome = run_suite(suite, store, progress=False)
        figures = _powers(_NoReads(), suite, outcome)  # type: ignore[arg-type]
    assert 3 == len(figures)


def test_the_figures_cost_one_read_of_the_baseline_whatever_the_rules(tmp_path: Path) -> None:
    """Without the baseline in the outcome, _powers reads it once, not once per rule."""
    suite = default_config().suite(SUITE)
    with open_store(tmp_path / "m.db") as store:
        outcome = replace(run_suite(suite, store, progress=False), baseline=None)
        reads: list[int] = []

        class Counting:
            def get_run(self, run_id: int) -> RunRecord:
                reads.append(run_id)
                return store.get_run(run_id)

        figures = _powers(Counting(), suite, outcome)  # type: ignore[arg-type]
    assert ([1], 3) == (reads, len(figures))


def test_a_run_that_is_its_own_baseline_reads_nothing(tmp_path: Path) -> None:
    """Compared with itself, a run's figures come from its own values without a read."""
    suite = default_config().suite(SUITE)
    with open_store(tmp_path / "m.db") as store:
        outcome = run_suite(suite, store, progress=False)
        compared = replace(outcome.comparison, baseline_run_id=outcome.run_id)
        own = replace(outcome, comparison=compared)
        figures = _powers(_NoReads(), suite, own)  # type: ignore[arg-type]
    assert {"baseline values"} == {figure.source for figure in figures.values()}


class _NoReads:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the store was read: {name}")
