"""`config validate` builds every plug-in as a run would: what validates runs, what would
fail to build is refused with the file, the key path and the line."""

from __future__ import annotations

import argparse
import socket
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor.alerts.base import close_notifiers
from monitor.alerts.registry import build_notifiers
from monitor.cli import main
from monitor.cli.daemon import load_built
from monitor.cli.validate import check_config
from monitor.config import config_hash, load_config_text
from monitor.errors import ConfigError
from monitor.search import build_search, close_search

HEAD = "suites:\n  nightly:\n    evalset: {bundled: larkfield}\n"
REPLAY = "    search: {kind: replay, bundled: larkfield/keyword}\n"

# A search module for the python kind: its factory's search records that it was closed.
SEARCH_MODULE = """
from pathlib import Path

class Search:
    def __init__(self, marker):
        self.marker = marker

    def __call__(self, query, k):
        return []

    def close(self):
        if self.marker is not None:
            Path(self.marker).write_text("closed")

def make(marker=None):
    return Search(marker)

def plain(query, k):
    return []
"""


@pytest.fixture
def idle_port() -> Iterator[tuple[int, socket.socket]]:
    """Yield a listening port on 127.0.0.1 that nothing is expected to connect to."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    yield server.getsockname()[1], server
    server.close()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Return a folder holding the python search module ``valsearch``."""
    (tmp_path / "valsearch.py").write_text(SEARCH_MODULE, encoding="utf-8")
    return tmp_path


def write(folder: Path, body: str, *, search: str = REPLAY) -> Path:
    """Write a one-suite config (``nightly``) whose ``body`` starts on line 5."""
    text = HEAD + search + textwrap.indent(textwrap.dedent(body).strip("\n") + "\n", "    ")
    path = folder / "monitor.yaml"
    path.write_text(text, encoding="utf-8")
    return path


VALID = {
    "replay and stdout": ("notifiers: [{kind: stdout, min_severity: warning}]", REPLAY),
    "http search": (
        "notifiers: []",
        "    search:\n"
        "      kind: http\n"
        "      url: 'http://127.0.0.1:{port}/search'\n"
        "      params: {q: '{query}'}\n"
        "      headers: {X-Key: abc}\n"
        "      ids: 'hits[*].id'\n"
        "      timeout: 2\n",
    ),
    "python factory": (
        "exporters: [{kind: textfile, path: out/monitor.prom}]",
        "    search: {kind: python, target: 'valsearch:make', factory: true, path: ['.']}\n",
    ),
    "every http notifier": (
        """
        notifiers:
          - {kind: webhook, url: 'http://127.0.0.1:{port}/hook', headers: {X-A: b}}
          - {kind: slack, url: 'http://127.0.0.1:{port}/slack', channel: '#search'}
          - {kind: alertmanager, url: 'http://127.0.0.1:{port}', ends_after: 600}
          - {kind: pagerduty, routing_key: abcdef, repeat_interval: 4h, timeout: 5}
        exporters:
          - {kind: pushgateway, url: 'http://127.0.0.1:{port}', job: nightly}
        """,
        REPLAY,
    ),
}


@pytest.mark.parametrize(("body", "search"), list(VALID.values()), ids=list(VALID))
def test_a_config_that_validates_builds_without_connecting(
    folder: Path, idle_port: tuple[int, socket.socket], body: str, search: str
) -> None:
    """A config `config validate` accepts builds its search and notifiers, and nothing
    connects to the endpoints it names while it is checked."""
    port, server = idle_port
    path = write(
        folder, body.replace("{port}", str(port)), search=search.replace("{port}", str(port))
    )
    assert 0 == main(["config", "validate", str(path)])
    suite = check_config(path).suites["nightly"]
    search_function = build_search(suite.search.kind, suite.search.plugin_options())
    close_search(search_function)
    close_notifiers(build_notifiers(suite).values())
    with pytest.raises(BlockingIOError):
        server.accept()


