"""Sharded runs: stable slices, parts of one attempt, and one run made exactly once.

Every test runs the bundled Larkfield suite (67 queries) against a SQLite store; the
PostgreSQL load tests are in tests/test_shard_postgres.py.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from datetime import datetime
from pathlib import Path

import pytest

from monitor.alerts.testing import ManualClock, RecordingNotifier
from monitor.cli import main
from monitor.config import load_config_text
from monitor.config.model import SuiteConfig
from monitor.errors import ErrorBudgetExceeded, ShardAttemptFailed, UsageError
from monitor.evalset.bundled import larkfield_evalset
from monitor.job import run_shard, run_suite
from monitor.job.shards import Shard, select, shard_from_env, shard_of, shards_of
from monitor.store import open_store
from monitor.store.schema import MIGRATIONS, Migration, migrate
from monitor.store.shards import ShardStore
from monitor.store.sqlstore import SqlStore

SUITE = """
suites:
  lark:
    evalset: {{bundled: larkfield}}
    search: {search}
    metrics: [recall@5, mrr@10, ndcg@10]
    baseline: {{bundled_run: larkfield/rerank}}
    runner: {{retries: 0, error_budget: 0.0, timeout_seconds: 5}}
    rules:
      - {{metric: mrr@10, max_drop: 0.05}}
    segments: [kind]
"""
GOOD = "{kind: replay, bundled: larkfield/keyword}"
#: Nothing listens on port 9 of the loopback: every query is refused at once.
DOWN = "{kind: http, url: 'http://127.0.0.1:9/search', ids: 'hits[*].id'}"


def suite(search: str = GOOD) -> SuiteConfig:
    return load_config_text(SUITE.format(search=search)).suite("lark")


def failure_alerts(notifier: RecordingNotifier) -> list[tuple[str, str]]:
    return [t for t in notifier.transitions() if t[0] == "firing" and "lark" not in t[1]]


@pytest.mark.parametrize(
    ("text", "shard"), [("0/1", Shard(0, 1)), ("3/4", Shard(3, 4)), (" 1/2 ", Shard(1, 2))]
)
def test_a_shard_is_parsed_from_index_slash_count(text: str, shard: Shard) -> None:
    """INDEX/COUNT parses to the shard it names."""
    assert shard == Shard.parse(text)


@pytest.mark.parametrize("text", ["4/4", "1", "-1/4", "a/b", "1/0", "1/4/2"])
def test_a_malformed_shard_names_what_was_expected(text: str) -> None:
    """A shard outside 0 <= INDEX < COUNT, or not two numbers, is a usage error."""
    with pytest.raises(UsageError, match="INDEX/COUNT"):
        Shard.parse(text)


def test_every_query_falls_in_exactly_one_shard() -> None:
    """The slices of all shards partition the eval set, each keeping eval-set order."""
    evalset = larkfield_evalset()
    slices = [select(evalset, Shard(i, 4)) for i in range(4)]
    assert sorted(evalset.ids) == sorted(qid for part in slices for qid in part.ids)
    assert all(list(part.ids) == [q for q in evalset.ids if q in part] for part in slices)


def test_the_shard_of_a_query_id_is_fixed() -> None:
    """The hash does not depend on the process: these ids always land in these shards."""
    # python3 -c "import hashlib; print([int.from_bytes(hashlib.blake2b(q.encode(),
    #   digest_size=8).digest(), 'big') % 4 for q in ('Q01', 'Q02', 'Q03', 'q-unicode-é')])"
    ids = ("Q01", "Q02", "Q03", "q-unicode-é")
    assert [3, 3, 1, 2] == [shard_of(qid, 4) for qid in ids] == shards_of(ids, 4).tolist()
    many = [f"q{i}-é" for i in range(2000)]
    for count in (1, 2, 7):
        expected = [
            int.from_bytes(hashlib.blake2b(q.encode(), digest_size=8).digest(), "big") % count
            for q in many
        ]
        assert shards_of(many, count).tolist() == expected


def test_the_shard_comes_from_a_kubernetes_indexed_job() -> None:
    """JOB_COMPLETION_INDEX and MONITOR_SHARD_COUNT give the shard; neither gives none."""
    env = {"JOB_COMPLETION_INDEX": "2", "MONITOR_SHARD_COUNT": "5"}
    assert (Shard(2, 5), None) == (shard_from_env(env), shard_from_env({}))


def test_an_index_without_a_count_names_the_missing_variable() -> None:
    """JOB_COMPLETION_INDEX alone is a usage error naming MONITOR_SHARD_COUNT."""
    with pytest.raises(UsageError, match="MONITOR_SHARD_COUNT"):
        shard_from_env({"JOB_COMPLETION_INDEX": "0"})


@pytest.mark.slow
def test_a_sharded_run_stores_the_same_per_query_values_as_an_unsharded_one(
    tmp_path: Path,
) -> None:
    """Four shards make one run whose per-query values and means equal the unsharded run's."""
    with open_store(tmp_path / "whole.db") as store:
        whole = run_suite(suite(), store, notifiers={})
        expected = store.per_query_frame(whole.run_id)
    with open_store(tmp_path / "shards.db") as store:
        results = [
            run_shard(suite(), store, Shard(i, 4), "job-1", notifiers={}) for i in (2, 0, 3, 1)
        ]
        last = results[-1].outcome
        assert last is not None
        got = store.per_query_frame(last.run_id)
        ok_runs = [r for r in store.list_runs("lark") if r.status == "ok"]
    assert ["waiting", "waiting", "waiting", "finalised"] == [r.result for r in results]
    assert expected.drop(columns="latency_seconds").equals(got.drop(columns="latency_seconds"))
    assert dict(whole.run.means) == dict(last.run.means)
    assert whole.comparison.verdict == last.comparison.verdict
    assert 2 == len(ok_runs)  # the seeded baseline and the one sharded run


