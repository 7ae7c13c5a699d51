"""Evaluation units: metrics counted per section or document, checked against hand computation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monitor.errors import InputError, MetricError
from monitor.evalset import bundled
from monitor.evalset.corpus import Corpus, Passage
from monitor.metrics.evaluation import evaluate
from monitor.metrics.spec import Metric, parse_metric, parse_metrics
from monitor.metrics.units import to_units

LARKFIELD = Path(bundled.data_path("larkfield"))
METHODS = ("hybrid", "keyword", "rerank", "vector")


def _rows(name: str) -> list[dict[str, object]]:
    lines = (LARKFIELD / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _hand_figures(method: str, k: int) -> dict[str, float]:
    """Recall and precision at k per passage and per (doc_id, section), written out by hand.

    The same figures come from the public rankings with:
    python3 -c "import json; d = json.load(open('rankings.json')); ..." (see README, units).
    """
    section = {str(p["id"]): (p["doc_id"], p["section"]) for p in _rows("passages.jsonl")}
    ranked = json.loads((LARKFIELD / "runs" / f"{method}.json").read_text(encoding="utf-8"))
    questions = [q for q in _rows("evalset.jsonl") if q.get("relevant")]
    sums = dict.fromkeys(("recall", "recall_s", "precision", "precision_s"), 0.0)
    for q in questions:
        relevant = set(q["relevant"])  # type: ignore[arg-type]
        top = ranked[q["id"]][:k]
        units = {section[p] for p in relevant}
        got = {section[p] for p in top}
        sums["recall"] += len(relevant & set(top)) / len(relevant)
        sums["recall_s"] += len(units & got) / len(units)
        sums["precision"] += len(relevant & set(top)) / k
        sums["precision_s"] += len(units & got) / k
    return {key: value / len(questions) for key, value in sums.items()}


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus.load(LARKFIELD / "passages.jsonl")


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("k", [1, 3, 5, 10])
def test_section_and_passage_figures_match_a_hand_computation(
    corpus: Corpus, method: str, k: int
) -> None:
    """Per-passage and per-section recall and precision equal the hand-written count."""
    names = f"recall@{k},recall@{k}[section],precision@{k},precision@{k}[section]"
    result = evaluate(
        bundled.larkfield_evalset(), bundled.larkfield_run(method), names, corpus=corpus
    )
    hand = _hand_figures(method, k)
    got = result.means
    assert hand["recall"] == pytest.approx(got[f"recall@{k}"], abs=1e-12)
    assert hand["recall_s"] == pytest.approx(got[f"recall@{k}[section]"], abs=1e-12)
    assert hand["precision"] == pytest.approx(got[f"precision@{k}"], abs=1e-12)
    assert hand["precision_s"] == pytest.approx(got[f"precision@{k}[section]"], abs=1e-12)


def test_keyword_recall_at_5_is_0751_per_passage_and_0771_per_section(corpus: Corpus) -> None:
    """The seed lesson's figures: keyword recall@5 is 0.751 per passage, 0.771 per section."""
    run = bundled.larkfield_run("keyword")
    means = evaluate(
        bundled.larkfield_evalset(), run, "recall@5,recall@5[section]", corpus=corpus
    ).means
    assert (0.751, 0.771) == (round(means["recall@5"], 3), round(means["recall@5[section]"], 3))


def test_q34_rerank_recall_at_5_is_half_per_passage_and_whole_per_section(corpus: Corpus) -> None:
    """Q34's warranty table is split over two passages of one section: 0.5 and 1.0."""
    run = bundled.larkfield_run("rerank")
    result = evaluate(bundled.larkfield_evalset(), run, "recall@5,recall@5[section]", corpus=corpus)
    assert (0.5, 1.0) == (result.value("recall@5", "Q34"), result.value("recall@5[section]", "Q34"))


@pytest.mark.parametrize("measure", ["hit_rate@5", "precision@5", "mrr@10"])
def test_keyword_hit_precision_and_mrr_do_not_change_per_section(
    corpus: Corpus, measure: str
) -> None:
    """Hit rate, precision and MRR of the keyword run are the same per passage and section."""
    run = bundled.larkfield_run("keyword")
    means = evaluate(
        bundled.larkfield_evalset(), run, f"{measure},{measure}[section]", corpus=corpus
    ).means
    assert means[measure] == pytest.approx(means[f"{measure}[section]"])


def _toy() -> Corpus:
    doc = {"a1": "A", "a2": "A", "b1": "B", "c1": "C"}
    return Corpus({p: Passage(p, f"text {p}", {"doc_id": d}) for p, d in doc.items()})


def test_a_repeated_unit_keeps_the_ranks_below_it_when_cutting_at_passages() -> None:
    """With the passage cut, a unit's second passage is a filler, so units below keep rank."""
    qrels, run = to_units({"q": {"b1": 1}}, {"q": ["a1", "a2", "b1"]}, _toy(), "document")
    assert 3 == run["q"].index("B") + 1
    result = evaluate(qrels, run, "recall@2,mrr")
    assert (0.0, 1 / 3) == (result.means["recall@2"], result.means["mrr"])


