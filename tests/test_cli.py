"""The command line: exit codes, output shapes and error messages."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import pytest

import monitor
from monitor.cli import main

QRELS = "q1 0 a 1\nq1 0 b 2\nq2 0 c 1\nq3 0 x 0\n"
RUN = "q1 Q0 b 1 3.0 t\nq1 Q0 z 2 2.0 t\nq1 Q0 a 3 1.0 t\nq2 Q0 z 1 1.0 t\nq9 Q0 a 1 1.0 t\n"


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    qrels = tmp_path / "test.qrels"
    run = tmp_path / "test.run"
    qrels.write_text(QRELS)
    run.write_text(RUN)
    return qrels, run


def evaluate(files: tuple[Path, Path], *options: str) -> int:
    """Run `retrieval-monitor evaluate` on the test qrels and run with ``options``."""
    qrels, run = files
    return main(["evaluate", "--qrels", str(qrels), "--run", str(run), *options])


def test_evaluate_json_has_the_documented_shape(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """`--format json --per-query` prints one object with metrics, queries and per_query."""
    code = evaluate(files, "--metrics", "recall@2,mrr", "--format", "json", "--per-query")
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert ["metrics", "queries", "per_query"] == list(out)
    assert {"evaluated": 2, "skipped_no_relevant": 1, "missing_from_run": 0, "not_judged": 1} == (
        out["queries"]
    )
    assert {"recall@2": 0.25, "mrr": 0.5} == out["metrics"]
    assert {"q1": {"recall@2": 0.5, "mrr": 1.0}, "q2": {"recall@2": 0.0, "mrr": 0.0}} == (
        out["per_query"]
    )


def test_evaluate_json_leaves_out_per_query_by_default(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --per-query the JSON object holds only metrics and queries."""
    evaluate(files, "--format", "json")
    out = json.loads(capsys.readouterr().out)
    assert ["metrics", "queries"] == list(out)
    assert 24 == len(out["metrics"])  # 6 default measures x k in 1, 3, 5, 10


