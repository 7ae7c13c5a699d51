"""`retrieval-monitor baseline export` writes the pinned baseline as a baseline file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monitor.cli import main
from monitor.config import config_hash, load_config
from tests.test_cli_gate import write_config


def test_export_writes_the_pinned_run_with_the_suites_config_hash(tmp_path: Path) -> None:
    """The file holds the pinned run's id, the suite's config hash and its metric names."""
    config = write_config(tmp_path)
    main(["run", "--config", str(config), "--no-progress"])
    path = tmp_path / "baseline.json"
    main(
        [
            "baseline",
            "export",
            "--config",
            str(config),
            "--suite",
            "larkfield",
            "--output",
            str(path),
        ]
    )
    suite = load_config(config).suite("larkfield")
    document = json.loads(path.read_text())
    assert (1, config_hash(suite), [str(m) for m in suite.metrics]) == (
        document["run_id"],
        document["config_hash"],
        document["metrics"],
    )


def test_export_without_a_baseline_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A suite with no pinned baseline is exit 2, saying how to pin one, and writes no file."""
    config = write_config(tmp_path)
    path = tmp_path / "baseline.json"
    code = main(
        [
            "baseline",
            "export",
            "--config",
            str(config),
            "--suite",
            "larkfield",
            "--output",
            str(path),
        ]
    )
    assert 2 == code
    expected = f"`retrieval-monitor baseline set --config {config.absolute()} --suite larkfield`"
    assert f"has no baseline; pin one with {expected}" in capsys.readouterr().err
    assert not path.exists()
