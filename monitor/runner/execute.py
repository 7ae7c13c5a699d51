"""Drive queries through a search: a plain loop, a thread pool, or an asyncio loop.

The plain loop serves concurrency 1 without a timeout, and any search that answers from
memory (:func:`~monitor.search.base.answers_in_memory`), so a run adds only microseconds per
query to the search itself. Such a call cannot hang, so the loop applies the timeout once the
call returns: a query that took longer is recorded as timed out, as the watcher records it.
The thread pool keeps ``concurrency`` workers; a watcher (the calling thread) abandons a call
that outlives ``timeout``, records the query as timed out and starts one new worker in its
place, so a hung call costs a thread only while it hangs, never a thread per query. Workers
are daemon threads: a call that never returns cannot keep the process alive.

A run given a ``cancel`` event stops once it is set (a SIGTERM's handler sets it): no query
starts after that, the watcher stops waiting within :data:`CANCEL_POLL_SECONDS`, and calls
in flight are abandoned (threads) or cancelled (asyncio), never waited for.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence

from monitor.records import Query, QueryOutcome
from monitor.runner.calls import Caller, past_deadline, timed_out
from monitor.runner.progress import Progress

#: How often a waiting driver looks at its cancel event, in seconds. A signal handler cannot
#: wake a thread blocked on a condition, so the watcher wakes this often while it waits.
CANCEL_POLL_SECONDS = 0.05


class Tally:
    """Where the outcomes of a run land; counts failures and stops past the error budget."""

    __slots__ = ("done", "failed", "max_failures", "outcomes", "retries", "stopped")

    def __init__(self, size: int, max_failures: int | None) -> None:
        self.outcomes: list[QueryOutcome | None] = [None] * size
        self.done = 0
        self.failed = 0
        self.retries = 0
        self.max_failures = max_failures
        self.stopped = False

    def record(self, index: int, outcome: QueryOutcome, retries: int) -> None:
        """Store the outcome of query ``index``."""
        self.outcomes[index] = outcome
        self.done += 1
        self.retries += retries
        if outcome.error_type is not None:
            self.failed += 1
            if self.max_failures is not None and self.failed > self.max_failures:
                self.stopped = True


class Plan:
    """What every driver needs: the queries, how to call, where to record, the limits."""

    __slots__ = (
        "caller",
        "cancel",
        "deadline",
        "deadline_at",
        "progress",
        "queries",
        "tally",
        "timeout",
    )

    def __init__(
        self,
        queries: Sequence[Query],
        caller: Caller,
        tally: Tally,
        progress: Progress,
        *,
        timeout: float | None,
        deadline: float | None,
        deadline_at: float | None,
        cancel: threading.Event | None = None,
    ) -> None:
        self.queries = queries
        self.caller = caller
        self.tally = tally
        self.progress = progress
        self.timeout = timeout
        self.deadline = deadline
        self.deadline_at = deadline_at
        self.cancel = cancel

    def cancelled(self) -> bool:
        """Return whether the run was asked to stop."""
        return self.cancel is not None and self.cancel.is_set()

    def halted(self) -> bool:
        """Return whether no further query may start: past the error budget, or cancelled."""
        return self.tally.stopped or self.cancelled()


def run_loop(plan: Plan, indices: range) -> None:
    """Run the queries at ``indices`` one after the other in this thread."""
    queries, caller, tally = plan.queries, plan.caller, plan.tally
    record, update = tally.record, plan.progress.update
    deadline_at, timeout = plan.deadline_at, plan.timeout
    for index in indices:
        if plan.halted():
            return
        query = queries[index]
        if deadline_at is not None and time.perf_counter() >= deadline_at:
            record(index, past_deadline(query, plan.deadline or 0.0), 0)
            continue
        outcome, retried = caller(query)
        took = outcome.latency_seconds
        if timeout is not None and took is not None and took > timeout:
            outcome, retried = timed_out(query, timeout, took), 0
        record(index, outcome, retried)
        update(tally.done, tally.failed)


class _Slot:
    """One worker thread and the call it is making."""

    __slots__ = ("abandoned", "index", "started", "thread")

    def __init__(self) -> None:
        self.index: int | None = None
        self.started = 0.0
        self.abandoned = False
        self.thread: threading.Thread | None = None

    def gone(self) -> bool:
        """Return whether the watcher has given up on this worker."""
        return self.abandoned


def run_threads(plan: Plan, indices: range, concurrency: int) -> None:
    """Run the queries at ``indices`` on ``concurrency`` worker threads."""
    queries, caller, tally, timeout = plan.queries, plan.caller, plan.tally, plan.timeout
    deadline_at = plan.deadline_at
    condition = threading.Condition()
    pending = iter(indices)
    target = tally.done + len(indices)
    slots: list[_Slot] = []

    def work(slot: _Slot) -> None:
        while True:
            with condition:
                if slot.gone() or plan.halted():
                    return
                index = next(pending, None)
                if index is None:
                    return
                started = time.perf_counter()
                if deadline_at is not None and started >= deadline_at:
                    tally.record(index, past_deadline(queries[index], plan.deadline or 0.0), 0)
                    if tally.done >= target:
                        condition.notify_all()
                    continue
                slot.index, slot.started = index, started
            outcome, retried = caller(queries[index])
            with condition:
                if slot.gone():  # the watcher already recorded a timeout
                    return
                slot.index = None
                tally.record(index, outcome, retried)
                if tally.done >= target or tally.stopped:
                    condition.notify_all()

    def spawn() -> None:
        slot = _Slot()
        slot.thread = threading.Thread(
            target=work, args=(slot,), name=f"monitor-runner-{len(slots)}", daemon=True
        )
        slots.append(slot)
        slot.thread.start()

    with condition:
        for _ in range(min(concurrency, len(indices))):
            spawn()
        while True:
            wait = plan.progress.interval
            if timeout is not None:
                until = _abandon_overdue(plan, slots, spawn, timeout)
                wait = until if wait is None else min(wait, until)
            if plan.cancel is not None:
                wait = CANCEL_POLL_SECONDS if wait is None else min(wait, CANCEL_POLL_SECONDS)
            if tally.done >= target or plan.halted():
                break
            condition.wait(wait)
            plan.progress.update(tally.done, tally.failed)
        # A stopped or cancelled run leaves calls in flight: let them end unheard.
        live = [slot for slot in slots if not slot.abandoned and slot.index is None]
        for slot in slots:
            slot.abandoned = True
    for slot in live:
        if slot.thread is not None:
            slot.thread.join()


def _abandon_overdue(
    plan: Plan, slots: list[_Slot], spawn: Callable[[], None], timeout: float
) -> float:
    """Record calls older than ``timeout`` as timed out; return seconds to the next expiry."""
    now = time.perf_counter()
    earliest = now + timeout
    for slot in list(slots):
        if slot.index is None or slot.abandoned:
            continue
        expiry = slot.started + timeout
        if expiry > now:
            earliest = min(earliest, expiry)
            continue
        outcome = timed_out(plan.queries[slot.index], timeout, now - slot.started)
        plan.tally.record(slot.index, outcome, 0)
        slot.abandoned = True
        slots.remove(slot)
        if not plan.halted():
            spawn()
    return max(earliest - now, 0.0)


async def run_async(plan: Plan, indices: range, concurrency: int) -> None:
    """Run the queries at ``indices`` through an async search, ``concurrency`` at a time."""
    queries, caller, tally, timeout = plan.queries, plan.caller, plan.tally, plan.timeout
    pending = iter(indices)
    tasks: list[asyncio.Task[None]] = []

    async def work() -> None:
        while not plan.halted():
            index = next(pending, None)
            if index is None:
                return
            query = queries[index]
            started = time.perf_counter()
            if plan.deadline_at is not None and started >= plan.deadline_at:
                tally.record(index, past_deadline(query, plan.deadline or 0.0), 0)
                continue
            if timeout is None:
                outcome, retried = await caller.call_async(query)
            else:
                try:
                    outcome, retried = await asyncio.wait_for(caller.call_async(query), timeout)
                except asyncio.TimeoutError:
                    outcome = timed_out(query, timeout, time.perf_counter() - started)
                    retried = 0
            tally.record(index, outcome, retried)
            plan.progress.update(tally.done, tally.failed)
        # Past the error budget: stop the other workers' calls too.
        for task in tasks:
            if task is not asyncio.current_task():
                task.cancel()

    tasks.extend(asyncio.create_task(work()) for _ in range(min(concurrency, len(indices))))
    watcher = None if plan.cancel is None else asyncio.create_task(_cancel_on_request(plan, tasks))
    results = await asyncio.gather(*tasks, return_exceptions=True)
    if watcher is not None:
        watcher.cancel()
    for result in results:
        if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
            raise result


async def _cancel_on_request(plan: Plan, tasks: list[asyncio.Task[None]]) -> None:
    """Cancel ``tasks``, calls in flight included, once the run is asked to stop."""
    while not plan.cancelled():
        await asyncio.sleep(CANCEL_POLL_SECONDS)
    for task in tasks:
        task.cancel()
