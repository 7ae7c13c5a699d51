"""Human-readable and machine-readable reports of a run against its baseline."""

from __future__ import annotations

from monitor.report.text import render_comparison

__all__ = ["render_comparison"]