# (suite body from line 5, search section from line 4, key path under suites.nightly., line,
#  part of the message)
INVALID = {
    "stdout option typo": (
        "notifiers: [{kind: stdout, colour: blue}]",
        REPLAY,
        "notifiers[0].colour",
        5,
        "unknown option 'colour'",
    ),
    "notifier schedule option": (
        "notifiers:\n  - kind: webhook\n    url: 'http://127.0.0.1:9/hook'\n    schedule: hourly",
        REPLAY,
        "notifiers[0].schedule",
        8,
        "unknown option 'schedule'",
    ),
    "min_severity value": (
        "notifiers: [{kind: stdout, min_severity: loud}]",
        REPLAY,
        "notifiers[0].min_severity",
        5,
        "one of info, warning, critical",
    ),
    "repeat_interval value": (
        "notifiers: [{kind: stdout, repeat_interval: soon}]",
        REPLAY,
        "notifiers[0].repeat_interval",
        5,
        "an interval such as 30m",
    ),
    "notifier timeout": (
        "notifiers: [{kind: slack, url: 'http://h/x', timeout: -1}]",
        REPLAY,
        "notifiers[0].timeout",
        5,
        "'timeout' must be seconds",
    ),
    "alertmanager ends_after": (
        "notifiers: [{kind: alertmanager, url: 'http://h', ends_after: x}]",
        REPLAY,
        "notifiers[0].ends_after",
        5,
        "must be a number",
    ),
    "webhook headers": (
        "notifiers: [{kind: webhook, url: 'http://h/x', headers: {X-A: 1}}]",
        REPLAY,
        "notifiers[0].headers",
        5,
        "map names to strings",
    ),
    "pagerduty without key": (
        "notifiers: [{kind: pagerduty}]",
        REPLAY,
        "notifiers[0]",
        5,
        "needs 'routing_key'",
    ),
    "bad notifier name": (
        "notifiers: [{kind: stdout, name: 'two words'}]",
        REPLAY,
        "notifiers[0].name",
        5,
        "option 'name'",
    ),
    "missing signing secret": (
        "notifiers: [{kind: webhook, url: 'http://h/x', secret_env: NOT_SET_ANYWHERE_42}]",
        REPLAY,
        "notifiers[0].secret_env",
        5,
        "NOT_SET_ANYWHERE_42",
    ),
    "uninstalled notifier plug-in": (
        "notifiers: [{kind: 'entrypoint:nosuchplugin'}]",
        REPLAY,
        "notifiers[0]",
        5,
        "unknown notifier kind",
    ),
    "http option typo": (
        "k: 10",
        "    search: {kind: http, url: 'http://h/s', ids: 'hits[*].id', timout: 3}\n",
        "search.timout",
        4,
        "unknown option(s) 'timout'",
    ),
    "http method": (
        "k: 10",
        "    search: {kind: http, url: 'http://h/s', ids: 'hits[*].id', method: PATCH}\n",
        "search.method",
        4,
        "GET or POST",
    ),
    "http timeout": (
        "k: 10",
        "    search: {kind: http, url: 'http://h/s', ids: 'hits[*].id', timeout: 0}\n",
        "search.timeout",
        4,
        "a positive number of seconds",
    ),
    "http ids path": (
        "k: 10",
        "    search: {kind: http, url: 'http://h/s', ids: 'hits[*'}\n",
        "search.ids",
        4,
        "a path such as",
    ),
    "http header value": (
        "k: 10",
        "    search:\n      kind: http\n      url: 'http://h/s'\n      ids: 'hits[*].id'\n"
        "      headers:\n        X-Key: [a, b]\n",
        "search.headers.X-Key",
        9,
        "a string or {env: VARIABLE}",
    ),
    "http body json": (
        "k: 10",
        "    search: {kind: http, url: 'http://h/s', ids: 'a[*]', body: '{bad'}\n",
        "search.body",
        4,
        "a JSON template",
    ),
    "python target": (
        "k: 10",
        "    search: {kind: python, target: 'no_such_module_42:search'}\n",
        "search",
        4,
        "cannot import module",
    ),
    "python kwargs without factory": (
        "k: 10",
        "    search: {kind: python, target: 'valsearch:plain', path: ['.'], kwargs: {a: 1}}\n",
        "search.kwargs",
        4,
        "unless 'factory' is true",
    ),
    "replay format": (
        "k: 10",
        "    search: {kind: replay, path: run.json, format: csv}\n",
        "search.format",
        4,
        "trec or json",
    ),
    "replay run missing": (
        "k: 10",
        "    search: {kind: replay, path: missing.trec}\n",
        "search",
        4,
        "missing.trec",
    ),
    "uninstalled search plug-in": (
        "k: 10",
        "    search: {kind: 'entrypoint:nosuchsearch'}\n",
        "search",
        4,
        "unknown search kind",
    ),
    "pushgateway port": (
        "exporters: [{kind: pushgateway, url: 'http://pg:99999'}]",
        REPLAY,
        "exporters[0].url",
        5,
        "a Pushgateway URL",
    ),
    "textfile folder": (
        "exporters: [{kind: textfile, path: sub.prom}]",
        REPLAY,
        "exporters[0].path",
        5,
        "not a folder",
    ),
}


