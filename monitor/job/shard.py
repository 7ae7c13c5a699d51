"""A sharded run of a suite: each shard runs its slice, the last one finishes the attempt.

See :func:`run_shard`; the parts and attempts are kept by :mod:`monitor.store.shards`.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING

from monitor.alerts.delivery import Delivery
from monitor.errors import (
    InternalError,
    MonitorError,
    NotMeasured,
    SearchBackendError,
    ShardAttemptFailed,
    ShardMismatchError,
    UsageError,
)
from monitor.evalset import digests
from monitor.job.measurable import check_measured
from monitor.job.path import compare_stored, load_frozen, measure, score_run, search_suite
from monitor.job.publish import Clock, publish_failure, publish_run, suite_notifiers
from monitor.job.shards import DEFAULT_DEADLINE_SECONDS, ShardOutcome, merge, select
from monitor.job.suite import _now, seed_unpinned
from monitor.judgments.suite import suite_evalset
from monitor.logs import hide_secrets
from monitor.search import build_search, close_search
from monitor.secrets import suite_scrubber
from monitor.store.measured import failed_run
from monitor.store.shards import Part, ShardStore

if TYPE_CHECKING:
    from monitor.alerts import Notifier
    from monitor.config.model import SuiteConfig
    from monitor.evalset import EvalSet
    from monitor.job.publish import Sink
    from monitor.job.shards import Shard
    from monitor.metrics.evaluation import EvaluationResult
    from monitor.runner import RunResult
    from monitor.store import Store
    from monitor.store.records import RunRecord


def run_shard(
    suite: SuiteConfig,
    store: Store,
    shard: Shard,
    attempt: str,
    *,
    deadline_seconds: float | None = None,
    config_hash: str = "",
    progress: bool | None = None,
    sinks: Sequence[Sink] = (),
    notifiers: Mapping[str, Notifier] | None = None,
    clock: Clock = _now,
    delivery: Delivery | None = None,
    cancel: threading.Event | None = None,
) -> ShardOutcome:
    """Run shard ``shard`` of ``suite`` as a part of ``attempt``; finish the attempt if last.

    The shard runs and scores its slice of the eval set (:func:`monitor.job.shards.select`)
    and stores the outcomes and per-query values as its part. The shard whose part completes
    the attempt merges the outcomes and joins the values into the whole run's measure,
    stores it (in the transaction that stores the part), compares it with the baseline and
    publishes it exactly as :func:`run_suite` does, and its outcome is returned. A shard
    whose search fails, or that finds the attempt past its ``deadline_seconds`` (counted
    from its first shard) with parts missing, stores a failed run instead, raises the
    monitor-failure alert, exports the failure gauges and raises: that happens once per
    attempt. Open attempts of the suite whose deadline has passed are failed the same way
    when any shard of the suite starts.
    """
    hide_secrets(suite_scrubber(suite))
    delivery = delivery or Delivery()
    deadline = DEFAULT_DEADLINE_SECONDS if deadline_seconds is None else deadline_seconds
    if not deadline > 0:
        raise UsageError(f"shard deadline: expected seconds above 0, found {deadline}")
    if suite.evalset.reference is not None:
        raise UsageError(
            f"suite {suite.name!r}: evalset.reference judges the whole eval set at once; "
            "it cannot run sharded"
        )
    with suite_notifiers(suite, notifiers) as built:
        failed = partial(
            publish_failure,
            suite,
            store,
            sinks=sinks,
            notifiers=built,
            clock=clock,
            delivery=delivery,
        )
        parts = ShardStore(store)
        started = clock()
        loaded = load_frozen(suite, store.get_state(digests.NAMESPACE, suite.name))
        if loaded.fresh is not None:
            store.put_state(digests.NAMESPACE, suite.name, loaded.fresh.as_state())
        evalset = suite_evalset(store, suite, loaded.evalset)
        try:
            opened = parts.open(
                suite.name,
                attempt,
                shard.count,
                config_hash=config_hash,
                evalset_fingerprint=evalset.fingerprint,
                deadline_seconds=deadline,
                now=started,
            )
        except ShardMismatchError as refused:
            # This shard's part can never complete the attempt: fail it now, not at its deadline.
            mismatch = refused

            def refuse(reason: str, at: datetime) -> RunRecord:
                return failed_run(suite, evalset, config_hash, started, at, reason, mismatch)

            refusal = f"shard {shard} was refused: {refused}"
            gone = parts.fail_open(suite.name, attempt, refusal, now=started, fail=refuse)
            if gone is not None:
                why = f"failed: {refusal}"
                late = ShardAttemptFailed(suite.name, attempt, gone.missing, gone.count, why=why)
                failed(late, gone.opened_at)
            raise

        def failed_attempt(error: MonitorError | None, reason: str, at: datetime) -> RunRecord:
            return failed_run(suite, evalset, config_hash, opened.opened_at, at, reason, error)

        expired = parts.expire(suite.name, now=started, fail=partial(failed_attempt, None))
        for gone in expired:
            late = ShardAttemptFailed(suite.name, gone.attempt, gone.missing, gone.count)
            failed(late, gone.opened_at)
            if gone.attempt == attempt:
                raise late
        if opened.status != "open":
            return ShardOutcome(shard, opened, "closed", None)
        sliced = select(evalset, shard)
        search = build_search(suite.search.kind, suite.search.plugin_options())
        failure: SearchBackendError | None = None
        result: RunResult | None = None
        try:
            result = search_suite(
                suite,
                sliced,
                search,
                progress=progress,
                label=f"{suite.name} shard {shard}",
                cancel=cancel,
            )
        except SearchBackendError as error:
            failure = error
        finally:
            close_search(search)
        said = (
            None
            if failure is None
            else suite_scrubber(suite)(f"{type(failure).__name__}: {failure}")
        )
        measured: list[tuple[EvaluationResult, RunResult]] = []
        unmeasured: list[NotMeasured] = []

        def finalise(stored: Sequence[Part]) -> RunRecord:
            merged, joined = merge(evalset, stored)
            try:
                check_measured(suite, evalset, merged)
            except NotMeasured as error:
                unmeasured.append(error)
                raise
            record, evaluation = measure(suite, evalset, config_hash, merged, evaluation=joined)
            measured.append((evaluation, merged))
            return record

        # Each shard scores its own slice, side by side: the last joins the values.
        scores = None if result is None else _score(suite, sliced, result)
        saved = parts.save_part(
            suite.name,
            attempt,
            Part(shard.index, result, scores, said),
            now=clock(),
            finalise=finalise,
            fail=partial(failed_attempt, failure),
        )
        if saved.result == "failed":
            stopped = (
                failure
                or next(iter(unmeasured), None)
                or ShardAttemptFailed(
                    suite.name, attempt, saved.attempt.missing, saved.attempt.count
                )
            )
            failed(stopped, opened.opened_at)
            raise stopped
        if failure is not None:  # the attempt was decided already: its alert went out then
            raise failure
        if saved.result != "finalised" or saved.run_id is None:
            return ShardOutcome(shard, saved.attempt, saved.result, None)
        seed_unpinned(suite, store, evalset, config_hash)
        evaluation, merged = measured[0]
        try:
            outcome = compare_stored(
                suite, store, saved.run_id, evalset, evaluation, merged, loaded
            )
        except Exception as error:  # the run is stored; its failure still goes out
            failed(error, opened.opened_at)
            raise
        outcome = publish_run(suite, store, outcome, sinks, built, clock, delivery)
        return ShardOutcome(shard, saved.attempt, "finalised", outcome)


def _score(suite: SuiteConfig, sliced: EvalSet, result: RunResult) -> EvaluationResult:
    """Return a shard's scores of its slice, as :func:`~monitor.job.path.measure` scores a
    whole run (a UsageError is the monitor's own figures failing their checks)."""
    try:
        return score_run(suite, sliced, result)
    except UsageError as error:
        raise InternalError("scoring the shard's run", str(error)) from error
