"""Building notifiers: aliases, entry points, names, and the options every notifier takes."""

from __future__ import annotations

import io
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from monitor.alerts import registry
from monitor.alerts.base import Notification, NotifierContext, accepts, repeat_interval_of
from monitor.alerts.build import failure_alert
from monitor.alerts.model import Alert
from monitor.alerts.notifiers.stdout import StdoutNotifier
from monitor.alerts.registry import build_notifier, build_notifiers, schedule_interval_seconds
from monitor.config import load_config_text
from monitor.config.common import NotifierConfig, ScheduleConfig
from monitor.config.model import EvalSetConfig, SearchConfig, Secret, SuiteConfig
from monitor.errors import NotifierSetupError, NotifyError, UnknownNotifierKindError

T0 = datetime(2030, 1, 1, tzinfo=timezone.utc)


def suite(*notifiers: NotifierConfig, schedule: ScheduleConfig | None = None) -> SuiteConfig:
    """Return a suite ``nightly`` with these notifiers."""
    return SuiteConfig(
        name="nightly",
        evalset=EvalSetConfig(bundled="larkfield"),
        search=SearchConfig(kind="replay"),
        metrics=(),
        k=10,
        pipeline="nightly",
        schedule=schedule or ScheduleConfig(),
        notifiers=notifiers,
    )


def failure(severity: str) -> Alert:
    """Return a monitor failure of the given severity."""
    return failure_alert("nightly", "store_unwritable", "x", at=T0, severity=severity)  # type: ignore[arg-type]


class FakeEntryPoint:
    """An entry point called ``name`` whose ``load`` returns ``target``."""

    def __init__(self, name: str, target: object, value: str = "plugin:build") -> None:
        self.name = name
        self.target = target
        self.value = value

    def load(self) -> object:
        if isinstance(self.target, Exception):
            raise self.target
        return self.target


def install(monkeypatch: pytest.MonkeyPatch, **points: object) -> None:
    """Make ``points`` the installed notifier entry points."""
    fakes: Any = [FakeEntryPoint(name, target) for name, target in points.items()]
    monkeypatch.setattr(registry, "KINDS", replace(registry.KINDS, discover=lambda group: fakes))


class Teams:
    """A third-party notifier that records what it sends."""

    def __init__(self, config: NotifierConfig, context: NotifierContext) -> None:
        self.config = config
        self.context = context
        self.sent: list[Notification] = []

    def send(self, notification: Notification) -> None:
        self.sent.append(notification)


# --- kinds -----------------------------------------------------------------------------------


def test_known_kinds_are_the_builtins_and_the_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    """Installed entry points join the built-in aliases."""
    install(monkeypatch, teams=Teams)
    assert (
        "alertmanager",
        "pagerduty",
        "slack",
        "stdout",
        "teams",
        "webhook",
    ) == registry.known_kinds()


def test_an_unknown_kind_lists_the_known_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    """An unknown alias is an error that names it and every known kind."""
    install(monkeypatch)
    with pytest.raises(UnknownNotifierKindError) as caught:
        build_notifier(NotifierConfig("email"), NotifierContext("s/email"))
    assert (
        "notifier 'email': unknown notifier kind; known kinds: "
        "alertmanager, pagerduty, slack, stdout, webhook"
    ) == str(caught.value)


def test_an_entry_point_builds_a_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    """``entrypoint:teams`` builds the plug-in with its config and context."""
    install(monkeypatch, teams=Teams)
    config = NotifierConfig("entrypoint:teams", options={"room": "search"})
    notifier = build_notifier(config, NotifierContext("s/teams"))
    assert ({"room": "search"}, "s/teams") == (
        notifier.inner.config.plugin_options(),  # type: ignore[attr-defined]
        notifier.inner.context.name,  # type: ignore[attr-defined]
    )


