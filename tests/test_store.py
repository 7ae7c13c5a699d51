"""The run store's behaviour, the same on SQLite and on PostgreSQL.

Every test runs on a fresh SQLite file, and again on a fresh PostgreSQL schema when the
server at ``MONITOR_POSTGRES_URL`` (default: the one ``scripts/start-postgres.sh`` starts)
is reachable. Without it those runs are skipped, unless ``MONITOR_REQUIRE_SERVICES=1``.
"""

from __future__ import annotations

import dataclasses
import math
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from store_legacy import insert_legacy_run

from monitor.errors import (
    BaselineError,
    StoreError,
    StoreLockedError,
    StoreLookupError,
    StoreSchemaError,
    UsageError,
)
from monitor.records import LatencySummary
from monitor.store import (
    SCHEMA_VERSION,
    QueryRecord,
    RunFigures,
    RunRecord,
    SqlStore,
    open_store,
    runs,
    schema,
)

T0 = datetime(2024, 5, 1, 3, 0, tzinfo=timezone.utc)


@pytest.fixture
def store(store_url: str) -> Iterator[SqlStore]:
    """Return an open store on an empty database."""
    with open_store(store_url) as opened:
        assert isinstance(opened, SqlStore)
        yield opened


def make_run(
    suite: str = "nightly",
    *,
    day: int = 0,
    status: str = "ok",
    ndcg: float = 0.5,
    queries: tuple[QueryRecord, ...] | None = None,
) -> RunRecord:
    """Return a run of ``suite`` started ``day`` days after T0."""
    started = T0 + timedelta(days=day)
    if queries is None:
        queries = (
            QueryRecord(
                "q1",
                {"ndcg@10": 1.0, "recall@10": 1.0},
                retrieved_ids=("d1", "d2"),
                relevant_ids=("d1",),
                latency_seconds=0.012,
            ),
            QueryRecord(
                "q2",
                {"ndcg@10": 0.0, "recall@10": 0.0},
                retrieved_ids=(),
                relevant_ids=("d9", "d8"),
                latency_seconds=0.5,
                error_type="TimeoutError",
                error_message="no answer in 0.5 s",
            ),
            QueryRecord("q0", {"ndcg@10": ndcg, "recall@10": 0.25}, ("d3",), ("d4",), 0.02),
        )
    return RunRecord(
        suite=suite,
        pipeline="bm25",
        started_at=started,
        finished_at=started + timedelta(seconds=42.5),
        status=status,  # type: ignore[arg-type]
        evalset_fingerprint="sha256:abc",
        config_hash="c0ffee",
        means={"ndcg@10": ndcg, "recall@10": 0.4166},
        figures=RunFigures(
            latency=LatencySummary(count=2, p50=0.02, p95=0.45, p99=0.49, max=0.5, mean=0.177),
            error_rate=1 / 3,
            zero_result_rate=0.0,
            mean_top1_score=12.5,
            index_size=1000,
            sent=3,
            failed=1,
            evaluated=2,
        )
        if status == "ok"
        else RunFigures(),
        stats={"index_size": 1000, "versions": {"engine": "1.2"}, "shards": [1, 2]},
        error=None if status == "ok" else "search backend down",
        queries=queries,
    )


# Runs ---------------------------------------------------------------------------------------


def test_saved_run_reads_back_equal(store: SqlStore) -> None:
    """A saved run reads back field for field, per-query records in their order included."""
    run = make_run()
    run_id = store.save_run(run)
    assert dataclasses.replace(run, run_id=run_id) == store.get_run(run_id)


def test_saved_run_times_are_utc(store: SqlStore) -> None:
    """Times given in another zone read back as the same instant in UTC."""
    paris = timezone(timedelta(hours=2))
    run = dataclasses.replace(make_run(), started_at=T0.astimezone(paris))
    saved = store.get_run(store.save_run(run))
    assert (T0, timezone.utc) == (saved.started_at, saved.started_at.tzinfo)


def test_save_run_gives_increasing_ids(store: SqlStore) -> None:
    """Each saved run gets a new, larger id; the record's own run_id is ignored."""
    first = store.save_run(make_run())
    second = store.save_run(dataclasses.replace(make_run(), run_id=first))
    assert second > first


