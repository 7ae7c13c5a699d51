"""Runs on a change of the corpus: the plug-in's corpus_fingerprint(), ``trigger: on_change``,
what the daemon's polls decide, the stored fingerprint, and what a run records and exports.

The waits of a watch (settle, min_interval) are driven with an injected clock; the daemon
runs its real scheduler with polls 20 ms apart, so no test sleeps for long.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml

from monitor.cli import main
from monitor.cli.validate import check_builds
from monitor.compare.corpus import corpus_notes
from monitor.config import MonitorConfig, config_hash, load_config_text
from monitor.config.model import TriggerConfig
from monitor.daemon import Daemon
from monitor.daemon.change import ChangeWatch
from monitor.errors import ConfigError, SearchOutputError, StoreError, UsageError
from monitor.exporters import SuiteSnapshot, render
from monitor.job import run_suite
from monitor.search import corpus_fingerprint, fingerprint_digest, has_corpus_fingerprint
from monitor.store import RunRecord, Store, open_store

#: The fake search: it answers every query with one document and reports the corpus that a
#: JSON file describes; ``{"fail": true}`` makes corpus_fingerprint() raise. Every build and
#: close is appended to a log beside the file.
FAKE_SEARCH = """\
import json
from pathlib import Path


class Corpus:
    def __init__(self, state):
        self.state = Path(state)
        self.events = self.state.with_suffix(".events")
        with self.events.open("a") as log:
            log.write("built\\n")

    def __call__(self, query, k):
        return ["doc-1"]

    def corpus_fingerprint(self):
        fingerprint = json.loads(self.state.read_text())
        if fingerprint.get("fail"):
            raise ConnectionError("the index is unreachable")
        return fingerprint

    def close(self):
        with self.events.open("a") as log:
            log.write("closed\\n")


def make(state):
    return Corpus(state)
"""

#: How long a daemon test waits for what it expects before failing.
WAIT_SECONDS = 5.0

FAST = {"kind": "on_change", "poll_interval": 0.02, "settle": 0, "min_interval": 0}


def until(condition: Callable[[], bool], seconds: float = WAIT_SECONDS) -> None:
    """Wait until ``condition()`` holds, failing after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


class Clock:
    """A monotonic clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        """Move the clock ``seconds`` on."""
        self.now += seconds


@dataclass
class Corpus:
    """The fake search's corpus: a JSON file the test rewrites, and the search's log."""

    folder: Path
    state: Path = field(init=False)

    def __post_init__(self) -> None:
        self.state = self.folder / "corpus.json"
        (self.folder / "trigger_fake_search.py").write_text(FAKE_SEARCH)
        self.set(documents=100, updated="2026-01-01")

    def set(self, **fingerprint: object) -> None:
        """Make the corpus report ``fingerprint``."""
        self.state.write_text(json.dumps(fingerprint))

    def digest(self) -> str:
        """Return the digest of what the corpus reports now."""
        return fingerprint_digest(json.loads(self.state.read_text()))

    def events(self) -> list[str]:
        """Return the builds and closes of the fake search so far."""
        log = self.state.with_suffix(".events")
        return log.read_text().split() if log.exists() else []


@pytest.fixture
def corpus(tmp_path: Path) -> Corpus:
    """Return a fresh corpus for the fake search."""
    return Corpus(tmp_path)


def config_of(corpus: Corpus, trigger: object = FAST, **changes: object) -> MonitorConfig:
    """Return a config of one suite, ``docs``, searching the fake search over ``corpus``."""
    suite: dict[str, object] = {
        "evalset": {"bundled": "larkfield"},
        "search": {
            "kind": "python",
            "target": "trigger_fake_search:make",
            "path": str(corpus.folder),
            "factory": True,
            "kwargs": {"state": str(corpus.state)},
        },
        "schedule": {"interval": "1h"},
        "trigger": trigger,
        "rules": [],
        "notifiers": [],
        **changes,
    }
    return load_config_text(yaml.safe_dump({"suites": {"docs": suite}}), "test.yaml")


def bundled_config(trigger: object) -> MonitorConfig:
    """Return a config whose suite replays a saved run (a search with no fingerprint)."""
    suite = {
        "evalset": {"bundled": "larkfield"},
        "search": {"kind": "replay", "bundled": "larkfield/keyword"},
        "trigger": trigger,
    }
    return load_config_text(yaml.safe_dump({"suites": {"docs": suite}}), "test.yaml")


class Endpoint:
    """A ``/metrics`` stand-in that keeps every snapshot it is given."""

    def __init__(self) -> None:
        self.snapshots: list[SuiteSnapshot] = []

    def update(self, snapshot: SuiteSnapshot) -> None:
        """Keep ``snapshot``."""
        self.snapshots.append(snapshot)

    def forget(self, suite: str) -> None:
        """Forget nothing: the tests read every snapshot."""


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """Return where the tests' SQLite store lives."""
    return tmp_path / "monitor.db"


