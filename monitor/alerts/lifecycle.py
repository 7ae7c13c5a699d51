"""The alert lifecycle: notify when an alert starts firing, remind on schedule, resolve.

After each run the job hands :meth:`AlertLifecycle.update` the alerts that fire now for one
suite and one kind. Compared with what the store remembers from earlier runs:

- an alert not seen before starts *firing*: every notifier that accepts it is told;
- an alert still firing is sent again to a notifier only once that notifier's
  ``repeat_interval`` has passed since it was last told (Alertmanager: every run), and not
  while an earlier message to it about this alert still waits in the outbox; its
  ``starts_at`` stays that of the first run that saw it;
- an alert that no longer fires is *resolved*: the notifiers that were told it fired are
  told it cleared, and it is forgotten.

Regressions and monitor failures are separate scopes (one state document each, under
namespace ``alerts``, key ``<suite>/<kind>``): a run that cannot measure never resolves a
regression. ``evaluated`` narrows it further: alerts of rules the run did not evaluate are
left as they are (see :func:`~monitor.alerts.model.failures_checked`).

The state lives in the store, so a one-shot job (cron, Kubernetes CronJob) deduplicates
and resolves across runs. Notifications go through the outbox
(:mod:`monitor.alerts.outbox`): put there first, then delivered, then marked delivered.

Per run::

    lifecycle = AlertLifecycle(store, notifiers)
    lifecycle.flush()                       # last run's undelivered notifications first
    ...                                     # run, compare
    lifecycle.update(suite, "monitor_failure", [], evaluated=failures_checked(None))
    lifecycle.update(suite, "regression", alerts)
"""

from __future__ import annotations

import random
import time
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final, Protocol

from monitor.alerts.base import (
    Clock,
    Notification,
    Notifier,
    Transition,
    accepts,
    repeat_interval_of,
    utcnow,
)
from monitor.alerts.delivery import DEFAULT_POLICY, DeliveryPolicy, Random, Sleep
from monitor.alerts.model import KINDS, Alert, AlertKind
from monitor.alerts.outbox import (
    OUTBOX_KIND,
    DeliveryOutcome,
    OutboxStore,
    enqueue,
    flush_outbox,
    notification_from,
)
from monitor.errors import UsageError
from monitor.logs import get_logger

log = get_logger("monitor.alerts")

#: The store namespace of the alert state.
NAMESPACE: Final = "alerts"
#: How long to wait before reminding about a firing alert, unless a notifier says otherwise.
DEFAULT_REPEAT_INTERVAL: Final = timedelta(hours=4)
#: Version of the state document.
STATE_VERSION: Final = 1


class StateStore(Protocol):
    """The state part of :class:`monitor.store.Store`."""

    def get_state(self, namespace: str, key: str) -> dict[str, Any] | None:
        """Return the document under ``namespace``/``key``, or None."""
        ...

    def put_state(self, namespace: str, key: str, value: Mapping[str, object]) -> None:
        """Store a document under ``namespace``/``key``, replacing any earlier one."""
        ...

    def delete_state(self, namespace: str, key: str) -> bool:
        """Delete the document under ``namespace``/``key``; return whether there was one."""
        ...


class AlertStore(StateStore, OutboxStore, Protocol):
    """What the lifecycle needs of a store: state documents and the outbox."""


@dataclass(frozen=True, slots=True)
class Planned:
    """One notification the lifecycle decided on: ``transition`` of an alert for a notifier,
    and its outbox message."""

    notifier: str
    fingerprint: str
    transition: Transition
    message_id: int


@dataclass(frozen=True, slots=True)
class LifecycleReport:
    """What one :meth:`AlertLifecycle.update` did.

    ``firing`` are the alerts firing after it (with their first ``starts_at``), ``resolved``
    those it resolved, ``planned`` the notifications it put in the outbox and ``deliveries``
    what happened when they (and any older ones waiting for the same notifiers) were sent.
    """

    suite: str
    kind: AlertKind
    firing: tuple[Alert, ...] = ()
    resolved: tuple[Alert, ...] = ()
    planned: tuple[Planned, ...] = ()
    deliveries: tuple[DeliveryOutcome, ...] = field(default=())

    @property
    def undelivered(self) -> tuple[DeliveryOutcome, ...]:
        """Return the deliveries that failed (their messages stay in the outbox)."""
        return tuple(outcome for outcome in self.deliveries if not outcome.delivered)


