"""The web app in a real browser (headless Chromium through selenium): pages load without
console errors, the simulator's figures after a reorder equal `evaluate`'s, a grade
button's round trip, and signing in with a token through the form.

Marked ``browser``: skipped without Chromium and its driver, failed instead under
``MONITOR_REQUIRE_SERVICES=1`` (``.ci/run`` installs both).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import chromium, threads_kept_by_a_shared_server

from monitor.config import default_config
from monitor.job import run_suite
from monitor.metrics.evaluation import evaluate
from monitor.store import open_store
from monitor.web import WebSettings, create_app
from monitor.web.simulate import Simulation, metrics_at

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SUITE = "larkfield"
TOKEN = "browser-s3cret"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding the seeded rerank baseline (run 1) and a keyword run (run 2)."""
    path = tmp_path_factory.mktemp("browser") / "m.db"
    with open_store(path) as store:
        run_suite(default_config().suite(SUITE), store, progress=False)
    return path


@contextlib.contextmanager
def _serving(settings: WebSettings, host: str) -> Iterator[str]:
    """Serve ``settings``' app with uvicorn on a free loopback port; yield its URL on ``host``."""
    import uvicorn

    port = _free_port()
    config = uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="error")
    instance = uvicorn.Server(config)
    thread = threading.Thread(target=instance.run, daemon=True)
    # Starlette renders in AnyIO's worker threads, which end with the server's event loop.
    with threads_kept_by_a_shared_server("AnyIO worker thread"):
        thread.start()
        deadline = time.monotonic() + 10
        while not instance.started and time.monotonic() < deadline:
            time.sleep(0.05)
        yield f"http://{host}:{port}"
        instance.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def server(store_path: Path) -> Iterator[str]:
    """The app served by uvicorn on a free loopback port, with labeling into the store's layers."""
    settings = WebSettings(
        config=default_config(),
        store=lambda: open_store(store_path),
        allow_labeling=True,
    )
    with _serving(settings, "127.0.0.1") as url:
        yield url


@pytest.fixture(scope="module")
def signed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app with labeling behind a token (as served beyond loopback), on its own store,
    reached as localhost so that its cookie is not the other server's."""
    path = tmp_path_factory.mktemp("signed") / "m.db"
    with open_store(path) as store:
        run_suite(default_config().suite(SUITE), store, progress=False)
    settings = WebSettings(
        config=default_config(),
        store=lambda: open_store(path),
        allow_labeling=True,
        auth_token=TOKEN,
    )
    with _serving(settings, "localhost") as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless Chromium that keeps the console log."""
    with chromium(1400, 1000, console_log=True) as driver:
        yield driver


def _console_errors(driver: Any) -> list[str]:
    return [
        str(entry["message"]) for entry in driver.get_log("browser") if entry["level"] == "SEVERE"
    ]


def _wait(condition: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError("the page did not reach the expected state in time")


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/suites/larkfield",
        "/suites/larkfield/runs/2",
        "/suites/larkfield/runs/2/queries/Q34",
        "/simulator",
        "/simulator?suite=larkfield&run=2&query=Q34",
        "/definitions",
    ],
)
def test_every_page_loads_without_console_errors(server: str, browser: Any, path: str) -> None:
    """Each page loads its own scripts and styles under the CSP with no console error."""
    browser.get_log("browser")
    browser.get(server + path)
    _wait(lambda: browser.execute_script("return document.readyState") == "complete")
    if path.startswith("/simulator"):
        _wait(
            lambda: (
                browser.execute_script("return document.getElementById('simulator').dataset.ready")
                == "1"
            )
        )
    assert [] == _console_errors(browser)


_READ_FIGURES = """
const figures = {};
for (const row of document.querySelectorAll('#sim-metrics tbody tr')) {
  figures[row.dataset.metric] = row.querySelector('.value').textContent;
}
return figures;
"""


def _simulator_figures(driver: Any) -> dict[str, float]:
    """The simulator's figures, read in one script so that a re-render cannot interleave."""
    return {metric: float(text) for metric, text in driver.execute_script(_READ_FIGURES).items()}


def _query_with_relevant_first(store_path: Path) -> str:
    with open_store(store_path) as store:
        run = store.get_run(2)
    return next(
        q.query_id for q in run.queries if q.retrieved_ids and q.retrieved_ids[0] in q.relevant_ids
    )


