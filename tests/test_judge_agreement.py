"""A judge's agreement with human grades: the statistics against independent computations,
the overlap, the stored figures per layer state, the judge_agreement rule and its gauge."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from monitor.cli import main
from monitor.compare.rules import apply_rule
from monitor.config import load_config
from monitor.config.model import Check, RuleConfig, SignificanceConfig
from monitor.errors import ConfigError
from monitor.evalset import EvalSet
from monitor.judgments import add_layer
from monitor.judgments.agreement import (
    Agreement,
    GradedPair,
    agreement_of,
    confusion_counts,
    krippendorff_alpha,
    overlap,
    statistics,
    suite_agreement,
)
from monitor.records import Query
from monitor.store import RunRecord, open_store

ROOT = Path(__file__).resolve().parent.parent
T0 = datetime(2024, 5, 1, 3, 0, tzinfo=timezone.utc)

# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section C: 4 coders,
# 12 units, missing values; alpha nominal 0.743, ordinal 0.815, interval 0.849.
_: None = None
KRIPPENDORFF: list[list[int | None]] = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, _, _, _],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, _, 3],
    [_, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, _],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, _],
]


def pairs_of(human: list[int], judge: list[int], per_query: int = 1) -> list[GradedPair]:
    return [
        GradedPair(f"q{i // per_query}", f"d{i}", h, j)
        for i, (h, j) in enumerate(zip(human, judge, strict=True))
    ]


def random_pairs(seed: int, count: int = 80, top: int = 3) -> list[GradedPair]:
    rng = random.Random(seed)
    human = [rng.randint(0, top) for _ in range(count)]
    judge = [min(top, max(0, h + rng.choice((-2, -1, 0, 0, 0, 1)))) for h in human]
    return pairs_of(human, judge, per_query=4)


def figures(pairs: list[GradedPair], top: int = 2) -> dict[str, float]:
    grades = tuple(range(top + 1))
    return {k: float(v) for k, v in statistics(confusion_counts(pairs, grades)).items()}


@pytest.mark.parametrize(
    ("metric", "expected"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)]
)
def test_alpha_gives_krippendorffs_own_example(metric: str, expected: float) -> None:
    """The general alpha reproduces the textbook's values for its reliability data."""
    units = list(zip(*KRIPPENDORFF, strict=True))
    assert expected == round(krippendorff_alpha(units, metric), 3)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_two_coder_alpha_of_the_confusion_matrix_is_the_general_one(seed: int) -> None:
    """The alpha computed from the confusion matrix equals the textbook one on the units."""
    pairs = random_pairs(seed)
    general = krippendorff_alpha([(p.human, p.judge) for p in pairs], "ordinal")
    assert general == pytest.approx(figures(pairs, 3)["alpha"], abs=1e-12)


def test_kappa_of_a_hand_computed_case() -> None:
    """Human 0,1,2,2 against judge 0,2,2,1: exact 1/2, linear kappa 3/7, quadratic 7/11."""
    found = figures(pairs_of([0, 1, 2, 2], [0, 2, 2, 1]))
    assert (0.5, 3 / 7, 7 / 11) == pytest.approx(
        (found["exact"], found["kappa_linear"], found["kappa"])
    )


def pairwise_kappa(pairs: list[GradedPair], top: int, power: int) -> float:
    """Weighted kappa from its definition, pair by pair (no matrices)."""
    n = len(pairs)

    def weight(a: int, b: int) -> float:
        return float((abs(a - b) / top) ** power)

    seen = sum(weight(p.human, p.judge) for p in pairs) / n
    chance = sum(weight(a.human, b.judge) for a in pairs for b in pairs) / n**2
    return 1 - seen / chance


@pytest.mark.parametrize("seed", [4, 5])
@pytest.mark.parametrize(("statistic", "power"), [("kappa_linear", 1), ("kappa", 2)])
def test_kappa_agrees_with_its_pairwise_definition(seed: int, statistic: str, power: int) -> None:
    """The matrix kappa equals 1 - mean weight seen / mean weight over all cross pairs."""
    pairs = random_pairs(seed)
    assert pairwise_kappa(pairs, 3, power) == pytest.approx(figures(pairs, 3)[statistic])


def test_perfect_agreement_scores_one_everywhere() -> None:
    """A judge that gives every human grade has every statistic at 1."""
    found = figures(pairs_of([0, 1, 2, 2, 1], [0, 1, 2, 2, 1]))
    assert dict.fromkeys(("exact", "kappa", "kappa_linear", "alpha"), 1.0) == found