class AlertLifecycle:
    """Decides and sends the notifications of a store's alerts.

    ``notifiers`` maps full notifier names (as :func:`~monitor.alerts.registry.build_notifiers`
    gives them) to notifiers; the names are remembered in the state and the outbox, so keep
    them stable. ``repeat_interval`` is the default time between reminders; ``clock``,
    ``sleep`` and ``rng`` are injected by tests.
    """

    def __init__(
        self,
        store: AlertStore,
        notifiers: Mapping[str, Notifier],
        *,
        repeat_interval: timedelta = DEFAULT_REPEAT_INTERVAL,
        policy: DeliveryPolicy = DEFAULT_POLICY,
        clock: Clock = utcnow,
        sleep: Sleep = time.sleep,
        rng: Random = random.random,
        namespace: str = NAMESPACE,
    ) -> None:
        if repeat_interval < timedelta(0):
            raise UsageError(f"repeat_interval must not be negative, not {repeat_interval}")
        self.store = store
        self.notifiers = dict(notifiers)
        self.repeat_interval = repeat_interval
        self.policy = policy
        self.clock = clock
        self.sleep = sleep
        self.rng = rng
        self.namespace = namespace

    def flush(self) -> list[DeliveryOutcome]:
        """Deliver what earlier runs left in the outbox for these notifiers (first thing).

        A firing delivered from the outbox whose alert the state does not remember (a run
        was killed after putting it in the outbox, before saving the state) is remembered
        now, as told: the next :meth:`update` neither sends it again under a new key nor
        forgets to resolve it.
        """
        waiting = {message.id: message for message in self.store.pending(OUTBOX_KIND)}
        outcomes = flush_outbox(
            self.store, self.notifiers, policy=self.policy, sleep=self.sleep, rng=self.rng
        )
        for outcome in outcomes:
            message = waiting.get(outcome.message_id) if outcome.message_id is not None else None
            if outcome.delivered and outcome.transition == "firing" and message is not None:
                self._adopt(notification_from(message.payload).alert, outcome.notifier)
        return outcomes

    def _adopt(self, alert: Alert, notifier: str) -> None:
        key = f"{alert.suite}/{alert.kind}"
        remembered = _read_state(self.store.get_state(self.namespace, key), key)
        entry = remembered.get(alert.fingerprint)
        if entry is None:
            self.remember(alert, {notifier: self.clock()})
        elif notifier not in _told(entry):
            told = {**_told(entry), notifier: self.clock()}
            remembered[alert.fingerprint] = _entry(Alert.from_dict(entry["alert"]), told)
            self.store.put_state(
                self.namespace, key, {"version": STATE_VERSION, "alerts": remembered}
            )

    def update(
        self,
        suite: str,
        kind: AlertKind,
        firing: Iterable[Alert],
        *,
        evaluated: Collection[str] | None = None,
        deliver: bool = True,
    ) -> LifecycleReport:
        """Record that exactly ``firing`` fire now among the ``kind`` alerts of ``suite``.

        ``evaluated`` names the rules this run evaluated (None: all of them); a remembered
        alert of another rule is neither resolved nor repeated. With ``deliver`` false the
        notifications are only put in the outbox (the next :meth:`flush` sends them).
        Raise UsageError when an alert is not a firing ``kind`` alert of ``suite`` or two
        have the same identity.
        """
        if kind not in KINDS:
            raise UsageError(f"alert kind {kind!r}: expected one of {', '.join(KINDS)}")
        now = self.clock()
        current = _by_fingerprint(suite, kind, firing)
        key = f"{suite}/{kind}"
        remembered = _read_state(self.store.get_state(self.namespace, key), key)
        waiting = self._waiting()
        plans: list[Notification] = []
        kept: dict[str, dict[str, Any]] = {}
        still: list[Alert] = []
        for fingerprint, alert in current.items():
            entry = remembered.get(fingerprint)
            told = {} if entry is None else _told(entry)
            if entry is not None:
                alert = alert.started(Alert.from_dict(entry["alert"]).starts_at)
            for name, notifier in self.notifiers.items():
                if not accepts(notifier, alert):
                    continue
                last = told.get(name)
                if last is None:
                    transition: Transition = "firing"
                elif (name, fingerprint) in waiting:
                    continue
                elif now - last >= repeat_interval_of(notifier, self.repeat_interval):
                    transition = "repeat"
                else:
                    continue
                plans.append(Notification(alert, transition, name))
                told[name] = now
            kept[fingerprint] = _entry(alert, told)
            still.append(alert)
        resolved: list[Alert] = []
        for fingerprint, entry in remembered.items():
            if fingerprint in current:
                continue
            old = Alert.from_dict(entry["alert"])
            if evaluated is not None and old.rule not in evaluated:
                kept[fingerprint] = entry
                still.append(old)
                continue
            cleared = old.resolved(max(now, old.starts_at))
            resolved.append(cleared)
            for name in _told(entry):
                if name in self.notifiers:
                    plans.append(Notification(cleared, "resolved", name))
                else:
                    log.warning(
                        "resolve_not_told",
                        notifier=name,
                        alert=key,
                        reason="notifier no longer configured",
                    )
        # The outbox first: a crash before the state is saved repeats, never loses, a message.
        planned = tuple(
            Planned(n.receiver, n.alert.fingerprint, n.transition, enqueue(self.store, n))
            for n in plans
        )
        if kept:
            self.store.put_state(self.namespace, key, {"version": STATE_VERSION, "alerts": kept})
        elif remembered:
            self.store.delete_state(self.namespace, key)
        deliveries = tuple(self.flush()) if deliver and planned else ()
        return LifecycleReport(
            suite=suite,
            kind=kind,
            firing=tuple(still),
            resolved=tuple(resolved),
            planned=planned,
            deliveries=deliveries,
        )

    def remember(self, alert: Alert, told: Mapping[str, datetime], *, owed: bool = False) -> None:
        """Remember ``alert`` as firing and told to ``told``'s notifiers (at those times), as
        if this lifecycle had sent it; an alert it already remembers is left as it is.

        For alerts sent without the lifecycle (the store could not be written then): the
        next :meth:`update` that no longer has them firing resolves them. With ``owed``, the
        firing is put in the outbox for every other notifier that takes the alert (those the
        send missed, a receiver down then), so that each is told of it, and of its resolve.
        """
        key = f"{alert.suite}/{alert.kind}"
        remembered = _read_state(self.store.get_state(self.namespace, key), key)
        if alert.fingerprint in remembered:
            return
        told = dict(told)
        if owed:
            for name, notifier in self.notifiers.items():
                if name not in told and accepts(notifier, alert):
                    enqueue(self.store, Notification(alert, "firing", name))
                    told[name] = self.clock()
        remembered[alert.fingerprint] = _entry(alert, told)
        self.store.put_state(self.namespace, key, {"version": STATE_VERSION, "alerts": remembered})

    def active(self, suite: str, kind: AlertKind) -> list[Alert]:
        """Return the ``kind`` alerts of ``suite`` the store remembers as firing."""
        key = f"{suite}/{kind}"
        remembered = _read_state(self.store.get_state(self.namespace, key), key)
        return [Alert.from_dict(entry["alert"]) for entry in remembered.values()]

    def _waiting(self) -> set[tuple[str, str]]:
        """Return the (notifier, fingerprint) pairs with a message still in the outbox."""
        pairs = set()
        for message in self.store.pending(OUTBOX_KIND):
            name = message.payload.get("notifier")
            alert = message.payload.get("alert")
            if isinstance(name, str) and isinstance(alert, Mapping):
                pairs.add((name, str(alert.get("fingerprint"))))
        return pairs


