"""The runner: order, hits, failures, concurrency, timeouts, deadline, budget, retries."""

from __future__ import annotations

import asyncio
import io
import logging
import threading
import time
from collections.abc import Iterator

import httpx
import numpy as np
import pytest

from monitor import evaluate
from monitor.errors import ErrorBudgetExceeded, SearchCallError, UsageError
from monitor.records import Hit, Query
from monitor.runner import LatencySummary, is_retryable, run_pipelines, run_queries
from monitor.runner.progress import LogProgress, TerminalBar
from monitor.search import takes_query
from monitor.testing import AsyncFakeSearch, FakeSearch, sample_queries

BUSY = SearchCallError("HTTPStatusError 503", "busy", retryable=True)


@pytest.fixture
def queries() -> list[Query]:
    """Return ten sample queries q0..q9, each judging d<i> relevant."""
    return sample_queries(10)


@pytest.fixture
def hanging() -> Iterator[list[FakeSearch]]:
    """Collect fakes whose hung calls must be released when the test ends."""
    fakes: list[FakeSearch] = []
    yield fakes
    for fake in fakes:
        fake.release()


def run(queries: list[Query], search: object, **settings: object) -> object:
    """Run without a progress display."""
    return run_queries(queries, search, progress=False, **settings)  # type: ignore[arg-type]


# -- what a query's outcome holds -------------------------------------------------------------


def test_outcomes_follow_query_order_under_concurrency(queries: list[Query]) -> None:
    """Outcomes come back in the order of the queries, however the calls interleave."""
    latency = {q.id: 0.001 * (len(queries) - i) for i, q in enumerate(queries)}
    result = run_queries(queries, FakeSearch(latency=latency), concurrency=4, progress=False)
    assert [q.id for q in queries] == [o.query_id for o in result.outcomes]


def test_repeated_ids_count_once_at_their_best_position(queries: list[Query]) -> None:
    """A repeated id is kept at its first position and the dropped copies are counted."""
    search = FakeSearch({"q0": ["a", "b", "a", "c", "b", "a"]})
    outcome = run_queries(queries[:1], search, progress=False).outcomes[0]
    assert (("a", "b", "c"), 3) == (outcome.retrieved_ids, outcome.duplicates)


def test_rankings_are_cut_to_k(queries: list[Query]) -> None:
    """A search that answers more than k hits is cut to k, after dropping repeats."""
    search = FakeSearch({"q0": ["a", "a", "b", "c", "d"]})
    outcome = run_queries(queries[:1], search, k=3, progress=False).outcomes[0]
    assert ("a", "b", "c") == outcome.retrieved_ids


def test_scores_and_texts_are_kept(queries: list[Query]) -> None:
    """Scores and texts given by the search reach the outcome."""
    search = FakeSearch({"q0": [{"id": "a", "score": 2.5, "text": "body"}, "b"]})
    outcome = run_queries(queries[:1], search, progress=False).outcomes[0]
    assert ((2.5, None), ("body", None)) == (outcome.scores, outcome.contents)


@pytest.mark.parametrize(
    "answer",
    [None, "d1", {"id": "d1"}, [None], [1, 2], [{"score": 1}], [{"id": 3}], 7],
    ids=["none", "string", "dict", "none-item", "int-ids", "no-id", "int-id", "number"],
)
def test_bad_search_output_fails_the_query_not_the_run(
    queries: list[Query], answer: object
) -> None:
    """Every bad output shape becomes a SearchOutputError on its query; the rest run on."""
    result = run_queries(queries[:3], FakeSearch({"q1": answer}, default=["x"]), progress=False)
    first, bad, last = result.outcomes
    assert ("SearchOutputError", None, None) == (bad.error_type, first.error_type, last.error_type)
    assert bad.error_message


def test_an_exception_is_recorded_with_its_type_and_message(queries: list[Query]) -> None:
    """A plug-in exception is recorded as its class name and message."""
    search = FakeSearch(failures={"q0": KeyError("index gone")})
    outcome = run_queries(queries[:1], search, progress=False).outcomes[0]
    assert ("KeyError", "'index gone'", ()) == (
        outcome.error_type,
        outcome.error_message,
        outcome.hits,
    )