def test_evaluate_csv_ends_with_the_means(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """CSV output has a header, a row per query and a last row `all`."""
    evaluate(files, "--metrics", "mrr", "--format", "csv", "--per-query")
    lines = capsys.readouterr().out.splitlines()
    assert ["query_id,mrr", "q1,1.0", "q2,0.0", "all,0.5"] == lines


def test_include_no_relevant_counts_them_as_zeros(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """--include-no-relevant evaluates the query with no relevant judgment as zeros."""
    evaluate(files, "--metrics", "mrr", "--format", "json", "--include-no-relevant")
    out = json.loads(capsys.readouterr().out)
    assert 3 == out["queries"]["evaluated"]
    assert pytest.approx(1 / 3) == out["metrics"]["mrr"]


@pytest.mark.parametrize(
    ("metrics", "message"),
    [
        ("recal@5", "unknown measure"),
        ("recall@0", "positive integer"),
        ("recall@-3", "positive integer"),
        ("hit_rate", "needs a cutoff"),
    ],
)
def test_bad_metric_exits_2_with_a_clear_message(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str], metrics: str, message: str
) -> None:
    """An unknown metric name or a bad cutoff exits 2 and says why, without a traceback."""
    code = evaluate(files, "--metrics", metrics)
    err = capsys.readouterr().err
    assert 2 == code
    assert message in err
    assert "Traceback" not in err


def test_malformed_run_names_file_and_line(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad TREC run line exits 2 with the file and line in the message."""
    run = files[1]
    run.write_text("q1 Q0 a 1 1.0 t\nq1 Q0 b 2 high t\n")
    code = evaluate(files)
    err = capsys.readouterr().err
    assert 2 == code
    assert f"{run}:2" in err


@pytest.mark.slow
def test_python_m_monitor_runs_the_cli(files: tuple[Path, Path]) -> None:
    """`python -m monitor` is the same command line."""
    qrels, run = files
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "monitor",
            "evaluate",
            "--qrels",
            str(qrels),
            "--run",
            str(run),
            "--metrics",
            "mrr",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert 0 == proc.returncode, proc.stderr
    assert 0.5 == json.loads(proc.stdout)["metrics"]["mrr"]


def test_k_sweep_recommends_the_smallest_best_k(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """k-sweep JSON holds every measure at every k and one recommendation per use case."""
    qrels, run = files
    code = main(
        ["k-sweep", "--qrels", str(qrels), "--run", str(run), "--ks", "1,3", "--format", "json"]
    )
    out = json.loads(capsys.readouterr().out)
    assert 0 == code
    assert 0.5 == out["metrics"]["recall@3"]  # q1 finds both, q2 none
    assert {"measure": "recall", "k": 3, "value": 0.5} == out["recommendations"]["coverage"]
    assert 1 == out["recommendations"]["first_answer"]["k"]


@pytest.mark.parametrize(
    "argv",
    [
        ["baseline", "show", "--suite", "nosuch"],
        ["baseline", "set", "--suite", "nosuch"],
        ["baseline", "set", "--suite", "nosuch", "--run", "1"],
        ["runs", "list", "--suite", "nosuch"],
    ],
)
def test_an_unknown_suite_exits_2_naming_the_known_suites(
    argv: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A suite the config does not have is an error listing its suites, as `run` answers."""
    monkeypatch.chdir(tmp_path)  # no ./config/monitor.yaml: the embedded default config
    code = main([*argv, "--store", str(tmp_path / "monitor.db")])
    captured = capsys.readouterr()
    assert 2 == code
    assert "no suite 'nosuch' in <default config>; suites: larkfield" in captured.err
    assert "" == captured.out


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    """`--version` prints the program name and the distribution's version, and exits 0."""
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert 0 == exited.value.code
    assert f"retrieval-monitor {importlib.metadata.version('retrieval-monitor')}\n" == (
        capsys.readouterr().out
    )


def test_version_falls_back_to_the_package_version(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without installed metadata, `--version` prints ``monitor.__version__``."""

    def not_installed(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    with pytest.raises(SystemExit):
        main(["--version"])
    assert f"retrieval-monitor {monitor.__version__}\n" == capsys.readouterr().out


def test_runs_list_starts_with_a_header_aligned_with_its_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`runs list` prints a header row, and each column starts where its heading does."""
    monkeypatch.chdir(tmp_path)
    store = str(tmp_path / "monitor.db")
    main(["run", "--store", store, "--no-progress"])  # the seeded baseline and one run
    capsys.readouterr()
    assert 0 == main(["runs", "list", "--store", store])
    header, *rows = capsys.readouterr().out.splitlines()
    assert ["run", "started", "(UTC)", "suite", "status", "pipeline", "baseline", "error"] == (
        header.split()
    )
    assert 2 == len(rows)
    for row in rows:
        assert "larkfield" == row[header.index("suite") :].split()[0]
        assert "ok" == row[header.index("status") :].split()[0]
        assert row[header.index("pipeline") - 2 : header.index("pipeline")].isspace()
    assert "yes" == rows[-1][header.index("baseline") :].strip()


def test_k_sweep_says_when_a_cutoff_exceeds_the_longest_ranking(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """A k larger than every ranking of the run gets a note line in the text output."""
    qrels, run = files
    assert 0 == main(["k-sweep", "--qrels", str(qrels), "--run", str(run), "--ks", "1,3,5,10"])
    lines = capsys.readouterr().out.splitlines()
    assert (
        "note: the longest ranking in the run holds 3 results, so k = 5, 10 see no more "
        "documents than k = 3 (precision and f1 only fall there)"
    ) in lines


def test_k_sweep_text_has_no_note_when_every_k_fits_the_run(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """With every k within the longest ranking, the text output has no note."""
    qrels, run = files
    assert 0 == main(["k-sweep", "--qrels", str(qrels), "--run", str(run), "--ks", "1,3"])
    assert "note:" not in capsys.readouterr().out


def test_k_sweep_json_adds_the_longest_ranking_after_the_existing_keys(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """The JSON keeps its keys and adds the longest ranking and the k beyond it."""
    qrels, run = files
    main(["k-sweep", "--qrels", str(qrels), "--run", str(run), "--ks", "1,3,5", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert [
        "ks",
        "metrics",
        "queries",
        "recommendations",
        "longest_ranking",
        "ks_beyond_longest_ranking",
    ] == list(out)
    assert 3 == out["longest_ranking"]
    assert [5] == out["ks_beyond_longest_ranking"]
