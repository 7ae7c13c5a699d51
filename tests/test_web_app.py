"""The web app's pages and endpoints on a real store: content, errors, and what keeps it safe.

The store is filled by running the embedded default suite through the job, as `run` does:
run 1 is the seeded rerank baseline, run 2 the keyword run that regressed.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from monitor.config import default_config
from monitor.errors import UsageError
from monitor.job import run_suite
from monitor.store import QueryRecord, RunRecord, Store, open_store
from monitor.web import WebSettings, create_app
from monitor.web.labels import Label
from monitor.web.security import CSP
from monitor.web.views import RUNS_PER_PAGE, diff_rankings

SUITE = "larkfield"
HOST = "testserver"
SAME_ORIGIN = {"Origin": f"http://{HOST}"}


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding the seeded rerank baseline (run 1) and a keyword run (run 2)."""
    path = tmp_path_factory.mktemp("web") / "m.db"
    with open_store(path) as store:
        run_suite(default_config().suite(SUITE), store, progress=False)
    return path


def _client(store_path: Path, **options: Any) -> TestClient:
    settings = WebSettings(
        config=default_config(),
        store=lambda: open_store(store_path),
        **{"allowed_hosts": (HOST,), **options},
    )
    return TestClient(create_app(settings))


@pytest.fixture
def client(store_path: Path) -> Iterator[TestClient]:
    with _client(store_path) as c:
        yield c


def _csrf(client: TestClient) -> str:
    page = client.get("/").text
    return page.split('name="csrf-token" content="', 1)[1].split('"', 1)[0]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("/", "larkfield"),
        ("/suites/larkfield", "Runs"),
        ("/suites/larkfield/runs/2", "regression"),
        ("/suites/larkfield/runs/2/queries/Q34", "How long is the warranty on a garden sprinkler?"),
        ("/simulator", "A blank list"),
        ("/simulator?suite=larkfield&run=2&query=Q34", "Query"),
        ("/static/simulator.js", "/api/simulate"),
    ],
)
def test_every_page_loads_with_its_content(client: TestClient, url: str, expected: str) -> None:
    """Each page answers 200 and shows what it is about."""
    response = client.get(url)
    assert 200 == response.status_code
    assert expected in response.text


def test_every_response_carries_the_content_security_policy(client: TestClient) -> None:
    """Pages and errors alike carry the CSP and a server time."""
    for url in ("/", "/suites/nope"):
        response = client.get(url)
        assert CSP == response.headers["content-security-policy"]
        assert response.headers["server-timing"].startswith("app;dur=")


def test_an_unknown_suite_is_a_404_naming_the_known_ones(client: TestClient) -> None:
    """A page of a suite the config lacks says which suites there are."""
    response = client.get("/suites/nope")
    assert 404 == response.status_code
    assert "suites: larkfield" in response.text


def test_an_unknown_run_is_a_404(client: TestClient) -> None:
    """A run that is not in the store is a 404 saying so."""
    response = client.get("/suites/larkfield/runs/999")
    assert (404, True) == (response.status_code, "no run 999 in the store" in response.text)


def test_the_run_page_lists_rules_with_p_values_and_the_worst_queries(client: TestClient) -> None:
    """The regression's rules show their interval and p-value, and Q34 links to its page."""
    text = client.get("/suites/larkfield/runs/2").text
    assert "bootstrap 95% CI of delta" in text
    assert "mrr@10 max_drop" in text
    assert 'href="/suites/larkfield/runs/2/queries/Q34"' in text


def test_the_query_page_shows_both_rankings_and_what_changed(client: TestClient) -> None:
    """Q34 lost its relevant document: the page names it as lost with its grade."""
    text = client.get("/suites/larkfield/runs/2/queries/Q34").text
    assert 'id="ranking-baseline"' in text
    assert 'id="ranking-current"' in text
    assert "Lost since the baseline" in text
    assert "<code>d9a5bd8ea531</code> (was 1, grade" in text


