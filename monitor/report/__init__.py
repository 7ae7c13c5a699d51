"""Human-readable and machine-readable reports of a run against its baseline.

:func:`compose_report` reads a suite's run, its baseline and its history from the store and
returns the :class:`Report`. Each renderer takes records and returns a string:
:func:`render_comparison` (terminal text), :func:`render_json`, :func:`render_csv` and
:func:`render_html` (one self-contained page with trend charts) read a :class:`Report`;
:func:`build_trends` turns a suite's history into the trends the page charts.
"""

from __future__ import annotations

from monitor.report.compose import compose_report
from monitor.report.history import build_trends, chart_metrics
from monitor.report.html import render_html
from monitor.report.records import Report, Trend, TrendPoint
from monitor.report.tables import render_csv, render_json, report_dict
from monitor.report.text import render_comparison

__all__ = [
    "Report",
    "Trend",
    "TrendPoint",
    "build_trends",
    "chart_metrics",
    "compose_report",
    "render_comparison",
    "render_csv",
    "render_html",
    "render_json",
    "report_dict",
]
