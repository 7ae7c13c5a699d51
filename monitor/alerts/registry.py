"""Build notifiers from their config: built-in kinds by alias, third parties by entry point.

Built-in kinds are the aliases of :data:`BUILTINS` (``webhook``, ``slack``,
``alertmanager``, ``pagerduty`` and ``stdout``). Third-party packages add kinds through the
entry-point group ``retrieval_monitor.notifiers``, each naming a :data:`NotifierBuilder`
(``(config, context) -> notifier``)::

    [project.entry-points."retrieval_monitor.notifiers"]
    teams = "my_package.monitor_plugin:build"

and the config names them ``kind: entrypoint:teams``. Both are loaded the same way
(:mod:`monitor.plugins`). A built-in kind wins over an entry point of the same name unless
the ``entrypoint:`` form is used.

Options every notifier takes, handled here before the notifier sees the rest:

- ``name``: the notifier's name within its suite (default its kind; a second notifier of
  the same kind gets ``-2`` and so on). The full name, ``<suite>/<name>``, is what the
  outbox and the alert state remember: keep it stable.
- ``min_severity``: ``info``, ``warning`` or ``critical``: only alerts at least this severe.
- ``repeat_interval``: how long to wait before reminding about a firing alert (``4h``,
  ``30m``, seconds; ``0``: every run); default the lifecycle's.
- ``timeout``: seconds one HTTP attempt may take (default 10).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Final, TextIO, TypeAlias, cast

from monitor.alerts.base import Clock, Notification, Notifier, NotifierContext, accepts, utcnow
from monitor.alerts.model import SEVERITIES, Alert
from monitor.config.common import NotifierConfig, ScheduleConfig, Severity
from monitor.config.model import SuiteConfig
from monitor.config.vocab import MAX_INTERVAL_SECONDS, interval_to_seconds
from monitor.daemon.cron import cron_trigger
from monitor.errors import NotifierSetupError, NotifyError, UnknownNotifierKindError
from monitor.plugins import ENTRYPOINT_PREFIX, PluginKinds
from monitor.secrets import Scrubber, secret_values

if TYPE_CHECKING:
    import httpx

    from monitor.config.traffic import OnlineSuiteConfig

#: Builds a notifier from its config and context; raises NotifierSetupError when it cannot.
NotifierBuilder: TypeAlias = Callable[[NotifierConfig, NotifierContext], Notifier]

#: The entry-point group third-party notifier kinds register under.
ENTRY_POINT_GROUP: Final = "retrieval_monitor.notifiers"
#: The options handled for every notifier.
COMMON_OPTIONS: Final = ("name", "min_severity", "repeat_interval", "timeout")

_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")

#: The built-in notifier kinds, the one list of them (the config reads it): alias to
#: ``module:attr``. Imported only when their kind is asked for: httpx stays out of a
#: stdout-only run.
BUILTINS: Final[Mapping[str, str]] = {
    "alertmanager": "monitor.alerts.notifiers.alertmanager:build",
    "pagerduty": "monitor.alerts.notifiers.pagerduty:build",
    "slack": "monitor.alerts.notifiers.slack:build",
    "stdout": "monitor.alerts.notifiers.stdout:build",
    "webhook": "monitor.alerts.notifiers.webhook:build",
}


def _broken(kind: str, reason: str) -> NotifierSetupError:
    return NotifierSetupError(repr(kind), reason)


#: The notifier kinds: :data:`BUILTINS` and the entry points of :data:`ENTRY_POINT_GROUP`.
KINDS: Final = PluginKinds(ENTRY_POINT_GROUP, BUILTINS, UnknownNotifierKindError, _broken)


def build_notifiers(
    suite: SuiteConfig | OnlineSuiteConfig,
    *,
    transport: httpx.BaseTransport | None = None,
    clock: Clock = utcnow,
    environ: Mapping[str, str] | None = None,
    stream: TextIO | None = None,
) -> dict[str, Notifier]:
    """Return the notifiers of ``suite`` by their full names (``<suite>/<name>``), in order.

    ``transport`` is used by every HTTP notifier (None: real connections), ``environ`` is
    where ``secret_env`` variables are read (default ``os.environ``), ``stream`` where
    ``stdout`` writes. Raise NotifierSetupError for a notifier that cannot be built.
    """
    built: dict[str, Notifier] = {}
    plan = notifier_plan(suite, transport=transport, clock=clock, environ=environ, stream=stream)
    for config, context in plan:
        built[context.name] = build_notifier(config, context)
    return built


def notifier_plan(
    suite: SuiteConfig | OnlineSuiteConfig,
    *,
    transport: httpx.BaseTransport | None = None,
    clock: Clock = utcnow,
    environ: Mapping[str, str] | None = None,
    stream: TextIO | None = None,
) -> Iterator[tuple[NotifierConfig, NotifierContext]]:
    """Yield each notifier config of ``suite`` with the context it is built in, in order.

    The contexts carry the notifiers' full names; raise NotifierSetupError (``option``
    ``name``) at the first notifier whose name is invalid or taken. The arguments are those
    of :func:`build_notifiers`.
    """
    interval = schedule_interval_seconds(suite.schedule)
    names: set[str] = set()
    taken: dict[str, int] = {}
    for config in suite.notifiers:
        label = _label(config)
        taken[label] = taken.get(label, 0) + 1
        if taken[label] > 1:
            label = f"{label}-{taken[label]}"
        name = f"{suite.name}/{label}"
        if name in names:
            raise NotifierSetupError(
                name, "two notifiers of the suite have this name", option="name"
            )
        names.add(name)
        context = NotifierContext(
            name=name,
            suite=suite.name,
            interval_seconds=interval,
            transport=transport,
            clock=clock,
            stream=stream,
        )
        if environ is not None:
            context = replace(context, environ=environ)
        yield config, context


def build_notifier(config: NotifierConfig, context: NotifierContext) -> Notifier:
    """Return the notifier ``config`` describes, named ``context.name``.

    The common options (:data:`COMMON_OPTIONS`) are applied here; the notifier's builder
    sees the others. Raise UnknownNotifierKindError (naming the known kinds) for an unknown
    kind and NotifierSetupError when the notifier cannot be built.
    """
    name = context.name
    common = {key: config.options[key] for key in COMMON_OPTIONS if key in config.options}
    own = replace(
        config, options={k: v for k, v in config.options.items() if k not in COMMON_OPTIONS}
    )
    if "timeout" in common:
        context = replace(context, timeout_seconds=_seconds(name, "timeout", common["timeout"]))
    notifier = builder(config.kind)(own, context)
    min_severity = common.get("min_severity")
    if min_severity is not None and min_severity not in SEVERITIES:
        raise NotifierSetupError(
            name,
            f"option 'min_severity' must be one of {', '.join(SEVERITIES)}",
            option="min_severity",
        )
    repeat = None
    if "repeat_interval" in common:
        repeat = _seconds(name, "repeat_interval", common["repeat_interval"], zero=True)
    if min_severity is None and repeat is None:
        return notifier
    return Routed(notifier, min_severity=min_severity, repeat_interval=repeat)


def builder(kind: str) -> NotifierBuilder:
    """Return the builder registered for ``kind``."""
    plugin = KINDS.load(kind)
    if plugin.builtin:
        return cast(NotifierBuilder, plugin.target)
    return _guarded(kind, plugin.target)


def known_kinds() -> tuple[str, ...]:
    """Return the built-in and installed notifier kinds, sorted."""
    return KINDS.known_kinds()


def schedule_interval_seconds(schedule: ScheduleConfig, *, now: datetime | None = None) -> float:
    """Return how long a suite may go between two runs, in seconds.

    For ``interval`` that is the interval; for ``cron``, the longest gap between the next 60
    firing times (a weekday-only schedule gives its weekend), read as crontab(5) reads it.
    Raise UsageError for a cron expression that does not parse.
    """
    if schedule.interval_seconds is not None:
        return float(schedule.interval_seconds)
    if schedule.cron is None:
        return 3600.0
    # Through monitor.daemon.cron, as the config and the daemon read it: crontab weekdays (0 and 7
    # are Sunday), not APScheduler's own numbering.
    trigger = cron_trigger(schedule.cron, timezone=schedule.timezone or "UTC")
    moment = now or datetime.now(timezone.utc)
    previous = None
    longest = 0.0
    for _ in range(60):
        fire = trigger.get_next_fire_time(previous, moment)
        if fire is None:
            break
        if previous is not None:
            longest = max(longest, (fire - previous).total_seconds())
        previous, moment = fire, fire + timedelta(seconds=1)
    return longest or 3600.0


class Routed:
    """A notifier with the common options applied: a minimum severity and its own
    reminder interval."""

    def __init__(
        self,
        notifier: Notifier,
        *,
        min_severity: Severity | None = None,
        repeat_interval: float | None = None,
    ) -> None:
        self.inner = notifier
        self.min_severity = min_severity
        self._repeat = repeat_interval

    @property
    def repeat_interval(self) -> float | None:
        """Return the reminder interval in seconds: its own, else the wrapped notifier's."""
        if self._repeat is not None:
            return self._repeat
        return cast("float | None", getattr(self.inner, "repeat_interval", None))

    def accepts(self, alert: Alert) -> bool:
        """Return whether the alert is severe enough and the wrapped notifier wants it."""
        if self.min_severity is not None and SEVERITIES.index(alert.severity) < SEVERITIES.index(
            self.min_severity
        ):
            return False
        return accepts(self.inner, alert)

    def send(self, notification: Notification) -> None:
        """Send through the wrapped notifier."""
        self.inner.send(notification)

    def close(self) -> None:
        """Close the wrapped notifier."""
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()

    def __repr__(self) -> str:
        return f"Routed({self.inner!r}, min_severity={self.min_severity!r})"


