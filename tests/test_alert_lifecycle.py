"""The lifecycle: firing, reminders, resolve, scopes, and the outbox across runs.

Each test runs against the in-memory fake, the real SQLite store, and (a service test) a
PostgreSQL store at ``MONITOR_POSTGRES_URL``.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from monitor.alerts.build import failure_alert, regression_alert
from monitor.alerts.lifecycle import NAMESPACE, AlertLifecycle, AlertStore
from monitor.alerts.model import Alert, RegressionDetails, failures_checked
from monitor.alerts.outbox import OUTBOX_KIND, flush_outbox, send_now
from monitor.alerts.testing import ManualClock, MemoryStore, RecordingNotifier, breach, no_sleep
from monitor.errors import NotifyError, UsageError
from monitor.store import open_store


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgresql", marks=pytest.mark.service)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[AlertStore]:
    """Return an empty store: the in-memory fake, a SQLite file or a PostgreSQL schema."""
    if request.param == "memory":
        yield MemoryStore()
        return
    where = tmp_path / "monitor.db"
    if request.param == "postgresql":
        where = request.getfixturevalue("postgres_schema_url")
    with open_store(where) as opened:
        yield opened  # type: ignore[misc]


@pytest.fixture
def clock() -> ManualClock:
    """Return a clock at 2030-01-01 UTC that moves only when told."""
    return ManualClock()


@pytest.fixture
def hook() -> RecordingNotifier:
    """Return a recording notifier named ``nightly/hook``."""
    return RecordingNotifier("nightly/hook")


def regression(
    clock: ManualClock, rule: str = "recall@5 max_drop", suite: str = "nightly"
) -> Alert:
    """Return a firing regression alert seen now."""
    evidence = RegressionDetails(breach("recall@5", 0.70, 0.81, rule=rule))
    return regression_alert(suite, evidence, at=clock())


def failure(clock: ManualClock, reason: str = "search_backend_down") -> Alert:
    """Return a firing monitor failure seen now."""
    return failure_alert("nightly", reason, "connection refused", at=clock())


def lifecycle(
    store: AlertStore, clock: ManualClock, *notifiers: RecordingNotifier, hours: float = 4
) -> AlertLifecycle:
    """Return a lifecycle over ``notifiers`` that never sleeps."""
    return AlertLifecycle(
        store,
        {n.name: n for n in notifiers},
        clock=clock,
        sleep=no_sleep,
        repeat_interval=timedelta(hours=hours),
    )


# --- transitions ---------------------------------------------------------------------------


@pytest.mark.slow
def test_a_new_alert_is_notified_once(
    store: AlertStore, clock: ManualClock, hook: RecordingNotifier
) -> None:
    """The first run that sees an alert sends it as firing."""
    lifecycle(store, clock, hook).update("nightly", "regression", [regression(clock)])
    assert [("firing", "recall@5 max_drop")] == hook.transitions()


def test_a_firing_alert_is_not_repeated_before_the_interval(
    store: AlertStore, clock: ManualClock, hook: RecordingNotifier
) -> None:
    """Hourly runs within the repeat interval send nothing more."""
    for _ in range(4):
        lifecycle(store, clock, hook).update("nightly", "regression", [regression(clock)])
        clock.advance(hours=1)
    assert ["firing"] == [t for t, _ in hook.transitions()]


def test_a_firing_alert_is_repeated_after_the_interval(
    store: AlertStore, clock: ManualClock, hook: RecordingNotifier
) -> None:
    """Hourly runs with a 4h interval remind at 4h and 8h."""
    for _ in range(9):
        lifecycle(store, clock, hook).update("nightly", "regression", [regression(clock)])
        clock.advance(hours=1)
    assert ["firing", "repeat", "repeat"] == [t for t, _ in hook.transitions()]


def test_a_reminder_keeps_the_first_start(
    store: AlertStore, clock: ManualClock, hook: RecordingNotifier
) -> None:
    """A repeated alert still starts when the condition was first seen."""
    start = clock()
    lifecycle(store, clock, hook).update("nightly", "regression", [regression(clock)])
    clock.advance(hours=5)
    lifecycle(store, clock, hook).update("nightly", "regression", [regression(clock)])
    assert [start, start] == [n.alert.starts_at for n in hook.sent]


def test_a_cleared_alert_is_resolved_once(
    store: AlertStore, clock: ManualClock, hook: RecordingNotifier
) -> None:
    """The run that no longer sees the alert sends it resolved, the next sends nothing."""
    lifecycle(store, clock, hook).update("nightly", "regression", [regression(clock)])
    clock.advance(hours=1)
    report = lifecycle(store, clock, hook).update("nightly", "regression", [])
    lifecycle(store, clock, hook).update("nightly", "regression", [])
    assert (["firing", "resolved"], clock()) == (
        [t for t, _ in hook.transitions()],
        report.resolved[0].ends_at,
    )


def test_a_resolved_alert_that_fires_again_is_a_new_episode(
    store: AlertStore, clock: ManualClock, hook: RecordingNotifier
) -> None:
    """Firing again after resolving notifies at once, with a new start."""
    for fires in (True, False, True):
        alerts = [regression(clock)] if fires else []
        lifecycle(store, clock, hook).update("nightly", "regression", alerts)
        clock.advance(minutes=10)
    starts = [n.alert.starts_at for n in hook.sent if n.transition == "firing"]
    assert (["firing", "resolved", "firing"], 2, True) == (
        [t for t, _ in hook.transitions()],
        len(starts),
        starts[0] < starts[1],
    )


def test_nothing_firing_and_nothing_remembered_sends_nothing(
    store: AlertStore, clock: ManualClock, hook: RecordingNotifier
) -> None:
    """A healthy suite causes no traffic and leaves no state."""
    lifecycle(store, clock, hook).update("nightly", "regression", [])
    assert ([], None) == (hook.sent, store.get_state(NAMESPACE, "nightly/regression"))


def test_state_is_forgotten_when_everything_resolved(
    store: AlertStore, clock: ManualClock, hook: RecordingNotifier
) -> None:
    """Once its alerts resolved, a suite's state document is deleted."""
    lifecycle(store, clock, hook).update("nightly", "regression", [regression(clock)])
    lifecycle(store, clock, hook).update("nightly", "regression", [])
    assert store.get_state(NAMESPACE, "nightly/regression") is None


