"""The queries that got worse in a report show each named document's text from the corpus.

The bundled runs carry no text: the texts come from the passages the bundled set brings.
"""

from __future__ import annotations

import json
from dataclasses import replace
from html import escape
from pathlib import Path

import pytest

from monitor.config import default_config
from monitor.config.model import SuiteConfig
from monitor.evalset.corpus import load_corpus
from monitor.job import run_suite
from monitor.report import render_html
from monitor.report.compose import compose_report
from monitor.report.records import Report
from monitor.report.tables import render_json
from monitor.store import open_store

SUITE = "larkfield"


def _report(tmp_path: Path, suite: SuiteConfig) -> Report:
    with open_store(tmp_path / "m.db") as store:
        run_suite(default_config().suite(SUITE), store, progress=False)
        return compose_report(store, suite)


@pytest.fixture
def suite() -> SuiteConfig:
    return default_config().suite(SUITE)


def test_the_report_holds_the_corpus_text_of_every_document_its_diffs_name(
    tmp_path: Path, suite: SuiteConfig
) -> None:
    """doc_texts maps each id of the diffs (expected, baseline, current) to its passage text."""
    report = _report(tmp_path, suite)
    corpus = load_corpus(suite.evalset)
    assert corpus is not None
    named = {
        doc
        for diff in report.comparison.worse_queries
        for doc in (*diff.expected_ids, *diff.baseline_ids, *diff.current_ids)
    }
    assert {doc: corpus.text(doc) for doc in named} == dict(report.doc_texts)
    assert named


def test_the_html_report_shows_a_lost_passage_text(tmp_path: Path, suite: SuiteConfig) -> None:
    """Q34's expected passage, lost by the keyword run, is shown with its text."""
    report = _report(tmp_path, suite)
    corpus = load_corpus(suite.evalset)
    assert corpus is not None
    text = corpus.text("d9a5bd8ea531")
    assert text
    assert f'title="{escape(text)}"' in render_html(report)


def test_the_json_report_gives_the_texts(tmp_path: Path, suite: SuiteConfig) -> None:
    """The JSON report has a doc_texts object beside the worse queries."""
    report = _report(tmp_path, suite)
    assert dict(report.doc_texts) == json.loads(render_json(report))["doc_texts"]


def test_an_unreadable_corpus_leaves_ids_only_and_says_so(
    tmp_path: Path, suite: SuiteConfig
) -> None:
    """A corpus file that is gone gives a warning naming it, and a report without texts."""
    gone = tmp_path / "gone.jsonl"
    broken = replace(suite, evalset=replace(suite.evalset, corpus=gone))
    report = _report(tmp_path, broken)
    warnings = [w for w in report.comparison.warnings if "corpus could not be read" in w]
    assert ({}, True) == (dict(report.doc_texts), str(gone) in warnings[0])


def test_a_regression_of_an_invariant_alone_is_not_called_significant_evidence() -> None:
    """Only an invariant broke: the verdict says so, and no test of significance is claimed."""
    from monitor.compare.records import Comparison, InvariantOutcome
    from monitor.report import render_comparison

    broken = InvariantOutcome("no_lost_hits@5", "no_lost_hits", "breach", (), "3 lost")
    comparison = Comparison("docs", 2, 1, "regression", invariants=(broken,))
    verdict = render_comparison(comparison, {}).splitlines()[1]
    assert "verdict: REGRESSION: an invariant broke (checked exactly, no test needed)" == verdict