@pytest.fixture
def make(store_path: Path, caplog: pytest.LogCaptureFixture) -> Iterator[Callable[..., Daemon]]:
    """Build and start daemons on the tmp store; shut them down at the end."""
    caplog.set_level(logging.INFO, logger="monitor.daemon")
    made: list[Daemon] = []

    def build(config: MonitorConfig, **options: Any) -> Daemon:
        options.setdefault("store_target", lambda _config: str(store_path))
        options.setdefault("initial_run", False)
        options.setdefault("shutdown_grace", 5.0)
        daemon = Daemon(config, **options)
        made.append(daemon)
        daemon.start()
        return daemon

    yield build
    for daemon in made:
        daemon.shutdown()
    for daemon in made:
        until(lambda d=daemon: not any(s.running for s in d.snapshot().suites.values()))


def events(caplog: pytest.LogCaptureFixture, name: str) -> list[dict[str, Any]]:
    """Return the daemon's log events called ``name``, in order."""
    return [r.msg for r in caplog.records if isinstance(r.msg, dict) and r.msg.get("event") == name]


def runs_of(store_path: Path) -> list[RunRecord]:
    """Return the stored runs of ``docs``, oldest first."""
    with open_store(store_path) as store:
        return [store.get_run(s.run_id) for s in reversed(store.list_runs("docs"))]


def known(store_path: Path) -> str | None:
    """Return the corpus digest the store keeps for ``docs``."""
    with open_store(store_path) as store:
        found = store.known_corpus("docs")
    return None if found is None else found.fingerprint


def seed(config: MonitorConfig, store_path: Path, fingerprint: str | None = None) -> None:
    """Run ``docs`` once, and store ``fingerprint`` as its corpus when given."""
    with open_store(store_path) as store:
        run_suite(config.suites["docs"], store, progress=False)
        if fingerprint is not None:
            store.set_known_corpus("docs", fingerprint, {})


# -- the plug-in contract ------------------------------------------------------------------


def test_the_digest_is_the_same_whatever_the_order_of_the_keys() -> None:
    """Two mappings with the same items give the same 16-digit hex digest."""
    one = fingerprint_digest({"documents": 10, "updated": "2026-01-01", "model": "e5"})
    other = fingerprint_digest({"model": "e5", "updated": "2026-01-01", "documents": 10})
    assert (one, 16, True) == (other, len(one), all(c in "0123456789abcdef" for c in one))


def test_the_digest_changes_with_any_value() -> None:
    """One more document gives another digest."""
    assert fingerprint_digest({"documents": 10}) != fingerprint_digest({"documents": 11})


def test_a_search_without_corpus_fingerprint_reports_none() -> None:
    """A plain search function has no fingerprint: None, and nothing to poll."""

    def search(query: str, k: int) -> list[str]:
        return []

    assert (None, False) == (corpus_fingerprint(search), has_corpus_fingerprint(search))


def test_values_that_are_not_scalars_are_kept_as_text() -> None:
    """A datetime or a NaN in the fingerprint is kept as its str, as stats() values are."""

    class Search:
        def __call__(self, query: str, k: int) -> list[str]:
            return []

        def corpus_fingerprint(self) -> dict[str, object]:
            return {"updated": datetime(2026, 1, 1, tzinfo=timezone.utc), "m": float("nan")}

    assert {"updated": "2026-01-01 00:00:00+00:00", "m": "nan"} == corpus_fingerprint(Search())


