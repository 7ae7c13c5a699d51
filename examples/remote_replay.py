"""A saved run answered as a remote search backend would be: each query waits first.

A replay answers from memory in microseconds, so a suite searched by one spends its run on
everything else, and sharding it gains nothing. This plug-in keeps the replay's answers but
waits ``milliseconds`` before each, as a call to a remote index does, and declares nothing
about memory: the runner sends the queries from ``runner.concurrency`` threads. It shows
what sharding is for (``scripts/shard_load.py sharded --search-ms 5``)::

    search:
      kind: python
      target: examples.remote_replay:make_search
      factory: true
      path: ..
      kwargs: {path: runs/current.trec, milliseconds: 5}
"""

from __future__ import annotations

import time

from monitor.records import Hit, Query
from monitor.search.replay import ReplaySearch


class RemoteReplay:
    """A replay that waits ``milliseconds`` before each answer."""

    takes_query = True

    def __init__(self, replay: ReplaySearch, milliseconds: float) -> None:
        self._replay = replay
        self._seconds = milliseconds / 1000

    def __call__(self, query: Query, k: int) -> tuple[Hit, ...]:
        time.sleep(self._seconds)
        return self._replay(query, k)

    def close(self) -> None:
        self._replay.close()


def make_search(path: str, milliseconds: float = 5.0, format: str = "auto") -> RemoteReplay:
    """Return the run file at ``path`` answered after ``milliseconds`` a query."""
    if not milliseconds >= 0:
        raise ValueError(f"milliseconds: expected a number of 0 or more, found {milliseconds}")
    return RemoteReplay(ReplaySearch.from_file(path, format), milliseconds)
