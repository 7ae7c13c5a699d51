"""A run that measured nothing is a failure, whatever the error budget: ``not_measured``.

Each case runs the real CLI on the bundled Larkfield set (67 queries, 59 of them answerable)
with an error budget of 1.0, so that the budget never stops the run: what fails it is that
too few of the set's answerable queries were answered (``runner.min_measured``, half by
default).
"""

from __future__ import annotations

import json
import math
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor.alerts.testing import RecordingReceiver
from monitor.cli import main
from monitor.evalset import bundled
from monitor.store import open_store

SEARCHES = """
import time

def down(query, k):
    raise ConnectionError("search backend down")

def slow(query, k):
    time.sleep(0.02)
    return []

def third(query, k):
    if int(query.id[1:]) % 3 == 0:
        raise ConnectionError("search backend down")
    return []

third.takes_query = True
"""


@pytest.fixture
def receiver() -> Iterator[RecordingReceiver]:
    with RecordingReceiver() as running:
        yield running


@pytest.fixture
def searches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the module of searches above importable as ``outage_searches``."""
    (tmp_path / "outage_searches.py").write_text(SEARCHES)
    monkeypatch.syspath_prepend(str(tmp_path))


def write_config(
    tmp_path: Path,
    search: str,
    *,
    runner: str = "{retries: 0, error_budget: 1.0}",
    evalset: str = "{bundled: larkfield}",
    scoring: str = "{}",
    notifiers: str = "[]",
) -> Path:
    """Write a one-suite config searching with ``search``; return its path."""
    config = tmp_path / "monitor.yaml"
    config.write_text(
        textwrap.dedent(
            f"""\
            store: {{path: {tmp_path / "monitor.db"}}}
            suites:
              larkfield:
                evalset: {evalset}
                search: {search}
                baseline: {{bundled_run: larkfield/rerank}}
                runner: {runner}
                scoring: {scoring}
                rules: [{{metric: ndcg@10, max_drop: 0.05}}]
                significance: {{iterations: 500}}
                exporters: [{{kind: textfile, path: {tmp_path / "suite.prom"}}}]
                notifiers: {notifiers}
            """
        )
    )
    return config


def run(config: Path, *extra: str) -> int:
    return main(["run", "--config", str(config), "--no-progress", *extra])


def latest_error(tmp_path: Path) -> tuple[str, str]:
    """Return the status and error of the suite's latest stored run."""
    with open_store(tmp_path / "monitor.db") as store:
        last = max(summary.run_id for summary in store.list_runs("larkfield"))
        latest = store.get_run(last)
    return latest.status, latest.error or ""


DOWN = "{kind: python, target: 'outage_searches:down'}"


def test_a_backend_down_under_a_budget_of_one_is_a_failed_run(
    tmp_path: Path, searches: None, receiver: RecordingReceiver
) -> None:
    """Every query failing under error_budget 1.0: exit 3, a failed run naming what it measured,
    the not_measured alert and the failure gauges."""
    hook = f'[{{kind: webhook, url: "{receiver.url}/hook"}}]'
    assert 3 == run(write_config(tmp_path, DOWN, notifiers=hook))
    status, error = latest_error(tmp_path)
    fired = {
        alert["labels"]["rule"]
        for body in receiver.bodies()
        for alert in body["alerts"]
        if body["status"] == "firing"
    }
    gauges = (tmp_path / "suite.prom").read_text()
    assert ("failed", True) == (status, error.startswith("NotMeasured: measured 0 of 59"))
    assert ({"not_measured"}, True) == (
        fired,
        'retrieval_run_success{pipeline="larkfield",suite="larkfield"} 0.0' in gauges,
    )