def _label(config: NotifierConfig) -> str:
    given = config.options.get("name")
    if given is None:
        return config.kind.removeprefix(ENTRYPOINT_PREFIX)
    if not isinstance(given, str) or not _NAME.fullmatch(given):
        raise NotifierSetupError(
            config.kind, "option 'name' must be letters, digits, '_', '.' or '-'", option="name"
        )
    return given


def _seconds(name: str, key: str, value: object, *, zero: bool = False) -> float:
    """Return an option given as seconds or as an interval such as ``30m`` or ``4h``."""
    seconds = interval_to_seconds(value)
    valid = (
        seconds is not None
        and seconds <= MAX_INTERVAL_SECONDS
        and (seconds > 0 or (zero and seconds == 0))
    )
    if not valid or seconds is None:
        least = "0 or more, at most a year" if zero else "above 0, at most a year"
        raise NotifierSetupError(
            name,
            f"option {key!r} must be seconds ({least}) or an interval such as 30m or 4h",
            option=key,
        )
    return seconds


def _guarded(kind: str, build: Callable[..., object]) -> NotifierBuilder:
    """Wrap a third-party builder so that its failures become NotifierSetupError and its
    notifier's failures NotifyError, with the config's secrets masked in both."""

    def build_checked(config: NotifierConfig, context: NotifierContext) -> Notifier:
        secrets = _secrets_of(config)
        try:
            notifier = build(config, context)
        except NotifierSetupError:
            raise
        except Exception as exc:
            reason = f"{kind}: {type(exc).__name__}: {secrets(str(exc))}"
            raise NotifierSetupError(context.name, reason) from None
        if not callable(getattr(notifier, "send", None)):
            raise NotifierSetupError(
                context.name, f"{kind} built a {type(notifier).__name__} without send()"
            )
        return PluginNotifier(context.name, cast(Notifier, notifier), secrets)

    return build_checked


class PluginNotifier:
    """A third-party notifier whose unexpected exceptions become NotifyError (secrets
    masked); its optional extras (``repeat_interval``, ``accepts``, ``close``) show
    through."""

    def __init__(self, name: str, notifier: Notifier, secrets: Scrubber) -> None:
        self.name = name
        self.inner = notifier
        self._secrets = secrets

    def send(self, notification: Notification) -> None:
        """Send through the plug-in; turn its other exceptions into NotifyError."""
        try:
            self.inner.send(notification)
        except NotifyError:
            raise
        except Exception as exc:
            reason = f"{type(exc).__name__}: {self._secrets(str(exc))}"
            # Connection trouble may pass; anything else is the plug-in's own failure.
            raise NotifyError(self.name, reason, retryable=isinstance(exc, OSError)) from None

    def __getattr__(self, attribute: str) -> object:
        return getattr(self.inner, attribute)

    def __repr__(self) -> str:
        return f"PluginNotifier({self.name!r}, {type(self.inner).__name__})"


def _secrets_of(config: NotifierConfig) -> Scrubber:
    """Return the scrubber of the secrets in ``config`` (its URL and secret options)."""
    return Scrubber.of((*secret_values(config.url), *secret_values(config.options)))
