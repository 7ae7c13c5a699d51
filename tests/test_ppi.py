"""Judge-corrected metrics: the PPI estimate against a planted truth, and through a suite."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

from monitor.cli import main
from monitor.compare.ppi import ppi_mean
from monitor.config import load_config
from monitor.errors import ConfigError
from monitor.evalset.corpus import load_corpus
from monitor.evalset.suite import load_evalset
from monitor.judgments.layers import add_layer
from monitor.store import open_store

SEEDS = 200
QUERIES = 400
VERIFIED = 60
BIAS = 0.08


def planted(seed: int, bias: float = BIAS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return per-query true values, a judge's (biased by ``bias`` plus noise) and the
    indices of a random verified subset."""
    rng = np.random.default_rng(seed)
    truth = rng.beta(2, 3, QUERIES)
    judge = np.clip(truth + bias + rng.normal(0, 0.1, QUERIES), 0, 1)
    verified = rng.choice(QUERIES, VERIFIED, replace=False)
    return truth, judge, verified


def test_calibrated_interval_covers_the_true_mean_over_seeds() -> None:
    """The 95% calibrated interval covers the true mean in at least 93% of 200 seeds."""
    covered = 0
    for seed in range(SEEDS):
        truth, judge, verified = planted(seed)
        est = ppi_mean(judge, judge[verified], truth[verified])
        covered += est.low <= truth.mean() <= est.high
    assert covered / SEEDS >= 0.93


def test_judge_only_mean_is_biased_by_the_planted_amount() -> None:
    """The judge-only mean sits the planted bias above the true mean, on average over seeds."""
    gaps = []
    for seed in range(SEEDS):
        truth, judge, verified = planted(seed)
        gaps.append(ppi_mean(judge, judge[verified], truth[verified]).judge - truth.mean())
    # Clipping at 1 trims a little of the bias off the few values near the top.
    assert BIAS == pytest.approx(float(np.mean(gaps)), abs=0.01)


def test_calibrated_mean_is_unbiased() -> None:
    """The calibrated mean's error averages to nothing over seeds, bias or not."""
    errors = []
    for seed in range(SEEDS):
        truth, judge, verified = planted(seed)
        errors.append(ppi_mean(judge, judge[verified], truth[verified]).mean - truth.mean())
    assert 0.0 == pytest.approx(float(np.mean(errors)), abs=0.003)


def test_informative_judge_narrows_the_interval_below_human_only() -> None:
    """With an informative judge the calibrated interval is narrower than the human-only one."""
    truth, judge, verified = planted(7)
    est = ppi_mean(judge, judge[verified], truth[verified])
    human = truth[verified]
    half = 1.96 * human.std(ddof=1) / np.sqrt(len(human))
    assert est.high - est.low < 2 * half


def test_share_scales_the_correction() -> None:
    """With a share s of judged queries the rectifier's mean counts s times."""
    est = ppi_mean([0.5, 0.7, 0.9, 0.3], [0.5, 0.7], [0.3, 0.3], share=0.5)
    assert 0.6 - 0.5 * 0.3 == pytest.approx(est.mean)


def test_too_few_verified_queries_give_no_interval() -> None:
    """One verified query gives the corrected mean but no interval."""
    est = ppi_mean([0.5, 0.7], [0.5], [0.4])
    assert (0.5, True) == (pytest.approx(est.mean), bool(np.isnan(est.low)))