def test_one_grade_everywhere_leaves_kappa_and_alpha_undefined() -> None:
    """With no expected disagreement, kappa and alpha are NaN, exact agreement 1."""
    found = figures(pairs_of([1, 1, 1], [1, 1, 1]))
    assert (1.0, True, True) == (
        found["exact"],
        math.isnan(found["kappa"]),
        math.isnan(found["alpha"]),
    )


def test_the_confusion_matrix_has_human_rows_and_judge_columns() -> None:
    """Human 2 graded 1 by the judge counts in row 2, column 1."""
    agreement = agreement_of("s", "j", pairs_of([2, 2, 0], [1, 2, 0]), max_grade=2)
    assert ((1, 0, 0), (0, 0, 0), (0, 1, 1)) == agreement.confusion


def test_the_bootstrap_interval_is_seeded_and_holds_the_estimate() -> None:
    """The same seed gives the same interval, around the estimate; another seed another."""
    pairs = random_pairs(7)
    first, again, other = (
        agreement_of("s", "j", pairs, max_grade=3, seed=seed).intervals["kappa"]
        for seed in (0, 0, 1)
    )
    estimate = agreement_of("s", "j", pairs, max_grade=3, iterations=0).statistics["kappa"]
    assert (first, True, True) == (again, first[0] < estimate < first[1], first != other)


def test_the_bootstrap_resamples_queries_not_pairs() -> None:
    """A query whose pairs all agree moves as one: with one query the interval is a point."""
    pairs = pairs_of([0, 1, 2, 0, 1, 2], [0, 1, 2, 0, 2, 2], per_query=6)
    low, high = agreement_of("s", "j", pairs, max_grade=2).intervals["exact"]
    assert (5 / 6, 5 / 6) == pytest.approx((low, high))


def frozen_set() -> EvalSet:
    return EvalSet(
        "s", [Query("q1", "first", {"d1": 1}), Query("q2", "second", {}), Query("q3", "x", {})]
    )


def test_the_overlap_is_the_pairs_people_and_that_judge_both_graded(tmp_path: Path) -> None:
    """Human grades are the frozen set's with human layers on top; other judges are left out."""
    frozen = frozen_set()
    with open_store(tmp_path / "m.db") as store:
        for source, grades in (
            ("judge:a:m:1", {"q1": {"d2": 0, "d3": 2}, "q2": {"d5": 1}}),
            ("judge:b:m:1", {"q1": {"d2": 2}, "q3": {"d9": 1}}),
        ):
            add_layer(store, "s", grades, frozen=frozen, source=source, kind="judge")
        add_layer(store, "s", {"q1": {"d2": 1}, "q3": {"d9": 0}}, frozen=frozen, source="people")
        found = overlap(frozen, store.layers("s"), "judge:a:m:1")
    assert [GradedPair("q1", "d2", 1, 0)] == found


def clock(start: datetime = T0) -> Callable[[], datetime]:
    moments = iter(start + timedelta(minutes=i) for i in range(100))
    return lambda: next(moments)


def test_figures_are_stored_per_layer_state(tmp_path: Path) -> None:
    """A second reading with no new layer is the stored one; a new human layer recomputes."""
    frozen = frozen_set()
    tick = clock()
    with open_store(tmp_path / "m.db") as store:
        grades = {"q1": {"d2": 0, "d3": 2}, "q2": {"d5": 1}}
        add_layer(store, "s", grades, frozen=frozen, source="judge:a:m:1", kind="judge")
        add_layer(store, "s", {"q1": {"d2": 0}}, frozen=frozen, source="people")
        (first,) = suite_agreement(store, "s", frozen, max_grade=2, clock=tick)
        (again,) = suite_agreement(store, "s", frozen, max_grade=2, clock=tick)
        add_layer(store, "s", {"q2": {"d5": 1}}, frozen=frozen, source="people-2")
        (later,) = suite_agreement(store, "s", frozen, max_grade=2, clock=tick)
    assert (first.computed_at, 1, 2, 3) == (
        again.computed_at,
        first.pairs,
        later.pairs,
        later.layers_through,
    )


def agreement_with(pairs: int, kappa: float) -> Agreement:
    rng = random.Random(0)
    human = [rng.randint(0, 2) for _ in range(pairs)]
    found = agreement_of("s", "judge:llm:m:1", pairs_of(human, human), max_grade=2)
    return replace(found, statistics=dict(found.statistics, kappa=kappa))


RULE = RuleConfig(Check.JUDGE_AGREEMENT, 0.6, statistic="kappa", min_overlap=30)
RUN = RunRecord(suite="s", pipeline="p", started_at=T0, finished_at=T0)