def test_a_fingerprint_that_is_not_a_mapping_is_refused() -> None:
    """corpus_fingerprint() returning a list raises SearchOutputError."""

    class Search:
        def __call__(self, query: str, k: int) -> list[str]:
            return []

        def corpus_fingerprint(self) -> list[int]:
            return [1, 2]

    with pytest.raises(SearchOutputError, match="corpus_fingerprint"):
        corpus_fingerprint(Search())


# -- the config ----------------------------------------------------------------------------


def test_on_change_alone_takes_the_default_waits(corpus: Corpus) -> None:
    """``trigger: on_change`` polls every 60 s, settles 30 s, runs at most every 300 s."""
    trigger = config_of(corpus, "on_change").suites["docs"].trigger
    assert TriggerConfig("on_change", 60.0, 30.0, 300.0) == trigger


def test_the_trigger_options_are_read_as_intervals(corpus: Corpus) -> None:
    """poll_interval, settle and min_interval take 30s, 0 and 10m."""
    given = {"kind": "on_change", "poll_interval": "30s", "settle": 0, "min_interval": "10m"}
    trigger = config_of(corpus, given).suites["docs"].trigger
    assert TriggerConfig("on_change", 30.0, 0.0, 600.0) == trigger


def test_a_suite_keeps_its_cron_schedule_beside_on_change(corpus: Corpus) -> None:
    """A cron schedule and on_change are both kept: the schedule still runs the suite."""
    suite = config_of(corpus, "on_change", schedule={"cron": "0 3 * * *"}).suites["docs"]
    assert ("0 3 * * *", True) == (suite.schedule.cron, suite.trigger.on_change)


def test_a_suite_without_a_trigger_runs_on_its_schedule_alone() -> None:
    """No ``trigger`` is ``schedule``: nothing is polled."""
    suite = load_config_text(
        yaml.safe_dump(
            {
                "suites": {
                    "docs": {
                        "evalset": {"bundled": "larkfield"},
                        "search": {"kind": "replay", "bundled": "larkfield/keyword"},
                    }
                }
            }
        ),
        "test.yaml",
    ).suites["docs"]
    assert ("schedule", False) == (suite.trigger.kind, suite.trigger.on_change)


@pytest.mark.parametrize(
    ("trigger", "key", "expected"),
    [
        ("sometimes", "suites.docs.trigger", "schedule or on_change"),
        ({"settle": "1m"}, "suites.docs.trigger", "the key 'kind'"),
        ({"kind": "schedule", "settle": "1m"}, "suites.docs.trigger.settle", "only with kind"),
        ({"kind": "on_change", "settle": -1}, "suites.docs.trigger.settle", "a wait"),
        ({"kind": "on_change", "poll_interval": 0}, "suites.docs.trigger.poll_interval", "above 0"),
        ({"kind": "on_change", "min_interval": "soon"}, "suites.docs.trigger.min_interval", "wait"),
        ({"kind": "on_change", "poll": 1}, "suites.docs.trigger.poll", "known keys"),
    ],
)
def test_a_bad_trigger_is_refused_at_its_key(trigger: object, key: str, expected: str) -> None:
    """Each bad trigger is one ConfigError naming its key and what was expected."""
    with pytest.raises(ConfigError) as caught:
        bundled_config(trigger)
    message = str(caught.value)
    assert (True, True, 1) == (key + ":" in message, expected in message, len(message.splitlines()))


def test_the_trigger_leaves_the_config_hash_as_it_was(corpus: Corpus) -> None:
    """A suite's config hash is the same with and without on_change: runs stay comparable."""
    with_trigger = config_of(corpus, "on_change").suites["docs"]
    without = config_of(corpus, "schedule").suites["docs"]
    assert config_hash(without) == config_hash(with_trigger)


def test_on_change_over_a_search_without_fingerprint_is_refused_naming_the_suite() -> None:
    """A replayed run has no corpus_fingerprint(): the config check names suites.docs.trigger."""
    with pytest.raises(ConfigError) as caught:
        check_builds(bundled_config("on_change"))
    message = str(caught.value)
    assert (True, True, 1) == (
        "suites.docs.trigger" in message,
        "'replay' has none" in message,
        len(message.splitlines()),
    )


