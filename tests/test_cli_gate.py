"""`retrieval-monitor gate` on the bundled Larkfield set: verdicts, exit codes, what it writes."""

from __future__ import annotations

import json
import sqlite3
import sys
import textwrap
import types
from collections.abc import Sequence
from pathlib import Path

import pytest

from monitor.cli import main
from monitor.evalset import EvalSet
from monitor.gate.records import GateResult

STRICT = "[{metric: ndcg@10, max_drop: 0.05}]"
FAILING_SEARCH = """
def search(query, k):
    raise ConnectionError("search backend down")
"""


def write_config(
    tmp_path: Path,
    *,
    rules: str = STRICT,
    evalset: str = "{bundled: larkfield}",
    significance: str = "{iterations: 2000}",
    name: str = "monitor.yaml",
) -> Path:
    """Write a one-suite Larkfield config (rerank its search and seed baseline); return it."""
    config = tmp_path / name
    config.write_text(
        textwrap.dedent(
            f"""\
            store: {{path: {tmp_path / "monitor.db"}}}
            suites:
              larkfield:
                evalset: {evalset}
                search: {{kind: replay, bundled: larkfield/rerank}}
                baseline: {{bundled_run: larkfield/rerank}}
                runner: {{retries: 0}}
                rules: {rules}
                significance: {significance}
            """
        )
    )
    return config


def gate(config: Path, *extra: str) -> int:
    return main(["gate", "--config", str(config), "--suite", "larkfield", "--no-progress", *extra])


@pytest.fixture
def baseline_file(tmp_path: Path) -> Path:
    """Seed the store by one run (rerank pinned as baseline) and export it to a file."""
    config = write_config(tmp_path)
    assert 0 == main(["run", "--config", str(config), "--no-progress"])
    path = tmp_path / "baseline.json"
    export = ["baseline", "export", "--config", str(config), "--suite", "larkfield"]
    assert 0 == main([*export, "--output", str(path)])
    return path


def row_counts(tmp_path: Path) -> dict[str, int]:
    """Return the number of rows of every table of the store."""
    with sqlite3.connect(tmp_path / "monitor.db") as db:
        tables = [
            row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]
        return {
            table: db.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0] for table in tables
        }


def stored_runs(tmp_path: Path) -> int:
    with sqlite3.connect(tmp_path / "monitor.db") as db:
        count: int = db.execute("SELECT count(*) FROM runs").fetchone()[0]
    return count


def test_the_gate_can_be_the_first_command_against_the_suites_seed_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With no store yet, the gate judges the candidate against the suite's seed baseline
    (bundled_run) and creates no store file, since it stores nothing."""
    config = write_config(tmp_path)
    capsys.readouterr()
    assert (4, False) == (
        gate(config, "--candidate", "replay:larkfield/keyword"),
        (tmp_path / "monitor.db").exists(),
    )
    assert "vs baseline bundled run larkfield/rerank" in capsys.readouterr().out


def test_a_suite_with_no_baseline_at_all_names_the_command_that_pins_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No pinned run, no file, no seed: exit 2 with the baseline set command, config and all."""
    config = write_config(tmp_path)
    config.write_text(config.read_text().replace("baseline: {bundled_run: larkfield/rerank}", ""))
    capsys.readouterr()
    assert 2 == gate(config, "--candidate", "replay:larkfield/keyword")
    expected = f"retrieval-monitor baseline set --config {config} --suite larkfield"
    assert expected in capsys.readouterr().err


