"""A corpus beside the eval set gives hit texts wherever they are shown, unit metrics or not.

The suite below measures passages only (no unit), searches by replaying a saved run whose hits
carry no text, and names a corpus: the labeling queue and the web app's query page show the
corpus text of each hit, and a text the search did return wins over the corpus.
"""

from __future__ import annotations

import json
import textwrap
from datetime import datetime, timezone
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from monitor.cli import main
from monitor.config import load_config_text
from monitor.config.model import MonitorConfig, SuiteConfig
from monitor.job import run_suite
from monitor.judgments.suite import doc_texts
from monitor.records import Hit, QueryOutcome
from monitor.run import RunTable
from monitor.runner.result import RunResult
from monitor.store import open_store
from monitor.web import WebSettings, create_app

PASSAGES = [
    {"id": "p1", "doc_id": "d1", "text": "the warranty lasts two years"},
    {"id": "p2", "doc_id": "d1", "text": "returns are accepted within thirty days"},
    {"id": "p3", "doc_id": "d2", "text": "shipping is free over fifty euros"},
]


def _config(tmp_path: Path) -> MonitorConfig:
    (tmp_path / "set.jsonl").write_text(
        '{"id": "q1", "query": "how long is the warranty", "relevant": ["p1"]}\n'
    )
    (tmp_path / "passages.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PASSAGES))
    (tmp_path / "run.json").write_text(json.dumps({"q1": ["p2", "p3", "p1"]}))
    text = textwrap.dedent(
        """\
        suites:
          s:
            evalset: {path: set.jsonl, corpus: passages.jsonl}
            search: {kind: replay, path: run.json}
            metrics: [recall@3]
            rules: []
        """
    )
    (tmp_path / "cfg.yaml").write_text(text)
    return load_config_text(text, str(tmp_path / "cfg.yaml"), env={}, base_dir=tmp_path)


@pytest.fixture
def suite(tmp_path: Path) -> SuiteConfig:
    return _config(tmp_path).suite("s")


def test_a_suite_without_unit_metrics_gets_texts_from_its_corpus(suite: SuiteConfig) -> None:
    """doc_texts reads the suite's corpus though no metric counts units."""
    text_of = doc_texts(suite)
    assert ("shipping is free over fifty euros", None) == (text_of("p3"), text_of("nope"))


def test_a_text_the_search_returned_wins_over_the_corpus(suite: SuiteConfig) -> None:
    """A hit that carried its own text shows that text, the others the corpus text."""
    hits = (Hit("p2", 1.0, "as the search saw it"), Hit("p3", 0.5))
    outcome = QueryOutcome("q1", "how long", hits, ("p1",), 0.01, None, None)
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    result = RunResult(
        outcomes=RunTable.of([outcome]), k=3, started_at=now, finished_at=now, duration_seconds=0
    )
    text_of = doc_texts(suite, result)
    assert ("as the search saw it", "shipping is free over fifty euros") == (
        text_of("p2"),
        text_of("p3"),
    )


def test_the_labeling_queue_shows_corpus_text_for_hits_without_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """judgments todo lists each unjudged hit with its passage text from the corpus."""
    suite = _config(tmp_path).suite("s")
    with open_store(tmp_path / "m.db") as store:
        run_suite(suite, store, progress=False)
    args = ["judgments", "todo", "--config", str(tmp_path / "cfg.yaml"), "--suite", "s"]
    assert 0 == main([*args, "--store", str(tmp_path / "m.db"), "--format", "jsonl"])
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {
        "p2": "returns are accepted within thirty days",
        "p3": "shipping is free over fifty euros",
    } == {row["doc_id"]: row["doc_text"] for row in rows}


def test_the_web_query_page_shows_corpus_text_for_hits_without_text(tmp_path: Path) -> None:
    """The query page of a run shows each returned passage's corpus text."""
    config = _config(tmp_path)
    with open_store(tmp_path / "m.db") as store:
        run_suite(config.suite("s"), store, progress=False)
    settings = WebSettings(config=config, store=lambda: open_store(tmp_path / "m.db"))
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        page = client.get("/suites/s/runs/1/queries/q1").text
    assert [True, True, True] == [p["text"] in page for p in PASSAGES]
