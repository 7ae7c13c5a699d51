"""A suite's ``scoring`` section: evaluate's trec_eval options as suite keys."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from monitor.cli import main
from monitor.config import ScoringConfig, config_hash, load_config_text
from monitor.errors import ConfigError

HEAD = """\
suites:
  nightly:
    evalset: {bundled: larkfield}
    search: {kind: replay, bundled: larkfield/keyword}
"""


def scoring_of(body: str, defaults: str = "") -> ScoringConfig:
    """Return the scoring of suite ``nightly`` with ``body`` added under it."""
    text = defaults + HEAD + textwrap.indent(textwrap.dedent(body), "    ")
    return load_config_text(text, "monitor.yaml", env={}).suites["nightly"].scoring


def test_scoring_keys_are_read_into_their_record() -> None:
    """Every key of scoring lands in the suite's ScoringConfig."""
    body = "scoring: {relevance_level: 2, max_docs: 100, judged_only: true, average: trec_eval}\n"
    assert ScoringConfig(2, 100, True, "trec_eval") == scoring_of(body)


def test_scoring_defaults_merge_key_by_key() -> None:
    """A suite's scoring keys merge over those of defaults."""
    defaults = "defaults:\n  scoring: {relevance_level: 2, judged_only: true}\n"
    assert ScoringConfig(2, None, False, "answerable") == scoring_of(
        "scoring: {judged_only: false}\n", defaults
    )


@pytest.mark.parametrize(
    ("body", "key", "expected"),
    [
        ("scoring: {relevance_level: 0}", "scoring.relevance_level", "at least 1"),
        ("scoring: {max_docs: -5}", "scoring.max_docs", "at least 1"),
        ("scoring: {judged_only: yes please}", "scoring.judged_only", "true or false"),
        ("scoring: {average: mean}", "scoring.average", "one of answerable, trec_eval, all"),
        ("scoring: {relevance: 2}", "scoring.relevance", "relevance_level"),
    ],
)
def test_a_bad_scoring_value_names_file_line_and_key(body: str, key: str, expected: str) -> None:
    """A bad scoring value is a ConfigError naming the file, line 5 and the key path."""
    with pytest.raises(ConfigError) as caught:
        scoring_of(body + "\n")
    message = str(caught.value)
    assert ("monitor.yaml:5", f"suites.nightly.{key}", True) == (
        message.split(": ")[0],
        message.split(": ")[1],
        expected in message,
    )


def test_default_scoring_keeps_the_config_fingerprint() -> None:
    """Writing the default scoring out leaves the suite's config hash as it was."""
    plain = load_config_text(HEAD, "monitor.yaml", env={}).suites["nightly"]
    written = load_config_text(
        HEAD + "    scoring: {relevance_level: 1, judged_only: false}\n", "monitor.yaml", env={}
    ).suites["nightly"]
    changed = load_config_text(
        HEAD + "    scoring: {relevance_level: 2}\n", "monitor.yaml", env={}
    ).suites["nightly"]
    assert config_hash(plain) == config_hash(written) != config_hash(changed)


def test_a_scheduled_run_is_scored_with_the_suites_scoring(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """judged_only: true in the suite removes unjudged documents before the run's means."""
    evalset = [{"id": f"q{i}", "query": f"question {i}", "relevant": [f"d{i}"]} for i in range(5)]
    (tmp_path / "evalset.jsonl").write_text("".join(json.dumps(q) + "\n" for q in evalset))
    (tmp_path / "run.json").write_text(json.dumps({f"q{i}": ["x", "y", f"d{i}"] for i in range(5)}))
    config = tmp_path / "monitor.yaml"
    means = {}
    for judged_only in ("false", "true"):
        config.write_text(
            f"store: {{path: {tmp_path / judged_only}.db}}\n"
            "suites:\n  nightly:\n    evalset: {path: evalset.jsonl}\n"
            "    search: {kind: replay, path: run.json}\n    metrics: [mrr]\n    rules: []\n"
            f"    scoring: {{judged_only: {judged_only}}}\n"
        )
        capsys.readouterr()
        assert 0 == main(["run", "--config", str(config), "--no-progress", "--format", "json"])
        means[judged_only] = json.loads(capsys.readouterr().out)["suites"][0]["means"]["mrr"]
    assert {"false": pytest.approx(1 / 3), "true": 1.0} == means
