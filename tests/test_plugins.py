"""The plug-in loader: built-in aliases and entry points resolved and loaded one way."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterable
from dataclasses import replace
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from monitor.plugins import Plugin, PluginKinds

GROUP = "retrieval_monitor.test"
ROOT = Path(__file__).resolve().parents[1]


class Unknown(Exception):
    """The unknown-kind error of the test plug-in point."""

    def __init__(self, kind: str, known: tuple[str, ...]) -> None:
        super().__init__(f"{kind!r}: known kinds: {', '.join(known)}")
        self.known = known


class Broken(Exception):
    """The cannot-load error of the test plug-in point."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(f"{kind!r}: {reason}")


def kinds(*points: EntryPoint, **builtins: str) -> PluginKinds:
    """Return a plug-in point with these built-ins and these installed entry points."""

    def discover(group: str) -> Iterable[EntryPoint]:
        return [point for point in points if point.group == group]

    return PluginKinds(GROUP, builtins, Unknown, Broken, discover=discover)


def point(name: str, value: str) -> EntryPoint:
    """Return an entry point of the test group."""
    return EntryPoint(name, value, GROUP)


def test_a_builtin_alias_loads_its_module_attribute() -> None:
    """A built-in alias loads the ``module:attr`` its table names."""
    plugin = kinds(json="json:dumps").load("json")
    assert Plugin("json", point("json", "json:dumps"), __import__("json").dumps, True) == plugin


def test_an_installed_entry_point_loads_as_a_third_party() -> None:
    """An installed entry point loads by its name, marked as not built in."""
    plugin = kinds(point("dumps", "json:dumps")).load("dumps")
    assert (False, "dumps") == (plugin.builtin, plugin.name)


def test_the_entrypoint_prefix_skips_the_builtins() -> None:
    """``entrypoint:<name>`` loads the entry point even when a built-in has the same name."""
    plugin = kinds(point("json", "json:loads"), json="json:dumps").load("entrypoint:json")
    assert ("json:loads", False) == (plugin.point.value, plugin.builtin)


def test_a_builtin_wins_over_an_entry_point_of_its_name() -> None:
    """A bare alias names the built-in even when an entry point has the same name."""
    plugin = kinds(point("json", "json:loads"), json="json:dumps").load("json")
    assert ("json:dumps", True) == (plugin.point.value, plugin.builtin)


@pytest.mark.parametrize("kind", ["email", "entrypoint:json", "entrypoint:"])
def test_an_unknown_kind_lists_builtins_and_entry_points(kind: str) -> None:
    """An unknown kind raises the plug-in point's error, naming it and every known kind."""
    with pytest.raises(Unknown) as caught:
        kinds(point("teams", "json:dumps"), json="json:dumps", csv="csv:reader").load(kind)
    assert f"{kind!r}: known kinds: csv, json, teams" == str(caught.value)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("monitor_no_such_module:build", "cannot load entry point 'monitor_no_such_module:build'"),
        ("json:no_such_attribute", "AttributeError"),
        ("json:__doc__", "entry point 'json:__doc__' is not callable"),
    ],
)
def test_a_target_that_does_not_load_is_the_broken_error(value: str, reason: str) -> None:
    """A target that cannot be imported, or is not callable, raises the broken error."""
    with pytest.raises(Broken, match=reason):
        kinds(broken=value).load("broken")


def test_builtin_kinds_read_no_package_metadata() -> None:
    """The built-in aliases come from the table alone, without listing entry points."""

    def discover(group: str) -> Iterable[EntryPoint]:
        raise AssertionError("entry points listed")

    table = replace(kinds(b="json:dumps", a="json:loads"), discover=discover)
    assert ("a", "b") == table.builtin_kinds()


@pytest.mark.slow
def test_reading_a_config_imports_no_plugin() -> None:
    """Loading and checking a config with every built-in kind leaves their modules unimported."""
    script = textwrap.dedent(
        """
        import sys
        from monitor.config import config_schema, load_config_text
        load_config_text(
            "suites:\\n"
            "  s:\\n"
            "    evalset: {bundled: larkfield}\\n"
            "    search: {kind: http, url: 'http://127.0.0.1:9/search'}\\n"
            "    notifiers:\\n"
            "      - {kind: slack, url: 'https://hooks.example/x'}\\n"
            "      - {kind: alertmanager, url: 'http://127.0.0.1:9'}\\n"
        )
        config_schema()
        plugins = ("monitor.search.", "monitor.alerts.notifiers", "httpx")
        print(sorted(m for m in sys.modules if m.startswith(plugins)))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT)},
    )
    assert "['monitor.search.base', 'monitor.search.registry']" == out.stdout.strip()
