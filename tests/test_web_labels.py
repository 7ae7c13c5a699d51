"""Grades posted at once: of two conflicting grades for one document exactly one is stored,
and the other is refused in words a browser user understands.

The store tests run on SQLite, and on PostgreSQL when it is reachable (as in test_store.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Any

import httpx
import pytest
from test_store import store

from monitor.config import default_config
from monitor.errors import LayersChangedError, UsageError
from monitor.evalset.bundled import larkfield_evalset
from monitor.job import run_suite
from monitor.store import JudgmentLayer, SqlStore, Store, open_store
from monitor.web import WebSettings
from monitor.web.labels import Label, LabelConflictError, default_sink
from monitor.web.server import WebServer

#: The store tests' fixture: an open store on each backend the store tests run on.
__all__ = ["store"]

SUITE = "larkfield"
T0 = datetime(2024, 5, 1, 3, 0, tzinfo=timezone.utc)
ROUNDS = 20


def _layer(**grades: dict[str, int]) -> JudgmentLayer:
    return JudgmentLayer(
        suite=SUITE, source="web", who="ana", kind="human", created_at=T0, grades=grades
    )


def test_a_layer_added_after_the_newest_one_read_is_saved(store: SqlStore) -> None:
    """add_layer(after=newest) saves the layer when no other landed since."""
    first = store.add_layer(_layer(Q34={"d1": 1}), after=0)
    second = store.add_layer(_layer(Q34={"d2": 1}), after=first)
    assert [first, second] == [found.layer_id for found in store.layers(SUITE)]


def test_a_layer_added_after_a_stale_read_is_refused(store: SqlStore) -> None:
    """add_layer(after=...) refuses when a layer landed since the caller's read, adding none."""
    store.add_layer(_layer(Q34={"d1": 1}))
    with pytest.raises(LayersChangedError, match="another layer was added meanwhile"):
        store.add_layer(_layer(Q34={"d1": 0}), after=0)
    assert 1 == len(store.layers(SUITE))


class _ReadTogether:
    """A store whose first read of the layers waits until the other writer has read them too,
    so both check the same layers before either writes: the race, every time."""

    def __init__(self, store: Store, barrier: threading.Barrier) -> None:
        self._store = store
        self._barrier = barrier
        self._waited = False

    def layers(self, suite: str) -> list[JudgmentLayer]:
        found = self._store.layers(suite)
        if not self._waited:
            self._waited = True
            self._barrier.wait(timeout=10)
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def _label(doc: str, grade: int) -> Label:
    return Label(suite=SUITE, query_id="Q34", doc_id=doc, grade=grade, who="ana", at=T0)


def _outcome(call: Callable[[], None]) -> str:
    try:
        call()
    except LabelConflictError:
        return "conflict"
    return "stored"


def test_two_conflicting_grades_read_together_leave_one(store_url: str) -> None:
    """Two writers that both read no grade for a document before either writes: one grade is
    stored, the other writer is told of it."""
    frozen = larkfield_evalset()
    sink = default_sink(lambda suite: frozen)
    assert sink is not None
    barrier = threading.Barrier(2)

    def post(grade: int) -> str:
        with open_store(store_url) as opened:
            racing: Any = _ReadTogether(opened, barrier)
            return _outcome(lambda: sink(racing, _label("race-doc", grade)))

    with ThreadPoolExecutor(2) as pool:
        outcomes = sorted(pool.map(post, (2, 0)))
    with open_store(store_url) as opened:
        grades = [dict(layer.grades["Q34"]) for layer in opened.layers(SUITE)]
    assert (["conflict", "stored"], 1) == (outcomes, len(grades))


@pytest.fixture
def labeling_server(store_url: str) -> Any:
    """The app with labeling, served by uvicorn on a free loopback port over a fresh store."""
    path = store_url
    with open_store(path) as opened:
        run_suite(default_config().suite(SUITE), opened, progress=False)
    settings = WebSettings(
        config=default_config(), store=lambda: open_store(path), allow_labeling=True, warm=False
    )
    server = WebServer(settings, "127.0.0.1", 0)
    server.start()
    yield server, path
    server.stop()


@pytest.mark.slow
def test_conflicting_grades_posted_at_once_store_one_and_refuse_the_other(
    labeling_server: Any,
) -> None:
    """In each of 20 rounds two browsers grade one document differently at the same moment:
    one post is stored (200), the other is a 409 in words, and one grade is kept."""
    server, path = labeling_server
    url = server.url.rstrip("/")
    page = httpx.get(url + "/", timeout=10).text
    csrf = page.split('name="csrf-token" content="', 1)[1].split('"', 1)[0]
    headers = {"Origin": url, "X-CSRF-Token": csrf}
    start = threading.Barrier(2)

    def post(doc: str, grade: int) -> tuple[int, str]:
        body = {"suite": SUITE, "query_id": "Q34", "doc_id": doc, "grade": grade, "who": "ana"}
        with httpx.Client(timeout=30, verify=False) as client:  # plain HTTP: no CA bundle
            start.wait(timeout=10)
            response = client.post(url + "/api/labels", json=body, headers=headers)
        return response.status_code, str(response.json().get("error", ""))

    statuses, errors = [], []
    with ThreadPoolExecutor(2) as pool:
        for round_ in range(ROUNDS):
            doc = f"race-{round_}"
            results = sorted(pool.map(post, (doc, doc), (2, 0)))
            statuses.append(tuple(status for status, _ in results))
            errors.extend(error for status, error in results if status == 409)
    with open_store(path) as opened:
        graded = [doc for layer in opened.layers(SUITE) for doc in layer.grades.get("Q34", {})]
    assert [(200, 409)] * ROUNDS == statuses
    assert sorted(f"race-{i}" for i in range(ROUNDS)) == sorted(graded)
    assert [] == [error for error in errors if "already has grade" not in error or "--" in error]


def test_a_label_conflict_says_which_grade_is_in_force() -> None:
    """The refusal names the document, the grade in force and the one not recorded."""
    error = LabelConflictError(_label("d1", 0), 2, "layer 1 (todo.csv)")
    assert (True, "d1 already has grade 2 for this query, so your grade 0 was not recorded") == (
        isinstance(error, UsageError),
        str(error).split(";", 1)[0],
    )