def planted_delta(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return per-query true deltas of two runs, a judge's (each run's values biased by a
    different amount plus noise) and a random verified subset."""
    rng = np.random.default_rng(seed)
    before = rng.beta(2, 3, QUERIES)
    after = np.clip(before - 0.03 + rng.normal(0, 0.05, QUERIES), 0, 1)
    judge_before = before + BIAS + rng.normal(0, 0.1, QUERIES)
    judge_after = after + 2 * BIAS + rng.normal(0, 0.1, QUERIES)
    return after - before, judge_after - judge_before, rng.choice(QUERIES, VERIFIED, False)


def test_calibrated_delta_interval_covers_the_true_delta_over_seeds() -> None:
    """Applied to per-query deltas, the 95% interval covers the true mean delta in >= 93%."""
    covered = 0
    for seed in range(SEEDS):
        truth, judge, verified = planted_delta(seed)
        est = ppi_mean(judge, judge[verified], truth[verified])
        covered += est.low <= truth.mean() <= est.high
    assert covered / SEEDS >= 0.93


JUDGE_MODULE = '''
from examples.overlap_judge import make_judge

PERSON = make_judge()


def biased(query: str, doc: str) -> int:
    """Grade one above the offline judge (a person here), at most 2."""
    return min(2, PERSON(query, doc) + 1)
'''


def write_suite(tmp_path: Path, judge_options: str = "") -> Path:
    """Write a suite gated on calibrated figures, with a judge one grade above the person."""
    (tmp_path / "biased_judge.py").write_text(JUDGE_MODULE)
    config = tmp_path / "monitor.yaml"
    config.write_text(
        textwrap.dedent(
            f"""\
            store: {{path: {tmp_path / "monitor.db"}}}
            suites:
              larkfield:
                evalset: {{bundled: larkfield}}
                search: {{kind: replay, bundled: larkfield/keyword}}
                baseline: {{bundled_run: larkfield/rerank}}
                metrics: [ndcg@10]
                rules: [{{metric: ndcg@10, max_drop: 0.05}}]
                alert_labels: calibrated
                judge: {{kind: python, id: biased, target: "biased_judge:biased",
                         path: {tmp_path}, max_per_run: 1000{judge_options}}}
            """
        )
    )
    return config


def verify_queries(tmp_path: Path, share: float) -> int:
    """Grade, as the person would, every judge pair of a random ``share`` of the judged
    queries; return how many queries that verified."""
    from examples.overlap_judge import make_judge

    person = make_judge()
    with open_store(tmp_path / "monitor.db") as store:
        evalset = load_config(tmp_path / "monitor.yaml").suites["larkfield"].evalset
        frozen = load_evalset(evalset)
        corpus = load_corpus(evalset)
        assert corpus is not None
        texts = corpus.text
        (layer,) = [x for x in store.layers("larkfield") if x.kind == "judge"]
        rng = np.random.default_rng(3)
        queries = sorted(layer.grades)
        picked = rng.choice(queries, round(share * len(queries)), replace=False)
        grades = {
            str(q): {doc: person(frozen[str(q)].text, texts(doc) or "") for doc in layer.grades[q]}
            for q in picked
        }
        add_layer(store, "larkfield", grades, frozen=frozen, source="verify-1")
    return len(grades)


@pytest.mark.slow
def test_a_calibrated_suite_gates_on_the_corrected_figure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With verified queries the run prints human-only, judge and calibrated ndcg@10, the
    calibrated one between the two (the judge biased upward), gating the rule."""
    config = write_suite(tmp_path)
    assert 0 == main(["run", "--config", str(config), "--no-progress"])
    verify_queries(tmp_path, 0.5)
    capsys.readouterr()
    main(["run", "--config", str(config), "--no-progress"])
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "calibrated" in x and "human-only" in x)
    human, judge, calibrated = (
        float(re.search(rf"{name} ([0-9.]+)", line).group(1))  # type: ignore[union-attr]
        for name in ("human-only", "judge", "calibrated")
    )
    with open_store(tmp_path / "monitor.db") as store:
        kept = store.get_state("calibrated", "larkfield/3")
    assert (True, True, calibrated) == (
        human < calibrated < judge,
        "the calibrated figure gates" in line,
        pytest.approx(kept["metrics"]["ndcg@10"]["mean"], abs=1e-4),
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("share", "options", "least"),
    [(0.05, "", 10), (0.5, ", min_verified: 40", 40)],
)
def test_too_few_verified_queries_leave_the_rule_unverified(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], share: float, options: str, least: int
) -> None:
    """With judge grades but fewer than min_verified verified queries the rule is unverified."""
    config = write_suite(tmp_path, options)
    assert 0 == main(["run", "--config", str(config), "--no-progress"])
    verify_queries(tmp_path, share)
    capsys.readouterr()
    main(["run", "--config", str(config), "--no-progress"])
    rule = next(x for x in capsys.readouterr().out.splitlines() if "max_drop:" in x)
    assert ("[unverified]", True) == (rule.split()[0], f"fewer than {least};" in rule)


@pytest.mark.parametrize(
    ("options", "key"),
    [(", min_verified: 1", "judge.min_verified"), ("", "alert_labels")],
)
def test_a_bad_calibration_key_names_file_and_key(tmp_path: Path, options: str, key: str) -> None:
    """A min_verified under 2 or an unknown alert_labels is a config error naming the key."""
    config = write_suite(tmp_path, options)
    if not options:
        config.write_text(config.read_text().replace("calibrated", "calibrate"))
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    assert (True, True) == (
        str(caught.value).startswith(f"{config}:"),
        f"suites.larkfield.{key}" in str(caught.value),
    )


@pytest.mark.slow
def test_the_gate_reads_the_calibrated_figures_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A gate of a calibrated suite against the store's baseline applies the corrected rule."""
    config = write_suite(tmp_path)
    assert 0 == main(["run", "--config", str(config), "--no-progress"])
    verify_queries(tmp_path, 0.5)
    capsys.readouterr()
    gate = ["gate", "--config", str(config), "--suite", "larkfield", "--no-progress"]
    main([*gate, "--candidate", "replay:larkfield/keyword"])
    out = capsys.readouterr().out
    assert True is ("calibrated ndcg@10" in out and "queries verified" in out)


@pytest.mark.slow
def test_the_report_shows_the_figures_the_run_gated_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``report`` of a calibrated run prints the run's side-by-side line again."""
    config = write_suite(tmp_path)
    assert 0 == main(["run", "--config", str(config), "--no-progress"])
    verify_queries(tmp_path, 0.5)
    main(["run", "--config", str(config), "--no-progress"])
    ran = capsys.readouterr().out
    main(["report", "--config", str(config), "--suite", "larkfield"])
    reported = capsys.readouterr().out
    line = [x for x in ran.splitlines() if "human-only" in x][-1]
    assert line in reported.splitlines()