class _OneQueryAtATime:
    """A store whose whole-run read fails: the pages that need one query must not call it."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def get_run(self, run_id: int) -> RunRecord:
        raise AssertionError(f"read the whole of run {run_id}")

    def latest_run(self, suite: str, status: str | None = "ok") -> RunRecord | None:
        raise AssertionError("read the whole of the latest run")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def __enter__(self) -> _OneQueryAtATime:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._store.close()


def test_a_query_page_reads_that_query_alone(store_path: Path) -> None:
    """A query page of a run not yet shown reads that query of it and of the baseline only."""
    settings = WebSettings(
        config=default_config(),
        store=lambda: _OneQueryAtATime(open_store(store_path)),  # type: ignore[arg-type,return-value]
        warm=False,
        allowed_hosts=(HOST,),
    )
    with TestClient(create_app(settings)) as c:
        text = c.get("/suites/larkfield/runs/2/queries/Q34").text
    assert "<code>d9a5bd8ea531</code> (was 1, grade" in text


def test_a_query_of_another_suites_run_is_a_404(tmp_path: Path) -> None:
    """A run id that is not one of the suite's is refused, naming the suite."""
    path = tmp_path / "other.db"
    now = datetime(2024, 5, 1, tzinfo=timezone.utc)
    with open_store(path) as store:
        run_id = store.save_run(
            RunRecord(
                suite="elsewhere",
                pipeline="p",
                started_at=now,
                finished_at=now,
                means={"recall@5": 0.5},
                queries=(QueryRecord("Q34", {"recall@5": 0.5}, retrieved_ids=("d1",)),),
            )
        )
    with _client(path) as c:
        response = c.get(f"/suites/{SUITE}/runs/{run_id}/queries/Q34")
    assert (404, True) == (response.status_code, "is not a run of suite" in response.text)


def test_the_suite_page_shows_the_latest_judgment_coverage(client: TestClient) -> None:
    """The job records judged@10 with every run: the suite page gives the newest and charts it."""
    text = client.get("/suites/larkfield").text
    section = text.split('id="coverage"', 1)[1].split("</section>", 1)[0]
    assert "judged@10 0.1121 in" in section
    assert 'aria-label="judged@10 across runs"' in section


def test_a_suite_without_recorded_coverage_shows_none(tmp_path: Path) -> None:
    """Runs stored without judged@k give the suite page no coverage section."""
    path = tmp_path / "plain.db"
    now = datetime(2024, 5, 1, tzinfo=timezone.utc)
    with open_store(path) as store:
        store.save_run(
            RunRecord(suite=SUITE, pipeline="p", started_at=now, finished_at=now, means={})
        )
    with _client(path) as c:
        text = c.get(f"/suites/{SUITE}").text
    assert (False, False) == ('id="coverage"' in text, "judged@10 across runs" in text)


def test_rankings_diff_into_moved_new_and_lost() -> None:
    """A document in both runs at other ranks moved; one only now is new; one only before lost."""
    current, baseline, lost = diff_rankings(("b", "c", "a"), ("a", "b", "d"), {"a": 1})
    assert ["moved", "new", "moved"] == [row.change for row in current]
    assert [("d", 3)] == [(row.doc_id, row.baseline_rank) for row in lost]
    assert [1, None, None] == [row.grade for row in baseline]


def test_values_from_the_store_are_escaped(tmp_path: Path) -> None:
    """A query id holding markup is shown as text, never as markup."""
    path = tmp_path / "x.db"
    now = datetime(2024, 5, 1, tzinfo=timezone.utc)
    evil = "<script>alert(1)</script>"
    with open_store(path) as store:
        run_id = store.save_run(
            RunRecord(
                suite=SUITE,
                pipeline="p",
                started_at=now,
                finished_at=now,
                means={"recall@5": 0.5},
                queries=(QueryRecord(evil, {"recall@5": 0.5}, retrieved_ids=(evil,)),),
            )
        )
    with _client(path) as c:
        text = c.get(
            f"/suites/{SUITE}/runs/{run_id}/queries/%3Cscript%3Ealert(1)%3C/script%3E"
        ).text
    assert evil not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text


def test_the_suite_page_shows_one_page_of_runs(tmp_path: Path) -> None:
    """With more runs than a page holds, page 1 shows a page of them and links to page 2."""
    path = tmp_path / "many.db"
    start = datetime(2024, 5, 1, tzinfo=timezone.utc)
    with open_store(path) as store:
        for i in range(RUNS_PER_PAGE + 3):
            moment = start + timedelta(hours=i)
            store.save_run(
                RunRecord(
                    suite=SUITE,
                    pipeline="p",
                    started_at=moment,
                    finished_at=moment,
                    means={"recall@5": i / 100},
                )
            )
    with _client(path) as c:
        first, second = c.get("/suites/larkfield").text, c.get("/suites/larkfield?page=2").text
    assert (RUNS_PER_PAGE, 3) == (
        first.count('class="status-ok"'),
        second.count('class="status-ok"'),
    )
    assert 'rel="next" href="?page=2"' in first