def test_failed_query_counts_as_a_miss(queries: list[Query]) -> None:
    """A failed query is in the run with no hits, so the metrics score it 0, not skip it."""
    search = FakeSearch({q.id: [f"d{i}"] for i, q in enumerate(queries[:2])})
    search.rankings["q1"] = None
    result = run_queries(queries[:2], search, progress=False)
    qrels = {q.id: dict(q.judgments) for q in queries[:2]}
    assert {"q0": ["d0"], "q1": []} == result.as_run()
    assert {"recall@10": 0.5} == evaluate(qrels, result, metrics=["recall@10"]).means


def test_empty_answer_is_flagged_empty_not_failed(queries: list[Query]) -> None:
    """An answer with no hits is empty, and counts in the zero-result rate."""
    result = run_queries(
        queries[:4], FakeSearch({"q0": [], "q1": None}, default=["a"]), progress=False
    )
    assert (1, 1, 1 / 3) == (result.empty, result.failed, result.zero_result_rate)


def test_query_aware_search_gets_the_query_and_plain_search_the_text(
    queries: list[Query],
) -> None:
    """A search declared with takes_query gets the Query; a plain one gets its text."""
    seen: list[object] = []

    @takes_query
    def aware(query: Query, k: int) -> list[str]:
        seen.append(query)
        return []

    def plain(query: str, k: int) -> list[str]:
        seen.append(query)
        return []

    run_queries(queries[:1], aware, progress=False)
    run_queries(queries[:1], plain, progress=False)
    assert [queries[0], "sample query 0"] == seen


def test_k_is_passed_to_the_search(queries: list[Query]) -> None:
    """The search is asked for k hits."""
    seen: list[int] = []

    def search(query: str, k: int) -> list[str]:
        seen.append(k)
        return []

    run_queries(queries[:1], search, k=7, progress=False)
    assert [7] == seen


# -- concurrency, timeouts, deadline ----------------------------------------------------------


def test_concurrency_runs_calls_in_parallel(queries: list[Query]) -> None:
    """With concurrency 4, four calls are in progress at once."""
    search = FakeSearch(latency=0.05)
    result = run_queries(queries[:8], search, concurrency=4, progress=False)
    assert (4, 0) == (search.peak_concurrency, result.failed)
    assert result.duration_seconds < 8 * 0.05


@pytest.mark.parametrize("concurrency", [1, 3])
def test_hung_call_is_abandoned_as_a_timeout(
    queries: list[Query], hanging: list[FakeSearch], concurrency: int
) -> None:
    """A call that outlives the timeout is recorded as 'timeout' and the run goes on."""
    search = FakeSearch(hang={"q2"}, default=["a"])
    hanging.append(search)
    start = time.perf_counter()
    result = run_queries(queries, search, concurrency=concurrency, timeout=0.1, progress=False)
    assert {"timeout": 1} == result.error_counts
    assert "timeout" == result.outcomes[2].error_type
    assert 0.1 <= result.outcomes[2].latency_seconds < 0.5  # type: ignore[operator]
    assert time.perf_counter() - start < 1.0


def test_several_hung_calls_do_not_starve_the_pool(
    queries: list[Query], hanging: list[FakeSearch]
) -> None:
    """Each abandoned worker is replaced, so hangs on every worker still let the run finish."""
    search = FakeSearch(hang={"q0", "q1", "q2", "q3"}, default=["a"])
    hanging.append(search)
    result = run_queries(queries, search, concurrency=2, timeout=0.05, progress=False)
    assert (4, 6) == (result.failed, result.answered)


def test_queries_not_started_by_the_deadline_are_deadline_errors(queries: list[Query]) -> None:
    """Past the deadline no query starts; the rest are recorded as 'deadline' errors."""
    result = run_queries(queries, FakeSearch(latency=0.03), deadline=0.07, progress=False)
    kinds = [o.error_type for o in result.outcomes]
    ran = kinds.count(None)
    assert 1 <= ran <= 4
    assert [None] * ran + ["deadline"] * (10 - ran) == kinds
    assert None is result.outcomes[-1].latency_seconds