def test_a_plugin_that_does_not_load_is_a_setup_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry point that fails to import names the entry point and the failure."""
    install(monkeypatch, teams=ImportError("no module named teams_sdk"))
    with pytest.raises(NotifierSetupError, match="cannot load entry point 'plugin:build'"):
        build_notifier(NotifierConfig("entrypoint:teams"), NotifierContext("s/teams"))


def test_a_plugin_builder_failure_hides_the_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    """A builder's exception is reported with the config's secrets masked."""

    def build(config: NotifierConfig, context: NotifierContext) -> object:
        raise ValueError(f"cannot reach {config.url.reveal()}")  # type: ignore[union-attr]

    install(monkeypatch, teams=build)
    config = NotifierConfig("entrypoint:teams", url=Secret("https://teams.example/SECRETHOOK"))
    with pytest.raises(NotifierSetupError) as caught:
        build_notifier(config, NotifierContext("s/teams"))
    assert "notifier s/teams: entrypoint:teams: ValueError: cannot reach ***" == str(caught.value)


def test_a_plugin_without_send_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A builder must return something with ``send``."""
    install(monkeypatch, teams=lambda config, context: 42)
    with pytest.raises(NotifierSetupError, match="built a int without send"):
        build_notifier(NotifierConfig("entrypoint:teams"), NotifierContext("s/teams"))


def test_a_plugin_send_crash_becomes_a_notify_error_without_secrets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An exception from a plug-in's send is a NotifyError with the secrets masked."""

    class Leaky(Teams):
        def send(self, notification: Notification) -> None:
            raise ConnectionError(f"refused by {self.config.url.reveal()}")  # type: ignore[union-attr]

    install(monkeypatch, teams=Leaky)
    config = NotifierConfig("entrypoint:teams", url=Secret("https://teams.example/SECRETHOOK"))
    notifier = build_notifier(config, NotifierContext("s/teams"))
    with pytest.raises(NotifyError) as caught:
        notifier.send(Notification(failure("critical"), "firing", "s/teams"))
    assert ("notifier s/teams: ConnectionError: refused by ***", True) == (
        str(caught.value),
        caught.value.retryable,
    )


def test_a_plugins_extras_show_through(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plug-in's own ``repeat_interval`` is seen by the lifecycle."""

    class Hourly(Teams):
        repeat_interval = 3600.0

    install(monkeypatch, teams=Hourly)
    notifier = build_notifier(NotifierConfig("entrypoint:teams"), NotifierContext("s/teams"))
    assert 3600.0 == repeat_interval_of(notifier, timedelta(hours=4)).total_seconds()


# --- names -----------------------------------------------------------------------------------


def test_build_notifiers_names_them_by_suite_and_kind() -> None:
    """Names are ``<suite>/<kind>``, a second of a kind gets ``-2``, ``name`` overrides."""
    built = build_notifiers(
        suite(
            NotifierConfig("stdout"),
            NotifierConfig("stdout"),
            NotifierConfig("stdout", options={"name": "console"}),
        )
    )
    assert ["nightly/stdout", "nightly/stdout-2", "nightly/console"] == list(built)


def test_a_bad_name_is_a_setup_error() -> None:
    """A name must be letters, digits, '_', '.' or '-'."""
    with pytest.raises(NotifierSetupError, match="option 'name'"):
        build_notifiers(suite(NotifierConfig("stdout", options={"name": "a b"})))


def test_build_notifiers_passes_stream_and_environment() -> None:
    """The stdout notifier writes to the given stream; secret_env reads the given environ."""
    out = io.StringIO()
    built = build_notifiers(
        suite(
            NotifierConfig("stdout"),
            NotifierConfig("pagerduty", secret_env="PD_KEY"),
        ),
        stream=out,
        environ={"PD_KEY": "k" * 32},
    )
    stdout = built["nightly/stdout"]
    assert (True, out) == (isinstance(stdout, StdoutNotifier), stdout.stream)  # type: ignore[union-attr]


# --- common options ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("minimum", "severity", "wanted"),
    [
        ("critical", "warning", False),
        ("critical", "critical", True),
        ("warning", "info", False),
        ("warning", "critical", True),
    ],
)
def test_min_severity_filters_alerts(minimum: str, severity: str, wanted: bool) -> None:
    """A notifier with ``min_severity`` accepts only alerts at least that severe."""
    notifier = build_notifier(
        NotifierConfig("stdout", options={"min_severity": minimum}), NotifierContext("s/x")
    )
    assert wanted == accepts(notifier, failure(severity))


