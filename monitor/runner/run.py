"""Run a set of queries through a search function and record what happened."""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from monitor.errors import ErrorBudgetExceeded, RunTerminated, UsageError
from monitor.evalset.columns import EvalColumns
from monitor.evalset.model import EvalSet
from monitor.records import MetaValue, Query
from monitor.run.table import RunTable
from monitor.runner.calls import Caller, RetryPolicy, is_retryable
from monitor.runner.execute import Plan, Tally, run_async, run_loop, run_threads
from monitor.runner.progress import NoProgress, choose, logger
from monitor.runner.result import RunResult
from monitor.search.answers import BulkSearch, answers_in_bulk
from monitor.search.base import (
    Search,
    answers_in_memory,
    corpus_fingerprint,
    fingerprint_digest,
    gives_checked_hits,
    is_async,
    prepare_search,
    search_stats,
    wants_query,
)
from monitor.search.health import HealthOptions, sample_rows
from monitor.search.health import measure as measure_index_health
from monitor.secrets import scrub_shapes


def run_queries(
    queries: Iterable[Query],
    search: Search,
    *,
    k: int = 10,
    concurrency: int = 1,
    timeout: float | None = None,
    retries: int = 0,
    backoff: float = 0.1,
    deadline: float | None = None,
    error_budget: float | None = None,
    warmup: int = 0,
    retry_on: RetryPolicy = is_retryable,
    progress: bool | None = None,
    label: str | None = None,
    scrub: Callable[[str], str] = scrub_shapes,
    cancel: threading.Event | None = None,
) -> RunResult:
    """Run every query through ``search`` and return the run's record.

    ``queries`` is an eval set or any iterable of :class:`~monitor.records.Query` with unique
    ids. ``search`` is a search function (:mod:`monitor.search`), sync or async, called with
    the query text, or with the Query when it declares ``takes_query``; with
    ``concurrency`` > 1 a sync search is called from several threads at once.

    - ``timeout``: seconds one query may take, retries and backoff included; a call still
      running then is abandoned and the query recorded with error type ``timeout``.
    - ``retries``: further attempts after an error that ``retry_on`` deems transient, waiting
      ``backoff``, then twice that, and so on.
    - ``deadline``: seconds for the whole run; queries not started by then are recorded with
      error type ``deadline`` (calls in flight may finish, within ``timeout``).
    - ``error_budget``: the largest share of failed queries (0.05 for 5%) the run accepts; above
      it the run stops and raises ErrorBudgetExceeded, an infrastructure failure and never a
      quality result. None accepts any share.
    - ``warmup``: the first ``warmup`` queries are sent once, one at a time, before the
      measured run (to open connections, load models, fill caches); what they return is
      discarded, so they count neither in latency nor in quality nor against the budget.
    - ``progress``: a bar on stderr (True), nothing (False), or None: a bar when stderr is a
      terminal, ``key=value`` log lines otherwise.
    - ``cancel``: once this event is set (by a SIGTERM handler, say) no further query starts,
      calls in flight are abandoned, and the run raises RunTerminated, an infrastructure
      failure like ErrorBudgetExceeded. An event set before the call runs no query at all.

    - ``scrub``: masks secrets in the recorded error messages (default: the secret-shaped
      parts; a :class:`~monitor.secrets.Scrubber` also masks the values it knows).

    A search that answers from memory and in bulk (:func:`~monitor.search.answers.
    answers_in_bulk`) is asked once for all the queries (the warm-up once before); that one
    in-memory call has no per-query timeout or deadline. Should it raise or decline, the
    queries are sent one by one as above. Either way the outcomes are one
    :class:`~monitor.run.RunTable`.

    Raise UsageError for invalid arguments.
    """
    items = _queries(queries)
    _check(k, concurrency, timeout, retries, backoff, deadline, error_budget, warmup)
    warmup = min(warmup, len(items))
    # Asked before the first query: the corpus the run ran against, not the one after it.
    corpus = _corpus(search)
    _prepare(search, items)
    started_at = datetime.now(timezone.utc)
    start = time.perf_counter()
    max_failures = None if error_budget is None else math.floor(error_budget * len(items) + 1e-9)
    tally = Tally(len(items), max_failures)
    reporter = choose(progress, len(items), label)
    caller = Caller(
        search,
        wants_query(search),
        k,
        retries=retries,
        backoff=backoff,
        retry_on=retry_on,
        deadline_at=None if deadline is None else start + deadline,
        scrub=scrub,
        checked=gives_checked_hits(search) and not is_async(search),
    )
    plan = Plan(
        items,
        caller,
        tally,
        reporter,
        timeout=timeout,
        deadline=deadline,
        deadline_at=caller.deadline_at,
        cancel=cancel,
    )
    warm = Plan(
        items[:warmup],
        caller,
        Tally(warmup, None),
        NoProgress(),
        timeout=timeout,
        deadline=deadline,
        deadline_at=caller.deadline_at,
        cancel=cancel,
    )
    logger.info(
        "queries_started",
        label=label,
        queries=len(items),
        k=k,
        concurrency=concurrency,
        timeout_seconds=timeout,
        retries=retries,
        warmup=warmup,
    )
    table: RunTable | None = None
    try:
        bulk = answers_in_bulk(search)
        answered_all = None if bulk is None else _run_bulk(bulk, items, warmup, k, plan)
        if answered_all is not None:
            table, measured_start = answered_all
            tally.done = len(table)
        elif is_async(search):
            measured_start = _run_async(warm, plan, concurrency)
        else:
            measured_start = _run_sync(warm, plan, concurrency)
    finally:
        reporter.update(tally.done, tally.failed)
        reporter.close()
    if warm.tally.failed:
        logger.warning("warmup_failed", label=label, failed=warm.tally.failed, warmup=warmup)
    end = time.perf_counter()
    if plan.cancelled():
        logger.error(
            "queries_stopped",
            label=label,
            reason="terminated",
            done=tally.done,
            failed=tally.failed,
            queries=len(items),
        )
        raise RunTerminated(tally.done, len(items))
    if tally.stopped or (max_failures is not None and tally.failed > max_failures):
        counts: dict[str, int] = {}
        for outcome in tally.outcomes:
            if outcome is not None and outcome.error_type is not None:
                counts[outcome.error_type] = counts.get(outcome.error_type, 0) + 1
        logger.error(
            "queries_stopped",
            label=label,
            reason="error_budget",
            failed=tally.failed,
            queries=len(items),
            budget=error_budget,
        )
        raise ErrorBudgetExceeded(
            tally.failed, len(items), error_budget or 0.0, counts, sent=tally.done
        )
    if table is None:  # sent one by one: every query's outcome, in the queries' order
        ran = [i for i, outcome in enumerate(tally.outcomes) if outcome is not None]
        table = RunTable.of(
            [tally.outcomes[i] for i in ran],  # type: ignore[misc]  # None left out
            items if len(ran) == len(items) else items.take(ran),
        )
    rate = _rate(table, end - measured_start)
    result = RunResult(
        outcomes=table,
        k=k,
        started_at=started_at,
        # The wall clock may step (NTP, a VM resumed): the end is the start plus the time the
        # run took by the monotonic clock, never before the start.
        finished_at=started_at + timedelta(seconds=end - start),
        duration_seconds=end - start,
        latency=table.latency(),
        queries_per_second=rate,
        warmup=warmup,
        retries=tally.retries,
        search_stats={**_stats(search), **corpus, **_index_health(search, table)},
        label=label,
    )
    _log_summary(result)
    return result