def test_each_notifier_keeps_its_own_reminder_interval(
    store: AlertStore, clock: ManualClock, hook: RecordingNotifier
) -> None:
    """A notifier with repeat_interval 0 is told every run, the others every 4 hours."""
    every_run = RecordingNotifier("nightly/am", repeat_interval=0.0)
    for _ in range(3):
        lifecycle(store, clock, hook, every_run).update(
            "nightly", "regression", [regression(clock)]
        )
        clock.advance(hours=1)
    assert (["firing", "repeat", "repeat"], ["firing"]) == (
        [t for t, _ in every_run.transitions()],
        [t for t, _ in hook.transitions()],
    )


def test_a_notifier_added_later_hears_of_a_firing_alert(
    store: AlertStore, clock: ManualClock, hook: RecordingNotifier
) -> None:
    """A notifier configured while an alert fires is told it fires on the next run."""
    lifecycle(store, clock, hook).update("nightly", "regression", [regression(clock)])
    late = RecordingNotifier("nightly/late")
    clock.advance(hours=1)
    lifecycle(store, clock, hook, late).update("nightly", "regression", [regression(clock)])
    assert (["firing"], ["firing"]) == (
        [t for t, _ in hook.transitions()],
        [t for t, _ in late.transitions()],
    )


def test_resolve_goes_only_to_the_notifiers_told_it_fired(
    store: AlertStore, clock: ManualClock, hook: RecordingNotifier
) -> None:
    """A notifier that never got the firing alert does not get its resolve."""

    class Critical(RecordingNotifier):
        def accepts(self, alert: Alert) -> bool:
            return alert.severity == "critical"

    pager = Critical("nightly/pager")
    lifecycle(store, clock, hook, pager).update("nightly", "regression", [regression(clock)])
    lifecycle(store, clock, hook, pager).update("nightly", "regression", [])
    assert ([], ["firing", "resolved"]) == (
        pager.transitions(),
        [t for t, _ in hook.transitions()],
    )


# --- scopes --------------------------------------------------------------------------------


def test_a_monitor_failure_does_not_resolve_regressions(
    store: AlertStore, clock: ManualClock, hook: RecordingNotifier
) -> None:
    """A run that could not measure reports its failure and leaves regressions firing."""
    lifecycle(store, clock, hook).update("nightly", "regression", [regression(clock)])
    clock.advance(hours=1)
    lifecycle(store, clock, hook).update("nightly", "monitor_failure", [failure(clock)])
    assert (
        [("firing", "recall@5 max_drop"), ("firing", "search_backend_down")],
        1,
    ) == (hook.transitions(), len(lifecycle(store, clock).active("nightly", "regression")))


