"""The verification sample on a page: the command's draw, blind, graded back in the browser's
stead through the labeling endpoint, and the command the page prints run as printed."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")

from monitor.cli import main
from monitor.config import load_config
from monitor.store import open_store
from tests.test_judge_agreement import write_config

HOST = "http://testserver"


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """Return the config of a suite with a judge, after one run (so the judge has graded)."""
    path = write_config(tmp_path)
    assert 0 == main(["run", "--config", str(path), "--no-progress"])
    return path


@pytest.fixture
def client(config: Path) -> Iterator[Any]:
    """Return a test client of the web app on that store, with labeling on."""
    from starlette.testclient import TestClient

    from monitor.web import WebSettings, create_app

    settings = WebSettings(
        config=load_config(config),
        store=lambda: open_store(config.parent / "monitor.db"),
        allowed_hosts=("testserver",),
        allow_labeling=True,
    )
    with TestClient(create_app(settings)) as opened:
        yield opened


def pairs_on(page: str) -> list[tuple[str, str]]:
    """Return the (query, doc) pairs of the page's grade buttons, in order."""
    return re.findall(r'data-query="([^"]+)" data-doc="([^"]+)"', page)


def drawn_by_the_command(config: Path, tmp_path: Path, *extra: str) -> list[tuple[str, str]]:
    """Return the pairs `judgments verify` writes for the suite."""
    out = tmp_path / "sample.jsonl"
    argv = ["judgments", "verify", "--config", str(config), "--suite", "larkfield", *extra]
    assert 0 == main([*argv, "--format", "jsonl", "--output", str(out)])
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return [(row["query_id"], row["doc_id"]) for row in rows]


@pytest.mark.slow
def test_the_page_draws_the_commands_sample(config: Path, client: Any, tmp_path: Path) -> None:
    """With the same share and seed, the page shows the pairs the command writes."""
    page = client.get("/suites/larkfield/verify?share=0.25&seed=2").text
    expected = drawn_by_the_command(config, tmp_path, "--share", "0.25", "--seed", "2")
    assert (expected, True) == (pairs_on(page), bool(expected))


@pytest.mark.slow
def test_the_page_is_blind(config: Path, client: Any) -> None:
    """No row shows a grade: the table holds queries, documents and grade buttons only."""
    page = client.get("/suites/larkfield/verify").text
    table = page.split('<table class="grid" id="verify">', 1)[1].split("</table>", 1)[0]
    assert [] == re.findall(r"grade \d\b(?!:)", table.replace('title="grade', ""))


@pytest.mark.slow
def test_grades_given_on_the_page_are_the_agreements_overlap(
    config: Path, client: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each pair graded through the labeling endpoint joins the human layer the agreement
    compares the judge with."""
    page = client.get("/suites/larkfield/verify?share=0.2&seed=1").text
    csrf = page.split('name="csrf-token" content="', 1)[1].split('"', 1)[0]
    headers = {"Origin": HOST, "X-CSRF-Token": csrf}
    drawn = pairs_on(page)
    posted = [
        client.post(
            "/api/labels",
            json={"suite": "larkfield", "query_id": qid, "doc_id": doc, "grade": 1, "who": "ann"},
            headers=headers,
        ).status_code
        for qid, doc in drawn
    ]
    capsys.readouterr()
    argv = ["judgments", "agreement", "--config", str(config), "--suite", "larkfield"]
    assert 0 == main([*argv, "--format", "json"])
    (judge,) = json.loads(capsys.readouterr().out)["judges"]
    assert ([200] * len(drawn), len(drawn), True) == (posted, judge["pairs"], bool(drawn))


@pytest.mark.slow
def test_the_command_the_page_prints_runs_as_printed(
    config: Path, client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page's command, run from anywhere, draws the pairs the page shows."""
    page = client.get("/suites/larkfield/verify?share=0.3&seed=4&by=query").text
    command = page.split("The same sample as a file: <code>", 1)[1].split("</code>", 1)[0]
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "printed.jsonl"
    argv = shlex.split(command.replace("&#39;", "'"))
    assert 0 == main([*argv[1:], "--format", "jsonl", "--output", str(out)])
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert pairs_on(page) == [(row["query_id"], row["doc_id"]) for row in rows]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("share=2", "share: expected a number above 0 and at most 1"),
        ("share=x", "share: expected a number above 0 and at most 1"),
        ("by=doc", "by: expected pair or query"),
        ("seed=abc", "seed: expected an integer"),
    ],
)
def test_a_bad_parameter_is_an_error_page_saying_which(client: Any, query: str, says: str) -> None:
    """A share outside (0, 1], an unknown draw or a seed that is no integer names itself."""
    response = client.get(f"/suites/larkfield/verify?{query}")
    assert (404, True) == (response.status_code, says in response.text)