def test_a_part_alone_is_no_run(tmp_path: Path) -> None:
    """Until the last part is in, the store holds no run of the attempt."""
    with open_store(tmp_path / "m.db") as store:
        run_shard(suite(), store, Shard(0, 2), "job-1", notifiers={})
        assert [] == store.list_runs("lark")


def test_the_part_that_completes_the_attempt_stores_no_copy_of_its_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two shards that finish together each find the other's part missing and encode their
    own; under the lock the second completes the attempt and writes no part of its own."""
    monkeypatch.setattr(ShardStore, "get", lambda self, suite, attempt: None)
    with open_store(tmp_path / "m.db") as store:
        results = [run_shard(suite(), store, Shard(i, 2), "job-1", notifiers={}) for i in (0, 1)]
    assert ["waiting", "finalised"] == [r.result for r in results]
    with sqlite3.connect(tmp_path / "m.db") as db:
        rows = db.execute("SELECT shard_index, outcomes FROM shard_parts ORDER BY 1").fetchall()
    assert [(0, True), (1, False)] == [(index, json.loads(doc) != {}) for index, doc in rows]


def test_a_failed_shard_fails_the_attempt_once_with_one_alert(tmp_path: Path) -> None:
    """A shard whose backend is down stores a failed run and alerts; a later shard does not."""
    notifier = RecordingNotifier("lark/hook")
    with open_store(tmp_path / "m.db") as store:
        with pytest.raises(ErrorBudgetExceeded):
            run_shard(suite(DOWN), store, Shard(0, 2), "job-1", notifiers={"hook": notifier})
        later = run_shard(suite(), store, Shard(1, 2), "job-1", notifiers={"hook": notifier})
        runs = store.list_runs("lark")
    assert ("closed", "failed") == (later.result, later.attempt.status)
    assert ["failed"] == [run.status for run in runs]
    assert [("firing", "error_budget_exceeded")] == notifier.transitions()


def test_a_part_missing_at_the_deadline_fails_the_attempt_when_a_shard_next_starts(
    tmp_path: Path,
) -> None:
    """The next attempt's first shard finds the old one past its deadline and fails it once,
    as not measured: no backend failed, a part of the set was never measured."""
    clock = ManualClock()
    notifier = RecordingNotifier("lark/hook")
    hooks = {"hook": notifier}
    with open_store(tmp_path / "m.db") as store:
        run_shard(
            suite(), store, Shard(0, 2), "job-1", deadline_seconds=60, notifiers=hooks, clock=clock
        )
        clock.advance(61)
        run_shard(suite(), store, Shard(0, 2), "job-2", notifiers=hooks, clock=clock)
        run_shard(suite(), store, Shard(0, 2), "job-3", notifiers=hooks, clock=clock)
        old = ShardStore(store).get("lark", "job-1")
        runs = store.list_runs("lark")
    assert old is not None
    assert ("failed", (1,)) == (old.status, old.missing)
    assert ["failed"] == [run.status for run in runs]
    assert [("firing", "not_measured")] == notifier.transitions()


def test_a_late_part_fails_its_own_attempt(tmp_path: Path) -> None:
    """A retried shard that arrives after the deadline fails the attempt and raises."""
    clock = ManualClock()
    with open_store(tmp_path / "m.db") as store:
        run_shard(
            suite(), store, Shard(0, 3), "job-1", deadline_seconds=60, notifiers={}, clock=clock
        )
        clock.advance(61)
        with pytest.raises(ShardAttemptFailed, match=r"shard\(s\) 1/3, 2/3"):
            run_shard(suite(), store, Shard(1, 3), "job-1", notifiers={}, clock=clock)


def test_shards_of_one_attempt_must_agree_on_the_count(tmp_path: Path) -> None:
    """A shard that counts differently from the attempt's first is a usage error."""
    with open_store(tmp_path / "m.db") as store:
        run_shard(suite(), store, Shard(0, 2), "job-1", notifiers={})
        with pytest.raises(UsageError, match="shard count 2, this shard 3"):
            run_shard(suite(), store, Shard(0, 3), "job-1", notifiers={})


