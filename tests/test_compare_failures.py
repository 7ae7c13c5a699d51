"""Failed queries are not quality: quality rules compare the queries answered in both runs."""

from __future__ import annotations

import json
import math
import textwrap
import threading
from collections.abc import Iterator, Mapping
from dataclasses import replace
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from monitor.alerts.model import RegressionDetails
from monitor.alerts.testing import RecordingReceiver, breach
from monitor.alerts.text import regression_description
from monitor.compare import compare_runs
from monitor.compare.diff import worse_queries
from monitor.compare.rules import aligned, left_out
from monitor.config import load_config
from monitor.config.model import Check, RuleConfig, SignificanceConfig
from monitor.job import run_suite
from monitor.metrics.spec import parse_metric
from monitor.store import open_store
from monitor.store.records import QueryRecord, RunRecord

AT = datetime(2030, 1, 1, tzinfo=timezone.utc)
HTTP_500 = "HTTPStatusError 500"


def record(
    values: Mapping[str, float], failed: frozenset[str] = frozenset(), *, kept: bool = True
) -> RunRecord:
    """Return a stored run whose queries score ``values`` on mrr@10; ``failed`` ones carry an
    error and rank nothing, and keep their value only when ``kept`` (as an older store did)."""
    queries = tuple(
        QueryRecord(
            query_id=qid,
            values={"mrr@10": value} if kept or qid not in failed else {},
            retrieved_ids=() if qid in failed else (f"d-{qid}",),
            relevant_ids=(f"d-{qid}",),
            error_type=HTTP_500 if qid in failed else None,
            error_message="server error" if qid in failed else None,
        )
        for qid, value in values.items()
    )
    scored = [v for qid, v in values.items() if kept or qid not in failed]
    return RunRecord(
        suite="s",
        pipeline="s",
        started_at=AT,
        finished_at=AT,
        evalset_fingerprint="f",
        means={"mrr@10": sum(scored) / len(scored) if scored else math.nan},
        queries=queries,
    )


def perfect(n: int) -> dict[str, float]:
    """Return ``n`` query ids, each with a perfect value."""
    return {f"q{i}": 1.0 for i in range(n)}


def with_failures(n: int, failed: frozenset[str], *, kept: bool = True) -> RunRecord:
    """Return a perfect run of ``n`` queries except ``failed``, which scored 0."""
    values = {qid: 0.0 if qid in failed else 1.0 for qid in perfect(n)}
    return record(values, failed, kept=kept)


FAILED = frozenset({"q2", "q5", "q7"})
RULE = RuleConfig(Check.MAX_DROP, 0.02, parse_metric("mrr@10"))


@pytest.mark.parametrize("side", ["current", "baseline"])
def test_aligned_leaves_out_a_query_that_failed_in_either_run(side: str) -> None:
    """A pair with a failure on either side is not compared, even if a value was stored."""
    broken, whole = with_failures(10, FAILED), record(perfect(10))
    baseline, current = (broken, whole) if side == "baseline" else (whole, broken)
    ids, before, after = aligned(baseline, current, "mrr@10")
    assert sorted(set(perfect(10)) - FAILED) == sorted(ids)
    assert [1.0] * 7 == before.tolist() == after.tolist()


def test_left_out_counts_the_pairs_with_a_failure() -> None:
    """Pairs failed on either side are counted once each; without a baseline, the run's own."""
    baseline = with_failures(10, frozenset({"q3", "q5"}))  # q5 fails in both
    current = with_failures(10, FAILED)
    assert (4, 3) == (left_out(current, baseline), left_out(current))


def test_a_drop_rule_ignores_failed_queries_and_says_how_many_it_left_out() -> None:
    """Failed queries in the current run do not breach a drop rule; the message counts them."""
    comparison = compare_runs(
        with_failures(100, FAILED),
        record(perfect(100)),
        [RULE],
        significance=SignificanceConfig(iterations=1000),
    )
    (outcome,) = comparison.rules
    assert ("ok", 3, 1.0) == (outcome.status, outcome.left_out, outcome.current)
    assert "3 failed queries left out" in outcome.message


def test_a_min_rule_without_baseline_counts_the_failed_queries() -> None:
    """A floor rule reads the answered queries only and counts the failed ones."""
    rule = RuleConfig(Check.MIN, 0.9, parse_metric("mrr@10"))
    (outcome,) = compare_runs(with_failures(100, FAILED, kept=False), None, [rule]).rules
    assert ("ok", 3, 1.0) == (outcome.status, outcome.left_out, outcome.current)