def test_a_bad_page_number_is_refused(client: TestClient) -> None:
    """page=x is a 404 saying an integer was expected."""
    response = client.get("/suites/larkfield?page=x")
    assert (404, True) == (response.status_code, "page: expected an integer" in response.text)


def test_the_simulator_endpoint_scores_a_ranking(client: TestClient) -> None:
    """A same-origin POST with the CSRF token gets the engine's figures."""
    body = {"docs": [{"id": "a", "grade": 0}, {"id": "b", "grade": 1}], "k": 10}
    headers = {**SAME_ORIGIN, "X-CSRF-Token": _csrf(client)}
    response = client.post("/api/simulate", json=body, headers=headers)
    assert (200, 0.5) == (response.status_code, response.json()["metrics"]["mrr@10"])


def test_a_bad_simulation_is_a_400_naming_the_key(client: TestClient) -> None:
    """A malformed body is answered 400 with the error, not a traceback."""
    headers = {**SAME_ORIGIN, "X-CSRF-Token": _csrf(client)}
    response = client.post("/api/simulate", json={"k": -1}, headers=headers)
    assert (400, True) == (response.status_code, response.json()["error"].startswith("k:"))


@pytest.mark.parametrize(
    ("headers", "why"),
    [
        ({"Origin": "http://evil.example"}, "is not this server"),
        ({"Sec-Fetch-Site": "cross-site"}, "Sec-Fetch-Site is 'cross-site'"),
        ({}, "names no Origin"),
        (SAME_ORIGIN, "CSRF token"),
    ],
)
def test_writes_from_elsewhere_are_refused(
    client: TestClient, headers: dict[str, str], why: str
) -> None:
    """A POST from another origin, or without the server's CSRF token, is a 403."""
    response = client.post("/api/simulate", json={"docs": []}, headers=headers)
    assert (403, True) == (response.status_code, why in response.text)


def test_a_token_is_required_when_set(store_path: Path) -> None:
    """With a token, a request without it is a 401; with it as a bearer, 200."""
    with _client(store_path, auth_token="s3cret") as c:
        refused = c.get("/").status_code
        allowed = c.get("/", headers={"Authorization": "Bearer s3cret"}).status_code
    assert (401, 200) == (refused, allowed)


def test_login_sets_the_token_cookie(store_path: Path) -> None:
    """Posting the token at /login lets the browser in with a cookie."""
    with _client(store_path, auth_token="s3cret") as c:
        login = c.post(
            "/login", data={"token": "s3cret"}, headers=SAME_ORIGIN, follow_redirects=False
        )
        after = c.get("/").status_code
    assert (303, 200) == (login.status_code, after)


def _label(client: TestClient, **body: Any) -> Any:
    headers = {**SAME_ORIGIN, "X-CSRF-Token": _csrf(client)}
    payload = {"suite": SUITE, "query_id": "Q34", "doc_id": "ce196c57771f", "grade": 2, **body}
    return client.post("/api/labels", json=payload, headers=headers)


def test_labeling_is_off_unless_allowed(client: TestClient) -> None:
    """Without --allow-labeling the endpoint refuses and the page has no grade buttons."""
    assert 403 == _label(client).status_code
    assert 'class="grade"' not in client.get("/suites/larkfield/runs/2/queries/Q34").text


