"""The package surface: lazy exports and a cheap import."""

from __future__ import annotations

import subprocess
import sys

import pytest

import monitor


def test_every_export_resolves() -> None:
    """Each name in __all__ is importable from the package."""
    for name in monitor.__all__:
        assert getattr(monitor, name) is not None


def test_import_loads_no_heavy_module() -> None:
    """`import monitor` and the CLI's parser load neither numpy nor pandas."""
    code = (
        "import sys, monitor, monitor.cli; monitor.cli.build_parser(); "
        "print(sorted(m for m in ('numpy', 'pandas', 'httpx') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "[]" == out.stdout.strip()


def test_unknown_attribute_raises_attribute_error() -> None:
    """A name the package does not export raises AttributeError."""
    with pytest.raises(AttributeError, match="not_a_name"):
        monitor.not_a_name  # noqa: B018
