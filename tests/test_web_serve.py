"""Serving the web app: the config's ``ui`` section, ``daemon --ui-port``, a real server."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import httpx
import pytest

from monitor.cli.daemon import start_ui, ui_address
from monitor.config import default_config, load_config
from monitor.errors import ConfigError

CONFIG = """\
version: 1
store: {{path: {store}}}
{ui}
suites:
  demo:
    evalset: {{bundled: larkfield}}
    search: {{kind: replay, bundled: larkfield/keyword}}
"""


def _config(tmp_path: Path, ui: str) -> Path:
    path = tmp_path / "monitor.yaml"
    path.write_text(CONFIG.format(store=tmp_path / "m.db", ui=ui))
    return path


def _args(**values: Any) -> argparse.Namespace:
    defaults = {
        "ui_port": None,
        "ui_address": None,
        "allow_host": [],
        "auth_token_env": None,
        "allow_labeling": False,
        "store": None,
    }
    return argparse.Namespace(**{**defaults, **values})


def test_the_ui_section_names_where_the_daemon_serves_the_app(tmp_path: Path) -> None:
    """`ui: {address, port}` is read into the config; the daemon serves there."""
    config = load_config(_config(tmp_path, "ui: {address: 127.0.0.2, port: 9000}"))
    assert ("127.0.0.2", 9000) == ui_address(_args(), config)


def test_an_empty_ui_section_serves_on_the_defaults(tmp_path: Path) -> None:
    """`ui:` alone serves on 127.0.0.1:8321."""
    assert ("127.0.0.1", 8321) == ui_address(_args(), load_config(_config(tmp_path, "ui:")))


def test_the_options_win_over_the_ui_section(tmp_path: Path) -> None:
    """--ui-port and --ui-address replace the config's values."""
    config = load_config(_config(tmp_path, "ui: {port: 9000}"))
    assert ("::1", 9100) == ui_address(_args(ui_port=9100, ui_address="::1"), config)


def test_without_option_or_section_the_daemon_serves_no_app() -> None:
    """No --ui-port and no `ui:`: no web app."""
    assert None is ui_address(_args(), default_config())


def test_an_unknown_ui_key_is_refused_with_a_suggestion(tmp_path: Path) -> None:
    """A misspelt key under `ui` names the file, the line and the nearest key."""
    with pytest.raises(ConfigError) as caught:
        load_config(_config(tmp_path, "ui: {prot: 9000}"))
    message = str(caught.value)
    assert "monitor.yaml:3" in message
    assert "port" in message


def test_a_port_out_of_range_is_refused(tmp_path: Path) -> None:
    """`ui.port` must be a port number."""
    with pytest.raises(ConfigError, match="65535"):
        load_config(_config(tmp_path, "ui: {port: 70000}"))


@pytest.mark.slow
def test_the_daemons_app_serves_pages_with_the_next_runs(tmp_path: Path) -> None:
    """`daemon --ui-port 0` serves the suites page over HTTP, showing the next run time."""
    from datetime import datetime, timezone

    config = load_config(_config(tmp_path, ""))
    moment = datetime(2030, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    server = start_ui(_args(ui_port=0), config, lambda: {"demo": moment})
    assert server is not None
    try:
        response = httpx.get(server.url, timeout=10)
    finally:
        server.stop()
    assert 200 == response.status_code
    assert "2030-01-02 03:04:05 UTC" in response.text


@pytest.mark.slow
def test_the_daemons_app_answers_the_hosts_allowed_with_allow_host(tmp_path: Path) -> None:
    """`daemon --allow-host NAME` reaches the app: NAME is served, another name is a 421."""
    from monitor.cli import build_parser

    argv = ["daemon", "--ui-port", "0", "--allow-host", "monitor.example.com"]
    args = build_parser().parse_args(argv)
    server = start_ui(args, load_config(_config(tmp_path, "")), dict)
    assert server is not None
    try:
        allowed = httpx.get(server.url, headers={"Host": "monitor.example.com"}, timeout=10)
        other = httpx.get(server.url, headers={"Host": "rebind.example"}, timeout=10)
    finally:
        server.stop()
    assert (200, 421) == (allowed.status_code, other.status_code)