def test_labeling_without_judgment_layers_says_so(
    store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Allowed but with no judgment layers installed, labeling answers 501 and says why."""
    monkeypatch.setattr("monitor.web.app.default_sink", lambda frozen_of: None)
    with _client(store_path, allow_labeling=True) as c:
        response = _label(c)
    assert (501, True) == (response.status_code, "judgment layers" in response.json()["error"])


def test_a_label_reaches_the_sink_with_who_gave_it(store_path: Path) -> None:
    """A grade button's POST hands the sink the query, document, grade and labeler."""
    seen: list[Label] = []

    def sink(store: Store, label: Label) -> None:
        seen.append(label)

    with _client(store_path, allow_labeling=True, label_sink=sink) as c:
        assert 'class="grade"' in c.get("/suites/larkfield/runs/2/queries/Q34").text
        response = _label(c, who="ana")
    assert 200 == response.status_code
    assert [("Q34", "ce196c57771f", 2, "ana")] == [
        (label.query_id, label.doc_id, label.grade, label.who) for label in seen
    ]


def test_a_bad_grade_is_refused(store_path: Path) -> None:
    """A grade outside 0-3 is a 400 naming the grade."""
    with _client(store_path, allow_labeling=True, label_sink=lambda store, label: None) as c:
        response = _label(c, grade=7)
    assert (400, True) == (response.status_code, response.json()["error"].startswith("grade:"))


def _serve_args(**values: Any) -> argparse.Namespace:
    defaults = {
        "address": "127.0.0.1",
        "port": 8321,
        "allow_host": [],
        "auth_token_env": None,
        "allow_labeling": False,
        "store": None,
        "config": None,
    }
    return argparse.Namespace(**{**defaults, **values})


def test_serve_refuses_a_public_address_without_a_token() -> None:
    """Binding 0.0.0.0 needs --auth-token-env."""
    from monitor.cli.serve import web_settings

    with pytest.raises(UsageError, match="--auth-token-env"):
        web_settings(_serve_args(address="0.0.0.0"), default_config())


def test_serve_reads_the_token_from_the_named_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """--auth-token-env VAR takes the token from VAR; an unset VAR is refused."""
    from monitor.cli.serve import web_settings

    monkeypatch.setenv("MONITOR_UI_TOKEN", "t0k")
    settings = web_settings(
        _serve_args(address="0.0.0.0", auth_token_env="MONITOR_UI_TOKEN"), default_config()
    )
    assert "t0k" == settings.auth_token
    with pytest.raises(UsageError, match="MONITOR_UNSET_TOKEN"):
        web_settings(_serve_args(auth_token_env="MONITOR_UNSET_TOKEN"), default_config())


def _fresh_store(tmp_path: Path) -> Path:
    path = tmp_path / "labels.db"
    with open_store(path) as store:
        run_suite(default_config().suite(SUITE), store, progress=False)
    return path


def test_a_label_becomes_a_human_layer_with_its_provenance(tmp_path: Path) -> None:
    """The default sink stores the grade as a layer of the suite, by the labeler, from the web."""
    path = _fresh_store(tmp_path)
    with _client(path, allow_labeling=True) as c:
        response = _label(c, who="ana")
        page = c.get("/suites/larkfield/runs/2/queries/Q34").text
    with open_store(path) as store:
        layers = store.layers(SUITE)
    assert 200 == response.status_code
    assert [("web", "ana", "human", {"Q34": {"ce196c57771f": 2}})] == [
        (x.source, x.who, x.kind, {q: dict(g) for q, g in x.grades.items()}) for x in layers
    ]
    assert 'data-doc="ce196c57771f"' not in page


@pytest.mark.slow
def test_a_grade_against_one_in_force_is_a_conflict(tmp_path: Path) -> None:
    """Grading a document already graded otherwise is refused with 409, saying in words
    which grade is in force and that this one was not recorded (no command-line flag)."""
    path = _fresh_store(tmp_path)
    with _client(path, allow_labeling=True) as c:
        first = _label(c, grade=2)
        second = _label(c, grade=0)
    assert (200, 409) == (first.status_code, second.status_code)
    assert (
        "ce196c57771f already has grade 2 for this query, so your grade 0 was not recorded; "
        "reload the page to see the grades in force"
    ) == second.json()["error"]


def test_the_run_page_lists_the_failed_queries_without_a_record_of_every_query(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The failed queries are found in the run's columns: a record is built for those alone
    (a run of a million queries is not turned into a million records to list three)."""
    from dataclasses import replace

    from monitor.store.records import ColumnQueries

    path = tmp_path / "failed.db"
    with open_store(path) as store:
        run_suite(default_config().suite(SUITE), store, progress=False)
        answered = store.get_run(2)
        assert answered is not None
        failing = {"Q03": "Timeout", "Q40": "HTTPError"}
        queries = [
            QueryRecord(q.query_id, error_type=failing[q.query_id], error_message="no answer")
            if q.query_id in failing
            else q
            for q in answered.queries
        ]
        run_id = store.save_run(replace(answered, run_id=None, queries=tuple(queries)))

    def every_record(self: ColumnQueries) -> tuple[QueryRecord, ...]:
        raise AssertionError("a record of every query was built")

    monkeypatch.setattr(ColumnQueries, "records", every_record)
    with _client(path) as c:
        page = c.get(f"/suites/{SUITE}/runs/{run_id}")
    assert page.status_code == 200, page.text[-500:]
    failed = page.text.split("<h2>Failed queries (2)</h2>", 1)[1].split("</section>", 1)[0]
    rows = [row.split("</tr>")[0] for row in failed.split("<tr>")[2:]]
    assert ["Q03", "Q40"] == [row.split("/queries/")[1].split('"')[0] for row in rows]
    assert ("Timeout" in rows[0], "HTTPError" in rows[1]) == (True, True)