def test_the_simulator_after_a_reorder_shows_evaluates_figures(
    server: str, browser: Any, store_path: Path
) -> None:
    """Moving a relevant first document down gives the figures `evaluate` gives the new order."""
    from selenium.webdriver.common.by import By

    query = _query_with_relevant_first(store_path)
    browser.get(f"{server}/simulator?suite=larkfield&run=2&query={query}")
    root = browser.find_element(By.ID, "simulator")
    _wait(lambda: root.get_attribute("data-ready") == "1")
    seed = json.loads(root.get_attribute("data-seed"))
    before = _simulator_figures(browser)
    browser.find_element(By.CSS_SELECTOR, "#docs li:first-child button.down").click()
    _wait(lambda: root.get_attribute("data-computed") == "1")
    docs = [(d["id"], d["grade"]) for d in seed["docs"]]
    docs[0], docs[1] = docs[1], docs[0]
    simulation = Simulation(tuple(docs), seed["k"], seed["relevant_in_collection"])
    expected = evaluate(
        simulation.qrels(), simulation.run(), metrics_at(seed["k"]), include_no_relevant=True
    )
    after = _simulator_figures(browser)
    assert {name: round(value, 4) for name, value in expected.means.items()} == after
    assert before["mrr@" + str(seed["k"])] > after["mrr@" + str(seed["k"])]


def test_toggling_relevance_in_binary_mode_recomputes(server: str, browser: Any) -> None:
    """On a blank list, adding a document and marking it relevant makes hit_rate@10 one."""
    from selenium.webdriver.common.by import By

    browser.get(server + "/simulator")
    root = browser.find_element(By.ID, "simulator")
    _wait(lambda: root.get_attribute("data-ready") == "1")
    browser.find_element(By.ID, "new-doc").send_keys("d1")
    browser.find_element(By.ID, "add-doc").click()
    browser.find_element(By.CSS_SELECTOR, "#docs li input.relevant-toggle").click()
    _wait(lambda: _simulator_figures(browser).get("hit_rate@10") == 1.0)
    assert 1.0 == _simulator_figures(browser)["mrr@10"]


def test_the_simulator_recomputed_shows_counts_as_integers_linked_to_definitions(
    server: str, browser: Any
) -> None:
    """After a recompute, num_ret reads as a whole number and its name links to its
    definition."""
    from selenium.webdriver.common.by import By

    browser.get(server + "/simulator")
    root = browser.find_element(By.ID, "simulator")
    _wait(lambda: root.get_attribute("data-ready") == "1")
    browser.find_element(By.ID, "new-doc").send_keys("d1")
    browser.find_element(By.ID, "add-doc").click()
    _wait(lambda: root.get_attribute("data-computed") == "1")
    row = browser.find_element(By.CSS_SELECTOR, '#sim-metrics tr[data-metric="num_ret"]')
    link = row.find_element(By.TAG_NAME, "a")
    assert ("1", "/definitions#num_ret") == (
        row.find_element(By.CSS_SELECTOR, ".value").text,
        link.get_attribute("pathname") + link.get_attribute("hash"),
    )


def _open_simulator(driver: Any, url: str) -> Any:
    from selenium.webdriver.common.by import By

    driver.get(url)
    root = driver.find_element(By.ID, "simulator")
    _wait(lambda: root.get_attribute("data-ready") == "1")
    return root


def test_the_simulator_redraws_each_documents_text(server: str, browser: Any) -> None:
    """The ranking the script draws shows every document's passage text."""
    from selenium.webdriver.common.by import By

    _open_simulator(browser, f"{server}/simulator?suite=larkfield&run=2&query=Q34")
    items = browser.find_elements(By.CSS_SELECTOR, "#docs li")
    assert [True] * 10 == [bool(i.find_elements(By.CSS_SELECTOR, ".doctext")) for i in items]


def test_adding_a_missing_relevant_document_puts_it_last_and_recomputes(
    server: str, browser: Any
) -> None:
    """The add button of a relevant document the ranking lacks appends it, graded relevant,
    takes it off the list of missing ones, and recomputes the figures."""
    from selenium.webdriver.common.by import By

    root = _open_simulator(browser, f"{server}/simulator?suite=larkfield&run=2&query=Q34")
    browser.find_element(By.CSS_SELECTOR, '#missing li[data-id="d9a5bd8ea531"] button').click()
    _wait(lambda: root.get_attribute("data-computed") == "1")
    last = browser.find_element(By.CSS_SELECTOR, "#docs li:last-child")
    missing = browser.find_elements(By.CSS_SELECTOR, "#missing li")
    assert ("d9a5bd8ea531", "1", 11, ["b47ef9ac1993"]) == (
        last.get_attribute("data-id"),
        last.get_attribute("data-grade"),
        len(browser.find_elements(By.CSS_SELECTOR, "#docs li")),
        [item.get_attribute("data-id") for item in missing],
    )


_CUT = """
const items = [...document.querySelectorAll('#docs li')];
return items.flatMap((item, i) => item.classList.contains('cut')
  ? [[i + 1, getComputedStyle(item).borderBottomWidth, getComputedStyle(item, '::after').content]]
  : []);
"""