def test_deadline_applies_on_threads_too(queries: list[Query]) -> None:
    """With concurrency the deadline also stops new queries."""
    result = run_queries(
        queries, FakeSearch(latency=0.03), concurrency=2, deadline=0.05, progress=False
    )
    assert 4 <= result.error_counts["deadline"] <= 8


# -- error budget --------------------------------------------------------------------------


def test_error_budget_exceeded_raises_an_infrastructure_error(queries: list[Query]) -> None:
    """Above the budget the run raises ErrorBudgetExceeded with the error counts."""
    search = FakeSearch(failures={"q0": BUSY, "q1": BUSY, "q2": BUSY})
    with pytest.raises(ErrorBudgetExceeded) as caught:
        run_queries(queries, search, error_budget=0.2, progress=False)
    assert (3, 10, {"HTTPStatusError 503": 3}) == (
        caught.value.failed,
        caught.value.total,
        caught.value.errors,
    )


def test_error_budget_stops_the_run_early(queries: list[Query]) -> None:
    """Once the budget is certainly exceeded no further query is sent."""
    search = FakeSearch(failures={q.id: BUSY for q in queries})
    with pytest.raises(ErrorBudgetExceeded):
        run_queries(queries, search, error_budget=0.1, progress=False)
    assert ["q0", "q1"] == search.calls


def test_failures_within_the_budget_are_a_result(queries: list[Query]) -> None:
    """Exactly the budgeted share of failures still gives a result."""
    search = FakeSearch(failures={"q0": BUSY, "q1": BUSY})
    result = run_queries(queries, search, error_budget=0.2, progress=False)
    assert 0.2 == result.error_rate


def test_timeouts_count_against_the_budget(queries: list[Query], hanging: list[FakeSearch]) -> None:
    """A hung backend trips the budget instead of scoring as bad quality."""
    search = FakeSearch(hang={q.id for q in queries})
    hanging.append(search)
    with pytest.raises(ErrorBudgetExceeded, match="timeout x"):
        run_queries(queries, search, concurrency=2, timeout=0.02, error_budget=0.3, progress=False)


# -- retries -------------------------------------------------------------------------------


def test_retryable_error_is_retried(queries: list[Query]) -> None:
    """A retryable error is tried again and the second answer counts."""
    search = FakeSearch({"q0": ["a"]}, failures={"q0": [BUSY, None]})
    result = run_queries(queries[:1], search, retries=2, backoff=0, progress=False)
    assert (("a",), 1, 2) == (result.outcomes[0].retrieved_ids, result.retries, len(search.calls))


def test_retries_are_bounded(queries: list[Query]) -> None:
    """After the last retry the error is recorded."""
    search = FakeSearch(failures={"q0": BUSY})
    result = run_queries(queries[:1], search, retries=2, backoff=0, progress=False)
    assert ("HTTPStatusError 503", 3) == (result.outcomes[0].error_type, len(search.calls))


def test_non_retryable_error_is_not_retried(queries: list[Query]) -> None:
    """An error that is not transient is recorded at once."""
    search = FakeSearch(failures={"q0": ValueError("bad query")})
    run_queries(queries[:1], search, retries=3, backoff=0, progress=False)
    assert ["q0"] == search.calls


def test_backoff_doubles_between_attempts(queries: list[Query]) -> None:
    """Retries wait backoff, then twice backoff."""
    search = FakeSearch(failures={"q0": [BUSY, BUSY, None]})
    start = time.perf_counter()
    run_queries(queries[:1], search, retries=2, backoff=0.02, progress=False)
    assert time.perf_counter() - start >= 0.06


def test_custom_retry_policy(queries: list[Query]) -> None:
    """retry_on decides which errors are retried."""
    search = FakeSearch(failures={"q0": [ValueError("flaky"), None]})
    result = run_queries(
        queries[:1], search, retries=1, backoff=0, retry_on=lambda e: True, progress=False
    )
    assert 1 == result.retries


def _status_error(status: int) -> httpx.HTTPStatusError:
    request = httpx.Request("GET", "http://search.test")
    return httpx.HTTPStatusError("x", request=request, response=httpx.Response(status))