def test_unit_cut_collapses_the_ranking_before_the_cutoff() -> None:
    """With ``units`` the ranking collapses to distinct units: B moves to rank 2."""
    qrels = {"q": {"b1": 1}}
    result = evaluate(qrels, {"q": ["a1", "a2", "b1"]}, "recall@2[document:units]", corpus=_toy())
    assert 1.0 == result.means["recall@2[document:units]"]


def test_a_unit_takes_the_highest_grade_of_its_passages() -> None:
    """A unit judged through two passages is relevant with the larger grade."""
    qrels, _ = to_units({"q": {"a1": 1, "a2": 3, "c1": 0}}, {"q": []}, _toy(), "document")
    assert {"A": 3, "C": 0} == qrels["q"]


def test_a_score_mapping_is_ordered_as_trec_eval_orders_it() -> None:
    """A run of scores is ranked by score, ties by doc id descending, before mapping."""
    _, run = to_units(
        {"q": {"b1": 1}}, {"q": {"a1": 1.0, "b1": 1.0, "a2": 0.5}}, _toy(), "document"
    )
    assert ["B", "A"] == run["q"][:2]


def test_a_relevant_passage_missing_from_the_corpus_is_an_error_naming_it() -> None:
    """A relevant passage outside the corpus has no unit, so the error names the passage."""
    with pytest.raises(InputError, match=r"every relevant passage in the corpus.*zz"):
        to_units({"q": {"zz": 1}}, {"q": []}, _toy(), "document")


def test_a_unit_metric_without_a_corpus_is_an_error_naming_the_metric() -> None:
    """Evaluating recall@5[section] with no corpus says what is needed and for which metric."""
    with pytest.raises(InputError, match=r"a corpus of passages to score recall@5\[section\]"):
        evaluate({"q": {"a": 1}}, {"q": ["a"]}, "recall@5[section]")


@pytest.mark.parametrize(
    "name",
    ["recall@5[section]", "ndcg@10[document:units]", "map[doc_id+version]", "recall@5"],
)
def test_unit_metric_names_round_trip(name: str) -> None:
    """A metric name with a unit suffix parses and prints back as written."""
    assert name == str(parse_metric(name))


def test_the_passage_unit_prints_no_suffix() -> None:
    """Metric("recall", 5, "passage") is plain recall@5, equal to the metric without a unit."""
    assert ("recall@5", Metric("recall", 5)) == (
        str(Metric("recall", 5, "passage")),
        Metric("recall", 5, "passage"),
    )


@pytest.mark.parametrize(
    "name", ["recall@5[passage]", "recall@5[]", "recall@5[a b]", "recall@5[s:x]"]
)
def test_malformed_unit_suffixes_are_refused(name: str) -> None:
    """A unit suffix that would not print back the same is refused with the grammar."""
    with pytest.raises(MetricError, match=r"\[FIELD\] or \[FIELD:units\]"):
        parse_metric(name)


def test_metric_lists_keep_unit_suffixes_apart() -> None:
    """A comma-separated list keeps each unit metric a metric of its own."""
    assert 3 == len(parse_metrics("recall@5,recall@5[section],recall@5[section:units]"))


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["-m", "recall@5[section]", "--unit-cut", "units"],
            "name the cut with it, as recall@5[section:units]",
        ),
        (["-m", "recall@5", "--unit-cut", "units"], "--unit-cut goes with --unit"),
    ],
)
def test_a_unit_cut_that_would_apply_to_nothing_is_refused_naming_the_spelling(
    tmp_path: Path, argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """--unit-cut was silently ignored for a metric naming its unit: now exit 2 saying how."""
    from monitor.cli import main

    (tmp_path / "q.txt").write_text("q1 0 d1 1\n")
    (tmp_path / "r.txt").write_text("q1 Q0 d1 1 1.0 x\n")
    files = ["--qrels", str(tmp_path / "q.txt"), "--run", str(tmp_path / "r.txt")]
    assert 2 == main(["evaluate", *files, *argv])
    assert said in capsys.readouterr().err


@pytest.mark.parametrize("method", METHODS)
def test_a_unit_metric_scores_a_trec_file_as_its_rankings(
    tmp_path: Path, corpus: Corpus, method: str
) -> None:
    """Read from a TREC file into columns, a run scores per section as the same rankings
    given as lists do (its repeated ids counted once, at their best position)."""
    run = bundled.larkfield_run(method)
    lines = []
    for qid, ranking in run.items():
        repeated = [*ranking, *ranking[:2]]  # later copies, which score lower
        for rank, doc in enumerate(repeated, start=1):
            lines.append(f"{qid} Q0 {doc} {rank} {100 - rank} t\n")
    path = tmp_path / "run.trec"
    path.write_text("".join(lines), encoding="utf-8")
    names = "recall@5[section],ndcg@10[doc_id],recall@5"
    evalset = bundled.larkfield_evalset()
    from_file = evaluate(evalset, path, names, corpus=corpus)
    from_lists = evaluate(evalset, run, names, corpus=corpus)
    assert from_file.query_ids == from_lists.query_ids
    for metric in from_lists.metrics:
        assert from_file.values[metric].tolist() == from_lists.values[metric].tolist()
    assert from_file.duplicates == sum(min(2, len(run[q])) for q in from_file.query_ids)
