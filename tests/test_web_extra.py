"""Without the ``web`` extra, ``serve`` and ``daemon --ui-port`` say what to install."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from monitor.cli import main


@pytest.fixture
def without_web(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Make the web extra's modules impossible to import, as where it is not installed."""
    for module in ("starlette", "uvicorn", "jinja2"):
        monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)


@pytest.mark.usefixtures("without_web")
@pytest.mark.parametrize(
    "argv",
    [["serve"], ["daemon", "--ui-port", "0", "--metrics-port", "0"]],
    ids=["serve", "daemon"],
)
def test_the_web_app_without_its_extra_names_the_extra_in_one_line(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 2 and one line naming the extra to install, never a traceback."""
    code = main(argv)
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert (2, "pip install 'retrieval-monitor[web]'", False) == (
        code,
        last[last.index("pip") :],
        "Traceback" in err,
    )
