"""The README's coverage example (examples/coverage) does what the README says."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from monitor.cli import main

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "coverage"
CONFIG = str(EXAMPLE / "monitor.yaml")


def run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str
) -> dict[str, Any]:
    """Run the example suite on the saved run ``name`` and return its JSON comparison."""
    monkeypatch.setenv("RUN", f"{name}.json")
    capsys.readouterr()
    assert 0 == main(["run", "--config", CONFIG, "--no-progress", "--format", "json"])
    out = capsys.readouterr().out
    (suite,) = json.loads(out[out.index('{\n  "suites"') :])["suites"]
    comparison: dict[str, Any] = suite["comparison"]
    return comparison


@pytest.fixture
def pinned(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Store the example's runs under ``tmp_path`` and pin the baseline run."""
    monkeypatch.setenv("STORE", str(tmp_path / "demo.db"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    run(monkeypatch, capsys, "baseline")
    assert 0 == main(["baseline", "set", "--config", CONFIG, "--suite", "demo", "--latest"])


@pytest.mark.usefixtures("pinned")
def test_fresh_documents_give_unjudged_and_the_same_drop_on_judged_ones_a_regression(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """fresh.json: unjudged, judged-only mrr@10 stays 1.0; worse.json: regression, 0.5."""
    fresh = run(monkeypatch, capsys, "fresh")
    worse = run(monkeypatch, capsys, "worse")
    mrr = [next(m for m in c["metrics"] if m["metric"] == "mrr@10") for c in (fresh, worse)]
    assert ["unjudged", "regression"] == [fresh["verdict"], worse["verdict"]]
    assert [1.0, 0.5] == [m["judged_only_current"] for m in mrr]
    assert (60, 30) == (fresh["coverage"][0]["unjudged_added"], fresh["coverage"][0]["queries"])
