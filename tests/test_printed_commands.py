"""Every command the program prints for the user to run runs as printed, from any folder."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from monitor.cli import main

pytestmark = pytest.mark.slow


def run_printed(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``command`` as printed (``retrieval-monitor`` is this Python's ``-m monitor``)."""
    words = shlex.split(command)
    assert "retrieval-monitor" == words[0]
    return subprocess.run(
        [sys.executable, "-m", "monitor", *words[1:]],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_command_a_first_run_prints_to_pin_its_baseline_runs_as_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A suite's first run (no seed) prints how to pin it; run as printed, it pins run 1."""
    config = tmp_path / "conf" / "monitor.yaml"
    config.parent.mkdir()
    config.write_text(
        textwrap.dedent(
            f"""\
            store: {{path: {tmp_path / "m.db"}}}
            suites:
              lark:
                evalset: {{bundled: larkfield}}
                search: {{kind: replay, bundled: larkfield/keyword}}
            """
        )
    )
    assert 0 == main(["run", "--config", str(config), "--no-progress"])
    found = re.search(r"pin this run with `([^`]+)`", capsys.readouterr().out)
    assert found is not None
    done = run_printed(found.group(1), cwd=tmp_path)
    assert (0, "suite lark: baseline is now run 1") == (done.returncode, done.stdout.strip())
