"""The report and the web run page read the comparison the job stored, when it still holds."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

import monitor.compare
from monitor.cli import main
from monitor.config import load_config
from monitor.job import path as job_path  # bound to the real compare before any test patches it
from monitor.report import render_comparison
from monitor.report.compose import compose_report
from monitor.report.html import render_html
from monitor.report.records import Report
from monitor.report.tables import render_csv, render_json
from monitor.store import JudgmentLayer, SqlStore, open_store

CONFIG = """\
store: {path: m.db}
suites:
  nightly:
    evalset: {bundled: larkfield}
    search: {kind: replay, bundled: larkfield/keyword}
    baseline: {bundled_run: larkfield/rerank}
    segments: [kind, language]
    rules:
      - {metric: mrr@10, max_drop: 0.05}
      - latency_p95_seconds_max: 0.2
"""

NOW = datetime(2026, 1, 2, 3, 4, tzinfo=timezone.utc)

RENDERERS: dict[str, Callable[[Report], str]] = {
    "table": lambda report: render_comparison(report.comparison, report.run.means),
    "json": render_json,
    "csv": render_csv,
    "html": render_html,
}


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """Return a config whose store holds the seeded baseline (run 1) and a run (run 2)."""
    path = tmp_path / "monitor.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    assert 0 == main(["run", "--config", str(path), "--no-progress"])
    return path


@pytest.fixture
def computed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count every comparison computed, as a list of the run ids compared."""
    compare = monitor.compare.compare_runs
    calls: list[int] = []

    def counted(current: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(current.run_id)
        return compare(current, *args, **kwargs)

    monkeypatch.setattr(monitor.compare, "compare_runs", counted)
    return calls


@pytest.fixture
def no_compute(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make computing a comparison fail the test."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the comparison was computed again")

    monkeypatch.setattr(monitor.compare, "compare_runs", refuse)


def _report(config: Path, run_id: int = 2) -> Report:
    with open_store(config.parent / "m.db") as store:
        return compose_report(store, load_config(config).suite("nightly"), run_id=run_id, now=NOW)


def _forget_stored(config: Path) -> None:
    """Delete every stored comparison, as a store written before they were kept."""
    with open_store(config.parent / "m.db") as store:
        assert isinstance(store, SqlStore)
        with store.database.transaction(write=True, doing="forgetting comparisons") as tx:
            tx.execute("DELETE FROM run_comparisons")


def _web(config: Path) -> Iterator[Any]:
    from starlette.testclient import TestClient

    from monitor.web import WebSettings, create_app

    settings = WebSettings(
        config=load_config(config),
        store=lambda: open_store(config.parent / "m.db"),
        warm=False,
        refresh_seconds=None,
        csrf_token="csrf",  # one token for every app, so that their pages compare equal
    )
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        yield client


@pytest.mark.slow
def test_the_report_reads_the_stored_comparison(config: Path, no_compute: None) -> None:
    """A report of a run the job compared computes no comparison."""
    assert (2, 1) == (_report(config).comparison.run_id, _report(config).comparison.baseline_run_id)


@pytest.mark.slow
def test_the_report_command_reads_the_stored_comparison(
    config: Path, no_compute: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """``retrieval-monitor report`` of a run the job compared computes no comparison."""
    capsys.readouterr()
    assert 0 == main(["report", "--config", str(config), "--suite", "nightly", "--run", "2"])
    assert "run 2" in capsys.readouterr().out


def test_the_web_run_page_reads_the_stored_comparison(config: Path, no_compute: None) -> None:
    """The web app's page of a run the job compared computes no comparison."""
    for client in _web(config):
        assert 200 == client.get("/suites/nightly/runs/2").status_code


@pytest.mark.slow
@pytest.mark.parametrize("form", sorted(RENDERERS))
def test_a_report_reads_alike_stored_and_computed(config: Path, form: str) -> None:
    """Each rendering of the report is byte for byte the same from the stored comparison as
    from the comparison computed afresh."""
    stored = RENDERERS[form](_report(config))
    _forget_stored(config)
    assert stored == RENDERERS[form](_report(config))


@pytest.mark.slow
def test_the_web_run_page_reads_alike_stored_and_computed(config: Path) -> None:
    """The web run page is byte for byte the same from the stored comparison as from the
    comparison computed afresh."""
    pages = []
    for forget in (False, True):
        if forget:
            _forget_stored(config)
        for client in _web(config):
            pages.append(client.get("/suites/nightly/runs/2").content)
    assert pages[0] == pages[1]


INVARIANTS = """\
    invariants:
      - {query: Q34, must_include: [d9a5bd8ea531], within: 5}
      - {no_lost_hits: {k: 5}}
"""


@pytest.fixture
def invariant_config(tmp_path: Path) -> Path:
    """Return a config of a suite with invariants, its store holding runs 1 and 2."""
    path = tmp_path / "monitor.yaml"
    path.write_text(CONFIG + INVARIANTS, encoding="utf-8")
    assert 0 == main(["run", "--config", str(path), "--no-progress"])
    return path


def test_a_suite_with_invariants_reads_its_stored_comparison(
    invariant_config: Path, no_compute: None
) -> None:
    """The stored comparison of a suite with invariants holds for its report: the report
    checks them as the job did."""
    assert [True, True] == [i.breached for i in _report(invariant_config).comparison.invariants]


@pytest.mark.parametrize("form", ["table", "json"])
def test_a_report_with_invariants_reads_alike_stored_and_computed(
    invariant_config: Path, form: str
) -> None:
    """A suite's invariants read the same from the stored comparison as computed afresh."""
    stored = RENDERERS[form](_report(invariant_config))
    _forget_stored(invariant_config)
    assert stored == RENDERERS[form](_report(invariant_config))


REFERENCE = """\
store: {path: m.db}
suites:
  nightly:
    evalset:
      bundled: larkfield
      reference: {kind: replay, bundled: larkfield/rerank}
      reference_k: 5
    search: {kind: replay, bundled: larkfield/keyword}
    metrics: [recall@5, ndcg@5]
    rules: [{metric: recall@5, max_drop: 0.05}]
"""


@pytest.fixture
def reference_config(tmp_path: Path) -> Path:
    """Return a config of a suite judged by a reference search, its store holding a
    baseline (run 1) and a run (run 2)."""
    path = tmp_path / "monitor.yaml"
    path.write_text(REFERENCE, encoding="utf-8")
    assert 0 == main(["run", "--config", str(path), "--no-progress"])
    assert 0 == main(["baseline", "set", "--config", str(path), "--suite", "nightly"])
    assert 0 == main(["run", "--config", str(path), "--no-progress"])
    return path


def test_a_suite_judged_by_a_reference_reads_its_stored_comparison(
    reference_config: Path, no_compute: None
) -> None:
    """The stored comparison of a suite a reference search judges holds for its report: it
    reads the judgments the run was judged with, as the job did."""
    comparison = _report(reference_config).comparison
    assert (2, 1) == (comparison.run_id, comparison.baseline_run_id)


@pytest.mark.parametrize("form", ["table", "json"])
def test_a_reference_report_reads_alike_stored_and_computed(
    reference_config: Path, form: str
) -> None:
    """A reference-judged suite's report reads the same from the stored comparison as
    computed afresh."""
    stored = RENDERERS[form](_report(reference_config))
    _forget_stored(reference_config)
    assert stored == RENDERERS[form](_report(reference_config))


def test_a_run_without_a_stored_comparison_is_compared(config: Path, computed: list[int]) -> None:
    """A run saved before comparisons were kept is compared as before."""
    _forget_stored(config)
    _report(config)
    assert [2] == computed


@pytest.mark.slow
def test_another_baseline_is_compared_afresh(config: Path, computed: list[int]) -> None:
    """A run is compared again once another baseline is pinned than the one it was compared
    with."""
    assert 0 == main(["run", "--config", str(config), "--no-progress"])
    assert 0 == main(
        ["baseline", "set", "--config", str(config), "--suite", "nightly", "--run", "2"]
    )
    _report(config, run_id=3)
    assert [3] == computed


@pytest.mark.slow
def test_added_judgments_are_compared_afresh(config: Path, computed: list[int]) -> None:
    """A run is compared again once a judgment layer was added after it was compared."""
    with open_store(config.parent / "m.db") as store:
        layer = JudgmentLayer("nightly", "labels.csv", "ann", "human", NOW, {"Q01": {"x": 0}})
        store.add_layer(layer)
    _report(config)
    assert [2] == computed


def test_changed_rules_are_compared_afresh(config: Path, computed: list[int]) -> None:
    """A run is compared again under rules other than those it was compared with."""
    text = config.read_text(encoding="utf-8").replace("max_drop: 0.05", "max_drop: 0.01")
    config.write_text(text, encoding="utf-8")
    _report(config)
    assert [2] == computed


def test_a_failed_comparison_leaves_no_stored_comparison(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run whose comparison failed is stored without a comparison."""
    from monitor.errors import UsageError

    def broken(*args: object, **kwargs: object) -> None:
        raise UsageError("a figure failed its check")

    path = tmp_path / "monitor.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    monkeypatch.setattr(job_path, "compare_with_baseline", broken)
    assert 0 != main(["run", "--config", str(path), "--no-progress"])
    with open_store(tmp_path / "m.db") as store:
        assert (True, None) == (store.get_run(2).ok, store.stored_comparison(2))


def test_the_report_reads_the_queries_fingerprint_from_the_suites_labels(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether the queries changed since the run is read from the labels of the suite's
    judgments, which the web app keeps between pages: the set is not digested again."""
    rescore = importlib.import_module("monitor.judgments.rescore")

    def refuse(evalset: object) -> str:
        raise AssertionError("the queries fingerprint was computed again")

    monkeypatch.setattr(rescore, "queries_fingerprint", refuse)
    report = _report(config)
    assert not any("eval set changed" in warning for warning in report.comparison.warnings)


JUDGED = """\
store: {{path: m.db}}
suites:
  nightly:
    evalset: {{bundled: larkfield}}
    search: {{kind: replay, bundled: larkfield/keyword}}
    baseline: {{bundled_run: larkfield/rerank}}
    metrics: [recall@5, ndcg@10]
    rules: [{{metric: ndcg@10, max_drop: 0.05}}]
    alert_labels: {labels}
    judge: {{kind: python, id: overlap, target: 'examples.overlap_judge:make_judge',
             factory: true, path: '{root}', max_per_run: 5}}
"""


def _judged_config(tmp_path: Path, labels: str) -> Path:
    """Return a config of a suite with a judge, after a run the judge graded pairs of."""
    path = tmp_path / "monitor.yaml"
    root = Path(__file__).resolve().parent.parent
    path.write_text(JUDGED.format(labels=labels, root=root), encoding="utf-8")
    assert 0 == main(["run", "--config", str(path), "--no-progress"])
    with open_store(tmp_path / "m.db") as store:
        assert [5] == [layer.size for layer in store.layers("nightly") if layer.kind == "judge"]
    return path


@pytest.mark.slow
def test_a_suite_alerting_on_human_labels_reads_its_stored_comparison_after_the_judge(
    tmp_path: Path, computed: list[int]
) -> None:
    """The judge's layer fills label holes, which human labels' comparison does not read: the
    report reads the stored comparison, and it reads as one computed afresh."""
    config = _judged_config(tmp_path, "human")
    computed.clear()
    stored = RENDERERS["json"](_report(config))
    assert [] == computed
    _forget_stored(config)
    assert stored == RENDERERS["json"](_report(config))
    assert [2] == computed


@pytest.mark.slow
def test_a_suite_alerting_on_the_judges_labels_is_compared_again_after_the_judge(
    tmp_path: Path, computed: list[int]
) -> None:
    """Rules that read the judge's labels are judged under the layer it added after the run."""
    config = _judged_config(tmp_path, "all")
    computed.clear()
    _report(config)
    assert [2] == computed


def test_a_report_takes_the_labels_the_job_kept_for_unchanged_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The judgments in force carry the labels the job kept for the set's files: the set is
    not digested again. Changed files, or a judgment layer, are digested afresh."""
    import monitor.judgments.merge as merge
    from monitor.report.compose import suite_judgments

    rows = [f'{{"id": "q{i}", "query": "text {i}", "relevant": {{"d{i}": 1}}}}' for i in range(3)]
    (tmp_path / "set.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    run = "".join(f"q{i} Q0 d{i} 1 1.0 t\nq{i} Q0 x{i} 2 0.5 t\n" for i in range(3))
    (tmp_path / "run.trec").write_text(run, encoding="utf-8")
    path = tmp_path / "monitor.yaml"
    path.write_text(
        "store: {path: m.db}\nsuites:\n  files:\n    evalset: {path: set.jsonl}\n"
        "    search: {kind: replay, path: run.trec}\n",
        encoding="utf-8",
    )
    assert 0 == main(["run", "--config", str(path), "--no-progress"])
    suite = load_config(path).suite("files")
    digested = merge.labels_of
    calls: list[int] = []

    def counted(evalset: Any) -> Any:
        calls.append(len(evalset))
        return digested(evalset)

    monkeypatch.setattr(merge, "labels_of", counted)
    with open_store(tmp_path / "m.db") as store:
        recorded = store.run_labels(1)
        assert recorded is not None
        assert (recorded, []) == (suite_judgments(store, suite).labels, calls)
        (tmp_path / "set.jsonl").write_text("\n".join(rows[:2]) + "\n", encoding="utf-8")
        changed = suite_judgments(store, suite).labels
        assert (changed == recorded, calls) == (False, [2])
        (tmp_path / "set.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
        layer = JudgmentLayer("files", "labels.csv", "ann", "human", NOW, {"q0": {"x0": 2}})
        store.add_layer(layer)
        layered = suite_judgments(store, suite).labels
        assert (layered == recorded, calls) == (False, [2, 3])
