"""What the web app reads to show a page: what all run pages of a suite share is read once,
and read again when it changed (the eval set file, the judgment layers)."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from monitor.config import default_config, load_config
from monitor.errors import UsageError
from monitor.evalset.bundled import larkfield_evalset
from monitor.job import run_suite
from monitor.judgments.layers import add_layer
from monitor.store import RunRecord, Store, open_store
from monitor.web import WebSettings, create_app
from monitor.web.views import Cache, Views

SUITE = "larkfield"


class _Counting:
    """A store that counts the whole runs read from it, by run id."""

    def __init__(self, store: Store, reads: Counter[int]) -> None:
        self._store = store
        self._reads = reads

    def get_run(self, run_id: int) -> RunRecord:
        self._reads[run_id] += 1
        return self._store.get_run(run_id)

    def get_baseline(self, suite: str) -> RunRecord | None:
        found = self._store.get_baseline(suite)
        if found is not None and found.run_id is not None:
            self._reads[found.run_id] += 1
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def __enter__(self) -> _Counting:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._store.close()


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of the bundled suite: the seeded baseline (run 1) and two keyword runs."""
    path = tmp_path_factory.mktemp("reads") / "m.db"
    with open_store(path) as store:
        run_suite(default_config().suite(SUITE), store, progress=False)
        run_suite(default_config().suite(SUITE), store, progress=False)
    return path


def _app(path: Path, reads: Counter[int], *, warm: bool = False) -> TestClient:
    settings = WebSettings(
        config=default_config(),
        store=lambda: _Counting(open_store(path), reads),
        warm=warm,
    )
    return TestClient(create_app(settings), base_url="http://127.0.0.1")


@pytest.mark.slow
def test_run_pages_read_the_baseline_once_and_each_run_once(three_runs: Path) -> None:
    """Showing runs 3, 2 and 1 (the baseline) and their queries reads each run once."""
    reads: Counter[int] = Counter()
    with _app(three_runs, reads) as client:
        for url in (
            "/suites/larkfield/runs/3",
            "/suites/larkfield/runs/2",
            "/suites/larkfield/runs/1",
        ):
            assert 200 == client.get(url).status_code
            assert 200 == client.get(f"{url}/queries/Q34").status_code
    assert {1: 1, 2: 1, 3: 1} == dict(reads)


def test_the_start_up_warm_up_reads_each_run_once(three_runs: Path) -> None:
    """The warm-up reads the newest run and the baseline once, and its run page reads none."""
    reads: Counter[int] = Counter()
    views = Views(default_config(), lambda: _Counting(open_store(three_runs), reads))
    views.warm()
    views.run_page(SUITE, 3)
    assert {1: 1, 3: 1} == dict(reads)


