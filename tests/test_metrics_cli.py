"""evaluate's trec_eval-compatible options and outputs, used as a trec_eval user would."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monitor.cli import main

PEERS = Path("/work/shared/conformance/peers/trec_eval")
needs_peers = pytest.mark.skipif(not PEERS.is_dir(), reason="trec_eval's test files are absent")

# q1: a (1), b (2) relevant; q2: c relevant, missing from nothing; q3: judged, none relevant;
# q4: judged, absent from the run.
QRELS = "q1 0 a 1\nq1 0 b 2\nq1 0 n 0\nq2 0 c 1\nq3 0 x 0\nq4 0 d 1\n"
RUN = (
    "q1 Q0 u 1 4.0 t\nq1 Q0 n 2 3.0 t\nq1 Q0 a 3 2.0 t\nq1 Q0 b 4 1.0 t\n"
    "q2 Q0 c 1 1.0 t\nq3 Q0 x 1 1.0 t\n"
)


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    qrels, run = tmp_path / "t.qrels", tmp_path / "t.run"
    qrels.write_text(QRELS)
    run.write_text(RUN)
    return str(qrels), str(run)


def run_json(files: tuple[str, str], capsys: pytest.CaptureFixture[str], *options: str) -> dict:
    """Return evaluate's JSON output with ``options``."""
    assert 0 == main(
        ["evaluate", "--qrels", files[0], "--run", files[1], "--format", "json", *options]
    )
    return json.loads(capsys.readouterr().out)


@needs_peers
def test_trec_eval_format_prints_trec_evals_own_lines(capsys: pytest.CaptureFixture[str]) -> None:
    """--format trec_eval -q prints exactly the lines trec_eval printed, names and digits."""
    measures = [
        "P_5",
        "map",
        "ndcg_cut_10",
        "recip_rank",
        "bpref",
        "num_ret",
        "num_rel_ret",
        "set_F",
    ]
    want = {
        line
        for line in (PEERS / "out.test.aq").read_text().splitlines()
        if line.split()[0] in [*measures, "num_q"]
    }
    argv = ["evaluate", "--qrels", str(PEERS / "qrels.test"), "--run", str(PEERS / "results.test")]
    assert 0 == main([*argv, "-m", ",".join(measures), "--format", "trec_eval", "-q"])
    assert want == set(capsys.readouterr().out.splitlines())


def test_trec_eval_format_ends_with_the_summary(
    files: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --per-query only the 'all' lines come, num_q first, counts as integers."""
    argv = ["evaluate", "--qrels", files[0], "--run", files[1], "-m", "num_ret,P@2"]
    assert 0 == main([*argv, "--format", "trec_eval"])
    lines = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    # q1, q2 and q4 (missing from the run): 4 + 1 + 0 retrieved; P@2 (0 + 1/2 + 0) / 3
    assert [["num_q", "all", "3"], ["num_ret", "all", "5"], ["P_2", "all", "0.1667"]] == [
        [field.strip() for field in line] for line in lines
    ]


@pytest.mark.parametrize(
    ("names", "keys"),
    [
        ("canonical", ["precision@2", "map", "mrr", "hit_rate@1"]),
        ("trec_eval", ["P_2", "map", "recip_rank", "success_1"]),
        ("ir_measures", ["P@2", "AP", "RR", "Success@1"]),
    ],
)
def test_names_chooses_the_printed_names(
    files: tuple[str, str], capsys: pytest.CaptureFixture[str], names: str, keys: list[str]
) -> None:
    """--names spells the metric keys as the chosen tool does."""
    out = run_json(files, capsys, "-m", "P_2,AP,recip_rank,hit_rate@1", "--names", names)
    assert keys == list(out["metrics"])


@pytest.mark.slow
@pytest.mark.parametrize(
    ("options", "evaluated", "mrr"),
    [
        ([], 3, (1 / 3 + 1 + 0) / 3),  # q1, q2 and q4 (missing: 0)
        (["--average", "trec_eval"], 3, (1 / 3 + 1 + 0) / 3),  # q1, q2, q3 (no relevant: 0)
        (["--average", "all"], 4, (1 / 3 + 1 + 0 + 0) / 4),
        (["-c"], 4, (1 / 3 + 1 + 0 + 0) / 4),
    ],
)
def test_average_chooses_the_queries_of_the_mean(
    files: tuple[str, str],
    capsys: pytest.CaptureFixture[str],
    options: list[str],
    evaluated: int,
    mrr: float,
) -> None:
    """answerable, trec_eval and all average over the queries trec_eval's options would."""
    out = run_json(files, capsys, "-m", "mrr", *options)
    assert (evaluated, mrr) == (out["queries"]["evaluated"], pytest.approx(out["metrics"]["mrr"]))


@pytest.mark.parametrize(
    ("options", "metric", "expected"),
    [
        (["-l2"], "P_4", 1 / 4),  # only b (grade 2) is relevant
        (["--relevance-level", "2"], "recall_4", 1.0),  # q1: b of {b}; q2 has no grade >= 2
        (["-M2"], "num_ret", (2 + 1) / 2),  # q1 cut to u, n; q2 has one
        (["-M2"], "recall_10", 0.5),  # q1's a and b are cut off
        (["-J"], "recip_rank", (1 / 2 + 1) / 2),  # u removed: a moves up to rank 2
        (["--judged-only"], "P_1", 0.5),
    ],
)
def test_trec_eval_options_have_trec_evals_meaning(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    options: list[str],
    metric: str,
    expected: float,
) -> None:
    """-l, -M and -J, written as a trec_eval user writes them, score as trec_eval does."""
    qrels, run = tmp_path / "t.qrels", tmp_path / "t.run"
    qrels.write_text("q1 0 a 1\nq1 0 b 2\nq1 0 n 0\nq2 0 c 1\n")
    run.write_text(
        "q1 Q0 u 1 4.0 t\nq1 Q0 n 2 3.0 t\nq1 Q0 a 3 2.0 t\nq1 Q0 b 4 1.0 t\nq2 Q0 c 1 1 t\n"
    )
    out = run_json((str(qrels), str(run)), capsys, "-m", metric, *options, "--names", "trec_eval")
    assert expected == pytest.approx(out["metrics"][metric])


def test_include_no_relevant_cannot_contradict_average(
    files: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """-c with another --average than all is a usage error (exit 2) naming both."""
    argv = ["evaluate", "--qrels", files[0], "--run", files[1], "-c", "--average", "trec_eval"]
    assert 2 == main(argv)
    assert "--average trec_eval" in capsys.readouterr().err


def test_an_unknown_metric_suggests_the_closest_name(
    files: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A misspelt measure exits 2 and names the closest known one."""
    assert 2 == main(["evaluate", "--qrels", files[0], "--run", files[1], "-m", "ndgc_cut_10"])
    assert "did you mean 'ndcg_cut_10'?" in capsys.readouterr().err


def test_include_no_relevant_help_does_not_claim_to_be_trec_eval_c(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The help says -c is --average all, without calling trec_eval's -c its equal."""
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "the same as --average all" in text
    assert "(trec_eval -c)" not in text