@pytest.mark.parametrize(
    ("error", "retryable"),
    [
        (SearchCallError("x", "y", retryable=True), True),
        (SearchCallError("x", "y"), False),
        (ConnectionResetError(), True),
        (TimeoutError(), True),
        (ValueError(), False),
        (httpx.ConnectError("refused"), True),
        (_status_error(503), True),
        (_status_error(429), True),
        (_status_error(404), False),
    ],
    ids=[
        "flag-true", "flag-false", "connection", "timeout", "value", "httpx-connect",
        "httpx-503", "httpx-429", "httpx-404",
    ],
)  # fmt: skip
def test_is_retryable(error: BaseException, retryable: bool) -> None:
    """Transient errors are retryable; others are not."""
    assert retryable == is_retryable(error)


def test_httpx_status_errors_record_their_status(queries: list[Query]) -> None:
    """An httpx status error raised by user code is recorded with its status."""
    search = FakeSearch(failures={"q0": _status_error(502)})
    assert (
        "HTTPStatusError 502"
        == run_queries(queries[:1], search, progress=False).outcomes[0].error_type
    )


# -- warm-up, async, stats ------------------------------------------------------------------


def test_warmup_queries_are_sent_first_and_discarded(queries: list[Query]) -> None:
    """Warm-up sends the first queries once before the run; their failures do not count."""
    search = FakeSearch(failures={"q0": [BUSY, None]}, default=["a"])
    result = run_queries(queries[:3], search, warmup=2, progress=False)
    assert ["q0", "q1", "q0", "q1", "q2"] == search.calls
    assert (3, 0, 2) == (result.total, result.failed, result.warmup)


def test_async_search_runs_concurrently(queries: list[Query]) -> None:
    """An async search runs on an event loop, concurrency calls at a time."""
    search = AsyncFakeSearch({"q0": ["a"]}, latency=0.02)
    result = run_queries(queries[:8], search, concurrency=4, progress=False)
    assert (("a",), 4, 0) == (
        result.outcomes[0].retrieved_ids,
        search.peak_concurrency,
        result.failed,
    )


def test_async_hung_call_times_out(queries: list[Query], hanging: list[FakeSearch]) -> None:
    """A hung coroutine is cancelled at the timeout and recorded as 'timeout'."""
    search = AsyncFakeSearch(hang={"q1"}, default=["a"])
    hanging.append(search)
    result = run_queries(queries[:3], search, concurrency=2, timeout=0.05, progress=False)
    assert [None, "timeout", None] == [o.error_type for o in result.outcomes]


def test_async_retries_and_budget(queries: list[Query]) -> None:
    """Async searches retry transient errors and honour the error budget."""
    search = AsyncFakeSearch(failures={"q0": [BUSY, None], "q1": BUSY, "q2": BUSY})
    with pytest.raises(ErrorBudgetExceeded):
        run_queries(queries, search, retries=1, backoff=0, error_budget=0.1, progress=False)
    assert 2 == search.calls_for("q0")


def test_async_search_from_inside_a_running_loop(queries: list[Query]) -> None:
    """run_queries called from async code runs the async search on a loop of its own."""

    async def caller() -> int:
        result = run_queries(queries[:2], AsyncFakeSearch(default=["a"]), progress=False)
        return result.answered

    assert 2 == asyncio.run(caller())


def test_search_stats_are_recorded(queries: list[Query]) -> None:
    """What the plug-in's stats() reports is kept with the run."""
    search = FakeSearch(stats={"index_size": 1200, "model_version": "e5-small"})
    result = run_queries(queries[:1], search, progress=False)
    assert {"index_size": 1200, "model_version": "e5-small"} == dict(result.search_stats)


def test_failing_stats_do_not_fail_the_run(queries: list[Query]) -> None:
    """A stats() that raises is recorded as stats_error."""

    class Search(FakeSearch):
        def stats(self) -> dict[str, object]:  # type: ignore[override]
            raise RuntimeError("no admin api")

    result = run_queries(queries[:1], Search(), progress=False)
    assert {"stats_error": "RuntimeError: no admin api"} == dict(result.search_stats)


# -- the run's figures -----------------------------------------------------------------------


