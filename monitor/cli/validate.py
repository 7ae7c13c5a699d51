"""Check that a config will run: its files exist and its plug-ins build as a run builds them.

This stage sits after the config and the plug-in registries (search, notifiers), which it
reads; the config itself knows none of them. :func:`check_config` loads and checks a file;
:func:`check_builds` builds every search (the suite's and its eval set's ``reference``), the
suite's ``judge`` and every notifier through the same registries a run uses, then closes
them. Building connects nowhere: the ``http`` search and judge make their client (which
connects on the first request) and the HTTP notifiers make their transport on first use. A
``python`` search or judge is imported and, with ``factory: true``, its factory called, as
at the start of a run.

A plug-in that refuses its options becomes one ConfigError naming the file, the key path and
the line of the option at fault (or of the plug-in's section when the plug-in names none).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from monitor.config.common import NotifierConfig
from monitor.config.model import (
    JudgeConfig,
    MonitorConfig,
    Origin,
    SearchConfig,
    Secret,
    SuiteConfig,
)
from monitor.errors import ConfigError, NotifierSetupError, SearchSetupError


def check_config(
    path: str | os.PathLike[str], *, env: Mapping[str, str] | None = None
) -> MonitorConfig:
    """Load the config file at ``path``, check that the files it names exist, and build (then
    close) every search and notifier as a run would; raise ConfigError for the first problem."""
    from monitor.config import load_checked

    config = load_checked(path, env=env)
    check_builds(config, environ=env)
    return config


def check_builds(config: MonitorConfig, *, environ: Mapping[str, str] | None = None) -> None:
    """Build and close every plug-in of ``config``; raise ConfigError for the first refusal.

    ``environ`` is where notifiers read ``secret_env`` variables (default ``os.environ``).
    """
    for suite in config.suites.values():
        check_suite_builds(suite, config.source, environ=environ)


def check_suite_builds(
    suite: SuiteConfig, source: str, *, environ: Mapping[str, str] | None = None
) -> None:
    """Build and close the plug-ins of ``suite`` (from the file ``source``); a suite with
    ``trigger: on_change`` needs a search that has ``corpus_fingerprint()``."""
    _search(suite.search, source, f"suites.{suite.name}.search", suite.trigger.on_change)
    if suite.evalset.reference is not None:
        _search(suite.evalset.reference, source, f"suites.{suite.name}.evalset.reference")
    if suite.judge is not None:
        _judge(suite.judge, source, f"suites.{suite.name}.judge")
    _notifiers(suite, source, environ)


def _search(config: SearchConfig, source: str, path: str, on_change: bool = False) -> None:
    # Imported here: the search package imports the config's records.
    from monitor.search import build_search, close_search, has_corpus_fingerprint

    try:
        search = build_search(config.kind, config.plugin_options())
    except SearchSetupError as error:
        reason = _masked(error.reason, config)
        raise _refused(config.origin, source, path, error.option, reason, "search") from None
    try:
        if on_change and not has_corpus_fingerprint(search):
            raise ConfigError(
                source,
                path.removesuffix(".search") + ".trigger",
                f"a search with corpus_fingerprint() for trigger: on_change (search kind "
                f"{config.kind!r} has none; use trigger: schedule)",
            )
    finally:
        close_search(search)


def _judge(config: JudgeConfig, source: str, path: str) -> None:
    # Imported here: the judges import the search package.
    from monitor.judgments.judges import JudgeError, build_judge

    try:
        judge = build_judge(config)
    except JudgeError as error:
        reason = _masked(error.reason, config)
        raise _refused(config.origin, source, path, error.option, reason, "judge") from None
    close = getattr(judge, "close", None)
    if callable(close):
        close()


def _notifiers(suite: SuiteConfig, source: str, environ: Mapping[str, str] | None) -> None:
    # Imported here for the reason given in _search.
    from monitor.alerts.base import close_notifiers
    from monitor.alerts.registry import build_notifier, notifier_plan

    plan = notifier_plan(suite, environ=environ)
    for index, config in enumerate(suite.notifiers):
        path = f"suites.{suite.name}.notifiers[{index}]"
        try:
            _, context = next(plan)
            notifier = build_notifier(config, context)
        except NotifierSetupError as error:
            reason = _masked(error.reason, config)
            raise _refused(config.origin, source, path, error.option, reason, "notifier") from None
        close_notifiers([notifier])


def _refused(
    origin: Origin | None,
    source: str,
    path: str,
    option: str | None,
    reason: str,
    what: str,
) -> ConfigError:
    """Return the ConfigError for a plug-in that refused ``option`` (or its whole section)."""
    if origin is None:
        key = f"{path}.{option}" if option else path
        return ConfigError(source, key, f"a {what} that builds ({reason})")
    key, line = origin.at(option)
    return ConfigError(origin.source, key, f"a {what} that builds ({reason})", line=line)


def _masked(reason: str, config: SearchConfig | NotifierConfig | JudgeConfig) -> str:
    """Return ``reason`` with the section's secret values (header values, tokens, a notifier's
    URL, a judge URL's credentials) masked: a plug-in may quote the value it refuses."""
    found: list[str] = []

    def collect(value: object) -> None:
        if isinstance(value, Secret):
            found.append(value.reveal())
        elif isinstance(value, Mapping):
            for item in value.values():
                collect(item)
        elif isinstance(value, tuple):
            for item in value:
                collect(item)

    collect(config.options)
    if isinstance(config, NotifierConfig):
        collect(config.url)
    if isinstance(config, JudgeConfig):
        from monitor.secrets import secret_values

        found.extend(secret_values(config.options))
    # Longest first, so that a secret holding a shorter one is masked whole.
    for secret in sorted(found, key=len, reverse=True):
        if len(secret) >= 4:
            reason = reason.replace(secret, "***")
    return reason