@pytest.mark.parametrize(
    ("pairs", "kappa", "status"),
    [(10, 0.1, "unverified"), (40, 0.5, "breach"), (40, 0.6, "ok"), (40, 0.9, "ok")],
)
def test_the_rule_alerts_below_the_floor_and_is_unverified_on_a_small_overlap(
    pairs: int, kappa: float, status: str
) -> None:
    """Under min_overlap pairs the rule is unverified (no alert); else kappa < min breaches."""
    outcome = apply_rule(
        RULE,
        RUN,
        None,
        None,
        SignificanceConfig(),
        agreement=agreement_with(pairs, kappa),
    )
    assert (status, status == "breach") == (outcome.status, outcome.breached)


def test_the_rule_without_a_judge_is_skipped() -> None:
    """With no agreement measured (no suite judge), the rule is skipped, not ok."""
    outcome = apply_rule(RULE, RUN, None, None, SignificanceConfig())
    assert "skipped" == outcome.status


CONFIG = """\
store: {{path: {db}}}
suites:
  larkfield:
    evalset: {{bundled: larkfield}}
    search: {{kind: replay, bundled: larkfield/keyword}}
    baseline: {{bundled_run: larkfield/rerank}}
    metrics: [recall@5, ndcg@10]
    rules: [{rule}]
    significance: {{iterations: 200}}
    judge: {{kind: python, id: overlap, target: 'examples.overlap_judge:make_judge',
            factory: true, path: {root}, max_per_run: 40}}
"""
AGREEMENT_RULE = "{judge_agreement: {min: 0.6, statistic: kappa, min_overlap: 30}}"


def write_config(tmp_path: Path, rule: str = AGREEMENT_RULE) -> Path:
    config = tmp_path / "monitor.yaml"
    config.write_text(CONFIG.format(db=tmp_path / "monitor.db", rule=rule, root=ROOT))
    return config


def test_the_rule_reads_its_floor_statistic_and_overlap(tmp_path: Path) -> None:
    """``judge_agreement: {min, statistic, min_overlap}`` gives one rule named by its statistic."""
    rule = "{judge_agreement: {min: 0.5, statistic: alpha, min_overlap: 12}, severity: critical}"
    (found,) = load_config(write_config(tmp_path, rule)).suite("larkfield").rules
    assert (0.5, "alpha", 12, "critical", "judge_agreement alpha") == (
        found.threshold,
        found.statistic,
        found.min_overlap,
        found.severity,
        found.name,
    )


@pytest.mark.parametrize(
    ("rule", "key"),
    [
        ("{judge_agreement: {min: 0.6, statistic: pearson}}", "judge_agreement.statistic"),
        ("{judge_agreement: {statistic: kappa}}", "judge_agreement"),
        ("{judge_agreement: {min: 2}}", "judge_agreement.min"),
        ("{judge_agreement: {min: 0.6, min_overlap: 0}}", "judge_agreement.min_overlap"),
        ("{judge_agreement: {min: 0.6, floor: 1}}", "judge_agreement.floor"),
    ],
)
def test_a_bad_agreement_rule_names_file_line_and_key(tmp_path: Path, rule: str, key: str) -> None:
    """An unknown statistic, a missing or out-of-range floor, or an unknown key is refused."""
    config = write_config(tmp_path, rule)
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    assert (True, True) == (str(caught.value).startswith(f"{config}:"), key in str(caught.value))


def grade_judged_pairs(tmp_path: Path, config: Path, flip_every: int) -> int:
    """Add a human layer grading the judge's pairs as the judge did, but every
    ``flip_every``-th one otherwise; return how many were graded."""
    from monitor.evalset.suite import load_evalset

    suite = load_config(config).suite("larkfield")
    with open_store(tmp_path / "monitor.db") as store:
        (layer,) = [x for x in store.layers("larkfield") if x.kind == "judge"]
        grades: dict[str, dict[str, int]] = {}
        for i, (qid, doc, grade) in enumerate(
            (q, d, g) for q, docs in layer.grades.items() for d, g in docs.items()
        ):
            grades.setdefault(qid, {})[doc] = (grade + 1) % 3 if i % flip_every == 0 else grade
        add_layer(store, "larkfield", grades, frozen=load_evalset(suite.evalset), source="review")
    return layer.size


