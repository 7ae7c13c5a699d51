"""``evalset check`` and ``evalset stats``: leakage, duplicates, coverage, segments and power."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from statistics import NormalDist

import pytest

from monitor.cli import main
from monitor.compare.power import minimal_detectable_drop
from monitor.evalset import EvalSet, bundled
from monitor.evalset.corpus import Corpus, Passage
from monitor.evalset.hygiene import check_evalset, evalset_stats, leak_overlap
from monitor.store import open_store

LARKFIELD = Path(bundled.data_path("larkfield"))


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    """A copy of the bundled set whose Q05 is the first words of one of its relevant passages."""
    passages = {p["id"]: p["text"] for p in bundled.larkfield_passages()}
    lines = (LARKFIELD / "evalset.jsonl").read_text(encoding="utf-8").splitlines()
    out = []
    for line in lines:
        query = json.loads(line)
        if query["id"] == "Q05":
            query["query"] = " ".join(passages[query["relevant"][0]].split()[:10])
        out.append(json.dumps(query))
    (tmp_path / "set.jsonl").write_text("\n".join(out) + "\n", encoding="utf-8")
    shutil.copy(LARKFIELD / "passages.jsonl", tmp_path / "passages.jsonl")
    return tmp_path


def test_a_planted_leaked_query_is_found_with_its_passage(
    planted: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A query copied from its relevant passage is a leakage error, and check exits 4."""
    files = [str(planted / "set.jsonl"), "--corpus", str(planted / "passages.jsonl")]
    code = main(["evalset", "check", *files, "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    leaks = [f for f in report["findings"] if f["check"] == "leakage"]
    q05 = json.loads((planted / "set.jsonl").read_text().splitlines()[4])
    assert (4, [("Q05", q05["relevant"][0], "error")]) == (
        code,
        [(f["query_id"], f["doc_id"], f["severity"]) for f in leaks],
    )


def test_the_bundled_set_has_no_leak_and_exits_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The default suite's eval set has warnings but no error: exit 0."""
    monkeypatch.chdir(tmp_path)
    code = main(["evalset", "check", "--store", str(tmp_path / "m.db"), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert (0, 0, True) == (code, report["counts"]["error"], report["clean"])


@pytest.mark.parametrize(
    ("query", "passage", "expected"),
    [
        ("refund the extra charge", "We refund the extra charge within 5 days.", 1.0),
        ("refund the extra charge fast", "We refund the extra charge within 5 days.", 2 / 3),
        ("warranty of a sprinkler", "We refund the extra charge within 5 days.", 0.0),
    ],
)
def test_leak_overlap_is_the_share_of_query_trigrams_in_the_passage(
    query: str, passage: str, expected: float
) -> None:
    """Verbatim is 1.0, otherwise the share of the query's word 3-grams the passage holds."""
    assert expected == pytest.approx(leak_overlap(query, passage))


def test_duplicate_queries_judged_missing_passages_and_unanswerable_queries_are_reported() -> None:
    """Each hygiene problem is its own finding with its severity."""
    evalset = EvalSet("t")
    evalset.add("a", "How long is the warranty?", relevant={"p1": 1})
    evalset.add("b", "how long is the WARRANTY", relevant={"p1": 1})
    evalset.add("c", "Where is the shop?", relevant={"zz": 1})
    evalset.add("d", "Is there a shop?", relevant={})
    corpus = Corpus({"p1": Passage("p1", "Warranty periods by category.")})
    found = {(f.check, f.severity, f.query_id) for f in check_evalset(evalset, corpus).findings}
    assert {
        ("duplicate", "error", "b"),
        ("missing_from_corpus", "error", "c"),
        ("no_relevant", "info", None),
        ("too_few_queries", "warning", None),
    } == found


def test_a_small_segment_is_a_warning_naming_key_and_value() -> None:
    """A segment value with fewer than 10 answerable queries is reported."""
    report = check_evalset(bundled.larkfield_evalset(), segments=["language"])
    small = [f.message for f in report.findings if f.check == "small_segment"]
    assert ["segment language=fr: 8 answerable queries, below 10"] == small


def test_the_default_suite_power_matches_a_hand_computation_from_stored_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """After a run, recall@5's figure is (z_.95 + z_.8) * sd(deltas) / sqrt(n) of the store."""
    monkeypatch.chdir(tmp_path)
    store_path = str(tmp_path / "m.db")
    main(["run", "--store", store_path, "--no-progress"])
    capsys.readouterr()
    main(["evalset", "check", "--store", store_path, "--format", "json"])
    power = {p["metric"]: p for p in json.loads(capsys.readouterr().out)["power"]}
    with open_store(store_path) as store:
        baseline = store.get_baseline("larkfield")
        latest = store.latest_run("larkfield")
    assert baseline is not None
    assert latest is not None
    base = {q.query_id: q.values["recall@5"] for q in baseline.queries if q.values}
    now = {q.query_id: q.values["recall@5"] for q in latest.queries if q.values}
    deltas = [now[qid] - value for qid, value in base.items()]
    mean = sum(deltas) / len(deltas)
    sd = math.sqrt(sum((d - mean) ** 2 for d in deltas) / (len(deltas) - 1))
    z = NormalDist().inv_cdf
    hand = (z(0.95) + z(0.8)) * sd / math.sqrt(len(deltas))
    got = power["recall@5"]
    assert (59, "paired deltas") == (got["queries"], got["source"])
    assert hand == pytest.approx(got["minimal_detectable_drop"], rel=1e-12)


def test_minimal_detectable_drop_follows_the_normal_approximation() -> None:
    """Values 0 and 1 alternating (sd 0.5270 over 10) at alpha 0.05 give 0.4144."""
    values = [0.0, 1.0] * 5
    assert 0.4144 == round(minimal_detectable_drop(values, 0.05), 4)


def test_stats_counts_queries_grades_and_metadata(capsys: pytest.CaptureFixture[str]) -> None:
    """evalset stats reports 67 queries, 59 answerable, 89 grade-1 judgments, fr 9."""
    assert 0 == main(["evalset", "stats", str(LARKFIELD / "evalset.jsonl"), "--format", "json"])
    stats = json.loads(capsys.readouterr().out)
    assert (67, 59, {"1": 89}, 9) == (
        stats["queries"],
        stats["answerable"],
        stats["grades"],
        stats["metadata"]["language"]["fr"],
    )
    assert evalset_stats(bundled.larkfield_evalset()).fingerprint == stats["fingerprint"]


def test_the_run_report_shows_each_drop_rule_with_the_check_figure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The report's recall@5 rule line carries the figure evalset check gives for it."""
    monkeypatch.chdir(tmp_path)
    store_path = str(tmp_path / "m.db")
    main(["run", "--store", store_path, "--no-progress"])
    capsys.readouterr()
    main(["evalset", "check", "--store", store_path, "--format", "json"])
    power = {p["metric"]: p for p in json.loads(capsys.readouterr().out)["power"]}
    main(["report", "--suite", "larkfield", "--store", store_path])
    line = next(x for x in capsys.readouterr().out.splitlines() if "recall@5 max_drop:" in x)
    drop = power["recall@5"]["minimal_detectable_drop"]
    assert f"59 answerable queries detects drops of {drop:.2f} or more with 80% power" in line


def test_stats_reads_a_suites_eval_set_or_the_bundled_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without a PATH, stats shows the default suite's set (Larkfield), or --suite's."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert 0 == main(["evalset", "stats", "--format", "json"])
    assert 67 == json.loads(capsys.readouterr().out)["queries"]