def test_run_figures(queries: list[Query]) -> None:
    """Rates, top-1 score and counts are computed over the outcomes."""
    search = FakeSearch(
        {"q0": [{"id": "a", "score": 1.0}], "q1": [{"id": "a", "score": 3.0}], "q2": []},
        failures={"q3": ValueError("x")},
        default=["z"],
    )
    result = run_queries(queries[:5], search, progress=False)
    assert (5, 1, 4, 1, 0.2, 0.25, 2.0) == (
        result.total,
        result.failed,
        result.answered,
        result.empty,
        result.error_rate,
        result.zero_result_rate,
        result.mean_top1_score,
    )
    assert result.started_at <= result.finished_at
    assert 4 == result.latency.count
    assert (result.queries_per_second or 0) > 0


def test_mean_top1_score_is_none_without_scores(queries: list[Query]) -> None:
    """Without scores there is no mean top-1 score."""
    assert (
        None is run_queries(queries[:2], FakeSearch(default=["a"]), progress=False).mean_top1_score
    )


def test_latency_percentiles_interpolate_like_numpy() -> None:
    """Percentiles match numpy's linear interpolation."""
    values = [0.5, 0.1, 0.3, 0.9, 0.2, 0.7, 0.05]
    summary = LatencySummary.of(values)
    expected = np.percentile(values, [50, 95, 99]).tolist()
    assert expected == pytest.approx([summary.p50, summary.p95, summary.p99])
    assert 0.9 == summary.max
    assert pytest.approx(np.mean(values)) == summary.mean


def test_latency_summary_of_nothing_is_empty() -> None:
    """With no answered query the latency figures are None."""
    assert LatencySummary() == LatencySummary.of([])


def test_empty_query_set_gives_an_empty_result() -> None:
    """No queries, no outcomes, no error."""
    result = run_queries([], FakeSearch(), progress=False)
    assert (0, 0.0, None) == (result.total, result.error_rate, result.queries_per_second)


# -- arguments -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "settings",
    [
        {"k": 0}, {"concurrency": 0}, {"timeout": 0}, {"timeout": -1.0}, {"retries": -1},
        {"deadline": 0}, {"error_budget": 1.5}, {"warmup": -1}, {"backoff": -0.1},
        {"k": True}, {"concurrency": 2.5},
    ],
)  # fmt: skip
def test_invalid_arguments_raise_usage_errors(
    queries: list[Query], settings: dict[str, object]
) -> None:
    """Out-of-range settings raise UsageError naming the setting."""
    with pytest.raises(UsageError, match=next(iter(settings))):
        run_queries(queries, FakeSearch(), progress=False, **settings)  # type: ignore[arg-type]


def test_repeated_query_ids_are_refused() -> None:
    """Two queries with one id cannot both be in a run."""
    with pytest.raises(UsageError, match="'q0' appears more than once"):
        run_queries([Query("q0", "a"), Query("q0", "b")], FakeSearch(), progress=False)


def test_non_queries_are_refused() -> None:
    """Only Query records can be run."""
    with pytest.raises(UsageError, match="expected Query records"):
        run_queries(["q0"], FakeSearch(), progress=False)  # type: ignore[list-item]


# -- several pipelines, progress -------------------------------------------------------------


def test_run_pipelines_runs_each_search_on_the_same_queries(queries: list[Query]) -> None:
    """Each named search gets the same queries and its result carries the name."""
    results = run_pipelines(
        iter(queries[:3]),
        {"a": FakeSearch(default=["x"]), "b": FakeSearch(default=["y"])},
        k=5,
        progress=False,
    )
    assert {"a": ("x",), "b": ("y",)} == {
        n: r.outcomes[2].retrieved_ids for n, r in results.items()
    }
    assert ["a", "b"] == [r.label for r in results.values()]


def test_terminal_bar_draws_progress() -> None:
    """The bar shows done/total and failures, and ends its line."""
    stream = io.StringIO()
    bar = TerminalBar(4, "nightly", stream=stream, delay=0)
    bar.update(2, 1)
    bar.close()
    assert "nightly [###############...............] 2/4 failed=1" in stream.getvalue()
    assert stream.getvalue().endswith("\n")


def test_terminal_bar_stays_hidden_for_short_runs() -> None:
    """A run shorter than the delay draws nothing."""
    stream = io.StringIO()
    bar = TerminalBar(4, stream=stream, delay=60)
    bar.update(4, 0)
    bar.close()
    assert "" == stream.getvalue()


