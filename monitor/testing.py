"""Fakes for testing code that runs searches, without a search engine.

:class:`FakeSearch` is a search function whose answers, latency, failures and hangs are set
per query id; it records its calls. :class:`AsyncFakeSearch` is the same as an ``async``
callable. :func:`sample_queries` makes queries to run through them::

    search = FakeSearch({"q0": ["d0", "d9"]}, failures={"q1": [SearchCallError(
        "HTTPStatusError 503", "busy", retryable=True), None]})
    result = run_queries(sample_queries(3), search, retries=1)

:class:`~monitor.fake_llm.FakeLLM` is a local chat-completions server with planted
behaviour (correct, biased, noisy, slow, malformed, injection-echo), for testing a judge.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from monitor.fake_llm import BEHAVIOURS, FakeLLM
from monitor.records import MetaValue, Query

__all__ = ["BEHAVIOURS", "AsyncFakeSearch", "FakeLLM", "FakeSearch", "sample_queries"]


class FakeSearch:
    """A search function for tests, called as ``(query: Query, k)`` (it ``takes_query``).

    - ``rankings``: what to answer per query id, returned exactly as given (so a test may
      answer ``None`` or another bad shape); ``default`` for the other ids.
    - ``latency``: seconds to sleep before answering, one value or one per query id.
    - ``failures``: per query id, an exception raised on every call, or a sequence used one
      per call (``None`` in it answers normally; once used up, every call answers).
    - ``hang``: query ids whose calls block until :meth:`release` or :meth:`close` (or
      ``hang_limit`` seconds, so that a broken test cannot hang for ever).
    - ``stats``: what :meth:`stats` reports.

    ``calls`` lists the query ids in call order and ``peak_concurrency`` the most calls that
    were in progress at once. It is safe to call from several threads.
    """

    takes_query = True

    def __init__(
        self,
        rankings: Mapping[str, object] | None = None,
        *,
        default: object = (),
        latency: float | Mapping[str, float] = 0.0,
        failures: Mapping[str, BaseException | Sequence[BaseException | None]] | None = None,
        hang: Iterable[str] = (),
        stats: Mapping[str, MetaValue] | None = None,
        hang_limit: float = 30.0,
    ) -> None:
        self.rankings = dict(rankings or {})
        self.default = default
        self.latency = latency
        self._failures: dict[str, list[BaseException | None] | BaseException] = {
            qid: failure if isinstance(failure, BaseException) else list(failure)
            for qid, failure in (failures or {}).items()
        }
        self.hang = frozenset(hang)
        self.hang_limit = hang_limit
        self._stats = dict(stats or {})
        self.calls: list[str] = []
        self.peak_concurrency = 0
        self.closed = False
        self._active = 0
        self._lock = threading.Lock()
        self._released = threading.Event()

    def __call__(self, query: Query, k: int) -> Any:
        """Answer ``query`` as configured."""
        failure = self._enter(query)
        try:
            if query.id in self.hang:
                self._released.wait(self.hang_limit)
            delay = self._delay(query.id)
            if delay > 0:
                time.sleep(delay)
            return self._answer(query, failure)
        finally:
            self._leave()

    def _enter(self, query: Query) -> BaseException | None:
        """Count the call and return the failure planned for it, if any."""
        with self._lock:
            self.calls.append(query.id)
            self._active += 1
            self.peak_concurrency = max(self.peak_concurrency, self._active)
            planned = self._failures.get(query.id)
            if isinstance(planned, list):
                return planned.pop(0) if planned else None
            return planned

    def _leave(self) -> None:
        with self._lock:
            self._active -= 1

    def _delay(self, query_id: str) -> float:
        if isinstance(self.latency, Mapping):
            return float(self.latency.get(query_id, 0.0))
        return float(self.latency)

    def _answer(self, query: Query, failure: BaseException | None) -> Any:
        if failure is not None:
            raise failure
        return self.rankings.get(query.id, self.default)

    def calls_for(self, query_id: str) -> int:
        """Return how many times ``query_id`` was searched."""
        with self._lock:
            return self.calls.count(query_id)

    def release(self) -> None:
        """Let every hung call (now or later) go on."""
        self._released.set()

    def stats(self) -> dict[str, MetaValue]:
        """Return the configured stats."""
        return dict(self._stats)

    def close(self) -> None:
        """Release hung calls and mark the fake closed."""
        self.closed = True
        self.release()


class AsyncFakeSearch(FakeSearch):
    """:class:`FakeSearch` as an ``async`` callable: latency and hangs await, not block."""

    async def __call__(self, query: Query, k: int) -> Any:
        """Answer ``query`` as configured."""
        failure = self._enter(query)
        try:
            if query.id in self.hang:
                waited = 0.0
                while not self._released.is_set() and waited < self.hang_limit:
                    await asyncio.sleep(0.01)
                    waited += 0.01
            delay = self._delay(query.id)
            if delay > 0:
                await asyncio.sleep(delay)
            return self._answer(query, failure)
        finally:
            self._leave()


def sample_queries(count: int, *, prefix: str = "q") -> list[Query]:
    """Return ``count`` queries ``q0``, ``q1``, ... each judging one document ``d0``, ``d1``..."""
    return [Query(f"{prefix}{i}", f"sample query {i}", {f"d{i}": 1}) for i in range(count)]
