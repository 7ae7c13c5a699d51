"""One query through the search function: attempts, retries, and the outcome record."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from monitor.errors import SearchCallError
from monitor.records import Hit, Query, QueryOutcome
from monitor.search.base import normalise_hits
from monitor.secrets import scrub_shapes

#: Decides whether a failed attempt is tried again.
RetryPolicy = Callable[[BaseException], bool]

TIMEOUT = "timeout"
DEADLINE = "deadline"


def is_retryable(error: BaseException) -> bool:
    """Return whether ``error`` is transient: worth another attempt.

    An error's own true or false ``retryable`` attribute decides (as
    :class:`~monitor.errors.SearchCallError` carries); otherwise connection errors, timeouts
    and httpx transport errors are retryable, and so is an httpx status error for 429 or 5xx.
    """
    flag = getattr(error, "retryable", None)
    if isinstance(flag, bool):
        return flag
    if isinstance(error, ConnectionError | TimeoutError):
        return True
    status = _status(error)
    if status is not None:
        return status == 429 or status >= 500
    return any(
        cls.__name__ == "TransportError" and cls.__module__.startswith("httpx")
        for cls in type(error).__mro__
    )


def _status(error: BaseException) -> int | None:
    """Return the HTTP status of an httpx-style status error, None for other errors."""
    if type(error).__name__ != "HTTPStatusError":
        return None
    status = getattr(getattr(error, "response", None), "status_code", None)
    return status if isinstance(status, int) else None


def error_type(error: BaseException) -> str:
    """Return the error type a run records for ``error``."""
    if isinstance(error, SearchCallError):
        return error.error_type
    status = _status(error)
    name = type(error).__name__
    return name if status is None else f"{name} {status}"


def error_message(error: BaseException, scrub: Callable[[str], str] = scrub_shapes) -> str:
    """Return the message a run records for ``error``, its secrets masked by ``scrub``
    (by default the secret-shaped parts: URL credentials, ``api_key=...``, tokens)."""
    if isinstance(error, SearchCallError):
        return scrub(error.message)
    return scrub(str(error) or repr(error))


def answered(query: Query, hits: tuple[Hit, ...], k: int, latency: float) -> QueryOutcome:
    """Return the outcome of an answer: repeated ids dropped (best position kept), cut to k."""
    duplicates = 0
    if len(hits) > 1:
        ids = {hit.id for hit in hits}
        if len(ids) != len(hits):
            seen: set[str] = set()
            kept = []
            for hit in hits:
                if hit.id not in seen:
                    seen.add(hit.id)
                    kept.append(hit)
            duplicates = len(hits) - len(kept)
            hits = tuple(kept)
    if len(hits) > k:
        hits = hits[:k]
    return QueryOutcome(
        query.id, query.text, hits, query.relevant_ids, latency, None, None, duplicates
    )


def failed(query: Query, kind: str, message: str, latency: float | None) -> QueryOutcome:
    """Return the outcome of a query that failed with error type ``kind``."""
    return QueryOutcome(
        query.id,
        query.text,
        relevant_ids=query.relevant_ids,
        latency_seconds=latency,
        error_type=kind,
        error_message=message,
    )


def timed_out(query: Query, timeout: float, latency: float) -> QueryOutcome:
    """Return the outcome of a query abandoned after ``timeout`` seconds."""
    return failed(query, TIMEOUT, f"no answer within {timeout:g} s", latency)


def past_deadline(query: Query, deadline: float) -> QueryOutcome:
    """Return the outcome of a query not started before the run's deadline."""
    return failed(query, DEADLINE, f"not started within the run's deadline of {deadline:g} s", None)


def _as_given(hits: tuple[Hit, ...]) -> tuple[Hit, ...]:
    """Return the hits of a search that gives checked ones."""
    return hits


@dataclass(frozen=True, slots=True)
class Caller:
    """How to call the search for one query: arguments, retries, backoff, deadline."""

    search: Callable[[Any, int], Any]
    pass_query: bool
    k: int
    retries: int = 0
    backoff: float = 0.1
    retry_on: RetryPolicy = is_retryable
    deadline_at: float | None = None
    scrub: Callable[[str], str] = scrub_shapes
    #: The search answers with tuples of checked Hits (``checked_hits``): none is re-checked.
    checked: bool = False

    def __call__(self, query: Query) -> tuple[QueryOutcome, int]:
        """Run ``query``, retrying retryable errors; return its outcome and the retries made."""
        search = self.search
        argument = query if self.pass_query else query.text
        k = self.k
        check = _as_given if self.checked else normalise_hits
        attempt = 0
        while True:
            start = time.perf_counter()
            try:
                hits = check(search(argument, k))
            except Exception as error:
                end = time.perf_counter()
                delay = self._retry_delay(error, attempt, end)
                if delay is None:
                    return failed(
                        query, error_type(error), error_message(error, self.scrub), end - start
                    ), attempt
                time.sleep(delay)
                attempt += 1
                continue
            return answered(query, hits, k, time.perf_counter() - start), attempt

    async def call_async(self, query: Query) -> tuple[QueryOutcome, int]:
        """Run ``query`` through an async search, as :meth:`__call__` does."""
        search: Callable[[Any, int], Awaitable[Any]] = self.search
        argument = query if self.pass_query else query.text
        attempt = 0
        while True:
            start = time.perf_counter()
            try:
                hits = normalise_hits(await search(argument, self.k))
            except Exception as error:
                end = time.perf_counter()
                delay = self._retry_delay(error, attempt, end)
                if delay is None:
                    return failed(
                        query, error_type(error), error_message(error, self.scrub), end - start
                    ), attempt
                await asyncio.sleep(delay)
                attempt += 1
                continue
            return answered(query, hits, self.k, time.perf_counter() - start), attempt

    def _retry_delay(self, error: Exception, attempt: int, now: float) -> float | None:
        """Return how long to wait before the next attempt, or None to give up."""
        if attempt >= self.retries or not self.retry_on(error):
            return None
        delay: float = self.backoff * 2.0**attempt
        if self.deadline_at is not None and now + delay >= self.deadline_at:
            return None
        return delay
