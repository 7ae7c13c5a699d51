"""Re-scoring: when judgments change, stored rankings are measured again, not discarded.

The round trip on the bundled Larkfield set: list the label holes, fill them in, add them
as a layer, run again. The new figures are exactly the rankings scored under the new
grades, and the baseline is re-scored under them too.
"""

from __future__ import annotations

import csv
import json
import textwrap
from datetime import datetime, timezone
from pathlib import Path

import pytest

from monitor.cli import main
from monitor.config import default_config
from monitor.evalset import EvalSet, bundled
from monitor.job import recorded_metrics
from monitor.judgments import add_layer, align_baseline, effective_evalset, rescore
from monitor.metrics.evaluation import evaluate
from monitor.records import Query
from monitor.report.compose import compose_report
from monitor.store import QueryRecord, RunRecord, SqlStore, open_store

T0 = datetime(2024, 5, 1, 3, 0, tzinfo=timezone.utc)


def fill(todo: Path, filled: Path) -> None:
    """Grade the queue: a pair first retrieved at rank 1 is relevant (2), the rest not (0)."""
    with todo.open(newline="") as source:
        rows = list(csv.DictReader(source))
    for row in rows:
        row["grade"] = "2" if row["best_rank"] == "1" else "0"
    with filled.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


@pytest.fixture
def larkfield(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run the embedded default once (baseline: rerank, run: keyword); return the store."""
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "monitor.db"
    assert 0 == main(["run", "--store", str(db), "--no-progress"])
    return db


def round_trip(db: Path) -> None:
    todo, filled = db.parent / "todo.csv", db.parent / "filled.csv"
    assert 0 == main(["judgments", "todo", "--suite", "larkfield", "--store", str(db),
                      "--depth", "5", "--output", str(todo)])  # fmt: skip
    fill(todo, filled)
    assert 0 == main(["judgments", "add", "--suite", "larkfield", "--store", str(db),
                      str(filled), "--who", "tester"])  # fmt: skip


def expected_means(db: Path, method: str) -> dict[str, float]:
    """Return the bundled ``method`` ranking scored under the suite's effective grades."""
    suite = default_config().suite("larkfield")
    with open_store(db) as store:
        merged = effective_evalset(store, "larkfield", bundled.larkfield_evalset())
    ranking = {qid: ids[: suite.k] for qid, ids in bundled.larkfield_run(method).items()}
    return evaluate(merged, ranking, recorded_metrics(suite)).means


@pytest.mark.slow
def test_the_round_trip_changes_the_figures_exactly_as_the_new_grades_say(
    larkfield: Path,
) -> None:
    """After the layer, the run's means are its rankings scored under the merged grades."""
    round_trip(larkfield)
    assert 0 == main(["run", "--store", str(larkfield), "--no-progress"])
    with open_store(larkfield) as store:
        latest = store.latest_run("larkfield")
        assert latest is not None
        got = dict(latest.means)
    assert expected_means(larkfield, "keyword") == pytest.approx(got, abs=1e-12)


@pytest.mark.slow
def test_the_round_trip_rescores_the_baseline_rather_than_discarding_it(
    larkfield: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same baseline run stays pinned and is compared re-scored under the new grades."""
    round_trip(larkfield)
    capsys.readouterr()
    assert 0 == main(["run", "--store", str(larkfield), "--no-progress"])
    out = capsys.readouterr().out
    with open_store(larkfield) as store:
        report = compose_report(store, default_config().suite("larkfield"))
    rescored = {m.metric: m.baseline for m in report.comparison.metrics}
    expected = expected_means(larkfield, "rerank")
    assert (1, "baseline run 1 re-scored", "ok") == (
        report.comparison.baseline_run_id,
        "baseline run 1 re-scored" if "baseline run 1 re-scored" in out else out,
        "ok" if rescored == pytest.approx({k: expected[k] for k in rescored}) else rescored,
    )


@pytest.mark.slow
def test_the_report_rescores_an_older_run_under_the_new_grades(larkfield: Path) -> None:
    """A run measured before the layer is reported with figures under the new grades."""
    round_trip(larkfield)
    with open_store(larkfield) as store:
        report = compose_report(store, default_config().suite("larkfield"))
    current = {m.metric: m.current for m in report.comparison.metrics}
    expected = expected_means(larkfield, "keyword")
    assert {k: expected[k] for k in current} == pytest.approx(current)


@pytest.mark.slow
def test_export_writes_the_merged_judgments_as_the_next_frozen_file(
    larkfield: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The exported JSONL loads as an eval set with the layer's grades in it."""
    round_trip(larkfield)
    out = larkfield.parent / "next.jsonl"
    assert 0 == main(["judgments", "export", "--suite", "larkfield", "--store", str(larkfield),
                      "--output", str(out)])  # fmt: skip
    with open_store(larkfield) as store:
        merged = effective_evalset(store, "larkfield", bundled.larkfield_evalset())
    assert merged.fingerprint == EvalSet.load(out).fingerprint


@pytest.mark.slow
def test_list_shows_the_layer_with_its_provenance(
    larkfield: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``judgments list --format json`` gives each layer's source, who and grade count."""
    round_trip(larkfield)
    capsys.readouterr()
    assert 0 == main(["judgments", "list", "--suite", "larkfield", "--store", str(larkfield),
                      "--format", "json"])  # fmt: skip
    (layer,) = json.loads(capsys.readouterr().out)["layers"]
    lines = (larkfield.parent / "filled.csv").read_text().count("\n") - 1
    assert ("filled.csv", "tester", "human", lines) == (
        layer["source"],
        layer["who"],
        layer["kind"],
        layer["grades"],
    )


def test_a_conflicting_layer_exits_2_naming_both_sources(
    larkfield: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Adding a grade that contradicts the frozen set is a usage error naming both."""
    bad = larkfield.parent / "bad.jsonl"
    bad.write_text(json.dumps({"query_id": "Q01", "doc_id": "8a7eb02f2b10", "grade": 0}) + "\n")
    capsys.readouterr()
    code = main(["judgments", "add", "--suite", "larkfield", "--store", str(larkfield), str(bad)])
    err = capsys.readouterr().err
    assert (2, True, True) == (code, "the frozen eval set" in err, "bad.jsonl" in err)


EVALSET = "\n".join(
    json.dumps({"id": f"q{i}", "query": f"question {i}", "relevant": [f"d{i}"]}) for i in range(40)
)


def test_editing_only_the_frozen_grades_rescores_instead_of_ending_comparison(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A grade edited in the eval-set file re-scores the baseline; the run exits 0."""
    (tmp_path / "evalset.jsonl").write_text(EVALSET + "\n")
    (tmp_path / "good.json").write_text(json.dumps({f"q{i}": [f"d{i}"] for i in range(40)}))
    config = tmp_path / "monitor.yaml"
    config.write_text(
        textwrap.dedent(
            f"""\
            store: {{path: {tmp_path / "monitor.db"}}}
            suites:
              nightly:
                evalset: {{path: evalset.jsonl}}
                search: {{kind: replay, path: good.json}}
                metrics: [recall@1]
                rules: [{{metric: recall@1, max_drop: 0.05}}]
                significance: {{iterations: 200}}
            """
        )
    )
    assert 0 == main(["run", "--config", str(config), "--no-progress"])
    assert 0 == main(["baseline", "set", "--suite", "nightly", "--config", str(config)])
    evalset = tmp_path / "evalset.jsonl"
    evalset.write_text(evalset.read_text().replace('"d0"', '"d0b"'))
    capsys.readouterr()
    assert 0 == main(["run", "--config", str(config), "--no-progress"])
    out = capsys.readouterr().out
    assert ("re-scored", "eval set changed") == (
        "re-scored" if "re-scored" in out else out,
        "eval set changed" if "eval set changed" not in out else out,
    )


def frozen() -> EvalSet:
    evalset = EvalSet("s")
    evalset.add("q1", "first", relevant={"d1": 1})
    evalset.add("q2", "second", relevant={"d2": 1})
    return evalset


def saved(store: SqlStore, fingerprint: str) -> RunRecord:
    run = RunRecord(
        suite="s",
        pipeline="p",
        started_at=T0,
        finished_at=T0,
        evalset_fingerprint=fingerprint,
        means={"recall@1": 0.5},
        queries=(
            QueryRecord("q1", {"recall@1": 0.0}, retrieved_ids=("d9", "d1")),
            QueryRecord("q2", {"recall@1": 1.0}, retrieved_ids=("d2",)),
        ),
    )
    return store.get_run(store.save_run(run))


def test_a_run_saved_before_layers_is_rescored_when_it_used_the_frozen_set(
    tmp_path: Path,
) -> None:
    """A baseline without labels but with the frozen set's fingerprint is re-scored."""
    with open_store(tmp_path / "m.db") as store:
        assert isinstance(store, SqlStore)
        old = saved(store, frozen().fingerprint)
        add_layer(store, "s", {"q1": {"d9": 1}}, frozen=frozen(), source="x.csv")
        aligned = align_baseline(store, old, effective_evalset(store, "s", frozen()), frozen())
    assert (True, 0.75) == (aligned.rescored, aligned.baseline.means["recall@1"])  # type: ignore[union-attr]


def test_a_run_of_unknown_labels_is_left_as_stored(tmp_path: Path) -> None:
    """A baseline of another fingerprint and no labels is not re-scored (the set changed)."""
    with open_store(tmp_path / "m.db") as store:
        assert isinstance(store, SqlStore)
        old = saved(store, "sha256:other")
        aligned = align_baseline(store, old, frozen(), frozen())
    assert (False, old) == (aligned.rescored, aligned.baseline)


def test_rescoring_keeps_failed_queries_without_values() -> None:
    """A failed query stays out of the means after re-scoring, as when it was measured."""
    run = RunRecord(
        suite="s",
        pipeline="p",
        started_at=T0,
        finished_at=T0,
        means={"recall@1": 1.0},
        queries=(
            QueryRecord("q1", {}, error_type="Timeout"),
            QueryRecord("q2", {"recall@1": 1.0}, retrieved_ids=("d2",)),
        ),
    )
    again = rescore(run, frozen())
    assert ({}, 1.0, 1) == (
        dict(again.queries[0].values),
        again.means["recall@1"],
        again.figures.evaluated,
    )


def test_rescoring_reads_the_stored_rankings_as_the_engine_reads_them_on_dicts() -> None:
    """The values, means and relevant ids of a re-scored run are those of the engine on the
    rankings as dicts, by query: a repeated id counts once, a failed query and one the set
    does not hold have no value, a query the set holds has its relevant ids."""
    evalset = EvalSet(
        "s",
        [
            Query("q1", "one", {"d1": 1, "d2": 0, "d3": 2}),
            Query("q2", "two", {"d4": 1}),
            Query("q3", "three", {"d5": 1}),
        ],
    )
    queries = (
        QueryRecord("q1", {}, retrieved_ids=("d3", "d3", "d9", "d1")),
        QueryRecord("q2", {}, retrieved_ids=("d8", "d4")),
        QueryRecord("q3", {}, retrieved_ids=("d5",), error_type="Timeout"),
        QueryRecord("q4", {}, retrieved_ids=("d1",)),
    )
    names = ["recall@2", "ndcg@10", "map@10", "mrr@10"]
    run = RunRecord("s", "p", T0, T0, means=dict.fromkeys(names, 0.0), queries=queries)
    again = rescore(run, evalset)
    answered = {"q1": ["d3", "d3", "d9", "d1"], "q2": ["d8", "d4"], "q4": ["d1"]}
    qrels = {qid: grades for qid, grades in evalset.qrels().items() if qid in answered}
    expected = evaluate(qrels, answered, names)
    assert dict(expected.means) == dict(again.means)
    by_query = expected.per_query.to_dict(orient="index")
    assert [by_query["q1"], by_query["q2"], {}, {}] == [dict(q.values) for q in again.queries]
    assert [("d1", "d3"), ("d4",), ("d5",), ()] == [q.relevant_ids for q in again.queries]
    assert [q.retrieved_ids for q in queries] == [q.retrieved_ids for q in again.queries]
    assert (2, evalset.fingerprint) == (again.figures.evaluated, again.evalset_fingerprint)


@pytest.mark.slow
def test_the_queue_of_the_bundled_set_carries_the_passage_texts(larkfield: Path) -> None:
    """Every row of the Larkfield queue has its passage's text to read while grading."""
    round_trip(larkfield)
    with (larkfield.parent / "todo.csv").open(newline="") as source:
        rows = list(csv.DictReader(source))
    passages = {p["id"]: p["text"] for p in bundled.larkfield_passages()}
    assert [passages[row["doc_id"]] for row in rows] == [row["doc_text"] for row in rows]


@pytest.mark.slow
def test_the_gate_compares_with_the_store_baseline_rescored_under_the_layers(
    larkfield: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """After a layer, ``gate`` judges against the re-scored baseline, not a changed set."""
    round_trip(larkfield)
    capsys.readouterr()
    code = main(["gate", "--suite", "larkfield", "--store", str(larkfield), "--no-progress"])
    out = capsys.readouterr().out
    assert (True, True) == (code in (0, 4), "baseline run 1 re-scored" in out)


@pytest.mark.slow
def test_the_report_trends_show_earlier_runs_rescored_under_the_layers(larkfield: Path) -> None:
    """The trend of a rule metric gives each earlier run's value under the new grades."""
    round_trip(larkfield)
    with open_store(larkfield) as store:
        report = compose_report(store, default_config().suite("larkfield"))
    (trend,) = [t for t in report.trends if t.figure == "mrr@10"]
    values = {point.run_id: point.value for point in trend.points}
    keyword, rerank = (expected_means(larkfield, m)["mrr@10"] for m in ("keyword", "rerank"))
    assert {1: pytest.approx(rerank), 2: pytest.approx(keyword)} == values


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--depth", "0"], "argument --depth: expected a count from 1"),
        (["--run", "99"], "99"),
    ],
)
def test_a_bad_todo_request_exits_2_saying_why(
    larkfield: Path, capsys: pytest.CaptureFixture[str], extra: list[str], said: str
) -> None:
    """A depth below 1 or a run that is not there is a usage error."""
    capsys.readouterr()
    argv = ["judgments", "todo", "--suite", "larkfield", "--store", str(larkfield), *extra]
    try:
        code = main(argv)
    except SystemExit as exit:  # argparse refuses the option before the command runs
        code = exit.code
    assert (2, True) == (code, said in capsys.readouterr().err)


def test_todo_without_any_run_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A suite with no ok run has no queue to list."""
    code = main(["judgments", "todo", "--suite", "larkfield", "--store", str(tmp_path / "e.db")])
    assert (2, True) == (code, "no ok run" in capsys.readouterr().err)


def test_rescoring_a_unit_metric_counts_units_through_the_corpus() -> None:
    """A section metric is re-scored per section: two passages of one section count once."""
    from monitor.evalset.corpus import Corpus

    evalset = EvalSet("s")
    evalset.add("q1", "warranty", relevant={"p1": 1, "p2": 1, "p3": 1})
    corpus = Corpus.parse(
        "\n".join(
            json.dumps({"id": pid, "text": pid, "doc_id": "d", "section": section})
            for pid, section in (("p1", "a"), ("p2", "a"), ("p3", "b"), ("p4", "c"))
        ).encode(),
        "jsonl",
        "corpus.jsonl",
    )
    run = RunRecord(
        suite="s",
        pipeline="p",
        started_at=T0,
        finished_at=T0,
        means={"recall@2[section]": 0.0},
        queries=(QueryRecord("q1", {}, retrieved_ids=("p1", "p4")),),
    )
    assert 0.5 == rescore(run, evalset, corpus=corpus).means["recall@2[section]"]


def test_list_lines_its_columns_up_under_their_names(
    larkfield: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each layer's row starts its who and source columns where the header names them,
    whatever the width of the name."""
    round_trip(larkfield)
    capsys.readouterr()
    assert 0 == main(["judgments", "list", "--suite", "larkfield", "--store", str(larkfield)])
    header, row = capsys.readouterr().out.splitlines()[1:3]
    assert (header.index("who"), header.index("source")) == (
        row.index("tester"),
        row.index("filled.csv"),
    )
