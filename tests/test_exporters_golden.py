"""The exact exposition of one successful and one failed run, compared byte for byte.

As client_python tests its own exposition, ``render()`` of two fixed snapshots is compared
with golden files in ``tests/data/exporters/``: any change to a gauge's name, help text,
labels, order or number formatting shows up as a diff of those files. After a deliberate
change, regenerate them and review the diff before committing it::

    MONITOR_UPDATE_GOLDEN=1 python3 -m pytest tests/test_exporters_golden.py
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from monitor.exporters import GAUGES, RuleState, SuiteSnapshot, render

GOLDEN = Path(__file__).resolve().parent / "data" / "exporters"

#: Set to 1 to write the golden files from the current code instead of comparing with them.
UPDATE = os.environ.get("MONITOR_UPDATE_GOLDEN") == "1"

STARTED = datetime(2026, 3, 14, 2, 0, tzinfo=timezone.utc)
FINISHED = STARTED + timedelta(seconds=93.25)
LAST_SUCCESS = STARTED - timedelta(days=1)


def successful_run() -> SuiteSnapshot:
    """Return a successful run that sets every field, each rule with its severity."""
    return SuiteSnapshot(
        suite="nightly",
        pipeline="hybrid-v2",
        labels={"team": "search", "env": "prod"},
        success=True,
        started_at=STARTED,
        finished_at=FINISHED,
        means={
            "hit_rate@1": 0.55,
            "precision@5": 0.32,
            "recall@5": 0.8,
            "recall@10": 0.9,
            "f1@5": 0.4571428571428572,
            "mrr": 0.6527777777777778,
            "ndcg@10": 0.7012,
            "ndcg_burges@10": 0.6875,
            "map@10": 0.61,
            "r_precision": 0.5,
            "bpref": 0.45,
            "infap": 0.42,
            "judged@10": 0.9,
            "set_precision": 0.2,
            "set_recall": 0.7,
            "set_f1": 0.3,
            "err@10": 0.35,
            **dict.fromkeys(("rbp", "rbp_50", "rbp_80", "rbp_95", "rbp_99"), 0.4),
        },
        baseline={"recall@5": 0.82, "ndcg@10": 0.71, "mrr": 0.6},
        baseline_ci={"recall@5": (-0.05, 0.01), "ndcg@10": (-0.03, 0.02)},
        rules={
            "recall@5 max_drop": RuleState(True, "critical"),
            "ndcg@10 max_relative_drop": RuleState(False, "warning"),
            "latency_p95_seconds_max": RuleState(False, "info"),
        },
        latency={"p50": 0.012, "p95": 0.048, "p99": 0.091, "mean": 0.0175, "max": 0.25},
        error_rate=0.01,
        zero_result_rate=0.02,
        mean_top1_score=12.5,
        queries_sent=200,
        queries_failed=2,
        queries_evaluated=190,
        evalset_fingerprint="sha256:0123abcd",
        baseline_run_id=7,
        index_size=1250000,
        ann_recall_k=10,
        ann_recall=0.9731,
        corpus_fingerprint="3f2a9c0e1b7d4a55",
        segments={
            "language": {
                "de": {"recall@5": 0.7, "ndcg@10": 0.64},
                "en": {"recall@5": 0.85, "ndcg@10": 0.73},
            }
        },
        overlap_k=10,
        rbo=0.7125,
        jaccard=0.5833333333333334,
        labels_needed=False,
        judge="judge:llm:tiny:0123456789ab",
        judge_agreement={
            "exact": 0.8,
            "kappa": 0.7142857142857143,
            "kappa_linear": 0.625,
            "alpha": 0.7,
        },
        judge_pairs=40,
        drift={"query_drift": {"auc": 0.5125, "mmd2": 0.0003, "mmd_p_value": 0.42}},
    )


def online_window() -> SuiteSnapshot:
    """Return an online suite's window: its online figures, and no counts of queries sent."""
    return SuiteSnapshot(
        suite="shop",
        pipeline="shop",
        labels={"team": "search", "env": "prod"},
        success=True,
        started_at=FINISHED,
        finished_at=FINISHED,
        online={("ctr", "all", "all"): 0.4125, ("ctr", "web", "all"): 0.45},
        online_searches={("all", "all"): 1200, ("web", "all"): 800},
        online_no_data=False,
        rules={"ctr max_relative_drop": RuleState(False, "critical")},
    )


def failed_run() -> SuiteSnapshot:
    """Return a failed run: the attempt's figures and the stored last success only."""
    return SuiteSnapshot(
        suite="nightly",
        pipeline="hybrid-v2",
        labels={"team": "search", "env": "prod"},
        success=False,
        started_at=STARTED,
        finished_at=FINISHED,
        error_rate=0.6,
        queries_sent=200,
        queries_failed=120,
        last_success_at=LAST_SUCCESS,
    )


#: Each golden file and the run it renders.
RUNS = {
    "successful-run.prom": successful_run,
    "failed-run.prom": failed_run,
    "online-window.prom": online_window,
}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_the_exposition_matches_its_golden_file_byte_for_byte(name: str) -> None:
    """render() of the fixed run is exactly the golden file, byte for byte."""
    path = GOLDEN / name
    rendered = render(RUNS[name]()).encode("utf-8")
    if UPDATE:
        path.write_bytes(rendered)
    assert path.read_bytes() == rendered


def test_the_successful_golden_runs_export_every_gauge() -> None:
    """The golden successful run and online window have a series of every declared gauge
    between them, so they pin them all."""
    exported = {
        family.name
        for name in ("successful-run.prom", "online-window.prom")
        for family in text_string_to_metric_families((GOLDEN / name).read_text(encoding="utf-8"))
    }
    assert {gauge.name for gauge in GAUGES} == exported