def test_the_daemon_path_fails_an_unmeasured_run_as_the_one_shot_does(
    tmp_path: Path, searches: None
) -> None:
    """``run_suite``, which the daemon calls, raises NotMeasured: the daemon's run fails."""
    from monitor.config import load_config
    from monitor.errors import NotMeasured
    from monitor.job.suite import run_suite

    config = load_config(write_config(tmp_path, DOWN))
    with open_store(tmp_path / "monitor.db") as store, pytest.raises(NotMeasured):
        run_suite(config.suites["larkfield"], store, progress=False, notifiers={})


def test_a_run_answering_most_of_its_answerable_queries_is_measured(
    tmp_path: Path, searches: None
) -> None:
    """A third of the queries failing under error_budget 1.0 measures the rest: exit 0."""
    assert 0 == run(write_config(tmp_path, "{kind: python, target: 'outage_searches:third'}"))
    assert "ok" == latest_error(tmp_path)[0]


def test_min_measured_raises_the_share_a_run_must_answer(tmp_path: Path, searches: None) -> None:
    """With runner.min_measured 0.9, the run answering 40 of 59 answerable queries is not
    measured."""
    runner = "{retries: 0, error_budget: 1.0, min_measured: 0.9}"
    config = write_config(
        tmp_path, "{kind: python, target: 'outage_searches:third'}", runner=runner
    )
    assert 3 == run(config)
    assert (
        "NotMeasured: measured 40 of 59 answerable queries, below the 54 needed"
        in (latest_error(tmp_path)[1])
    )


@pytest.mark.slow
def test_a_run_cut_by_its_deadline_is_not_measured(tmp_path: Path, searches: None) -> None:
    """A deadline that lets few queries through fails the run, saying how many were never sent."""
    runner = "{retries: 0, error_budget: 1.0, concurrency: 1, deadline_seconds: 0.2}"
    config = write_config(tmp_path, "{kind: python, target: 'outage_searches:slow'}", runner=runner)
    assert 3 == run(config)
    status, error = latest_error(tmp_path)
    assert ("failed", True) == (status, "queries failed (deadline x" in error)


def unanswerable_set(tmp_path: Path) -> Path:
    """Write the bundled queries with every judgment graded 0; return the file."""
    lines = []
    for line in (Path(bundled.data_path("larkfield")) / "evalset.jsonl").read_text().splitlines():
        query = json.loads(line)
        ids = query.pop("relevant", [])
        query["relevant"] = dict.fromkeys(ids, 0) or {"x": 0}
        lines.append(json.dumps(query))
    path = tmp_path / "unanswerable.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_an_eval_set_with_no_answerable_query_fails_its_check_and_its_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No query judging a document relevant: ``evalset check`` exits 4, ``run`` exits 3."""
    path = unanswerable_set(tmp_path)
    check = main(["evalset", "check", str(path), "--format", "json"])
    findings = json.loads(capsys.readouterr().out)["findings"]
    search = "{kind: replay, bundled: larkfield/rerank}"
    config = write_config(tmp_path, search, evalset=f"{{path: {path}}}")
    assert (4, [("nothing_to_measure", "error")]) == (
        check,
        [(f["check"], f["severity"]) for f in findings if f["check"] == "nothing_to_measure"],
    )
    assert 3 == main(["run", "--config", str(config), "--no-progress"])
    assert "NotMeasured: nothing to measure" in latest_error(tmp_path)[1]