def test_the_daemon_command_refuses_it_at_start_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`daemon` exits 2 before starting anything, with one error line naming the suite."""
    path = tmp_path / "monitor.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "suites": {
                    "docs": {
                        "evalset": {"bundled": "larkfield"},
                        "search": {"kind": "replay", "bundled": "larkfield/keyword"},
                        "trigger": "on_change",
                    }
                }
            }
        )
    )
    code = main(["daemon", "--config", str(path), "--store", str(tmp_path / "m.db")])
    lines = capsys.readouterr().err.strip().splitlines()
    assert (2, 1, True) == (code, len(lines), "suites.docs.trigger" in lines[-1])


def test_the_daemon_itself_refuses_a_search_it_cannot_watch(store_path: Path) -> None:
    """Daemon.start raises UsageError naming the suite, and starts no scheduler."""
    daemon = Daemon(bundled_config("on_change"), store_target=lambda _c: str(store_path))
    with pytest.raises(UsageError, match="suite 'docs': trigger: on_change needs"):
        daemon.start()
    assert {} == daemon.next_run_times()


# -- what a poll decides -------------------------------------------------------------------


def watch_of(clock: Clock, settle: float = 30.0, min_interval: float = 300.0) -> ChangeWatch:
    """Return a loaded watch of corpus ``a`` with these waits."""
    trigger = TriggerConfig("on_change", 1.0, settle, min_interval)
    watch = ChangeWatch("docs", trigger, lambda query, k: [], clock)
    watch.load("a")
    return watch


def test_a_change_runs_once_after_it_settles() -> None:
    """b is seen, waits out the 30 s settle, runs once, and is then the known corpus."""
    clock = Clock()
    watch = watch_of(clock)
    seen = [watch.observe("b")]
    clock.advance(29)
    seen.append(watch.observe("b"))
    clock.advance(1)
    seen.append(watch.observe("b"))
    watch.begin_run()
    watch.ran(clock())
    watch.stored("b")
    seen.append(watch.observe("b"))
    assert ["changed", "settling", "run", "same"] == seen


def test_a_burst_of_changes_gives_one_run_once_it_stops() -> None:
    """Each change restarts the settle: b, c, d 10 s apart run once, for d, 30 s after it."""
    clock = Clock()
    watch = watch_of(clock)
    seen = []
    for digest in ("b", "c", "d"):
        seen.append(watch.observe(digest))
        clock.advance(10)
    seen.append(watch.observe("d"))
    clock.advance(20)
    seen.append(watch.observe("d"))
    assert ["changed", "changed", "changed", "settling", "run"] == seen


def test_min_interval_holds_the_next_change_run_back() -> None:
    """A change 1 s after a change-run settles at 31 s but runs only at 300 s."""
    clock = Clock()
    watch = watch_of(clock, settle=30, min_interval=300)
    watch.observe("b")
    clock.advance(30)
    assert "run" == watch.observe("b")
    watch.ran(clock())
    watch.stored("b")
    clock.advance(1)
    seen = [watch.observe("c")]
    clock.advance(30)
    seen.append(watch.observe("c"))
    clock.advance(268)
    seen.append(watch.observe("c"))
    clock.advance(1)
    seen.append(watch.observe("c"))
    assert ["changed", "waiting", "waiting", "run"] == seen


def test_a_change_that_goes_back_before_it_settles_runs_nothing() -> None:
    """b, then a again: the known corpus, nothing pending."""
    clock = Clock()
    watch = watch_of(clock)
    watch.observe("b")
    clock.advance(40)
    assert ("same", None) == (watch.observe("a"), watch.pending)


def test_a_run_that_ran_against_the_corpus_covers_its_change() -> None:
    """A run of the daemon that recorded b leaves nothing to run for b."""
    clock = Clock()
    watch = watch_of(clock)
    watch.ran_against("b")
    assert "covered" == watch.observe("b")


# -- the daemon ----------------------------------------------------------------------------


@pytest.mark.slow
def test_a_changed_corpus_runs_the_suite_once_after_settle(
    make: Callable[..., Daemon],
    corpus: Corpus,
    store_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The change is seen, nothing runs while it settles, then one on_change run."""
    config = config_of(corpus, {**FAST, "settle": "30s"})
    seed(config, store_path, corpus.digest())
    clock = Clock()
    make(config, clock=clock)
    corpus.set(documents=101, updated="2026-01-02")
    until(lambda: bool(events(caplog, "corpus_changed")))
    time.sleep(0.1)  # five polls within the settle
    settling = len(runs_of(store_path))
    clock.advance(30)
    until(lambda: len(runs_of(store_path)) == 2 and known(store_path) == corpus.digest())
    time.sleep(0.1)  # five more polls: no second run
    last = runs_of(store_path)[-1]
    assert (1, 2, "on_change", corpus.digest()) == (
        settling,
        len(runs_of(store_path)),
        last.stats["trigger"],
        last.stats["corpus_fingerprint"],
    )