def test_a_shard_refused_for_another_config_fails_its_attempt_at_once(tmp_path: Path) -> None:
    """A shard run with another config can never complete the attempt: the attempt is failed
    then, with the not_measured alert, not left open until its deadline."""
    notifier = RecordingNotifier("lark/hook")
    with open_store(tmp_path / "m.db") as store:
        run_shard(suite(), store, Shard(0, 2), "job-1", config_hash="a", notifiers={})
        with pytest.raises(UsageError, match="config hash a, this shard b"):
            run_shard(
                suite(), store, Shard(1, 2), "job-1", config_hash="b", notifiers={"h": notifier}
            )
        attempt = ShardStore(store).get("lark", "job-1")
        runs = store.list_runs("lark")
    assert attempt is not None
    assert ("failed", ["failed"]) == (attempt.status, [run.status for run in runs])
    assert [("firing", "not_measured")] == notifier.transitions()


def test_the_cli_runs_a_shard_and_reports_the_part(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """run --shard 0/2 --attempt prints the part stored and the parts still missing."""
    store = str(tmp_path / "m.db")
    code = main(["run", "--store", store, "--shard", "0/2", "--attempt", "a", "--format", "json"])
    report = json.loads(capsys.readouterr().out)["suites"][0]
    assert (0, "waiting", ["1/2"]) == (code, report["part"], report["parts_missing"])


def test_the_cli_needs_an_attempt_name_for_a_shard(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--shard without --attempt or MONITOR_SHARD_ATTEMPT exits 2 naming both."""
    monkeypatch.delenv("MONITOR_SHARD_ATTEMPT", raising=False)
    code = main(["run", "--store", str(tmp_path / "m.db"), "--shard", "0/2"])
    assert 2 == code
    assert "--attempt or $MONITOR_SHARD_ATTEMPT" in capsys.readouterr().err


def test_a_schema_step_filling_a_gap_is_applied_later(tmp_path: Path) -> None:
    """A store migrated without a step numbered below its version gets that step next time."""
    gapped = tuple(m for m in MIGRATIONS if m.version != 3)
    with open_store(tmp_path / "m.db") as store:
        assert isinstance(store, SqlStore)
        db = store.database
        with db.transaction(write=True) as tx:
            tx.execute("DELETE FROM schema_version WHERE version = 3")
            tx.execute("ALTER TABLE outbox DROP COLUMN abandoned_reason")
        assert MIGRATIONS[-1].version == migrate(db, store_clock, gapped)
        migrate(db, store_clock)
        with db.transaction(write=False) as tx:
            versions = [v for (v,) in tx.all("SELECT version FROM schema_version ORDER BY 1")]
    assert [m.version for m in MIGRATIONS] == versions


def test_schema_steps_out_of_order_are_refused(tmp_path: Path) -> None:
    """Steps must come in increasing version order."""
    steps = (*MIGRATIONS, Migration(MIGRATIONS[-1].version, "again", ()))
    with open_store(tmp_path / "m.db") as store:
        assert isinstance(store, SqlStore)
        with pytest.raises(ValueError, match="out of order"):
            migrate(store.database, store_clock, steps)


def store_clock() -> datetime:
    return ManualClock().now


def test_a_shard_deadline_must_be_positive(tmp_path: Path) -> None:
    """A deadline of 0 seconds is a usage error."""
    with open_store(tmp_path / "m.db") as store, pytest.raises(UsageError, match="above 0"):
        run_shard(suite(), store, Shard(0, 2), "a", deadline_seconds=0, notifiers={})


def test_a_part_in_another_codec_is_a_store_error_naming_the_store() -> None:
    """A part written by another version (JSON arrays, no codec) is refused clearly."""
    from monitor.errors import StoreError
    from monitor.store.shards import decode_part

    with pytest.raises(StoreError, match=r"store db\.sqlite: a shard's part is in codec None"):
        decode_part(0, {"k": 10, "query_ids": ["q1"], "hit_ids": [["d1"]]}, None, "db.sqlite")


def test_a_part_without_scores_is_a_store_error_that_says_to_run_again() -> None:
    """A part of this codec that an older version wrote without its per-query scores is
    refused: the finisher joins the parts' scores, it does not score the run again."""
    from monitor.errors import StoreError
    from monitor.run import codec
    from monitor.store.shards import decode_part

    old = {"k": 10, "codec": codec.CODEC, "table": ""}
    with pytest.raises(StoreError, match=r"without scores.*run the attempt again"):
        decode_part(0, old, None, "db.sqlite")


def test_parts_that_miss_a_query_of_the_set_are_refused_naming_it() -> None:
    """A merge of parts that hold no outcome for some of the set's queries (a shard of
    another assignment) says how many and names the first."""
    from monitor.job.path import score_run
    from monitor.job.shards import merge
    from monitor.runner import run_queries
    from monitor.search import build_search
    from monitor.store.shards import Part

    evalset = larkfield_evalset()
    sliced = select(evalset, Shard(0, 2))
    result = run_queries(sliced, build_search("replay", {"bundled": "larkfield/keyword"}), k=10)
    part = Part(0, result, score_run(suite(), sliced, result))
    absent = [q for q in evalset.ids if q not in set(sliced.ids)]
    with pytest.raises(UsageError, match=rf"no outcome for {len(absent)} .*first '{absent[0]}'"):
        merge(evalset, [part])
