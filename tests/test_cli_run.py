"""`retrieval-monitor run`: each exit code of the contract, provoked for real."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from monitor.cli import main

EVALSET = "\n".join(
    json.dumps({"id": f"q{i}", "query": f"question {i}", "relevant": [f"d{i}"]}) for i in range(40)
)
GOOD_RUN = {f"q{i}": [f"d{i}", "x", "y"] for i in range(40)}
BAD_RUN = {f"q{i}": ["x", "y", f"d{i}"] if i < 30 else [f"d{i}"] for i in range(40)}

FAILING_SEARCH = """
def search(query, k):
    raise ConnectionError("search backend down")
"""


def write_config(tmp_path: Path, search: str, *, evalset: str = "evalset.jsonl") -> Path:
    """Write a one-suite config with a recall@1 drop rule and return its path."""
    config = tmp_path / "monitor.yaml"
    config.write_text(
        textwrap.dedent(
            f"""\
            store: {{path: {tmp_path / "monitor.db"}}}
            suites:
              nightly:
                evalset: {{path: {evalset}}}
                search: {search}
                metrics: [recall@1, mrr]
                runner: {{retries: 0, error_budget: 0.05}}
                rules:
                  - {{metric: recall@1, max_drop: 0.05}}
                significance: {{iterations: 500}}
            """
        )
    )
    return config


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "evalset.jsonl").write_text(EVALSET + "\n")
    (tmp_path / "good.json").write_text(json.dumps(GOOD_RUN))
    (tmp_path / "bad.json").write_text(json.dumps(BAD_RUN))
    return tmp_path


def run(config: Path, *extra: str) -> int:
    return main(["run", "--config", str(config), "--no-progress", *extra])


def test_a_completed_run_exits_0_even_with_a_regression(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A regression is reported, not turned into a failure, without --fail-on-regression."""
    good = write_config(workdir, "{kind: replay, path: good.json}")
    assert 0 == run(good)
    assert 0 == main(["baseline", "set", "--suite", "nightly", "--config", str(good)])
    bad = write_config(workdir, "{kind: replay, path: bad.json}")
    capsys.readouterr()
    assert 0 == run(bad)
    assert "REGRESSION" in capsys.readouterr().out