@pytest.mark.slow
def test_keyword_against_the_rerank_baseline_file_exits_4(
    tmp_path: Path, baseline_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A candidate significantly worse than the baseline file is a regression: exit 4."""
    config = write_config(tmp_path)
    capsys.readouterr()
    code = gate(
        config, "--candidate", "replay:larkfield/keyword", "--baseline-file", str(baseline_file)
    )
    assert 4 == code
    assert "gate: suite larkfield: REGRESSION" in capsys.readouterr().out


@pytest.mark.slow
def test_rerank_against_itself_exits_0(
    tmp_path: Path, baseline_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The baseline's own search gated against it passes."""
    config = write_config(tmp_path)
    capsys.readouterr()
    assert 0 == gate(
        config, "--candidate", "replay:larkfield/rerank", "--baseline-file", str(baseline_file)
    )
    assert "gate: suite larkfield: PASS" in capsys.readouterr().out


@pytest.mark.slow
def test_a_saved_run_file_is_gated_as_its_replay(tmp_path: Path, baseline_file: Path) -> None:
    """--run FILE gates the saved run: the bundled keyword run file regresses."""
    from monitor.evalset.bundled import data_path

    config = write_config(tmp_path)
    run_file = data_path("larkfield", "runs", "keyword.json")
    assert 4 == gate(config, "--run", str(run_file), "--baseline-file", str(baseline_file))


def test_the_stores_pinned_baseline_is_used_without_a_baseline_file(
    tmp_path: Path, baseline_file: Path
) -> None:
    """Without --baseline-file the store's pinned baseline is the one judged against."""
    assert 4 == gate(write_config(tmp_path), "--candidate", "replay:larkfield/keyword")


def test_a_changed_eval_set_exits_2_naming_both_fingerprints(
    tmp_path: Path, baseline_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A baseline measured on another eval set is exit 2, naming the file's and the set's."""
    from monitor.evalset.bundled import larkfield_evalset

    queries = list(larkfield_evalset())[:-1]
    lines = [
        json.dumps({"id": q.id, "query": q.text, "relevant": dict(q.judgments)}) for q in queries
    ]
    (tmp_path / "smaller.jsonl").write_text("\n".join(lines) + "\n")
    changed = EvalSet.load(tmp_path / "smaller.jsonl").fingerprint
    config = write_config(tmp_path, evalset="{path: smaller.jsonl}", name="changed.yaml")
    capsys.readouterr()
    assert 2 == gate(
        config, "--candidate", "replay:larkfield/rerank", "--baseline-file", str(baseline_file)
    )
    err = capsys.readouterr().err
    assert json.loads(baseline_file.read_text())["evalset_fingerprint"] in err
    assert changed in err


def test_a_malformed_baseline_file_exits_2_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A baseline file of another version is exit 2 with the file and what was expected."""
    bad = tmp_path / "baseline.json"
    bad.write_text(json.dumps({"format": "retrieval-monitor-baseline", "version": 9}))
    assert 2 == gate(write_config(tmp_path), "--baseline-file", str(bad))
    err = capsys.readouterr().err
    assert f"{bad}: expected version 1 of retrieval-monitor-baseline, found 9" in err
    assert "Traceback" not in err


@pytest.mark.slow
def test_nothing_is_written_to_the_store_without_record(
    tmp_path: Path, baseline_file: Path
) -> None:
    """Without --record no table of the store gains or loses a row."""
    before = row_counts(tmp_path)
    gate(write_config(tmp_path), "--candidate", "replay:larkfield/keyword")
    assert before == row_counts(tmp_path)


def test_a_baseline_file_alone_never_opens_the_store(tmp_path: Path, baseline_file: Path) -> None:
    """With a baseline file and no --record, a store that does not exist is not created."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    config = write_config(elsewhere)
    assert 0 == gate(config, "--baseline-file", str(baseline_file))
    assert not (elsewhere / "monitor.db").exists()


@pytest.mark.slow
def test_record_stores_the_candidates_run(
    tmp_path: Path, baseline_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--record saves the candidate's run, named by its spec, and the JSON gives its id."""
    before = stored_runs(tmp_path)
    capsys.readouterr()
    extra = ("--candidate", "replay:larkfield/keyword", "--record", "--format", "json")
    gate(write_config(tmp_path), *extra, "--baseline-file", str(baseline_file))
    (suite,) = json.loads(capsys.readouterr().out)["suites"]
    assert before + 1 == stored_runs(tmp_path)
    with sqlite3.connect(tmp_path / "monitor.db") as db:
        row = db.execute("SELECT pipeline FROM runs WHERE run_id = ?", (suite["recorded_run_id"],))
        assert ("replay:larkfield/keyword",) == row.fetchone()


@pytest.mark.slow
@pytest.mark.parametrize(("policy", "code"), [("pass", 0), ("fail", 4), ("code", 5)])
def test_insufficient_evidence_exits_as_the_policy_says(
    tmp_path: Path, baseline_file: Path, policy: str, code: int
) -> None:
    """A drop past the threshold that is not significant exits 0, 4 or 5 by the policy."""
    config = write_config(tmp_path, rules="[{metric: recall@5, max_drop: 0.05}]", name="ie.yaml")
    extra = ("--candidate", "replay:larkfield/keyword", "--baseline-file", str(baseline_file))
    assert code == gate(config, *extra, "--on-insufficient-evidence", policy)


@pytest.mark.slow
def test_persistence_does_not_hold_back_a_gated_regression(
    tmp_path: Path, baseline_file: Path
) -> None:
    """A significant breach is a regression at once, though the suite asks for persistence."""
    config = write_config(
        tmp_path,
        significance="{iterations: 2000, persistence: {breaches: 2, runs: 3}}",
        name="persist.yaml",
    )
    extra = ("--candidate", "replay:larkfield/keyword", "--baseline-file", str(baseline_file))
    assert 4 == gate(config, *extra)


@pytest.mark.slow
def test_a_failing_search_backend_exits_3(
    tmp_path: Path,
    baseline_file: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A candidate whose every query fails is a backend failure, reported per suite: exit 3."""
    (tmp_path / "failing_gate_search.py").write_text(FAILING_SEARCH)
    monkeypatch.syspath_prepend(str(tmp_path))
    capsys.readouterr()
    extra = ("--candidate", "python:failing_gate_search:search", "--format", "json")
    assert 3 == gate(write_config(tmp_path), *extra, "--baseline-file", str(baseline_file))
    (suite,) = json.loads(capsys.readouterr().out)["suites"]
    assert ("error", 3) == (suite["verdict"], suite["exit_code"])


@pytest.mark.slow
def test_the_json_output_has_the_documented_shape(
    tmp_path: Path, baseline_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--format json prints one object: format, version, exit code and one entry per suite."""
    capsys.readouterr()
    extra = ("--candidate", "replay:larkfield/keyword", "--format", "json")
    gate(write_config(tmp_path), *extra, "--baseline-file", str(baseline_file))
    document = json.loads(capsys.readouterr().out)
    (suite,) = document["suites"]
    assert ("retrieval-monitor-gate", 1, 4) == (
        document["format"],
        document["version"],
        document["exit_code"],
    )
    assert {
        "suite": "larkfield",
        "verdict": "regression",
        "exit_code": 4,
        "candidate": "replay:larkfield/keyword",
        "baseline": str(baseline_file),
        "recorded_run_id": None,
        "error": None,
    } == {key: value for key, value in suite.items() if key != "comparison"}
    assert "regression" == suite["comparison"]["verdict"]


# -- the outputs CI reads, through a stand-in for monitor.gate.render ------------------------


@pytest.fixture
def renderers(monkeypatch: pytest.MonkeyPatch) -> list[Sequence[GateResult]]:
    """Put a stand-in renderer module in place; return the results each call was given."""
    calls: list[Sequence[GateResult]] = []

    def markdown_summary(results: Sequence[GateResult]) -> str:
        calls.append(results)
        return "# summary " + ",".join(r.verdict for r in results) + "\n"

    def annotations(results: Sequence[GateResult]) -> list[str]:
        calls.append(results)
        return [f"::error title={r.suite}::{r.verdict}" for r in results]

    def junit_xml(results: Sequence[GateResult]) -> str:
        calls.append(results)
        return "<testsuites>" + ",".join(r.verdict for r in results) + "</testsuites>"

    fake = types.ModuleType("monitor.gate.render")
    fake.markdown_summary = markdown_summary  # type: ignore[attr-defined]
    fake.annotations = annotations  # type: ignore[attr-defined]
    fake.junit_xml = junit_xml  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "monitor.gate.render", fake)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return calls


def keyword_gate(tmp_path: Path, baseline_file: Path, *extra: str) -> int:
    args = ("--candidate", "replay:larkfield/keyword", "--baseline-file", str(baseline_file))
    return gate(write_config(tmp_path), *args, *extra)


@pytest.mark.slow
def test_junit_and_markdown_files_are_written_from_the_renderers(
    tmp_path: Path, baseline_file: Path, renderers: list[Sequence[GateResult]]
) -> None:
    """--junit and --markdown write what the renderers return for the gated suites."""
    junit, markdown = tmp_path / "gate.xml", tmp_path / "gate.md"
    keyword_gate(tmp_path, baseline_file, "--junit", str(junit), "--markdown", str(markdown))
    assert "<testsuites>regression</testsuites>" == junit.read_text()
    assert "# summary regression\n" == markdown.read_text()


@pytest.mark.slow
def test_the_summary_is_appended_to_the_github_step_summary(
    tmp_path: Path,
    baseline_file: Path,
    renderers: list[Sequence[GateResult]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """When GITHUB_STEP_SUMMARY is set the markdown is appended to that file."""
    summary = tmp_path / "step_summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    keyword_gate(tmp_path, baseline_file)
    assert "earlier step\n# summary regression\n" == summary.read_text()


@pytest.mark.slow
def test_annotations_are_printed_only_on_github_actions(
    tmp_path: Path,
    baseline_file: Path,
    renderers: list[Sequence[GateResult]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """With GITHUB_ACTIONS=true the workflow commands go to stdout; without, nothing renders."""
    capsys.readouterr()
    keyword_gate(tmp_path, baseline_file)
    assert [] == renderers
    assert "::error" not in capsys.readouterr().out
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    keyword_gate(tmp_path, baseline_file)
    assert "::error title=larkfield::regression" in capsys.readouterr().out.splitlines()


def test_annotations_go_to_stderr_with_json_output(
    tmp_path: Path,
    baseline_file: Path,
    renderers: list[Sequence[GateResult]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """With --format json the workflow commands go to stderr, so stdout stays one JSON object."""
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    capsys.readouterr()
    keyword_gate(tmp_path, baseline_file, "--format", "json")
    out, err = capsys.readouterr()
    assert "regression" == json.loads(out)["suites"][0]["verdict"]
    assert "::error title=larkfield::regression" in err.splitlines()


def test_a_broken_invariant_fails_the_gate_naming_its_queries(
    tmp_path: Path, baseline_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Keyword loses the top-5 hit of Q05 that rerank had: no_lost_hits breaks, exit 4, even
    though no rule breaches."""
    config = write_config(tmp_path, rules="[{metric: ndcg@10, max_drop: 0.5}]")
    config.write_text(config.read_text() + "    invariants: [{no_lost_hits: {k: 5}}]\n")
    capsys.readouterr()
    code = gate(
        config, "--baseline-file", str(baseline_file), "--candidate", "replay:larkfield/keyword"
    )
    out = capsys.readouterr().out
    assert (4, True) == (code, "Q05: missing df98766ea4cf from the top 5" in out)
