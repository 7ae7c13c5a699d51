"""The peers' small unit-test cases (ranx, ir_measures, pytrec_eval) with the options they use.

``/work/shared/conformance/peers/cases.json`` holds 58 cases transcribed from those
projects' tests, each with qrels, run, checks (our metric, query or ``__mean__``, expected
value, tolerance) and the options and relevance transform the upstream call used. Relevance
levels and judged-only runs are given here as ``relevance_level`` and ``judged_only``, as a
user of those tools would ask for them, not rewritten into the data. Where the peer's own
name for the measure is one the engine reads, it must mean the same metric. Skipped when the
file is absent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from monitor.errors import MetricError
from monitor.metrics.evaluation import evaluate
from monitor.metrics.spec import parse_metric

PEERS = Path("/work/shared/conformance/peers")
CASES = json.loads((PEERS / "cases.json").read_text()) if (PEERS / "cases.json").is_file() else []
pytestmark = pytest.mark.skipif(not CASES, reason="the peers' cases are absent")


def inputs(case: dict[str, Any], tmp_path: Path) -> tuple[Any, Any]:
    """Return the case's qrels and run as evaluate takes them (mappings or files)."""
    if "qrels_file" in case:
        return PEERS / case["qrels_file"], PEERS / case["run_file"]
    qrels: Any = case.get("qrels")
    run: Any = case.get("run")
    if "qrels_trec" in case:
        qrels = tmp_path / "case.qrels"
        qrels.write_text(case["qrels_trec"].strip() + "\n")
    if "run_trec" in case:
        run = tmp_path / "case.run"
        run.write_text(case["run_trec"].strip() + "\n")
    return qrels, run


def options(case: dict[str, Any]) -> dict[str, Any]:
    """Return evaluate's options for the case's command-line options and transform."""
    out: dict[str, Any] = {"include_no_relevant": "--include-no-relevant" in case["options"]}
    transform = case.get("transform") or {}
    if "rel_level" in transform:
        out["relevance_level"] = transform["rel_level"]
    if transform.get("judged_only"):
        out["judged_only"] = True
    return out


@pytest.mark.parametrize("case", [c for c in CASES if c["checks"]], ids=lambda c: c["id"])
def test_every_check_of_the_case_holds(case: dict[str, Any], tmp_path: Path) -> None:
    """Each expected value of the case is what the engine gives, within its tolerance."""
    qrels, run = inputs(case, tmp_path)
    metrics = sorted({check["metric"] for check in case["checks"]})
    result = evaluate(qrels, run, metrics, **options(case))
    wrong = []
    for check in case["checks"]:
        metric, qid = check["metric"], check["query"]
        got = result.means[metric] if qid == "__mean__" else result.value(metric, qid)
        if abs(got - check["expected"]) > check["tol"]:
            wrong.append((metric, qid, check["expected"], got))
    assert [] == wrong


def peer_metric(check: dict[str, Any]) -> str | None:
    """Return the canonical metric of the peer's own name for the measure, if it is read."""
    try:
        return str(parse_metric(check["peer"]))
    except MetricError:
        return None


@pytest.mark.parametrize(
    "case",
    [c for c in CASES if any(peer_metric(check) for check in c["checks"])],
    ids=lambda c: c["id"],
)
def test_the_peers_own_measure_names_give_the_expected_values(
    case: dict[str, Any], tmp_path: Path
) -> None:
    """Asked by the peer's name (P@5, AP, nDCG@10, ranx's whole-run precision), each holds."""
    qrels, run = inputs(case, tmp_path)
    checks = [(check, peer_metric(check)) for check in case["checks"]]
    named = [(check, metric) for check, metric in checks if metric is not None]
    result = evaluate(qrels, run, sorted({m for _, m in named}), **options(case))
    wrong = []
    for check, metric in named:
        qid = check["query"]
        got = result.means[metric] if qid == "__mean__" else result.value(metric, qid)
        if abs(got - check["expected"]) > check["tol"]:
            wrong.append((check["peer"], metric, qid, check["expected"], got))
    assert [] == wrong


def test_most_peer_names_are_read() -> None:
    """The engine reads the peers' spelling of most measures their tests check."""
    checks = [check for case in CASES for check in case["checks"]]
    read = [check["peer"] for check in checks if peer_metric(check) is not None]
    assert len(read) >= 0.6 * len(checks), sorted({c["peer"] for c in checks} - set(read))
