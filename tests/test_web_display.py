"""How the web pages show figures: units on latency and rates, each run's verdict, counts as
integers, and each metric linked to its definition.

The store is filled by running the embedded default suite through the job, as `run` does:
run 1 is the seeded rerank baseline, run 2 the keyword run that regressed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from monitor.config import default_config
from monitor.job import run_suite
from monitor.metrics.spec import MEASURES
from monitor.store import open_store
from monitor.web import WebSettings, create_app
from monitor.web.app import figure_text
from monitor.web.definitions import as_html

SUITE = "larkfield"


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding the baseline (run 1) and the regressed run (run 2)."""
    path = tmp_path_factory.mktemp("display") / "m.db"
    with open_store(path) as store:
        run_suite(default_config().suite(SUITE), store, progress=False)
    return path


@pytest.fixture
def client(store_path: Path) -> Iterator[TestClient]:
    """The app over that store, started and stopped per test so that its worker threads
    end with the test that started them."""
    settings = WebSettings(
        config=default_config(), store=lambda: open_store(store_path), warm=False
    )
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as c:
        yield c


def _rule_cells(text: str, rule: str) -> list[str]:
    row = text.split(f"<td>{rule}</td>", 1)[1].split("</tr>", 1)[0]
    return re.findall(r'<td class="num">([^<]*)</td>', row)


def test_a_sub_millisecond_latency_rule_shows_its_figure_in_microseconds(
    client: TestClient,
) -> None:
    """The demo's p95 latency, well under a millisecond, reads in µs instead of a rounded ms."""
    text = client.get(f"/suites/{SUITE}/runs/2").text
    assert re.fullmatch(r"[0-9]+\.[0-9]+ µs", _rule_cells(text, "latency_p95_seconds_max")[1])


@pytest.mark.parametrize(
    ("seconds", "signed", "expected"),
    [
        (0.25, False, "250.0 ms"),
        (2.5, False, "2,500.0 ms"),
        (0.001, False, "1.0 ms"),
        (0.00053, False, "530.0 µs"),
        (5.3e-7, False, "0.530 µs"),
        (-2.1e-5, True, "-21.0 µs"),
        (0.0, True, "+0.0 ms"),
    ],
)
def test_a_latency_figure_reads_in_ms_or_under_one_ms_in_us(
    seconds: float, signed: bool, expected: str
) -> None:
    """A latency figure is in milliseconds, in microseconds below one millisecond."""
    assert expected == figure_text(seconds, "latency_p95_seconds", signed=signed)


def test_a_rate_rule_shows_its_figure_in_percent(client: TestClient) -> None:
    """The error rate rule's current value is a percentage."""
    text = client.get(f"/suites/{SUITE}/runs/2").text
    assert "0.00%" == _rule_cells(text, "error_rate_max")[1]


def test_a_quality_rule_shows_its_score_as_before(client: TestClient) -> None:
    """A metric rule's figures stay scores with four decimals and no unit."""
    text = client.get(f"/suites/{SUITE}/runs/2").text
    assert ["0.8399", "0.6622", "-0.1777"] == _rule_cells(text, "mrr@10 max_drop")[:3]


def test_the_latency_chart_names_its_unit(client: TestClient) -> None:
    """The suite page's latency trend says which unit its axis is in."""
    text = client.get(f"/suites/{SUITE}").text
    assert re.search(r"<figcaption>latency p95 \((s|ms|µs)\)</figcaption>", text)


def test_the_suites_page_gives_the_last_run_its_verdict(client: TestClient) -> None:
    """Beside a regression verdict the last run reads as a regression, not as "ok"."""
    text = client.get("/").text
    row = text.split("<tbody>", 1)[1]
    assert (True, False) == (
        f'<a href="/suites/{SUITE}/runs/2">run 2</a> (regression)' in row,
        "run 2</a> (ok)" in row,
    )


