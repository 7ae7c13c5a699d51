"""The README's production-traffic commands run as printed, on the example logs."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

pytest.importorskip("duckdb")

from monitor.cli import main

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def section_commands() -> list[list[str]]:
    """Return the commands of the section's first shell block, as argument lists."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Production traffic\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block is not None
    return [shlex.split(line)[1:] for line in block[1].splitlines() if line.strip()]


def test_the_readme_commands_run_as_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each command of the section exits 0 from a checkout's root."""
    shutil.copytree(ROOT / "examples" / "traffic", tmp_path / "examples" / "traffic")
    monkeypatch.chdir(tmp_path)
    codes = [main(command) for command in section_commands()]
    assert [0] * len(codes) == codes
    assert "clicks:coec max_rank=10" in capsys.readouterr().out