def test_a_completed_run_resolves_the_monitor_failure(
    store: AlertStore, clock: ManualClock, hook: RecordingNotifier
) -> None:
    """The next good run resolves the failure and keeps the regression."""
    life = lifecycle(store, clock, hook)
    life.update("nightly", "regression", [regression(clock)])
    life.update("nightly", "monitor_failure", [failure(clock)])
    clock.advance(hours=1)
    life.update("nightly", "monitor_failure", [], evaluated=failures_checked(None))
    life.update("nightly", "regression", [regression(clock)])
    assert ("resolved", "search_backend_down") == hook.transitions()[-1]


def test_rules_not_evaluated_are_left_alone(
    store: AlertStore, clock: ManualClock, hook: RecordingNotifier
) -> None:
    """An eval set failure does not resolve a search backend failure it never checked."""
    life = lifecycle(store, clock, hook)
    life.update("nightly", "monitor_failure", [failure(clock)])
    missing = failure(clock, "evalset_missing")
    life.update(
        "nightly", "monitor_failure", [missing], evaluated=failures_checked("evalset_missing")
    )
    assert ["search_backend_down", "evalset_missing"] == sorted(
        (a.rule for a in life.active("nightly", "monitor_failure")), reverse=True
    )


def test_suites_are_kept_apart(
    store: AlertStore, clock: ManualClock, hook: RecordingNotifier
) -> None:
    """Updating one suite never resolves another's alerts."""
    life = lifecycle(store, clock, hook)
    life.update("nightly", "regression", [regression(clock)])
    life.update("weekly", "regression", [])
    assert [("firing", "recall@5 max_drop")] == hook.transitions()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("alerts", "message"),
    [
        (lambda c: [regression(c, suite="weekly")], "given as a regression alert of 'nightly'"),
        (lambda c: [failure(c)], "given as a regression alert"),
        (lambda c: [regression(c), regression(c)], "given twice"),
        (lambda c: [regression(c).resolved(c())], "give only firing alerts"),
    ],
)
def test_alerts_outside_the_scope_are_refused(
    store: AlertStore, clock: ManualClock, alerts: object, message: str
) -> None:
    """Another suite's, another kind's, duplicate or resolved alerts are usage errors."""
    with pytest.raises(UsageError, match=message):
        lifecycle(store, clock).update("nightly", "regression", alerts(clock))  # type: ignore[operator]


# --- the outbox ------------------------------------------------------------------------------


def test_an_undeliverable_notification_stays_in_the_outbox(
    store: AlertStore, clock: ManualClock, hook: RecordingNotifier
) -> None:
    """A receiver that is down leaves the notification waiting, its failure recorded."""
    hook.down = True
    report = lifecycle(store, clock, hook).update("nightly", "regression", [regression(clock)])
    (waiting,) = store.pending(OUTBOX_KIND)
    assert (1, False, "firing") == (
        len(report.undelivered),
        "url" in str(waiting.payload),
        waiting.payload["transition"],
    )


def test_the_next_run_delivers_the_waiting_notification_exactly_once(
    store: AlertStore, clock: ManualClock, hook: RecordingNotifier
) -> None:
    """After recovery, the flush delivers it and the update sends no duplicate."""
    hook.down = True
    lifecycle(store, clock, hook).update("nightly", "regression", [regression(clock)])
    hook.down = False
    clock.advance(hours=1)
    life = lifecycle(store, clock, hook)
    life.flush()
    life.update("nightly", "regression", [regression(clock)])
    life.flush()
    assert (["firing"], []) == ([t for t, _ in hook.transitions()], store.pending(OUTBOX_KIND))


def test_no_reminder_piles_up_while_the_receiver_is_down(
    store: AlertStore, clock: ManualClock, hook: RecordingNotifier
) -> None:
    """Ten hours of outage with a 4h interval delivers one firing message, not three."""
    hook.down = True
    for _ in range(10):
        life = lifecycle(store, clock, hook)
        life.flush()
        life.update("nightly", "regression", [regression(clock)])
        clock.advance(hours=1)
    hook.down = False
    lifecycle(store, clock, hook).flush()
    assert ["firing"] == [t for t, _ in hook.transitions()]


def test_a_resolve_during_an_outage_follows_its_firing(
    store: AlertStore, clock: ManualClock, hook: RecordingNotifier
) -> None:
    """Firing and resolve both wait and are delivered in order after recovery."""
    hook.down = True
    life = lifecycle(store, clock, hook)
    life.update("nightly", "regression", [regression(clock)])
    clock.advance(hours=1)
    life.update("nightly", "regression", [])
    hook.down = False
    life.flush()
    life.flush()
    assert ["firing", "resolved"] == [t for t, _ in hook.transitions()]