@pytest.mark.slow
def test_a_run_exports_the_agreement_and_applies_the_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """After people grade the judge's pairs, the next run's rule reads the agreement and the
    gauge carries it; before, the rule is unverified."""
    config = write_config(tmp_path)
    out = tmp_path / "metrics.prom"
    assert 0 == main(["run", "--config", str(config), "--no-progress", "--format", "json"])
    before = json.loads(capsys.readouterr().out)
    graded = grade_judged_pairs(tmp_path, config, flip_every=2)
    argv = ["run", "--config", str(config), "--no-progress", "--format", "json"]
    main([*argv, "--metrics-out", str(out)])
    after = json.loads(capsys.readouterr().out)
    statuses = [
        next(r["status"] for r in run["suites"][0]["comparison"]["rules"])
        for run in (before, after)
    ]
    exported = out.read_text()
    assert (["unverified", "breach"], 40, True) == (
        statuses,
        graded,
        'retrieval_judge_agreement_pairs{judge="judge:overlap:' in exported
        and 'statistic="kappa"' in exported,
    )


def test_the_command_prints_each_judges_figures_as_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``judgments agreement --format json`` gives the overlap, statistics and matrix."""
    config = write_config(tmp_path)
    assert 0 == main(["run", "--config", str(config), "--no-progress"])
    grade_judged_pairs(tmp_path, config, flip_every=4)
    capsys.readouterr()
    argv = ["judgments", "agreement", "--config", str(config), "--suite", "larkfield"]
    assert 0 == main([*argv, "--format", "json"])
    (judge,) = json.loads(capsys.readouterr().out)["judges"]
    matrix = np.array(judge["confusion"])
    assert (40, 40, 30) == (judge["pairs"], int(matrix.sum()), int(np.trace(matrix)))


def test_the_command_says_when_no_judge_graded_yet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A suite without judge layers prints that there is nothing to compare yet."""
    config = write_config(tmp_path)
    argv = ["judgments", "agreement", "--config", str(config), "--suite", "larkfield"]
    assert 0 == main(argv)
    assert "suite larkfield: no judge layer yet\n" == capsys.readouterr().out


@pytest.mark.slow
def test_the_web_suite_page_shows_the_stored_agreement(tmp_path: Path) -> None:
    """The suite page has a judge agreement section with the figures the store holds."""
    from starlette.testclient import TestClient

    from monitor.config import default_config
    from monitor.evalset.suite import load_evalset
    from monitor.job import run_suite
    from monitor.web import WebSettings, create_app

    suite = default_config().suite("larkfield")
    frozen = load_evalset(suite.evalset)
    qid = next(iter(frozen)).id
    with open_store(tmp_path / "m.db") as store:
        run_suite(suite, store, progress=False)
        add_layer(store, "larkfield", {qid: {"x1": 1, "x2": 0}}, frozen=frozen,
                  source="judge:llm:m:1", kind="judge")  # fmt: skip
        add_layer(store, "larkfield", {qid: {"x1": 1, "x2": 1}}, frozen=frozen, source="ann")
        suite_agreement(store, "larkfield", frozen, max_grade=2)
    settings = WebSettings(
        config=default_config(),
        store=lambda: open_store(tmp_path / "m.db"),
        allowed_hosts=("testserver",),
    )
    with TestClient(create_app(settings)) as client:
        text = client.get("/suites/larkfield").text
    section = text.split("<h2>Judge agreement</h2>", 1)[1].split("</section>", 1)[0]
    assert "judge:llm:m:1 vs human grades: 2 pairs over 1 queries; exact 0.500" in section


@pytest.mark.slow
def test_the_report_applies_the_rule_to_the_agreement_and_writes_nothing(tmp_path: Path) -> None:
    """``report`` shows the rule's verdict on the stored agreement; it stores no figures."""
    from monitor.report.compose import compose_report

    config = write_config(tmp_path)
    assert 0 == main(["run", "--config", str(config), "--no-progress"])
    grade_judged_pairs(tmp_path, config, flip_every=2)
    suite = load_config(config).suite("larkfield")
    with open_store(tmp_path / "monitor.db") as store:
        before = store.get_state("judge_agreement", "larkfield")
        report = compose_report(store, suite)
        after = store.get_state("judge_agreement", "larkfield")
    (rule,) = report.comparison.rules
    assert ("breach", 40, before) == (
        rule.status,
        int(rule.message.split(" on ")[1].split()[0]),
        after,
    )


def test_a_breached_agreement_rule_reads_as_an_alert_sentence() -> None:
    """The alert of a breached rule names the judge statistic, its value and the floor."""
    from monitor.alerts.text import regression_summary

    outcome = apply_rule(
        RULE, RUN, None, None, SignificanceConfig(), agreement=agreement_with(40, 0.25)
    )
    assert "s: judge_kappa is 0.25, below the minimum of 0.6" == regression_summary("s", outcome)
