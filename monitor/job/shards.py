"""Sharded runs: a stable slice of the eval set per shard, one run from the parts.

A sharded run splits the eval set into ``count`` shards by a hash of the query id
(:func:`shard_of`: BLAKE2b of the UTF-8 id, so every process, host and Python version puts a
query in the same shard). Every shard runs its slice and stores its outcomes as a part of
one attempt, named by the caller (a Kubernetes Indexed Job's name); the store keeps them
(:mod:`monitor.store.shards`), and the shard that stores the last part merges them into the
run (:func:`merge`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from monitor.errors import UsageError
from monitor.metrics.evaluation import EvaluationResult
from monitor.run.table import RunTable
from monitor.runner.result import RunResult
from monitor.store.shards import Attempt, Part, PartResult

if TYPE_CHECKING:
    from monitor.evalset import EvalSet
    from monitor.job.outcome import SuiteOutcome

#: The variable a Kubernetes Indexed Job sets to the pod's index.
INDEX_VARIABLE = "JOB_COMPLETION_INDEX"
#: The variable that gives the number of shards (the Job's ``completions``).
COUNT_VARIABLE = "MONITOR_SHARD_COUNT"
#: The variable that names the attempt the shards share (the Job's name).
ATTEMPT_VARIABLE = "MONITOR_SHARD_ATTEMPT"
#: The variable that gives the attempt's deadline in seconds from its first part.
DEADLINE_VARIABLE = "MONITOR_SHARD_DEADLINE"
#: Seconds an attempt may take from its first shard's start to its last part.
DEFAULT_DEADLINE_SECONDS = 3600.0


@dataclass(frozen=True, slots=True)
class Shard:
    """Shard ``index`` of ``count`` (0-based, as a Kubernetes completion index)."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if not (isinstance(self.count, int) and self.count >= 1 and 0 <= self.index < self.count):
            raise UsageError(
                f"shard: expected INDEX/COUNT with 0 <= INDEX < COUNT, found "
                f"{self.index}/{self.count}"
            )

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    @classmethod
    def parse(cls, text: str) -> Shard:
        """Parse ``INDEX/COUNT`` (``2/8``); raise UsageError naming what was expected."""
        index, slash, count = text.strip().partition("/")
        if not slash or not index.isdigit() or not count.isdigit():
            raise UsageError(f"--shard: expected INDEX/COUNT such as 0/4, found {text!r}")
        return cls(int(index), int(count))


def shard_of(query_id: str, count: int) -> int:
    """Return the shard (0 to ``count - 1``) of a query id: stable across processes."""
    return int(shards_of([query_id], count)[0])


def shards_of(query_ids: Sequence[str], count: int) -> npt.NDArray[np.uint64]:
    """Return the shard of every query id at once: its UTF-8 bytes' 8-byte BLAKE2b digest,
    read as a big-endian number, modulo ``count``."""
    blake2b = hashlib.blake2b
    digests = b"".join(
        [blake2b(query_id.encode(), digest_size=8).digest() for query_id in query_ids]
    )
    return np.frombuffer(digests, dtype=">u8") % np.uint64(count)


def shard_from_env(environ: Mapping[str, str] | None = None) -> Shard | None:
    """Return the shard that ``JOB_COMPLETION_INDEX`` and ``MONITOR_SHARD_COUNT`` name.

    None when neither is set; a UsageError naming the variable when only one is, or when a
    value is not a whole number.
    """
    env = os.environ if environ is None else environ
    index, count = env.get(INDEX_VARIABLE, ""), env.get(COUNT_VARIABLE, "")
    if not index and not count:
        return None
    for name, value in ((INDEX_VARIABLE, index), (COUNT_VARIABLE, count)):
        if not value.strip().isdigit():
            other = COUNT_VARIABLE if name == INDEX_VARIABLE else INDEX_VARIABLE
            raise UsageError(
                f"environment variable {name}: expected a whole number (set with {other} for a "
                f"sharded run), found {value!r}"
            )
    return Shard(int(index), int(count))


def select(evalset: EvalSet, shard: Shard) -> EvalSet:
    """Return the queries of ``evalset`` in ``shard``, in eval-set order."""
    from monitor.evalset import EvalSet

    columns = evalset.columns()  # a slice of the columns, no record per query
    picked = np.flatnonzero(shards_of(columns.ids, shard.count) == shard.index)
    return EvalSet.of_columns(evalset.name, columns.take(picked))


@dataclass(frozen=True, slots=True)
class ShardOutcome:
    """What one shard's run did: its part's effect on the attempt, and the run if it made it.

    ``outcome`` is the whole run's (as an unsharded run's) for the shard that finalised
    the attempt, None for the others.
    """

    shard: Shard
    attempt: Attempt
    result: PartResult
    outcome: SuiteOutcome | None


def merge(evalset: EvalSet, parts: Sequence[Part]) -> tuple[RunResult, EvaluationResult]:
    """Return one run of ``evalset`` from its shards' parts, outcomes in eval-set order, and
    its evaluation: the parts' per-query values joined in the same order.

    Times span the parts (first start, last finish); the duration is the longest part's;
    the latency summary is over every answered query; queries per second add up (the shards
    ran side by side); warm-up queries and retries add up; the search stats are shard 0's.
    """
    results = [part.result for part in parts if part.result is not None]
    scores = [part.evaluation for part in parts if part.evaluation is not None]
    if not results or len(results) != len(parts) or len(scores) != len(parts):
        raise UsageError("merge: every part must hold a run and its scores")
    table = RunTable.concatenate([result.outcomes for result in results])
    position = {query_id: row for row, query_id in enumerate(table.query_ids)}
    rows = np.fromiter(map(position.get, evalset.ids, repeat(-1)), np.int64, len(evalset))
    if (rows < 0).any():
        missing = np.flatnonzero(rows < 0)
        first = evalset.ids[int(missing[0])]
        raise UsageError(
            f"merge: the parts hold no outcome for {missing.size} quer(ies), first {first!r}"
        )
    # The eval set's own queries stand in for the parts' (which held only their ids).
    table = table.take(rows, evalset.columns())
    rates = [r.queries_per_second for r in results if r.queries_per_second is not None]
    merged = RunResult(
        outcomes=table,
        k=results[0].k,
        started_at=min(r.started_at for r in results),
        finished_at=max(r.finished_at for r in results),
        duration_seconds=max(r.duration_seconds for r in results),
        latency=table.latency(),
        queries_per_second=sum(rates) if rates else None,
        warmup=sum(r.warmup for r in results),
        retries=sum(r.retries for r in results),
        search_stats=dict(results[0].search_stats),
        label=results[0].label,
    )
    return merged, EvaluationResult.joined(scores, evalset.ids)