def test_log_progress_logs_a_progress_event(caplog: pytest.LogCaptureFixture) -> None:
    """Off a terminal, progress is logged as queries_progress events with the counts."""
    progress = LogProgress(10, "nightly", interval=0.0)
    with caplog.at_level(logging.INFO, logger="monitor.runner"):
        progress.update(5, 1)
    assert [
        {"event": "queries_progress", "label": "nightly", "done": 5, "total": 10, "failed": 1}
    ] == [
        {key: r.msg[key] for key in ("event", "label", "done", "total", "failed")}  # type: ignore[index]
        for r in caplog.records
    ]


def test_run_logs_a_summary_line(queries: list[Query], caplog: pytest.LogCaptureFixture) -> None:
    """Every run logs one queries_finished event with its counts when it finishes."""
    with caplog.at_level(logging.INFO, logger="monitor.runner"):
        run_queries(queries[:2], FakeSearch(), label="nightly", progress=False)
    finished = [
        r.msg
        for r in caplog.records
        if isinstance(r.msg, dict) and r.msg["event"] == "queries_finished"
    ]
    assert 1 == len(finished)
    assert {"label": "nightly", "queries": 2, "failed": 0} == {
        key: finished[0][key] for key in ("label", "queries", "failed")
    }


# -- searches that answer from memory ---------------------------------------------------------


class _InMemory:
    """A search that declares ``in_memory`` and notes the thread of each call."""

    in_memory = True

    def __init__(self, latency: float = 0.0) -> None:
        self.latency = latency
        self.threads: set[str] = set()

    def __call__(self, query: str, k: int) -> list[str]:
        self.threads.add(threading.current_thread().name)
        if self.latency:
            time.sleep(self.latency)
        return ["a", "b"]


@pytest.mark.parametrize("concurrency", [1, 4])
def test_an_in_memory_search_runs_on_the_calling_thread(
    queries: list[Query], concurrency: int
) -> None:
    """A search declaring ``in_memory`` is called on the runner's own thread, with a timeout
    and any concurrency."""
    search = _InMemory()
    result = run(queries, search, concurrency=concurrency, timeout=5.0)
    assert ({threading.current_thread().name}, 0) == (search.threads, result.failed)  # type: ignore[attr-defined]


def test_an_in_memory_call_slower_than_the_timeout_is_a_timeout(queries: list[Query]) -> None:
    """An in-memory call that returns after the timeout is recorded as 'timeout'."""
    result = run(queries[:2], _InMemory(latency=0.06), timeout=0.05)
    assert {"timeout": 2} == result.error_counts  # type: ignore[attr-defined]


def test_an_in_memory_search_gives_the_outcomes_a_threaded_run_gives(
    queries: list[Query],
) -> None:
    """Rankings, errors and counts of an in-memory search equal those of the same search
    run on worker threads."""
    inline = run(queries, _InMemory(), concurrency=3, timeout=5.0)
    threaded = run(queries, FakeSearch(default=["a", "b"]), concurrency=3, timeout=5.0)
    kept = ("query_id", "hits", "relevant_ids", "error_type", "duplicates")
    assert [[getattr(o, f) for f in kept] for o in threaded.outcomes] == [  # type: ignore[attr-defined]
        [getattr(o, f) for f in kept]
        for o in inline.outcomes  # type: ignore[attr-defined]
    ]


class _Checked:
    """A search declaring ``checked_hits`` that answers with an infinite score."""

    checked_hits = True

    def __init__(self, checked: bool = True) -> None:
        self.checked_hits = checked

    def __call__(self, query: str, k: int) -> tuple[Hit, ...]:
        return (Hit("a", float("inf")),)


@pytest.mark.parametrize(("checked", "kept"), [(True, True), (False, False)])
def test_hits_of_a_search_declaring_checked_hits_are_taken_as_given(
    queries: list[Query], checked: bool, kept: bool
) -> None:
    """A search declaring ``checked_hits`` has its Hits kept as given; any other search's
    infinite score is recorded as no score."""
    score = run(queries[:1], _Checked(checked)).outcomes[0].hits[0].score  # type: ignore[attr-defined]
    assert kept is (score is not None)