@pytest.mark.parametrize(
    ("given", "seconds"), [("30m", 1800.0), (90, 90.0), ("1h30m", 5400.0), (0, 0.0)]
)
def test_repeat_interval_takes_seconds_or_an_interval(given: object, seconds: float) -> None:
    """``repeat_interval`` is seconds or an interval such as 30m; 0 means every run."""
    notifier = build_notifier(
        NotifierConfig("stdout", options={"repeat_interval": given}), NotifierContext("s/x")
    )
    assert seconds == repeat_interval_of(notifier, timedelta(hours=4)).total_seconds()


def test_repeat_interval_overrides_a_notifiers_own() -> None:
    """Configured, it wins over Alertmanager's every-run default."""
    config = NotifierConfig(
        "alertmanager", url=Secret("http://127.0.0.1:9"), options={"repeat_interval": "5m"}
    )
    notifier = build_notifier(config, NotifierContext("s/am"))
    assert 300.0 == repeat_interval_of(notifier, timedelta(hours=4)).total_seconds()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"min_severity": "fatal"}, "min_severity"),
        ({"repeat_interval": "soon"}, "repeat_interval"),
        ({"repeat_interval": -5}, "repeat_interval"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": "1d2"}, "timeout"),
    ],
)
def test_bad_common_options_are_setup_errors(options: dict[str, Any], message: str) -> None:
    """The common options are checked for every notifier."""
    with pytest.raises(NotifierSetupError, match=message):
        build_notifier(NotifierConfig("stdout", options=options), NotifierContext("s/x"))


def test_timeout_reaches_the_notifier(monkeypatch: pytest.MonkeyPatch) -> None:
    """``timeout`` becomes the context's timeout and is not passed as an option."""
    install(monkeypatch, teams=Teams)
    notifier = build_notifier(
        NotifierConfig("entrypoint:teams", options={"timeout": "30s"}), NotifierContext("s/t")
    )
    inner: Teams = notifier.inner  # type: ignore[attr-defined]
    assert (30.0, {}) == (inner.context.timeout_seconds, inner.config.plugin_options())


# --- the suite's interval -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schedule", "seconds"),
    [
        (ScheduleConfig(interval_seconds=900.0), 900.0),
        (ScheduleConfig(cron="*/15 * * * *", interval_seconds=None), 900.0),
        (ScheduleConfig(cron="0 6 * * *", interval_seconds=None), 86400.0),
        (ScheduleConfig(cron="0 6 * * 1-5", interval_seconds=None), 3 * 86400.0),
        (ScheduleConfig(cron="0 6 * * 7", interval_seconds=None), 7 * 86400.0),
        (ScheduleConfig(cron="0 6 * * 6-7", interval_seconds=None), 6 * 86400.0),
    ],
)
def test_schedule_interval_is_the_longest_gap(schedule: ScheduleConfig, seconds: float) -> None:
    """Cron schedules count their longest gap between runs (a weekend for weekdays)."""
    assert seconds == schedule_interval_seconds(schedule, now=T0)


def test_a_sunday_cron_written_as_7_builds_its_notifiers() -> None:
    """A suite scheduled on weekday 7 (crontab's Sunday) gets its notifiers and a week's gap."""
    config = load_config_text(
        "suites:\n"
        "  weekly:\n"
        "    evalset: {bundled: larkfield}\n"
        "    search: {kind: replay, bundled: larkfield/keyword}\n"
        "    schedule: {cron: '0 3 * * 7', timezone: UTC}\n"
        "    notifiers: [{kind: alertmanager, url: 'http://127.0.0.1:9'}]\n"
    )
    built = build_notifiers(config.suite("weekly"))
    assert timedelta(days=14) == built["weekly/alertmanager"].ends_after  # type: ignore[attr-defined]


def test_alertmanager_keeps_alerts_for_two_cron_gaps() -> None:
    """A daily cron suite keeps Alertmanager alerts alive for two days."""
    built = build_notifiers(
        suite(
            NotifierConfig("alertmanager", url=Secret("http://127.0.0.1:9")),
            schedule=ScheduleConfig(cron="0 6 * * *", interval_seconds=None),
        )
    )
    assert timedelta(days=2) == built["nightly/alertmanager"].ends_after  # type: ignore[attr-defined]