def _by_fingerprint(suite: str, kind: AlertKind, alerts: Iterable[Alert]) -> dict[str, Alert]:
    out: dict[str, Alert] = {}
    for alert in alerts:
        if alert.suite != suite or alert.kind != kind:
            raise UsageError(
                f"alert {alert.rule!r} of {alert.suite!r} ({alert.kind}) "
                f"given as a {kind} alert of {suite!r}"
            )
        if not alert.firing:
            raise UsageError(f"alert {alert.rule!r} is resolved; give only firing alerts")
        if alert.fingerprint in out:
            raise UsageError(f"alert {alert.rule!r} of {suite!r} given twice")
        out[alert.fingerprint] = alert
    return out


def _read_state(document: Mapping[str, Any] | None, key: str) -> dict[str, dict[str, Any]]:
    """Return the remembered alerts by fingerprint (a document this code cannot read is
    logged and treated as empty, so the job still alerts)."""
    if document is None:
        return {}
    alerts = document.get("alerts")
    if document.get("version") != STATE_VERSION or not isinstance(alerts, Mapping):
        log.warning("alert_state_unreadable", key=key, action="starting afresh")
        return {}
    readable = {}
    for fingerprint, entry in alerts.items():
        try:
            Alert.from_dict(entry["alert"])
            _told(entry)
        except (UsageError, KeyError, TypeError, ValueError):
            log.warning("alert_state_entry_dropped", key=key, fingerprint=fingerprint)
            continue
        readable[str(fingerprint)] = dict(entry)
    return readable


def _told(entry: Mapping[str, Any]) -> dict[str, datetime]:
    return {str(name): datetime.fromisoformat(at) for name, at in entry["told"].items()}


def _entry(alert: Alert, told: Mapping[str, datetime]) -> dict[str, Any]:
    return {"alert": alert.to_dict(), "told": {n: at.isoformat() for n, at in told.items()}}
