"""Counts and DCG (num_ret, num_rel, num_rel_ret, dcg, dcg_burges) are no shares in [0, 1]:
a suite that monitors them runs, stores, exports its gauges and compares with its baseline."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from monitor.errors import UsageError
from monitor.exporters import SuiteSnapshot, render
from monitor.metrics.spec import MEASURES, UNBOUNDED, parse_metric

ROOT = Path(__file__).resolve().parent.parent
STARTED = datetime(2026, 11, 1, 12, 0, tzinfo=timezone.utc)
UNBOUNDED_MEANS = {"num_ret": 9.9, "num_rel": 1.5, "num_rel_ret@5": 1.2, "dcg@10": 1.03}


def snapshot(**changes: Any) -> SuiteSnapshot:
    """Return a successful run's snapshot with a ratio and the counts and DCG as means."""
    fields: dict[str, Any] = {
        "suite": "nightly",
        "pipeline": "p",
        "success": True,
        "started_at": STARTED,
        "finished_at": STARTED + timedelta(seconds=1),
        "means": {"ndcg@10": 0.7, **UNBOUNDED_MEANS},
        "baseline": {"ndcg@10": 0.8, "num_rel_ret@5": 1.3, "dcg@10": 1.1},
        "baseline_ci": {"ndcg@10": (-0.1, -0.02), "dcg@10": (-0.3, -0.1)},
        "queries_sent": 10,
        "queries_evaluated": 10,
        "segments": {"kind": {"a": {"ndcg@10": 0.6, "dcg@10": 1.4}}},
    }
    fields.update(changes)
    return SuiteSnapshot(**fields)


@pytest.mark.parametrize("measure", sorted(MEASURES))
def test_the_metric_spec_tells_which_measures_are_shares(measure: str) -> None:
    """A metric is bounded unless its measure is a count or a DCG."""
    metric = parse_metric(measure if MEASURES[measure].value != "required" else f"{measure}@5")
    assert (measure not in UNBOUNDED) == metric.bounded


def test_a_snapshot_takes_a_count_and_a_dcg_above_one() -> None:
    """Means, baselines, their intervals and segments of counts and DCG may exceed 1."""
    assert UNBOUNDED_MEANS.items() <= snapshot().means.items()


def test_a_snapshot_still_refuses_a_share_above_one() -> None:
    """A ratio's mean outside [0, 1] is still an error naming it."""
    with pytest.raises(UsageError, match=r"means\['ndcg@10'\] must be between 0 and 1"):
        snapshot(means={"ndcg@10": 1.5})


def test_a_count_gets_no_ratio_gauge() -> None:
    """No _ratio gauge (current, baseline, band or segment) holds a count or a DCG."""
    exported = [
        (s.name, s.labels.get("measure"))
        for family in text_string_to_metric_families(render(snapshot()))
        for s in family.samples
        if s.name.endswith("_ratio")
    ]
    assert [] == [pair for pair in exported if pair[1] in UNBOUNDED]
    assert ("retrieval_baseline_ratio", "ndcg") in exported


@pytest.mark.slow
def test_a_suite_monitoring_counts_runs_twice_and_exports(tmp_path: Path) -> None:
    """run exits 0 on a suite of counts and DCG, first against its pinned baseline, then
    again, writing its gauges each time."""
    config = tmp_path / "c.yaml"
    config.write_text(
        f"""version: 1
store: {{path: {tmp_path / "m.db"}}}
suites:
  nightly:
    evalset: {{bundled: larkfield}}
    search: {{kind: replay, bundled: larkfield/keyword}}
    metrics: [ndcg@10, num_ret, num_rel, num_rel_ret, num_rel_ret@5, dcg@10, dcg_burges]
    baseline: {{bundled_run: larkfield/rerank}}
    rules:
      - {{metric: num_rel_ret@5, max_drop: 1}}
      - {{metric: dcg@10, max_relative_drop: 0.5}}
    exporters:
      - {{kind: textfile, path: {tmp_path / "out.prom"}}}
"""
    )
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    codes = [
        subprocess.run(
            [sys.executable, "-m", "monitor", "run", "--config", str(config)],
            capture_output=True,
            text=True,
            env=env,
        ).returncode
        for _ in range(2)
    ]
    assert [0, 0] == codes
    assert "retrieval_ndcg_ratio" in (tmp_path / "out.prom").read_text()