def test_figures_that_could_not_be_computed_read_back_as_unknown(store: SqlStore) -> None:
    """A mean that could not be computed reads back as NaN, a run figure as None."""
    figures = RunFigures(latency=LatencySummary(), mean_top1_score=None, sent=3, evaluated=0)
    run = dataclasses.replace(make_run(), means={"ndcg@10": math.nan}, figures=figures)
    saved = store.get_run(store.save_run(run))
    assert math.isnan(saved.means["ndcg@10"])
    assert (None, None, 3, 0) == (
        saved.figures.latency.p50,
        saved.figures.mean_top1_score,
        saved.figures.sent,
        saved.figures.evaluated,
    )


def test_run_figures_keep_their_types_through_the_store(store: SqlStore) -> None:
    """Counts read back as integers and the index size as the search reported it."""
    saved = store.get_run(store.save_run(make_run())).figures
    assert (3, 1, 2, 1000) == (saved.sent, saved.failed, saved.evaluated, saved.index_size)
    assert all(type(n) is int for n in (saved.sent, saved.failed, saved.evaluated))


def test_get_run_of_unknown_id_raises(store: SqlStore) -> None:
    """Asking for a run that does not exist raises StoreLookupError naming it."""
    with pytest.raises(StoreLookupError, match="no run 404"):
        store.get_run(404)


def test_latest_run_is_the_last_started_ok_run(store: SqlStore) -> None:
    """latest_run returns the most recently started ok run, ignoring a later failed one."""
    store.save_run(make_run(day=0))
    expected = store.save_run(make_run(day=2))
    store.save_run(make_run(day=1))
    store.save_run(make_run(day=3, status="failed"))
    store.save_run(make_run("weekly", day=4))
    latest = store.latest_run("nightly")
    assert latest is not None
    assert expected == latest.run_id


@pytest.mark.parametrize("status", [None, "failed"])
def test_latest_run_of_another_status(store: SqlStore, status: str | None) -> None:
    """latest_run with status None or "failed" returns the later failed run."""
    store.save_run(make_run(day=0))
    failed = store.save_run(make_run(day=1, status="failed"))
    latest = store.latest_run("nightly", status=status)
    assert latest is not None
    assert failed == latest.run_id


def test_latest_run_of_unknown_suite_is_none(store: SqlStore) -> None:
    """A suite without runs has no latest run."""
    store.save_run(make_run())
    assert None is store.latest_run("never-ran")


@pytest.mark.slow
def test_list_runs_newest_first(store: SqlStore) -> None:
    """list_runs lists every suite's runs, newest first, up to the limit."""
    ids = [store.save_run(make_run(suite, day=day)) for day, suite in enumerate("abcd")]
    assert ids[::-1][:3] == [summary.run_id for summary in store.list_runs(limit=3)]


def test_list_runs_of_one_suite(store: SqlStore) -> None:
    """list_runs with a suite lists only that suite's runs."""
    wanted = store.save_run(make_run("weekly"))
    store.save_run(make_run("nightly"))
    assert [wanted] == [summary.run_id for summary in store.list_runs("weekly")]


def test_list_runs_summaries_carry_counts_and_means(store: SqlStore) -> None:
    """A run summary carries the run's status, query count and means."""
    store.save_run(make_run(status="failed", ndcg=0.25))
    (summary,) = store.list_runs()
    assert ("failed", 3, {"ndcg@10": 0.25, "recall@10": 0.4166}, "search backend down") == (
        summary.status,
        summary.query_count,
        dict(summary.means),
        summary.error,
    )


def test_list_runs_refuses_a_negative_limit(store: SqlStore) -> None:
    """A negative limit is a usage error."""
    with pytest.raises(UsageError):
        store.list_runs(limit=-1)


# A failed save leaves nothing ---------------------------------------------------------------


def test_constraint_violation_leaves_no_run(store: SqlStore) -> None:
    """A run whose query ids repeat fails to save as a whole, and leaves no row behind."""
    twice = (QueryRecord("q1", {"ndcg@10": 1.0}), QueryRecord("q1", {"ndcg@10": 0.0}))
    with pytest.raises(StoreError, match="saving a run of 'nightly'"):
        store.save_run(make_run(queries=twice))
    assert ([], 0) == (store.list_runs(), len(store.history("nightly")))