def run_pipelines(
    queries: Iterable[Query], searches: Mapping[str, Search], **settings: Any
) -> dict[str, RunResult]:
    """Run the same queries through each named search in turn; return results by name.

    ``settings`` are :func:`run_queries`' keyword arguments, the same for every pipeline.
    """
    items = _queries(queries)
    return {
        name: run_queries(items, search, label=name, **settings)
        for name, search in searches.items()
    }


def _run_bulk(
    search: BulkSearch, items: EvalColumns, warmup: int, k: int, plan: Plan
) -> tuple[RunTable, float] | None:
    """Answer every query in one call of a search that answers in bulk; return the outcomes
    and when the measured call began, or None for the queries to be sent one by one (the
    search declined, or raised: the calls one by one record what fails).

    The warm-up queries are answered once first, their answer discarded. A cancelled run
    sends nothing here: the drivers record it as cancelled.
    """
    if plan.cancelled() or not items:
        return None
    try:
        if warmup:
            search.answer_all(items.take(range(warmup)), k)
        measured_start = time.perf_counter()
        answers = search.answer_all(items, k)
        seconds = time.perf_counter() - measured_start
    except Exception as error:
        logger.warning(
            "bulk_answer_failed",
            error_type=type(error).__name__,
            error=plan.caller.scrub(str(error)),
        )
        return None
    if answers is None:
        return None
    if len(answers) != len(items):
        logger.warning("bulk_answer_failed", error="answers for another number of queries")
        return None
    return RunTable.answered(items, answers, seconds / len(items)), measured_start