def test_a_suite_without_a_schedule_reads_as_not_scheduled(client: TestClient) -> None:
    """Served without the daemon, a suite's next run says it is not scheduled, not "-"."""
    cell = client.get("/").text.split('<td class="next-run">', 1)[1].split("</td>", 1)[0]
    assert "not scheduled" == cell


def test_a_query_pages_fall_reads_in_red_as_on_the_run_page(client: TestClient) -> None:
    """Q34's mrr@10 delta, a fall, carries the class that colours falls red."""
    text = client.get(f"/suites/{SUITE}/runs/2/queries/Q34").text
    row = text.split("<td>mrr@10</td>", 1)[1].split("</tr>", 1)[0]
    assert '<td class="num neg">-1.0000</td>' in row


def _simulator_rows(text: str) -> dict[str, str]:
    rows = re.findall(
        r'<tr data-metric="([^"]+)"><td><a href="([^"]+)">[^<]*</a></td>'
        r'<td class="num value">([^<]*)</td>',
        text,
    )
    return {metric: value for metric, _, value in rows}


def test_the_simulator_shows_counts_as_integers(client: TestClient) -> None:
    """num_ret and num_rel read as whole numbers; scores keep four decimals."""
    rows = _simulator_rows(client.get(f"/simulator?suite={SUITE}&run=2&query=Q34").text)
    assert ("10", "2", "0.0000") == (rows["num_ret"], rows["num_rel"], rows["mrr@10"])


def test_the_simulation_endpoint_gives_counts_as_integers(client: TestClient) -> None:
    """The JSON answer's shown figures print a count as an integer."""
    page = client.get("/").text
    csrf = page.split('name="csrf-token" content="', 1)[1].split('"', 1)[0]
    body = {"docs": [{"id": "a", "grade": 1}, {"id": "b", "grade": 0}], "k": 10}
    headers = {"Origin": "http://127.0.0.1", "X-CSRF-Token": csrf}
    shown = client.post("/api/simulate", json=body, headers=headers).json()["shown"]
    assert ("2", "1.0000") == (shown["num_ret"], shown["mrr@10"])


def test_every_simulator_metric_links_to_its_definition(client: TestClient) -> None:
    """Each row's name links to an anchor of the definitions page that exists."""
    text = client.get("/simulator").text
    links = dict(re.findall(r'<tr data-metric="([^"]+)"><td><a href="([^"]+)">', text))
    anchors = set(re.findall(r'<dt id="([^"]+)">', client.get("/definitions").text))
    measures = {metric: metric.split("@", 1)[0] for metric in links}
    assert sorted(MEASURES) == sorted(measures.values())
    assert {m: f"/definitions#{measure}" for m, measure in measures.items()} == links
    assert set(measures.values()) <= anchors


def test_no_simulator_row_points_to_definitions_without_a_link(client: TestClient) -> None:
    """A measure without a worked formula says what it returns instead of "see the metric
    definitions"."""
    text = client.get("/simulator").text
    formula = text.split('<tr data-metric="bpref">', 1)[1].split('class="formula">', 1)[1]
    assert (False, True) == (
        "see the metric definitions" in text,
        formula.startswith("trec_eval&#39;s bpref"),
    )


def test_the_definitions_page_sets_docstring_literals_as_code(client: TestClient) -> None:
    """The metric modules' ``literals`` read as code on the page, with no backticks left."""
    text = client.get("/definitions").text
    assert (0, True) == (text.count("``"), "<code>num_rel</code>" in text)


@pytest.mark.parametrize(
    ("docstring", "expected"),
    [
        ("the ``<b>`` tag", "the <code>&lt;b&gt;</code> tag"),
        ("for one query::\n\n  AP", "for one query:\n\n  AP"),
        ("an unpaired `` <i>", "an unpaired `` &lt;i&gt;"),
    ],
)
def test_a_docstring_is_escaped_with_its_literals_as_code(docstring: str, expected: str) -> None:
    """A docstring's text is escaped, its literals set as code, a closing :: read as one colon."""
    assert expected == str(as_html(docstring))