def test_a_rejected_message_holds_back_the_later_ones_of_its_alert(
    store: AlertStore, clock: ManualClock, hook: RecordingNotifier
) -> None:
    """A resolve never overtakes a firing message the receiver refused."""
    life = lifecycle(store, clock, hook)
    hook.failures = [NotifyError("nightly/hook", "HTTP 400", status=400)] * 5
    life.update("nightly", "regression", [regression(clock)])
    life.update("nightly", "regression", [])
    assert ([], 2) == (hook.sent, len(store.pending(OUTBOX_KIND)))


def test_a_message_rejected_in_every_run_is_given_up_and_frees_its_alert(
    store: AlertStore, clock: ManualClock, hook: RecordingNotifier
) -> None:
    """After five runs of 400s the firing is given up, and the resolve goes out."""
    life = lifecycle(store, clock, hook)
    hook.failures = [NotifyError("nightly/hook", "HTTP 400", status=400)] * 5
    life.update("nightly", "regression", [regression(clock)])
    for _ in range(4):
        life.flush()
    assert 0 == len(store.pending(OUTBOX_KIND))
    life.update("nightly", "regression", [])
    assert [("resolved", "recall@5 max_drop")] == hook.transitions()


def test_a_receiver_that_is_down_is_never_given_up(
    store: AlertStore, clock: ManualClock, hook: RecordingNotifier
) -> None:
    """Connection failures keep the message waiting however many runs they last."""
    hook.down = True
    life = lifecycle(store, clock, hook)
    life.update("nightly", "regression", [regression(clock)])
    for _ in range(8):
        life.flush()
    hook.down = False
    life.flush()
    assert [("firing", "recall@5 max_drop")] == hook.transitions()


def test_a_receiver_that_is_down_is_not_retried_for_every_message(
    store: AlertStore, clock: ManualClock, hook: RecordingNotifier
) -> None:
    """After one message fails with a connection error, the flush skips that notifier."""
    hook.down = True
    life = lifecycle(store, clock, hook)
    life.update(
        "nightly", "regression", [regression(clock, "a"), regression(clock, "b")], deliver=False
    )
    calls_before = len(hook.calls)
    life.flush()
    assert 4 == len(hook.calls) - calls_before  # one message, four attempts


def test_reenqueueing_a_waiting_transition_replaces_it(
    store: AlertStore, clock: ManualClock, hook: RecordingNotifier
) -> None:
    """Putting the same transition in the outbox twice leaves one message."""
    from monitor.alerts.base import Notification
    from monitor.alerts.outbox import enqueue

    note = Notification(regression(clock), "firing", "nightly/hook")
    first, second = enqueue(store, note), enqueue(store, note)
    assert (first, 1) == (second, len(store.pending(OUTBOX_KIND)))


def test_flush_leaves_other_notifiers_messages_alone(
    store: AlertStore, clock: ManualClock, hook: RecordingNotifier
) -> None:
    """Messages for notifiers not given (another suite's) stay waiting."""
    other = RecordingNotifier("weekly/hook")
    lifecycle(store, clock, other).update(
        "nightly", "regression", [regression(clock)], deliver=False
    )
    flush_outbox(store, {hook.name: hook}, sleep=no_sleep)
    assert ([], 1) == (hook.sent, len(store.pending(OUTBOX_KIND)))


def test_an_unreadable_message_is_recorded_and_skipped(
    store: AlertStore, clock: ManualClock, hook: RecordingNotifier
) -> None:
    """A payload this code cannot read counts a failed attempt and blocks nothing else."""
    store.enqueue(OUTBOX_KIND, "x", {"version": 99, "notifier": hook.name})
    lifecycle(store, clock, hook).update("nightly", "regression", [regression(clock)])
    assert (["firing"], 1) == ([t for t, _ in hook.transitions()], len(store.pending(OUTBOX_KIND)))


def test_send_now_delivers_without_the_store(clock: ManualClock, hook: RecordingNotifier) -> None:
    """When the store cannot be written, alerts are sent directly."""
    outcomes = send_now([failure(clock, "store_unwritable")], {hook.name: hook}, sleep=no_sleep)
    assert ([True], [("firing", "store_unwritable")]) == (
        [o.delivered for o in outcomes],
        hook.transitions(),
    )
