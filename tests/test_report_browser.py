"""The HTML report in a real browser (headless Chromium through selenium): it fits its window.

Marked ``browser``: skipped without Chromium and its driver, failed instead under
``MONITOR_REQUIRE_SERVICES=1``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from conftest import chromium

from monitor.config import default_config
from monitor.job import run_suite
from monitor.report import compose_report
from monitor.report.html import render_html
from monitor.store import open_store

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WINDOW = (1385, 900)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless Chromium in a 1385x900 window."""
    with chromium(*WINDOW) as driver:
        yield driver


@pytest.fixture(scope="module")
def report_page(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Return the file:// URL of the HTML report of a keyword run of the bundled Larkfield set
    against its rerank baseline: its worse queries name passages with long texts."""
    folder = tmp_path_factory.mktemp("report")
    suite = default_config().suite("larkfield")
    with open_store(folder / "m.db") as store:
        run_suite(suite, store, progress=False)
        report = compose_report(store, suite)
    assert (True, True) == (bool(report.doc_texts), bool(report.comparison.worse_for()))
    page = folder / "report.html"
    page.write_text(render_html(report), encoding="utf-8")
    return page.as_uri()


def test_the_report_is_no_wider_than_its_window(browser: Any, report_page: str) -> None:
    """The page, its table of worse queries with passage texts included, fits a 1385 px
    window: nothing scrolls sideways."""
    browser.get(report_page)
    width, inner = browser.execute_script(
        "return [document.documentElement.scrollWidth, window.innerWidth]"
    )
    assert (True, inner) == (width <= inner, inner), f"page {width} px wide"


def test_the_worse_queries_table_stays_inside_the_page(browser: Any, report_page: str) -> None:
    """The table of worse queries ends inside the page's main column."""
    browser.get(report_page)
    right, column = browser.execute_script(
        "const t = document.getElementById('queries').nextElementSibling.nextElementSibling;"
        "return [t.getBoundingClientRect().right,"
        " document.querySelector('main').getBoundingClientRect().right]"
    )
    assert (True, column) == (right <= column, column), f"table ends at {right} px"