def _run_sync(warm: Plan, plan: Plan, concurrency: int) -> float:
    """Send the warm-up, then run the measured queries; return when the measured part began."""
    _drive(warm, 1)
    measured_start = time.perf_counter()
    _drive(plan, concurrency)
    return measured_start


def _drive(plan: Plan, concurrency: int) -> None:
    """Run every query of ``plan``: a plain loop when nothing needs a second thread."""
    indices = range(len(plan.queries))
    if not indices:
        return
    if (concurrency == 1 and plan.timeout is None) or answers_in_memory(plan.caller.search):
        run_loop(plan, indices)
    else:
        run_threads(plan, indices, concurrency)


def _run_async(warm: Plan, plan: Plan, concurrency: int) -> float:
    """Run an async search on an event loop of its own; return when the measured part began.

    Warm-up and measured run share the loop, so that a client bound to it serves both.
    """

    async def main() -> float:
        await run_async(warm, range(len(warm.queries)), 1)
        measured_start = time.perf_counter()
        await run_async(plan, range(len(plan.queries)), concurrency)
        return measured_start

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    # Called from inside a running loop: give the run a loop on a thread of its own.
    box: list[float] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            box.append(asyncio.run(main()))
        except BaseException as error:  # handed back to the calling thread
            failure.append(error)

    thread = threading.Thread(target=target, name="monitor-runner-async")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return box[0]


def _queries(queries: Iterable[Query]) -> EvalColumns:
    """Return the queries as columns, the runner's one form of them: the public entry
    points' one conversion. Raise UsageError for a non-Query or a repeated id.

    An eval set hands over its columns (:meth:`EvalSet.columns`), taken as they are: their
    ids are unique and each record is built only when a query is sent.
    """
    if isinstance(queries, EvalSet):
        return queries.columns()
    if isinstance(queries, EvalColumns):
        return queries
    items = tuple(queries)
    seen: set[str] = set()
    for item in items:
        if not isinstance(item, Query):
            raise UsageError(f"queries: expected Query records, found {type(item).__name__}")
        if item.id in seen:
            raise UsageError(f"queries: query id {item.id!r} appears more than once")
        seen.add(item.id)
    return EvalColumns.of(items)