def test_a_suite_without_a_judge_says_so(tmp_path: Path) -> None:
    """The default suite has no judge: the page says there is nothing to verify."""
    from starlette.testclient import TestClient

    from monitor.config import default_config
    from monitor.web import WebSettings, create_app

    settings = WebSettings(
        config=default_config(),
        store=lambda: open_store(tmp_path / "m.db"),
        allowed_hosts=("testserver",),
    )
    with TestClient(create_app(settings)) as client:
        response = client.get("/suites/larkfield/verify")
    assert (404, True) == (response.status_code, "has no judge whose grades" in response.text)


@pytest.mark.browser
@pytest.mark.slow
def test_a_grade_clicked_on_the_page_is_recorded_in_the_browser(config: Path) -> None:
    """In Chromium, the page loads with no console error; a grade button records the pair
    and takes that pair's buttons away, leaving the other pairs' buttons."""
    from conftest import chromium
    from selenium.webdriver.common.by import By

    from monitor.web import WebSettings
    from tests.test_web_browser import _console_errors, _serving, _wait

    settings = WebSettings(
        config=load_config(config),
        store=lambda: open_store(config.parent / "monitor.db"),
        allow_labeling=True,
    )
    with _serving(settings, "127.0.0.1") as url, chromium(1400, 1000, console_log=True) as page:
        page.get(url + "/suites/larkfield/verify?share=0.2&seed=1")
        groups = page.find_elements(By.CSS_SELECTOR, ".label-buttons")
        first = groups[0]
        pair = (first.get_attribute("data-query"), first.get_attribute("data-doc"))
        first.find_element(By.CSS_SELECTOR, 'button.grade[data-grade="2"]').click()
        status = page.find_element(By.ID, "label-status")
        _wait(lambda: status.text.startswith("recorded"))
        left = len(page.find_elements(By.CSS_SELECTOR, ".label-buttons button.grade"))
        errors = _console_errors(page)
    with open_store(config.parent / "monitor.db") as store:
        human = [layer for layer in store.layers("larkfield") if layer.kind == "human"]
    assert ([], (len(groups) - 1) * 4, {pair[0]: {pair[1]: 2}}) == (
        errors,
        left,
        {q: dict(d) for layer in human for q, d in layer.grades.items()},
    )


@pytest.mark.slow
def test_the_suite_page_links_the_page_and_prints_a_command_that_runs(
    config: Path, client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With agreement figures stored, the suite page links the sample's page, and its
    ``judgments verify`` command names the config, so it runs from anywhere."""
    page = client.get("/suites/larkfield/verify?share=1").text
    csrf = page.split('name="csrf-token" content="', 1)[1].split('"', 1)[0]
    (qid, doc), *_ = pairs_on(page)
    body = {"suite": "larkfield", "query_id": qid, "doc_id": doc, "grade": 1, "who": "ann"}
    client.post("/api/labels", json=body, headers={"Origin": HOST, "X-CSRF-Token": csrf})
    assert 0 == main(["run", "--config", str(config), "--no-progress"])
    suite_page = client.get("/suites/larkfield").text
    command = suite_page.split("as a file with <code>", 1)[1].split("</code>", 1)[0]
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(command)[1:]
    out = tmp_path / "s.jsonl"
    assert ('href="/suites/larkfield/verify"' in suite_page, 0) == (
        True,
        main([*argv, "--format", "jsonl", "--output", str(out)]),
    )
