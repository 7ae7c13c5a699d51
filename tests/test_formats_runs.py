"""Runs are read as trec_eval 10 reads them, by ``evaluate`` and the replay search alike."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from monitor.metrics.evaluation import evaluate
from monitor.search.saved import load_run

CONFORMANCE = Path("/work/shared/conformance/peers/trec_eval")
ROOT = Path(__file__).resolve().parent.parent
QRELS = "q1 0 a 1\nq1 0 b 0\nq2 0 c 2\n"


def write(path: Path, text: str) -> Path:
    """Write ``text`` to ``path``, gzip-compressed when the name ends in .gz."""
    data = text.encode("utf-8")
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
    return path


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m monitor`` with this checkout first on the path."""
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-m", "monitor", *args], capture_output=True, text=True, env=env
    )


def test_comment_lines_and_extra_fields_are_ignored(tmp_path: Path) -> None:
    """Comment lines are skipped and fields after the run id ignored, as trec_eval does."""
    run = write(tmp_path / "r.trec", "# run header\nq1 Q0 a 1 2.0 tag junk here\nq1 Q0 b 2 3 t\n")
    assert {"q1": ["b", "a"]} == load_run(run)


@pytest.mark.parametrize("text", ["", "\n \n", "# only a comment\n"])
def test_an_empty_run_scores_every_judged_query_zero(tmp_path: Path, text: str) -> None:
    """A run file without a line retrieves nothing, as the JSON run {} does."""
    qrels = write(tmp_path / "q.qrels", QRELS)
    result = evaluate(qrels, write(tmp_path / "r.trec", text), ["recall@5", "map"])
    expected = evaluate(qrels, write(tmp_path / "r.json", "{}"), ["recall@5", "map"])
    assert ({"recall@5": 0.0, "map": 0.0}, 2) == (result.means, result.counts.missing_from_run)
    assert expected.means == result.means


def test_gzip_qrels_and_run_evaluate_like_plain_files(tmp_path: Path) -> None:
    """evaluate reads gzip-compressed qrels and runs as their plain text."""
    run = "q1 Q0 b 1 3 t\nq1 Q0 a 2 2 t\nq2 Q0 c 1 1 t\n"
    plain = evaluate(write(tmp_path / "q.qrels", QRELS), write(tmp_path / "r.trec", run))
    packed = evaluate(write(tmp_path / "q.qrels.gz", QRELS), write(tmp_path / "r.trec.gz", run))
    assert plain.means == packed.means


@pytest.mark.slow
def test_cli_grades_truncate_reads_fractional_grades(tmp_path: Path) -> None:
    """evaluate --grades truncate scores qrels with fractional grades; without it, exit 2."""
    qrels = write(tmp_path / "q.qrels", "q1 0 a 1.5\nq1 0 b 0.5\n")
    run = write(tmp_path / "r.trec", "q1 Q0 b 1 3 t\nq1 Q0 a 2 2 t\n")
    refused = cli("evaluate", "--qrels", str(qrels), "--run", str(run), "--metrics", "mrr")
    done = cli(
        "evaluate", "--qrels", str(qrels), "--run", str(run), "--metrics", "mrr",
        "--format", "json", "--grades", "truncate",
    )  # fmt: skip
    assert (2, f"{qrels}:1") == (
        refused.returncode,
        refused.stderr.split(": expected")[0][-len(f"{qrels}:1") :],
    )
    assert {"mrr": 0.5} == json.loads(done.stdout)["metrics"]


@pytest.mark.slow
def test_cli_reads_dict_qrels_json(tmp_path: Path) -> None:
    """evaluate takes the {qid: {doc: grade}} JSON of ranx and pytrec_eval as --qrels."""
    qrels = write(tmp_path / "qrels.json", json.dumps({"q1": {"a": 1.0, "b": 0}}))
    run = write(tmp_path / "run.json", json.dumps({"q1": {"b": 3.0, "a": 2.0}}))
    done = cli("evaluate", "--qrels", str(qrels), "--run", str(run), "--metrics", "mrr",
               "--format", "json")  # fmt: skip
    assert {"mrr": 0.5} == json.loads(done.stdout)["metrics"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("qrels_name", "run_name", "expected_name"),
    [
        ("qrels.test", "results.test", "out.test"),
        ("qrels.test.with-comments", "results.test", "out.test"),
        ("qrels.comment.test", "results.comment.test", "out.comment.test"),
    ],
)
def test_trec_eval_test_folder_loads_as_it_is(
    tmp_path: Path, qrels_name: str, run_name: str, expected_name: str
) -> None:
    """trec_eval's own test files, plain or gzip-compressed, give its printed values."""
    if not CONFORMANCE.is_dir():
        pytest.skip("trec_eval's test folder is not here")
    expected = {}
    for line in (CONFORMANCE / expected_name).read_text().splitlines():
        name, scope, value = line.split()
        if scope == "all" and name in ("map", "Rprec", "recip_rank", "P_10", "P_100"):
            expected[name] = float(value)
    names = {"map": "map", "Rprec": "r_precision", "recip_rank": "mrr", "P_10": "precision@10",
             "P_100": "precision@100"}  # fmt: skip
    packed = tmp_path / f"{run_name}.gz"
    packed.write_bytes(gzip.compress((CONFORMANCE / run_name).read_bytes()))
    for run in (CONFORMANCE / run_name, packed):
        shutil.copy(CONFORMANCE / qrels_name, tmp_path / "judged")
        result = evaluate(tmp_path / "judged", run, list(names.values()), include_no_relevant=True)
        ours = {trec: round(result.means[name], 4) for trec, name in names.items()}
        assert expected == ours