@pytest.mark.parametrize(
    ("body", "search", "key", "line", "message"), list(INVALID.values()), ids=list(INVALID)
)
def test_a_config_that_would_not_build_fails_validate_at_its_key_and_line(
    folder: Path,
    capsys: pytest.CaptureFixture[str],
    body: str,
    search: str,
    key: str,
    line: int,
    message: str,
) -> None:
    """An option a plug-in or exporter would refuse at run time makes `config validate` exit
    2 with one line naming the file, the line, the key path and what was wrong."""
    (folder / "sub.prom").mkdir()
    path = write(folder, body, search=search)
    assert 2 == main(["config", "validate", str(path)])
    error = capsys.readouterr().err
    assert f"{path}:{line}: suites.nightly.{key}: expected " in error
    assert message in error
    assert "Traceback" not in error


def test_a_refused_secret_option_is_not_shown(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A header value the http search refuses is reported by its key, its value masked."""
    search = (
        "    search:\n      kind: http\n      url: 'http://h/s'\n      ids: 'hits[*].id'\n"
        "      headers: {Authorization: [Bearer-s3cret-value]}\n"
    )
    path = write(folder, "k: 10", search=search)
    assert 2 == main(["config", "validate", str(path)])
    error = capsys.readouterr().err
    assert "suites.nightly.search.headers.Authorization" in error
    assert "s3cret" not in error


def test_validate_closes_what_it_builds(folder: Path) -> None:
    """`config validate` closes the search it built."""
    marker = folder / "closed.txt"
    search = (
        "    search:\n      kind: python\n      target: 'valsearch:make'\n      factory: true\n"
        f"      path: ['.']\n      kwargs: {{marker: '{marker}'}}\n"
    )
    path = write(folder, "k: 10", search=search)
    assert 0 == main(["config", "validate", str(path)])
    assert "closed" == marker.read_text(encoding="utf-8")


def test_an_option_typo_in_defaults_is_reported_where_it_was_written(folder: Path) -> None:
    """A notifier option merged in from ``defaults`` is reported at its line there."""
    path = folder / "monitor.yaml"
    path.write_text(
        "defaults:\n  notifiers:\n    - {kind: stdout, colour: blue}\n"
        "suites:\n  nightly:\n    evalset: {bundled: larkfield}\n" + REPLAY,
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as info:
        check_config(path)
    assert (3, "defaults.notifiers[0].colour") == (info.value.line, info.value.key)


def test_the_daemon_refuses_a_config_whose_notifier_would_not_build(folder: Path) -> None:
    """The daemon's config load (at start and on reload) builds the plug-ins, so an option
    typo stops it instead of failing the first scheduled run."""
    path = write(folder, "notifiers: [{kind: stdout, colour: blue}]")
    args = argparse.Namespace(config=path, store=None)
    with pytest.raises(ConfigError) as info:
        load_built(args)
    assert (5, "suites.nightly.notifiers[0].colour") == (info.value.line, info.value.key)


def test_where_a_section_was_written_does_not_change_the_config_hash() -> None:
    """Moving a search section to another line keeps the suite's config hash."""
    text = HEAD + REPLAY
    moved = HEAD.replace("suites:\n", "suites:\n\n\n") + REPLAY
    first = load_config_text(text, env={}).suites["nightly"]
    second = load_config_text(moved, env={}).suites["nightly"]
    assert config_hash(first) == config_hash(second)


EXAMPLE = Path(__file__).resolve().parent.parent / "config" / "monitor.example.yaml"


def test_the_shipped_example_validates_its_structure_without_its_environment(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``config validate --structure-only`` passes the example as shipped, naming the unset
    variables it read as placeholders."""
    for name in ("SLACK_WEBHOOK_URL", "PAGERDUTY_ROUTING_KEY", "SEARCH_API_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    code = main(["config", "validate", str(EXAMPLE), "--structure-only"])
    out = capsys.readouterr().out
    assert (0, True) == (code, "placeholders: SLACK_WEBHOOK_URL, PAGERDUTY_ROUTING_KEY" in out)


def test_structure_only_still_refuses_a_bad_key_at_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A misspelt key fails ``--structure-only`` as it fails a full check: exit 2, its line."""
    config = tmp_path / "monitor.yaml"
    config.write_text(
        "suites:\n  s:\n    evalset: {path: missing.jsonl}\n"
        '    search: {kind: replay, path: "${NOT_SET_ANYWHERE}"}\n    metrik: [mrr]\n'
    )
    code = main(["config", "validate", str(config), "--structure-only"])
    assert (2, True) == (code, ":5:" in capsys.readouterr().err)
