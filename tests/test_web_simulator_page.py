"""What the simulator page and the query page offer a reader: each document's text, the
relevant documents the ranking lacks, the cut at k, and grade buttons in both rankings.

The store is filled by running the embedded default suite through the job, as `run` does:
run 1 is the seeded rerank baseline, run 2 the keyword run that lost Q34's relevant
documents d9a5bd8ea531 and b47ef9ac1993.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from monitor.config import default_config
from monitor.job import run_suite
from monitor.store import open_store
from monitor.web import WebSettings, create_app

SUITE = "larkfield"
SIMULATOR = f"/simulator?suite={SUITE}&run=2&query=Q34"
QUERY = f"/suites/{SUITE}/runs/2/queries/Q34"
LOST = ["d9a5bd8ea531", "b47ef9ac1993"]


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding the baseline (run 1) and the regressed run (run 2)."""
    path = tmp_path_factory.mktemp("simulator-page") / "m.db"
    with open_store(path) as store:
        run_suite(default_config().suite(SUITE), store, progress=False)
    return path


@pytest.fixture
def client(store_path: Path) -> Iterator[TestClient]:
    """The app over that store, with labeling on."""
    settings = WebSettings(
        config=default_config(),
        store=lambda: open_store(store_path),
        warm=False,
        allow_labeling=True,
    )
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as c:
        yield c


def _items(text: str, list_id: str) -> list[str]:
    """The ``<li>`` elements of the list with id ``list_id``, as HTML."""
    body = text.split(f'id="{list_id}"', 1)[1].split("</ol>", 1)[0].split("</ul>", 1)[0]
    return re.findall(r"<li .*?</li>", body)


def _attribute(text: str, name: str) -> Any:
    """The JSON the simulator's root element carries in ``data-<name>``."""
    root = text.split('id="simulator"', 1)[1].split(">", 1)[0]
    found = re.search(f'data-{name}="([^"]*)"', root)
    assert found is not None
    return json.loads(html.unescape(found.group(1)))


def test_the_simulator_shows_each_ranked_documents_text(client: TestClient) -> None:
    """Every document of Q34's ranking is shown with its passage text."""
    items = _items(client.get(SIMULATOR).text, "docs")
    assert [True] * 10 == ['<div class="doctext">' in item for item in items]


def test_the_simulator_gives_its_script_the_documents_texts(client: TestClient) -> None:
    """The texts the script redraws the ranking with cover the ranking and its missing documents."""
    text = client.get(SIMULATOR).text
    texts = _attribute(text, "texts")
    seed = _attribute(text, "seed")
    assert {*(doc["id"] for doc in seed["docs"]), *LOST} == set(texts)


def test_the_simulator_lists_the_relevant_documents_the_ranking_lacks(client: TestClient) -> None:
    """Q34's two relevant documents missing from run 2's ranking are listed, each with an add
    button."""
    items = _items(client.get(SIMULATOR).text, "missing")
    assert LOST == [re.search(r'data-id="(\w+)"', item).group(1) for item in items]  # type: ignore[union-attr]
    assert all('class="add-missing"' in item for item in items)


def test_the_simulator_gives_its_script_the_judged_relevant_documents(client: TestClient) -> None:
    """The script is told every document judged relevant, with its grade."""
    assert [{"id": doc, "grade": 1} for doc in LOST] == _attribute(
        client.get(SIMULATOR).text, "relevant"
    )


def test_a_blank_simulator_lists_no_missing_documents(client: TestClient) -> None:
    """Without a query the simulator has no list of missing documents."""
    assert 'id="missing"' not in client.get("/simulator").text


def test_the_simulator_marks_the_cut_after_position_k(client: TestClient) -> None:
    """With k = 10, the tenth document of the ranking alone carries the cut."""
    items = _items(client.get(SIMULATOR).text, "docs")
    assert [10] == [rank for rank, item in enumerate(items, 1) if 'class="cut"' in item]


def test_the_baseline_ranking_has_grade_buttons_on_its_unjudged_documents(
    client: TestClient,
) -> None:
    """Each unjudged document of the baseline's column carries the four grade buttons."""
    text = client.get(QUERY).text
    baseline = text.split('id="ranking-baseline"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr class=\"[^\"]*\">.*?</tr>", baseline, flags=re.S)
    unjudged = [row for row in rows if "unjudged" in row.split(">", 1)[0]]
    buttons = [len(re.findall(r'<button type="button" class="grade"', row)) for row in unjudged]
    assert (9, [4] * 9) == (len(unjudged), buttons)


def test_no_grade_buttons_without_labeling(store_path: Path) -> None:
    """With labeling off neither ranking has grade buttons."""
    settings = WebSettings(
        config=default_config(), store=lambda: open_store(store_path), warm=False
    )
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as c:
        assert "label-buttons" not in c.get(QUERY).text


def test_each_grade_button_says_what_its_grade_means(client: TestClient) -> None:
    """The four grade buttons of a document carry titles from not relevant to most relevant."""
    text = client.get(QUERY).text
    group = text.split('class="label-buttons"', 1)[1].split("</span>", 1)[0]
    assert [
        "grade 0: not relevant",
        "grade 1: relevant",
        "grade 2: more relevant",
        "grade 3: most relevant",
    ] == re.findall(r'title="([^"]*)"', group)


def test_the_query_pages_judged_documents_show_their_texts(client: TestClient) -> None:
    """Each of Q34's judged documents, both missing from run 2's ranking, shows its text."""
    table = client.get(QUERY).text.split('id="judgments"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr><td><code>.*?</tr>", table)
    assert [True, True] == ['<div class="doctext">' in row for row in rows]


def test_a_blank_simulator_hides_the_note_on_a_k_beyond_the_ranking(client: TestClient) -> None:
    """A blank list at k = 10 has no cut to speak of: the note is hidden."""
    note = client.get("/simulator").text.split('id="cut-note"', 1)[1].split(">", 1)[0]
    assert " hidden" in note