def test_the_cut_line_follows_k(server: str, browser: Any) -> None:
    """A labelled line is drawn below position k, and moves when k changes."""
    from selenium.webdriver.common.by import By

    _open_simulator(browser, f"{server}/simulator?suite=larkfield&run=2&query=Q34")
    before = browser.execute_script(_CUT)
    k = browser.find_element(By.ID, "k")
    browser.execute_script(
        "arguments[0].value = '3'; arguments[0].dispatchEvent(new Event('change'))", k
    )
    _wait(lambda: browser.execute_script(_CUT) != before)
    assert ([[10, "3px", '"cut at k = 10"']], [[3, "3px", '"cut at k = 3"']]) == (
        before,
        browser.execute_script(_CUT),
    )


def test_a_k_beyond_the_ranking_says_every_document_is_above_the_cut(
    server: str, browser: Any
) -> None:
    """With k past the last document no line is drawn and a note says every document is
    above the cut."""
    from selenium.webdriver.common.by import By

    _open_simulator(browser, f"{server}/simulator?suite=larkfield&run=2&query=Q34")
    k = browser.find_element(By.ID, "k")
    browser.execute_script(
        "arguments[0].value = '25'; arguments[0].dispatchEvent(new Event('change'))", k
    )
    note = browser.find_element(By.ID, "cut-note")
    _wait(note.is_displayed)
    assert (
        [],
        "k = 25 is beyond the ranking's 10 documents: every document is above the cut.",
    ) == (browser.execute_script(_CUT), note.text)


def _run_mean(driver: Any, metric: str) -> float:
    from selenium.webdriver.common.by import By

    for row in driver.find_elements(By.CSS_SELECTOR, "#metrics tbody tr"):
        cells = row.find_elements(By.TAG_NAME, "td")
        if cells[0].text == metric:
            return float(cells[2].text)
    raise AssertionError(f"no {metric} row on the run page")


def test_a_grade_button_round_trip_rescores_the_run(
    server: str, browser: Any, store_path: Path
) -> None:
    """Grading an unjudged document of the baseline's column adds a layer with its labeler,
    takes its buttons off both columns, and the run page's figures become those of the run
    re-scored under the new judgments."""
    from selenium.webdriver.common.by import By

    from monitor.report import compose_report

    browser.get(server + "/suites/larkfield/runs/2")
    before = _run_mean(browser, "recall@10")
    browser.get(server + "/suites/larkfield/runs/2/queries/Q34")
    current = {
        group.get_attribute("data-doc")
        for group in browser.find_elements(By.CSS_SELECTOR, "#ranking-current .label-buttons")
    }
    group = next(
        group
        for group in browser.find_elements(By.CSS_SELECTOR, "#ranking-baseline .label-buttons")
        if group.get_attribute("data-doc") in current
    )
    doc = group.get_attribute("data-doc")
    labeler = browser.find_element(By.ID, "labeler")
    labeler.clear()
    labeler.send_keys("ana")
    group.find_element(By.CSS_SELECTOR, 'button[data-grade="2"]').click()
    _wait(lambda: "recorded" in browser.find_element(By.ID, "label-status").text)
    assert [] == _console_errors(browser)
    assert [] == browser.find_elements(By.CSS_SELECTOR, f'.label-buttons[data-doc="{doc}"] button')

    with open_store(store_path) as store:
        layers = store.layers(SUITE)
        expected = compose_report(store, default_config().suite(SUITE), run_id=2).run
    assert [("ana", {"Q34": {doc: 2}})] == [
        (layer.who, {q: dict(g) for q, g in layer.grades.items()}) for layer in layers
    ]
    browser.get(server + "/suites/larkfield/runs/2")
    after = _run_mean(browser, "recall@10")
    assert round(expected.means["recall@10"], 4) == after
    assert after > before
    browser.get(server + "/suites/larkfield/runs/2/queries/Q34")
    assert "graded" not in browser.page_source
    assert f'data-doc="{doc}"' not in browser.page_source


def test_signing_in_through_the_form_lets_the_browser_read_and_label(
    signed_server: str, browser: Any
) -> None:
    """Without the token a page is a 401 linking to the form; signing in there comes back
    to that page, and a grade button's post is recorded."""
    from selenium.webdriver.common.by import By

    browser.get(signed_server + "/suites/larkfield/runs/2/queries/Q34")
    refused = browser.find_element(By.ID, "error").text
    browser.find_element(By.ID, "sign-in").click()
    _wait(lambda: "/login?next=" in browser.current_url)
    browser.find_element(By.NAME, "token").send_keys(TOKEN)
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    _wait(lambda: browser.current_url.endswith("/suites/larkfield/runs/2/queries/Q34"))
    _wait(lambda: browser.find_elements(By.CSS_SELECTOR, ".label-buttons"))
    browser.get_log("browser")
    group = browser.find_element(By.CSS_SELECTOR, ".label-buttons")
    group.find_element(By.CSS_SELECTOR, 'button[data-grade="1"]').click()
    _wait(lambda: "recorded" in browser.find_element(By.ID, "label-status").text)
    assert "needs its token" in refused
    assert [] == _console_errors(browser)