def test_a_change_made_while_the_daemon_was_down_runs_at_start(
    make: Callable[..., Daemon], corpus: Corpus, store_path: Path
) -> None:
    """The first poll compares with the stored fingerprint and runs for the new corpus."""
    config = config_of(corpus)
    seed(config, store_path, corpus.digest())
    corpus.set(documents=250, updated="2026-02-01")
    make(config)
    until(lambda: len(runs_of(store_path)) == 2 and known(store_path) == corpus.digest())
    assert corpus.digest() == runs_of(store_path)[-1].stats["corpus_fingerprint"]


def test_the_first_poll_of_a_suite_that_ran_records_the_fingerprint_and_runs_nothing(
    make: Callable[..., Daemon],
    corpus: Corpus,
    store_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """No stored fingerprint and a run in the store: the digest is stored, no run made."""
    config = config_of(corpus)
    seed(config, store_path)
    make(config)
    until(lambda: bool(events(caplog, "corpus_recorded")))
    time.sleep(0.1)
    assert (corpus.digest(), 1) == (known(store_path), len(runs_of(store_path)))


def test_a_suite_that_never_ran_runs_once_at_the_first_poll(
    make: Callable[..., Daemon], corpus: Corpus, store_path: Path
) -> None:
    """No stored fingerprint and no run: one run, and its corpus stored."""
    make(config_of(corpus))
    until(lambda: known(store_path) == corpus.digest())
    time.sleep(0.1)
    assert 1 == len(runs_of(store_path))


def test_the_run_at_start_up_covers_the_change_it_ran_against(
    make: Callable[..., Daemon],
    corpus: Corpus,
    store_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """With initial_run, a suite that never ran runs once, not twice, before it is stored.

    The first poll may come while the start-up run is going (it covers the change) or after
    it is stored (the suite has run, so its corpus is recorded): one run either way."""
    make(config_of(corpus, {**FAST, "settle": "30s"}), initial_run=True, clock=Clock())
    said = ("corpus_change_covered", "corpus_recorded")
    until(lambda: any(events(caplog, event) for event in said))
    until(lambda: known(store_path) == corpus.digest())
    time.sleep(0.1)
    assert (1, corpus.digest()) == (len(runs_of(store_path)), known(store_path))


def test_a_poll_whose_store_is_down_is_logged_and_tried_again(
    make: Callable[..., Daemon],
    corpus: Corpus,
    store_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The store fails twice: two corpus_poll_failed lines, then the fingerprint is stored."""
    config = config_of(corpus)
    seed(config, store_path)
    failures = iter([StoreError(str(store_path), "the database is down")] * 2)

    def flaky(target: str) -> Store:
        error = next(failures, None)
        if error is not None:
            raise error
        return open_store(target)

    make(config, open_store=flaky)
    until(lambda: known(store_path) == corpus.digest())
    failed = events(caplog, "corpus_poll_failed")
    assert (2, "StoreError") == (len(failed), failed[0]["error_type"])


def test_a_failing_fingerprint_is_logged_and_the_polls_go_on(
    make: Callable[..., Daemon],
    corpus: Corpus,
    store_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A search that cannot say its corpus is logged; once it can, the corpus is recorded."""
    config = config_of(corpus)
    seed(config, store_path)
    corpus.set(fail=True)
    make(config)
    until(lambda: bool(events(caplog, "corpus_poll_failed")))
    corpus.set(documents=100, updated="2026-01-01")
    until(lambda: known(store_path) == corpus.digest())
    assert "ConnectionError" == events(caplog, "corpus_poll_failed")[0]["error_type"]


def test_a_change_run_exports_the_corpus_fingerprint_info_gauge(
    make: Callable[..., Daemon], corpus: Corpus
) -> None:
    """The run's snapshot carries the digest: retrieval_corpus_fingerprint_info{...} 1.0."""
    endpoint = Endpoint()
    make(config_of(corpus), metrics=endpoint)
    until(lambda: bool(endpoint.snapshots))
    line = (
        'retrieval_corpus_fingerprint_info{fingerprint="'
        + corpus.digest()
        + '",pipeline="docs",suite="docs"} 1.0'
    )
    assert line in render(endpoint.snapshots[0]).splitlines()


def test_a_change_run_says_so_in_its_notes_and_alerts_nothing(
    make: Callable[..., Daemon], corpus: Corpus
) -> None:
    """The outcome's notes name the corpus change; the verdict is that of a first run."""
    daemon = make(config_of(corpus))
    until(lambda: daemon.snapshot().suites["docs"].last_outcome is not None)
    outcome = daemon.snapshot().suites["docs"].last_outcome
    assert outcome is not None
    assert (
        "no_baseline",
        f"run started by a change of the search's corpus (corpus fingerprint {corpus.digest()})",
    ) == (
        outcome.comparison.verdict,
        outcome.comparison.notes[0],
    )


def test_shutdown_closes_the_search_the_daemon_polls(
    make: Callable[..., Daemon], corpus: Corpus, store_path: Path
) -> None:
    """Every search built (the poller's and each run's) is closed once the daemon stops."""
    daemon = make(config_of(corpus))
    until(lambda: known(store_path) == corpus.digest())
    daemon.shutdown()
    seen = corpus.events()  # the polled search's build and close, and the run's
    assert (2, 2) == (seen.count("built"), seen.count("closed"))


def test_a_reload_starts_and_stops_the_polls_of_a_suite(
    make: Callable[..., Daemon], corpus: Corpus, store_path: Path
) -> None:
    """Reloading to on_change polls the corpus; reloading back closes the polled search."""
    configs = iter([config_of(corpus), config_of(corpus, "schedule")])
    daemon = make(config_of(corpus, "schedule"), reload_config=lambda: next(configs))
    assert daemon.reload()
    until(lambda: known(store_path) == corpus.digest())
    assert daemon.reload()
    seen = corpus.events()  # the polled search's build and close, and the run's
    assert (2, 2) == (seen.count("built"), seen.count("closed"))


# -- what a run records --------------------------------------------------------------------


def test_a_scheduled_run_records_its_corpus_and_no_trigger(
    corpus: Corpus, store_path: Path
) -> None:
    """run_suite without a trigger records only the digest of the corpus it ran against."""
    seed(config_of(corpus), store_path)
    assert {"corpus_fingerprint": corpus.digest()} == dict(runs_of(store_path)[0].stats)


def record(run_id: int, **stats: object) -> RunRecord:
    """Return a stored-looking run of ``docs`` with ``stats``."""
    moment = datetime(2026, 3, 1, tzinfo=timezone.utc)
    return RunRecord("docs", "docs", moment, moment, stats=stats, run_id=run_id)


def test_a_corpus_changed_since_the_baseline_is_a_note() -> None:
    """Different digests in baseline and run give one note naming both."""
    notes = corpus_notes(record(2, corpus_fingerprint="bbb"), record(1, corpus_fingerprint="aaa"))
    assert (
        "the search's corpus changed since the baseline run 1 (corpus fingerprint aaa -> bbb):"
        " figures may move with it",
    ) == notes


def test_the_same_corpus_as_the_baseline_gives_no_note() -> None:
    """Equal digests, and no trigger: nothing to say."""
    assert () == corpus_notes(record(2, corpus_fingerprint="a"), record(1, corpus_fingerprint="a"))


# -- the stored fingerprint ----------------------------------------------------------------


def test_the_store_keeps_the_last_fingerprint_of_each_suite(store_url: str) -> None:
    """Storing twice keeps the second digest and its detail; another suite has none."""
    with open_store(store_url) as store:
        store.set_known_corpus("docs", "aaaa", {"documents": 1})
        store.set_known_corpus("docs", "bbbb", {"documents": 2, "updated": "2026-01-02"})
    with open_store(store_url) as store:
        kept, other = store.known_corpus("docs"), store.known_corpus("news")
    assert kept is not None
    assert ("bbbb", {"documents": 2, "updated": "2026-01-02"}, None) == (
        kept.fingerprint,
        dict(kept.detail),
        other,
    )