def test_a_run_where_every_query_failed_is_not_measured_on_quality() -> None:
    """With no answered query, a quality rule is skipped and says that every query failed."""
    current = with_failures(10, frozenset(perfect(10)), kept=False)
    (outcome,) = compare_runs(current, record(perfect(10)), [RULE]).rules
    assert ("skipped", 10) == (outcome.status, outcome.left_out)
    assert "the search failed for all 10 judged queries" in outcome.message


def test_worse_queries_never_lists_a_failed_query() -> None:
    """A query that failed is not a lost hit, whatever value an older store kept for it; an
    answered query that lost its hit still is one."""
    current = with_failures(10, FAILED)
    lost = QueryRecord("q9", {"mrr@10": 0.0}, ("other",), ("d-q9",))
    current = replace(current, queries=(*current.queries[:9], lost))
    diffs = worse_queries(record(perfect(10)), current, "mrr@10")
    assert [("q9", "lost_hit")] == [(d.query_id, d.change) for d in diffs]


def test_the_regression_text_says_how_many_failed_queries_were_left_out() -> None:
    """An alert's description counts the failed queries left out of the comparison."""
    outcome = replace(breach("mrr@10", 0.70, 0.81), left_out=18)
    text = regression_description(RegressionDetails(outcome))
    assert "Left out: 18 queries the search failed for" in text


# -- 200 queries against a search service on 127.0.0.1 ---------------------------------------

N = 200
FAILING = frozenset(f"text {i}" for i in range(0, N, 33))  # 7 of 200: 3.5%


class Service(ThreadingHTTPServer):
    """A search service that answers every query perfectly, except ``failing`` ones (500)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.failing: frozenset[str] = frozenset()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/search"


class Handler(BaseHTTPRequestHandler):
    """Answer ``text N`` with the document ``dN``, or 500 when the query is failing."""

    protocol_version = "HTTP/1.1"
    server: Service

    def log_message(self, format: str, *args: Any) -> None:
        """Keep the test output quiet."""

    def do_GET(self) -> None:
        query = parse_qs(urlsplit(self.path).query)["q"][0]
        if query in self.server.failing:
            status, document = 500, {"error": "internal"}
        else:
            status, document = 200, {"hits": [{"id": "d" + query.split()[1], "score": 1.0}]}
        body = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def service() -> Iterator[Service]:
    running = Service()
    thread = threading.Thread(target=running.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    yield running
    running.shutdown()
    running.server_close()


@pytest.fixture
def receiver() -> Iterator[RecordingReceiver]:
    with RecordingReceiver() as running:
        yield running


SUITE = """
store: {{path: {store}}}
suites:
  nightly:
    evalset: {{path: {evalset}}}
    search: {{kind: http, url: "{url}", params: {{q: "{{query}}"}}, ids: "hits[*].id"}}
    runner: {{concurrency: 8, retries: 0, error_budget: 0.05}}
    metrics: [mrr@10, recall@5]
    rules:
      - {{metric: mrr@10, max_drop: 0.02}}
      - {{metric: recall@5, max_relative_drop: 0.02}}
      - {{metric: mrr@10, min: 0.99}}
      - error_rate_max: 0.01
    significance: {{iterations: 2000}}
    notifiers: [{{kind: webhook, url: "{hook}/hook"}}]
"""


@pytest.mark.slow
def test_http_500s_within_the_budget_breach_the_error_rate_and_no_quality_rule(
    tmp_path: Path, service: Service, receiver: RecordingReceiver
) -> None:
    """A perfect baseline, then 3% HTTP 500s: error_rate_max fires, no quality rule does,
    and no alert calls a failed query a miss."""
    evalset = tmp_path / "evalset.jsonl"
    evalset.write_text(
        "".join(
            json.dumps({"id": f"Q{i}", "query": f"text {i}", "relevant": [f"d{i}"]}) + "\n"
            for i in range(N)
        )
    )
    config = tmp_path / "monitor.yaml"
    config.write_text(
        textwrap.dedent(SUITE).format(
            store=tmp_path / "m.db", evalset=evalset, url=service.url, hook=receiver.url
        )
    )
    suite = load_config(config).suite("nightly")
    with open_store(str(tmp_path / "m.db")) as store:
        first = run_suite(suite, store, progress=False)
        assert first.run.run_id is not None
        store.set_baseline("nightly", first.run.run_id)
        service.failing = FAILING
        second = run_suite(suite, store, progress=False)
    comparison = second.comparison
    assert ["error_rate_max"] == [rule.rule for rule in comparison.breaches]
    assert {len(FAILING)} == {r.left_out for r in comparison.rules if r.quality}
    assert () == comparison.worse_queries
    assert {"mrr@10": 1.0, "recall@5": 1.0, "judged@10": 1.0} == dict(second.run.means)
    texts = [request.body.decode() for request in receiver.accepted]
    assert texts
    assert [] == [text for text in texts if "retrieved none" in text]