def test_the_eval_set_is_loaded_once_for_all_pages(
    three_runs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two run pages and a query page load the suite's eval set once."""
    import monitor.evalset.suite as suite_module

    loads: list[object] = []
    real = suite_module.load_evalset

    def counted(config: Any) -> Any:
        loads.append(config)
        return real(config)

    monkeypatch.setattr(suite_module, "load_evalset", counted)
    with _app(three_runs, Counter()) as client:
        for url in ("/suites/larkfield/runs/3", "/suites/larkfield/runs/2/queries/Q34"):
            assert 200 == client.get(url).status_code
        assert 200 == client.get("/suites/larkfield/runs/2").status_code
    assert 1 == len(loads)


def test_a_layer_added_elsewhere_shows_on_the_next_page(tmp_path: Path) -> None:
    """A grade stored while the app runs (from the command line) re-scores the run page."""
    path = tmp_path / "m.db"
    with open_store(path) as store:
        run_suite(default_config().suite(SUITE), store, progress=False)
    with _app(path, Counter()) as client:
        before = client.get("/suites/larkfield/runs/2").text
        with open_store(path) as store:
            grades = {"Q34": {"ce196c57771f": 2}}
            add_layer(store, SUITE, grades, frozen=larkfield_evalset(), source="cli")
        after = client.get("/suites/larkfield/runs/2").text
    note = "re-scored under judgments"
    assert (False, True) == (note in before, note in after)


def _file_suite(folder: Path, text: str) -> Path:
    evalset = folder / "set.jsonl"
    evalset.write_text(
        json.dumps({"id": "q1", "query": text, "relevant": {"d1": 1}}) + "\n", encoding="utf-8"
    )
    config = folder / "monitor.yaml"
    config.write_text(
        "version: 1\n"
        f"store: {{path: {folder / 'm.db'}}}\n"
        "suites:\n"
        "  files:\n"
        f"    evalset: {{path: {evalset}}}\n"
        f"    search: {{kind: replay, path: {folder / 'run.json'}}}\n"
        "    metrics: [recall@5]\n",
        encoding="utf-8",
    )
    return config


def test_an_edited_eval_set_file_is_read_again(tmp_path: Path) -> None:
    """The app keeps the loaded eval set until its file changes, then reads the new one."""
    config = load_config(_file_suite(tmp_path, "first wording"))
    views = Views(config, lambda: open_store(tmp_path / "m.db"))
    suite = config.suite("files")
    first = views.evalset(suite)
    again = views.evalset(suite)
    _file_suite(tmp_path, "a second, longer wording")
    edited = views.evalset(suite)
    assert first is again
    assert ("first wording", "a second, longer wording") == (
        first["q1"].text if first else None,
        edited["q1"].text if edited else None,
    )


@pytest.mark.slow
def test_a_value_asked_for_by_two_threads_at_once_is_computed_once() -> None:
    """A page asking for what the warm-up is computing waits for it instead of computing it."""
    cache = Cache()
    asked = threading.Event()
    calls: list[str] = []
    got: list[int] = []

    def slow() -> int:
        calls.append(threading.current_thread().name)
        asked.wait(5)
        time.sleep(0.2)  # time for the second thread to reach the cache
        return 42

    def second() -> None:
        asked.set()
        got.append(cache.get("key", slow))

    first = threading.Thread(target=lambda: got.append(cache.get("key", slow)), name="first")
    first.start()
    while not calls:
        time.sleep(0.01)
    other = threading.Thread(target=second, name="second")
    other.start()
    first.join(5)
    other.join(5)
    assert (["first"], [42, 42]) == (calls, got)


def test_a_failed_computation_is_tried_again() -> None:
    """A value whose computation raised is not kept: the next request computes it."""
    cache = Cache()

    def broken() -> int:
        raise UsageError("unreadable")

    with pytest.raises(UsageError):
        cache.get("key", broken)
    assert 7 == cache.get("key", lambda: 7)


def test_the_warm_up_compiles_every_template(three_runs: Path) -> None:
    """After the warm-up, showing a page reads no template source again. The environment
    is one per process, so the test starts from a fresh one and leaves none counted."""
    from monitor.web.app import _environment, _Pages

    _environment.cache_clear()
    try:
        pages = _Pages(WebSettings(config=default_config(), store=lambda: open_store(three_runs)))
        loader = pages.env.loader
        assert loader is not None
        real = loader.get_source
        read: list[str] = []

        def counted(env: Any, name: str) -> Any:
            read.append(name)
            return real(env, name)

        loader.get_source = counted  # type: ignore[method-assign,assignment]
        pages.warm()
        compiled = len(read)
        pages.page("suites.html", cards=pages.views.suites())
        pages.page("run.html", suite=SUITE, report=pages.views.run_page(SUITE, 2))
        assert (len(pages.env.list_templates()), compiled) == (compiled, len(read))
    finally:
        _environment.cache_clear()


@pytest.mark.slow
def test_a_run_stored_while_the_app_is_up_is_read_before_anyone_asks(tmp_path: Path) -> None:
    """The app looks for new runs in the background: a run the job stores while it serves
    is read and compared without a request, and its first view reads it no more."""
    path = tmp_path / "m.db"
    with open_store(path) as store:
        run_suite(default_config().suite(SUITE), store, progress=False)
    reads: Counter[int] = Counter()
    settings = WebSettings(
        config=default_config(),
        store=lambda: _Counting(open_store(path), reads),
        refresh_seconds=0.05,
    )
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        with open_store(path) as store:
            new = run_suite(default_config().suite(SUITE), store, progress=False).run_id
        assert new is not None
        deadline = time.monotonic() + 10
        while reads[new] == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert 1 == reads[new]
        assert 200 == client.get(f"/suites/{SUITE}/runs/{new}").status_code
    assert 1 == reads[new]