def test_fail_on_regression_exits_4(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With --fail-on-regression a significant breach exits 4."""
    good = write_config(workdir, "{kind: replay, path: good.json}")
    run(good)
    main(["baseline", "set", "--suite", "nightly", "--config", str(good)])
    bad = write_config(workdir, "{kind: replay, path: bad.json}")
    capsys.readouterr()
    assert 4 == run(bad, "--fail-on-regression")
    assert "BREACH" in capsys.readouterr().out


def test_a_failing_backend_exits_3_and_stores_a_failed_run(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every query failing exceeds the error budget: exit 3, and a failed run is stored."""
    (workdir / "broken_search.py").write_text(FAILING_SEARCH)
    monkeypatch.syspath_prepend(str(workdir))
    config = write_config(workdir, "{kind: python, target: 'broken_search:search'}")
    assert 3 == run(config)
    main(["runs", "list", "--config", str(config), "--format", "json"])
    (stored,) = json.loads(capsys.readouterr().out)
    assert "failed" == stored["status"]


def test_a_config_error_exits_2(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A malformed config value exits 2 and names the key."""
    config = write_config(workdir, "{kind: replay, path: good.json}")
    config.write_text(config.read_text().replace("error_budget: 0.05", "error_budget: 5"))
    assert 2 == run(config)
    assert "suites.nightly.runner.error_budget" in capsys.readouterr().err


def test_a_missing_eval_set_exits_2(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An eval set file that does not exist exits 2 and names it."""
    config = write_config(workdir, "{kind: replay, path: good.json}", evalset="gone.jsonl")
    assert 2 == run(config)
    assert "gone.jsonl" in capsys.readouterr().err


def test_a_changed_eval_set_exits_2(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run on an eval set whose queries changed since the baseline exits 2 and says so."""
    config = write_config(workdir, "{kind: replay, path: good.json}")
    run(config)
    main(["baseline", "set", "--suite", "nightly", "--config", str(config)])
    evalset = workdir / "evalset.jsonl"
    evalset.write_text(evalset.read_text().replace('"question 0"', '"question zero"'))
    capsys.readouterr()
    assert 2 == run(config)
    assert "eval set changed" in capsys.readouterr().out


def test_an_unwritable_store_exits_1(workdir: Path) -> None:
    """A store that cannot be opened is an unexpected error: exit 1."""
    config = write_config(workdir, "{kind: replay, path: good.json}")
    (workdir / "file").write_text("")
    assert 1 == run(config, "--store", str(workdir / "file" / "monitor.db"))


def test_the_embedded_default_runs_and_finds_the_regression(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With no config, the bundled Larkfield suite runs and reports a significant regression."""
    monkeypatch.chdir(tmp_path)
    assert 4 == main(
        ["run", "--store", str(tmp_path / "m.db"), "--no-progress", "--fail-on-regression"]
    )
    out = capsys.readouterr().out
    assert "REGRESSION" in out
    assert "mrr@10 max_drop" in out


def test_failed_queries_are_written_per_suite(workdir: Path) -> None:
    """--failed-queries writes the queries with no hit of each suite as JSONL."""
    misses = {f"q{i}": ["x"] if i < 10 else [f"d{i}"] for i in range(40)}
    (workdir / "miss.json").write_text(json.dumps(misses))
    config = write_config(workdir, "{kind: replay, path: miss.json}")
    target = workdir / "failed-{suite}.jsonl"
    assert 0 == run(config, "--failed-queries", str(target))
    lines = (workdir / "failed-nightly.jsonl").read_text().splitlines()
    assert [f"q{i}" for i in range(10)] == [json.loads(line)["query_id"] for line in lines]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--run", "99"], "99"),
        (["--latest"], "no ok run to pin"),
    ],
)
def test_pinning_a_run_that_is_not_there_exits_2(
    workdir: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    """`baseline set` on a run that does not exist is a usage error: exit 2."""
    config = write_config(workdir, "{kind: replay, path: good.json}")
    code = main(["baseline", "set", "--suite", "nightly", "--config", str(config), *argv])
    assert 2 == code
    assert message in capsys.readouterr().err


def test_pinning_with_no_run_names_the_run_command_with_its_config(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command `baseline set` prints when there is no run names the suite's config."""
    config = write_config(workdir, "{kind: replay, path: good.json}")
    assert 2 == main(["baseline", "set", "--suite", "nightly", "--config", str(config)])
    expected = f"`retrieval-monitor run --config {config.absolute()} --suite nightly` first"
    assert expected in capsys.readouterr().err


def test_pinning_before_any_run_pins_the_suites_seed_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A suite with a seed baseline (bundled_run) can be pinned before its first run."""
    config = tmp_path / "monitor.yaml"
    config.write_text(
        f"store: {{path: {tmp_path / 'm.db'}}}\n"
        "suites:\n  lark:\n    evalset: {bundled: larkfield}\n"
        "    search: {kind: replay, bundled: larkfield/keyword}\n"
        "    baseline: {bundled_run: larkfield/rerank}\n"
    )
    assert 0 == main(["baseline", "set", "--suite", "lark", "--config", str(config)])
    assert "suite lark: baseline is now run 1" in capsys.readouterr().out


def test_a_notifier_that_cannot_be_built_exits_2(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A notifier whose signing secret variable is missing is a setup error: exit 2."""
    config = write_config(workdir, "{kind: replay, path: good.json}")
    config.write_text(
        config.read_text()
        + "    notifiers: [{kind: webhook, url: 'http://127.0.0.1:9/hook',"
        + " secret_env: NOT_SET_ANYWHERE}]\n"
    )
    assert 2 == run(config)
    assert "NOT_SET_ANYWHERE" in capsys.readouterr().err


def test_a_failed_run_exports_how_many_queries_failed(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One query at a time against a dead backend stops at the third failure of 40 (budget
    5%): the failed run's gauges say 3 sent, 3 failed, an error ratio of 1."""
    (workdir / "broken_search.py").write_text(FAILING_SEARCH)
    monkeypatch.syspath_prepend(str(workdir))
    config = write_config(workdir, "{kind: python, target: 'broken_search:search'}")
    config.write_text(config.read_text().replace("retries: 0,", "retries: 0, concurrency: 1,"))
    out = workdir / "run.prom"
    assert 3 == run(config, "--metrics-out", str(out))
    series = {
        line.split("{")[0]: line.rsplit(" ", 1)[1]
        for line in out.read_text().splitlines()
        if line.startswith(("retrieval_queries_", "retrieval_error_ratio"))
    }
    assert {
        "retrieval_queries_sent": "3.0",
        "retrieval_queries_failed": "3.0",
        "retrieval_error_ratio": "1.0",
    } == series


def test_a_failed_run_is_stored_with_how_many_queries_failed(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stored failed run records the queries sent and failed and their error rate."""
    from monitor.store import open_store

    (workdir / "broken_search.py").write_text(FAILING_SEARCH)
    monkeypatch.syspath_prepend(str(workdir))
    config = write_config(workdir, "{kind: python, target: 'broken_search:search'}")
    config.write_text(config.read_text().replace("retries: 0,", "retries: 0, concurrency: 1,"))
    run(config)
    with open_store(str(workdir / "monitor.db")) as store:
        stored = store.latest_run("nightly", status="failed")
    assert stored is not None
    assert (3, 3, 1.0) == (stored.figures.sent, stored.figures.failed, stored.figures.error_rate)