def test_exception_mid_save_leaves_no_run(store: SqlStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """An exception after the run row was written rolls everything back and propagates."""

    def failing_blobs(tx: object, run_id: int, queries: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(runs, "insert_blobs", failing_blobs)
    with pytest.raises(RuntimeError, match="disk on fire"):
        store.save_run(make_run())
    monkeypatch.undo()
    assert [] == store.list_runs()


def test_store_saves_again_after_a_failed_save(store: SqlStore) -> None:
    """After a failed save the store is usable and the next run keeps only its own queries."""
    twice = (QueryRecord("q1"), QueryRecord("q1"))
    with pytest.raises(StoreError):
        store.save_run(make_run(queries=twice))
    run_id = store.save_run(make_run())
    assert ["q1", "q2", "q0"] == [q.query_id for q in store.get_run(run_id).queries]


# Baselines ----------------------------------------------------------------------------------


def test_set_baseline_pins_the_run(store: SqlStore) -> None:
    """The pinned run is the suite's baseline."""
    run_id = store.save_run(make_run())
    store.set_baseline("nightly", run_id)
    baseline = store.get_baseline("nightly")
    assert baseline is not None
    assert dataclasses.replace(make_run(), run_id=run_id) == baseline


def test_set_baseline_replaces_the_previous_one(store: SqlStore) -> None:
    """Pinning another run replaces the suite's baseline."""
    first = store.save_run(make_run(day=0))
    second = store.save_run(make_run(day=1))
    store.set_baseline("nightly", first)
    store.set_baseline("nightly", second)
    assert [("nightly", second)] == [(b.suite, b.run_id) for b in store.list_baselines()]


@pytest.mark.parametrize(
    ("suite", "status", "run_id_offset", "reason"),
    [
        ("nightly", "ok", 1000, "there is no such run"),
        ("weekly", "ok", 0, "it is a run of 'weekly'"),
        ("nightly", "failed", 0, "the run is failed"),
    ],
    ids=["missing", "other-suite", "failed"],
)
def test_set_baseline_refuses_an_unfit_run(
    store: SqlStore, suite: str, status: str, run_id_offset: int, reason: str
) -> None:
    """Only an existing ok run of the same suite can be pinned; the old baseline stays."""
    kept = store.save_run(make_run("nightly"))
    store.set_baseline("nightly", kept)
    run_id = store.save_run(make_run(suite, status=status)) + run_id_offset
    with pytest.raises(BaselineError) as caught:
        store.set_baseline("nightly", run_id)
    baseline = store.get_baseline("nightly")
    assert (reason, kept) == (caught.value.reason, baseline and baseline.run_id)


def test_set_baseline_refuses_a_run_that_measured_nothing(store: SqlStore) -> None:
    """An ok run whose every mean is unknown (an outage stored before such runs failed) is
    never pinned: every later run would compare with nothing."""
    failed = QueryRecord("q1", {}, (), ("d1",), 0.1, error_type="HTTPError", error_message="503")
    outage = replace(make_run(queries=(failed,)), means={"ndcg@10": math.nan})
    run_id = store.save_run(outage)
    with pytest.raises(BaselineError, match="it measured nothing"):
        store.set_baseline("nightly", run_id)


def test_get_baseline_of_a_suite_without_one_is_none(store: SqlStore) -> None:
    """A suite with no pinned run has no baseline."""
    store.save_run(make_run())
    assert None is store.get_baseline("nightly")


def test_list_baselines_by_suite(store: SqlStore) -> None:
    """list_baselines lists each suite's baseline in suite order."""
    weekly = store.save_run(make_run("weekly"))
    nightly = store.save_run(make_run("nightly"))
    store.set_baseline("weekly", weekly)
    store.set_baseline("nightly", nightly)
    assert [("nightly", nightly), ("weekly", weekly)] == [
        (b.suite, b.run_id) for b in store.list_baselines()
    ]


# Frames -------------------------------------------------------------------------------------


def test_history_columns(store: SqlStore) -> None:
    """The history has the run columns, the metric means, latency figures, then rates."""
    store.save_run(make_run())
    assert [
        "run_id",
        "started_at",
        "finished_at",
        "status",
        "ndcg@10",
        "recall@10",
        "latency_p50",
        "latency_p95",
        "latency_p99",
        "latency_max",
        "latency_mean",
        "error_rate",
        "zero_result_rate",
        "mean_top1_score",
        "queries_per_second",
        "queries",
        "failed",
        "evaluated",
    ] == list(store.history("nightly").columns)


def test_history_has_one_row_per_run_oldest_first(store: SqlStore) -> None:
    """Each of the suite's runs is one row, oldest first, with its means."""
    late = store.save_run(make_run(day=1, ndcg=0.75))
    early = store.save_run(make_run(day=0, ndcg=0.5))
    store.save_run(make_run("weekly"))
    frame = store.history("nightly")
    assert [(early, 0.5), (late, 0.75)] == list(zip(frame["run_id"], frame["ndcg@10"], strict=True))


def test_history_times_are_utc(store: SqlStore) -> None:
    """The history's start times are UTC timestamps."""
    store.save_run(make_run())
    assert T0 == store.history("nightly")["started_at"].iloc[0]


def test_history_picks_metrics_in_the_order_given(store: SqlStore) -> None:
    """``metrics`` picks and orders the metric columns; a metric no run has is NaN."""
    store.save_run(make_run())
    frame = store.history("nightly", metrics=["recall@10", "map@5"])
    assert ["recall@10", "map@5"] == list(frame.columns[4:6])
    assert math.isnan(frame["map@5"].iloc[0])


def test_history_of_a_suite_without_runs_is_empty(store: SqlStore) -> None:
    """A suite with no runs has an empty history that still has the run columns."""
    frame = store.history("never-ran")
    assert (0, ["run_id", "started_at", "finished_at", "status"]) == (
        len(frame),
        list(frame.columns),
    )


def test_per_query_frame(store: SqlStore) -> None:
    """The per-query frame has one row per query, indexed by query id, in run order."""
    frame = store.per_query_frame(store.save_run(make_run()))
    assert ["q1", "q2", "q0"] == list(frame.index)
    assert [
        "ndcg@10",
        "recall@10",
        "latency_seconds",
        "error_type",
        "error_message",
        "retrieved_ids",
        "relevant_ids",
    ] == list(frame.columns)
    assert 0.5 == frame.loc["q0", "ndcg@10"]
    assert "TimeoutError" == frame.loc["q2", "error_type"]
    assert ("d1", "d2") == frame.loc["q1", "retrieved_ids"]


# State --------------------------------------------------------------------------------------


def test_state_is_none_until_put(store: SqlStore) -> None:
    """A key that was never put has no state."""
    assert None is store.get_state("alerts", "nightly/ndcg@10")


def test_put_state_replaces_the_document(store: SqlStore) -> None:
    """The last document put under a key is the one read back."""
    store.put_state("alerts", "k", {"state": "pending", "since": "2024-05-01"})
    store.put_state("alerts", "k", {"state": "firing", "count": 2, "labels": ["a"]})
    assert {"state": "firing", "count": 2, "labels": ["a"]} == store.get_state("alerts", "k")


def test_state_namespaces_are_separate(store: SqlStore) -> None:
    """The same key in two namespaces holds two documents."""
    store.put_state("alerts", "k", {"n": 1})
    store.put_state("silences", "k", {"n": 2})
    assert ({"n": 1}, {"n": 2}) == (
        store.get_state("alerts", "k"),
        store.get_state("silences", "k"),
    )


def test_delete_state_says_whether_there_was_one(store: SqlStore) -> None:
    """Deleting returns True once, then False, and the key is gone."""
    store.put_state("alerts", "k", {"n": 1})
    deleted = [store.delete_state("alerts", "k"), store.delete_state("alerts", "k")]
    assert ([True, False], None) == (deleted, store.get_state("alerts", "k"))


def test_put_state_refuses_what_json_cannot_hold(store: SqlStore) -> None:
    """A document that is not JSON-serialisable is refused and nothing is stored."""
    with pytest.raises(TypeError):
        store.put_state("alerts", "k", {"when": object()})
    assert None is store.get_state("alerts", "k")


# Outbox -------------------------------------------------------------------------------------


def test_enqueued_messages_are_pending_oldest_first(store: SqlStore) -> None:
    """Enqueued messages are pending in the order they were enqueued."""
    first = store.enqueue("slack", "nightly/ndcg", {"text": "down"})
    second = store.enqueue("email", "nightly/recall", {"text": "down too"})
    assert [(first, "slack", {"text": "down"}), (second, "email", {"text": "down too"})] == [
        (m.id, m.kind, dict(m.payload)) for m in store.pending()
    ]


def test_pending_filters_by_kind(store: SqlStore) -> None:
    """pending(kind) lists only that kind's messages."""
    store.enqueue("slack", "a", {})
    wanted = store.enqueue("email", "a", {})
    assert [wanted] == [m.id for m in store.pending("email")]


def test_an_abandoned_message_leaves_the_outbox(store: SqlStore) -> None:
    """A given-up message is no longer pending, and its key can be enqueued anew."""
    first = store.enqueue("alert", "hook|fp|firing", {"n": 1})
    store.abandon(first, "rejected 5 times: HTTP 400")
    second = store.enqueue("alert", "hook|fp|firing", {"n": 2})
    assert first != second
    assert [second] == [message.id for message in store.pending("alert")]


def test_enqueue_twice_replaces_the_undelivered_message(store: SqlStore) -> None:
    """Enqueueing the same kind and key again updates the pending message's payload."""
    first = store.enqueue("slack", "k", {"value": 1})
    again = store.enqueue("slack", "k", {"value": 2})
    assert [(first, {"value": 2})] == [(m.id, dict(m.payload)) for m in store.pending()]
    assert first == again


def test_delivered_message_leaves_pending(store: SqlStore) -> None:
    """A delivered message is no longer pending, and the same key can be enqueued anew."""
    first = store.enqueue("slack", "k", {"value": 1})
    store.mark_delivered(first)
    assert [] == store.pending()
    assert first != store.enqueue("slack", "k", {"value": 2})


def test_attempt_failed_counts_attempts_and_keeps_the_error(store: SqlStore) -> None:
    """Each failed attempt is counted and the last error kept; the message stays pending."""
    message_id = store.enqueue("slack", "k", {})
    store.attempt_failed(message_id, "HTTP 500")
    store.attempt_failed(message_id, "HTTP 503")
    (message,) = store.pending()
    assert (2, "HTTP 503", False) == (message.attempts, message.last_error, message.delivered)
    assert message.last_attempt_at is not None


@pytest.mark.slow
@pytest.mark.parametrize("method", ["mark_delivered", "attempt_failed", "abandon"])
def test_outbox_updates_of_an_unknown_message_raise(store: SqlStore, method: str) -> None:
    """Marking a message that does not exist raises StoreLookupError."""
    args: tuple[Any, ...] = (99,) if method == "mark_delivered" else (99, "boom")
    with pytest.raises(StoreLookupError, match="no outbox message 99"):
        getattr(store, method)(*args)


# Locks --------------------------------------------------------------------------------------


def test_a_held_lock_refuses_a_second_holder(store: SqlStore, store_url: str) -> None:
    """While one store holds a suite's lock, another gets StoreLockedError naming the holder."""
    with (
        store.lock("nightly") as holder,
        open_store(store_url) as other,
        pytest.raises(StoreLockedError) as caught,
        other.lock("nightly"),
    ):
        pass
    error = caught.value
    assert ("nightly", socket.gethostname(), os.getpid(), holder.since) == (
        error.suite,
        error.host,
        error.pid,
        error.since,
    )
    assert "'nightly' is locked by pid" in str(error)


def test_locks_of_different_suites_are_independent(store: SqlStore) -> None:
    """Holding one suite's lock does not stop another suite's."""
    with store.lock("nightly"), store.lock("weekly") as holder:
        assert "weekly" == holder.suite


def test_a_lock_is_free_again_after_the_block(store: SqlStore) -> None:
    """A lock is released when its block ends, even when the block raised."""
    with pytest.raises(ValueError, match="run failed"), store.lock("nightly"):
        raise ValueError("run failed")
    with store.lock("nightly") as holder:
        assert "nightly" == holder.suite


def test_a_stale_lock_is_taken_over(store: SqlStore, store_url: str) -> None:
    """A lock whose lease ran out unrenewed is taken over by the next process that asks."""
    with ExitStack() as crashed, open_store(store_url) as other:
        crashed.enter_context(store.lock("nightly", ttl_seconds=0.05, renew_seconds=3600))
        time.sleep(0.1)
        with other.lock("nightly") as successor:
            assert "nightly" == successor.suite


@pytest.mark.slow
def test_a_taken_over_holder_does_not_release_its_successor(
    store: SqlStore, store_url: str
) -> None:
    """When a stale holder's block ends, the lock its successor took stays held."""
    with open_store(store_url) as other, open_store(store_url) as third:
        with store.lock("nightly", ttl_seconds=0.05, renew_seconds=3600):
            time.sleep(0.1)
            successor = other.lock("nightly")
            successor.__enter__()
        with pytest.raises(StoreLockedError), third.lock("nightly"):
            pass
        successor.__exit__(None, None, None)


@pytest.mark.parametrize("ttl", [0, -1, math.inf, math.nan])
def test_lock_refuses_a_bad_ttl(store: SqlStore, ttl: float) -> None:
    """The ttl must be a positive, finite number of seconds."""
    with pytest.raises(UsageError), store.lock("nightly", ttl_seconds=ttl):
        pass


# Schema -------------------------------------------------------------------------------------


def test_a_new_database_gets_the_current_schema(store: SqlStore) -> None:
    """Opening an empty database applies every migration."""
    assert SCHEMA_VERSION == store.schema_version()


def test_an_older_database_is_migrated_and_keeps_its_runs(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database at schema version 1 is brought to the current version on open."""
    monkeypatch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:1])
    with open_store(store_url) as old:
        assert isinstance(old, SqlStore)
        run_id = insert_legacy_run(old, make_run())
        assert 1 == old.schema_version()
    monkeypatch.undo()
    with open_store(store_url) as new:
        new.put_state("alerts", "k", {"n": 1})
        assert isinstance(new, SqlStore)
        assert (SCHEMA_VERSION, run_id) == (new.schema_version(), new.get_run(run_id).run_id)


def test_a_newer_database_is_refused(store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A database whose schema is newer than the code raises StoreSchemaError on open."""
    newer = schema.Migration(SCHEMA_VERSION + 1, "from the future", ("CREATE TABLE t (x TEXT)",))
    monkeypatch.setattr(schema, "MIGRATIONS", (*schema.MIGRATIONS, newer))
    open_store(store_url).close()
    monkeypatch.undo()
    with pytest.raises(StoreSchemaError) as caught:
        open_store(store_url)
    assert (SCHEMA_VERSION + 1, SCHEMA_VERSION) == (caught.value.found, caught.value.supported)
    assert "upgrade retrieval-monitor" in str(caught.value)


@pytest.mark.slow
def test_a_lock_of_a_killed_process_on_this_host_is_taken_over(
    store: SqlStore, store_url: str
) -> None:
    """A holder killed with SIGKILL does not block its suite until the lock expires."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from monitor.store import open_store; "
            "s = open_store(sys.argv[1]); s.lock('nightly', ttl_seconds=3600).__enter__(); "
            "print('held', flush=True); time.sleep(60)",
            store_url,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert "held" == holder.stdout.readline().strip()
    finally:
        holder.kill()
        holder.wait()
    with store.lock("nightly", ttl_seconds=3600) as successor:
        assert os.getpid() == successor.pid


# Leases -------------------------------------------------------------------------------------

_HOLD_ON_ANOTHER_HOST = (
    "import socket, sys, time\n"
    "socket.gethostname = lambda: 'another-pod'\n"
    "from monitor.store import open_store\n"
    "s = open_store(sys.argv[1])\n"
    "held = s.lock('nightly', ttl_seconds=float(sys.argv[2]))\n"
    "held.__enter__()\n"
    "print('held', flush=True)\n"
    "time.sleep(120)\n"
)


def _lease_end(store_url: str) -> datetime:
    """Return when the 'nightly' lock's lease ends, read by a second connection."""
    with open_store(store_url) as other:
        assert isinstance(other, SqlStore)
        with other._db.transaction(write=False) as tx:
            raw = tx.scalar("SELECT expires_at FROM locks WHERE suite = 'nightly'")
            return tx.dialect.read_timestamp(raw)


def _killed_holder_on_another_host(store_url: str, ttl_seconds: float) -> None:
    """Take the 'nightly' lock in a process that claims another host, then SIGKILL it."""
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_ON_ANOTHER_HOST, store_url, str(ttl_seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert "held" == holder.stdout.readline().strip()
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.slow
def test_a_held_lock_is_renewed_past_its_first_lease(store: SqlStore, store_url: str) -> None:
    """A holder's lease is renewed while its block runs, so the lock outlives one lease."""
    with store.lock("nightly", ttl_seconds=0.4, renew_seconds=0.05), open_store(store_url) as other:
        time.sleep(1.0)
        with pytest.raises(StoreLockedError), other.lock("nightly"):
            pass


@pytest.mark.slow
def test_a_killed_holder_on_another_host_loses_its_lock_when_the_lease_ends(
    store: SqlStore, store_url: str
) -> None:
    """A lock of a SIGKILLed process on another host blocks its suite only until its lease ends."""
    _killed_holder_on_another_host(store_url, ttl_seconds=1.5)
    if store.dialect == "sqlite":  # PostgreSQL frees it at once (the advisory lock)
        with pytest.raises(StoreLockedError), store.lock("nightly"):
            pass
    time.sleep(1.6)
    with store.lock("nightly") as successor:
        assert socket.gethostname() == successor.host


@pytest.mark.slow
@pytest.mark.service
def test_a_postgresql_lock_whose_holder_connection_ended_is_taken_over_at_once(
    postgres_schema_url: str,
) -> None:
    """On PostgreSQL the holder's session advisory lock ends with its connection: no wait."""
    with open_store(postgres_schema_url):
        pass  # create the schema before the holder starts
    _killed_holder_on_another_host(postgres_schema_url, ttl_seconds=3600)
    deadline = time.monotonic() + 5  # the server notices the closed socket within moments
    with open_store(postgres_schema_url) as store:
        while True:
            try:
                with store.lock("nightly") as successor:
                    assert os.getpid() == successor.pid
                return
            except StoreLockedError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)


def test_a_lock_of_an_earlier_process_with_our_pid_is_taken_over(
    store: SqlStore, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lock left with this pid by another process (a restarted container's PID 1) is free."""
    from monitor.store import locks

    with ExitStack() as earlier:
        monkeypatch.setattr(locks, "process_token", lambda: "earlier-process")
        earlier.enter_context(store.lock("nightly", ttl_seconds=3600, renew_seconds=3600))
        monkeypatch.undo()
        with open_store(store_url) as restarted, restarted.lock("nightly") as successor:
            assert os.getpid() == successor.pid


def test_a_lock_held_by_this_process_stays_held(store: SqlStore, store_url: str) -> None:
    """Another store of this very process (a daemon's other worker) does not take it over."""
    with (
        store.lock("nightly", ttl_seconds=3600),
        open_store(store_url) as other,
        pytest.raises(StoreLockedError),
        other.lock("nightly"),
    ):
        pass


@pytest.mark.slow
def test_a_lease_is_renewed_to_its_length_from_now(store: SqlStore, store_url: str) -> None:
    """A renewal moves the lease's end to a full lease after the renewal."""
    with store.lock("nightly", ttl_seconds=0.6, renew_seconds=0.1) as holder:
        time.sleep(0.4)
        renewed = _lease_end(store_url)
    assert holder.since + timedelta(seconds=0.6) < renewed


def test_openers_of_a_new_store_at_once_all_open_it(store_url: str) -> None:
    """Eight processes' worth of openers racing on an empty database all open it: the
    version table is created once, not refused to all but the first."""
    from concurrent.futures import ThreadPoolExecutor

    def opened(_: int) -> int:
        with open_store(store_url) as store:
            return len(store.list_runs())

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert [0] * 8 == list(pool.map(opened, range(8)))