def test_a_relevance_level_above_every_grade_leaves_nothing_to_measure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``scoring.relevance_level`` 2 on a set graded 0 and 1: the suite's check exits 4 and its
    run exits 3, naming the level."""
    search = "{kind: replay, bundled: larkfield/rerank}"
    config = write_config(tmp_path, search, scoring="{relevance_level: 2}")
    store = ["--store", str(tmp_path / "monitor.db")]
    check = main(["evalset", "check", "--config", str(config), *store, "--format", "json"])
    capsys.readouterr()
    assert (4, 3) == (check, run(config))
    assert "grade 2 or above (scoring.relevance_level)" in latest_error(tmp_path)[1]


def test_the_gate_fails_a_candidate_that_answered_nothing_under_any_budget(
    tmp_path: Path, searches: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """A candidate whose every query fails under error_budget 1.0 is exit 3, never a pass."""
    config = write_config(tmp_path, "{kind: replay, bundled: larkfield/rerank}")
    assert 0 == run(config)
    capsys.readouterr()
    code = main(
        [
            *("gate", "--config", str(config), "--suite", "larkfield", "--no-progress"),
            *("--candidate", "python:outage_searches:down", "--format", "json"),
        ]
    )
    (suite,) = json.loads(capsys.readouterr().out)["suites"]
    assert (3, "error", 3) == (code, suite["verdict"], suite["exit_code"])


def test_a_sharded_run_whose_parts_answered_nothing_is_not_measured(
    tmp_path: Path, searches: None
) -> None:
    """Both shards of an attempt failing every query under error_budget 1.0: the shard that
    completes the attempt stores it failed and exits 3."""
    config = write_config(tmp_path, DOWN)
    codes = [run(config, "--shard", f"{i}/2", "--attempt", "a1") for i in range(2)]
    status, error = latest_error(tmp_path)
    assert ([0, 3], "failed", True) == (codes, status, "NotMeasured: measured 0 of 59" in error)


def pin_an_outage_as_older_versions_did(tmp_path: Path, config: Path) -> None:
    """Store an ok run that measured nothing and pin it straight in the database, as a store
    written before such runs failed may hold."""
    import sqlite3
    from dataclasses import replace as changed

    from monitor.store.records import QueryRecord
    from tests.test_store import make_run

    failed = QueryRecord("Q01", {}, (), ("d1",), 0.1, error_type="HTTPError", error_message="503")
    outage = changed(make_run("larkfield", queries=(failed,)), means={"ndcg@10": math.nan})
    with open_store(tmp_path / "monitor.db") as store:
        run_id = store.save_run(outage)
    with sqlite3.connect(tmp_path / "monitor.db") as db:
        db.execute(
            "INSERT INTO baselines (suite, run_id, pinned_at) VALUES ('larkfield', ?, ?)"
            " ON CONFLICT (suite) DO UPDATE SET run_id = excluded.run_id",
            (run_id, "2030-01-01T00:00:00.000000+00:00"),
        )


def test_a_pinned_baseline_that_measured_nothing_is_never_exported_or_gated_against(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``baseline export`` and ``gate`` refuse a pinned outage (exit 2), naming the command
    that pins a run that measured."""
    config = write_config(tmp_path, "{kind: replay, bundled: larkfield/rerank}")
    assert 0 == run(config)
    pin_an_outage_as_older_versions_did(tmp_path, config)
    capsys.readouterr()
    out = tmp_path / "baseline.json"
    export = ["baseline", "export", "--config", str(config), "--suite", "larkfield"]
    exported = main([*export, "--output", str(out)])
    said = capsys.readouterr().err
    gated = main(
        [
            *("gate", "--config", str(config), "--suite", "larkfield", "--no-progress"),
            *("--candidate", "replay:larkfield/keyword"),
        ]
    )
    assert (2, False, True) == (exported, out.exists(), "measured nothing" in said)
    assert (2, True) == (gated, "measured nothing" in capsys.readouterr().err)


def test_a_run_against_a_pinned_outage_says_it_has_no_baseline_to_compare_with(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run whose pinned baseline measured nothing is not 'ok' against it: no baseline, and
    a warning saying why."""
    config = write_config(tmp_path, "{kind: replay, bundled: larkfield/keyword}")
    assert 0 == run(config)
    pin_an_outage_as_older_versions_did(tmp_path, config)
    capsys.readouterr()
    assert 0 == run(config)
    out = capsys.readouterr().out
    assert (True, True) == ("verdict: no baseline yet" in out, "baseline measured nothing" in out)