def _check(
    k: int,
    concurrency: int,
    timeout: float | None,
    retries: int,
    backoff: float,
    deadline: float | None,
    error_budget: float | None,
    warmup: int,
) -> None:
    """Raise UsageError for an argument out of range."""
    problems = []
    if not _is_int(k) or k < 1:
        problems.append(f"k must be an integer >= 1, not {k!r}")
    if not _is_int(concurrency) or concurrency < 1:
        problems.append(f"concurrency must be an integer >= 1, not {concurrency!r}")
    if not _is_int(retries) or retries < 0:
        problems.append(f"retries must be an integer >= 0, not {retries!r}")
    if not _is_int(warmup) or warmup < 0:
        problems.append(f"warmup must be an integer >= 0, not {warmup!r}")
    for name, value in (("timeout", timeout), ("deadline", deadline)):
        if value is not None and not (_is_number(value) and value > 0):
            problems.append(f"{name} must be a positive number of seconds or None, not {value!r}")
    if not (_is_number(backoff) and backoff >= 0):
        problems.append(f"backoff must be a number of seconds >= 0, not {backoff!r}")
    if error_budget is not None and not (_is_number(error_budget) and 0 <= error_budget <= 1):
        problems.append(
            f"error_budget must be a share between 0 and 1 or None, not {error_budget!r}"
        )
    if problems:
        raise UsageError("run_queries: " + "; ".join(problems))


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == value


def _rate(table: RunTable, seconds: float) -> float | None:
    """Return queries run per second (queries cut by the deadline were not run)."""
    ran = table.ran()
    return ran / seconds if ran and seconds > 0 else None


def _stats(search: Search) -> dict[str, MetaValue]:
    """Return the plug-in's stats; a failing ``stats()`` is logged, never fatal."""
    try:
        return search_stats(search)
    except Exception as error:
        logger.warning("search_stats_failed", error_type=type(error).__name__, error=str(error))
        return {"stats_error": f"{type(error).__name__}: {error}"}


def _index_health(search: Search, table: RunTable) -> dict[str, MetaValue]:
    """Return the ANN recall figures of a vector kind with ``index_health`` on (its exact
    search asked for the answered queries' vectors); a failure is logged, never fatal."""
    options = getattr(search, "index_health", None)
    if not isinstance(options, HealthOptions):
        return {}
    answered = [outcome for outcome in table if outcome.error_type is None]
    rows = sample_rows([outcome.query_id for outcome in answered], options.sample)
    try:
        health = measure_index_health(
            search,  # type: ignore[arg-type]  # a vector kind: it has index_health
            [answered[row].query for row in rows],
            [answered[row].retrieved_ids for row in rows],
            options.k,
        )
    except Exception as error:
        logger.warning("index_health_failed", error_type=type(error).__name__, error=str(error))
        return {"index_health_error": f"{type(error).__name__}: {error}"}
    return health.stats()


def _prepare(search: Search, items: Sequence[Query]) -> None:
    """Hand the queries to the plug-in's ``prepare``; a failing one is logged, never fatal:
    each call then does its own work."""
    try:
        prepare_search(search, items)
    except Exception as error:
        logger.warning("search_prepare_failed", error_type=type(error).__name__, error=str(error))


def _corpus(search: Search) -> dict[str, MetaValue]:
    """Return ``{"corpus_fingerprint": digest}`` of the plug-in's corpus, ``{}`` without one;
    a failing ``corpus_fingerprint()`` is logged and recorded, never fatal."""
    try:
        fingerprint = corpus_fingerprint(search)
    except Exception as error:
        logger.warning(
            "corpus_fingerprint_failed", error_type=type(error).__name__, error=str(error)
        )
        return {"corpus_fingerprint_error": f"{type(error).__name__}: {error}"}
    return {} if fingerprint is None else {"corpus_fingerprint": fingerprint_digest(fingerprint)}


def _log_summary(result: RunResult) -> None:
    latency = result.latency
    logger.info(
        "queries_finished",
        label=result.label,
        queries=result.total,
        failed=result.failed,
        empty=result.empty,
        error_rate=round(result.error_rate, 4),
        p50_seconds=_rounded(latency.p50),
        p95_seconds=_rounded(latency.p95),
        queries_per_second=_rounded(result.queries_per_second),
        duration_seconds=round(result.duration_seconds, 3),
        retries=result.retries,
    )


def _rounded(value: float | None) -> float | None:
    return None if value is None else float(f"{value:.6g}")
