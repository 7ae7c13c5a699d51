"""``retrieval-monitor report``: show a stored run against its suite's baseline.

:func:`monitor.report.compose.compose_report` composes the report; this command parses the
arguments, opens the store, and prints or writes the chosen rendering. Formats:
``table`` (terminal text), ``json`` (one object), ``csv`` (one row per metric) and ``html``
(one self-contained page with trend charts). Exit codes: 0 the report was written; 2 an
unknown suite or run, or no run of the suite yet.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from monitor.cli import arguments
from monitor.cli.run import add_config_options, load, store_target
from monitor.errors import UsageError

if TYPE_CHECKING:
    from monitor.report.records import Report

FORMATS = ("table", "json", "csv", "html")


def register(subparsers: Any) -> None:
    """Add the ``report`` sub-command."""
    parser = subparsers.add_parser(
        "report",
        help="show a stored run against its baseline (table, JSON, CSV or HTML)",
        description=(
            "Compare the latest successful run of a suite (or the run given by --run) with "
            "the suite's baseline, using the suite's rules, and print or write the result. "
            "The latest run is the newest that is not the pinned baseline itself."
        ),
    )
    add_config_options(parser)
    parser.add_argument("--suite", required=True, metavar="NAME", help="the suite to report on")
    parser.add_argument(
        "--run", type=arguments.row_id, metavar="ID", dest="run_id", help="report on this run"
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="table",
        help="table, JSON, CSV (a row per metric) or a self-contained HTML page (default: table)",
    )
    parser.add_argument(
        "--output",
        type=arguments.output_file,
        metavar="FILE",
        help="write to FILE (atomically) instead of stdout",
    )
    parser.set_defaults(handler=report)


def report(args: argparse.Namespace) -> int:
    """Render the report in the chosen format to stdout or ``--output``; return 0."""
    from monitor.io import write_text_atomic
    from monitor.report.compose import compose_report
    from monitor.store import open_store

    config = load(args)
    suite = config.suite(args.suite)
    target = store_target(args, config)
    if _missing_sqlite_file(target):  # opening it would create an empty database
        raise _no_run(suite.name)
    with open_store(target) as store:
        built = compose_report(store, suite, run_id=args.run_id)
    text = _RENDERERS[args.format](built)
    if args.output is not None:
        write_text_atomic(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


def _missing_sqlite_file(target: str) -> bool:
    """Return whether ``target`` names a SQLite file that does not exist."""
    from monitor.store.location import store_location

    path = store_location(target).path
    return path is not None and not path.expanduser().exists()


def _no_run(suite: str) -> UsageError:
    from monitor.report.compose import no_run_error

    return no_run_error(suite)


def _render_table(report: Report) -> str:
    from monitor.report import render_comparison

    text = render_comparison(
        report.comparison, report.run.means, bands=report.bands, config_file=report.config_file
    )
    return text + "\n"


def _render_json(report: Report) -> str:
    from monitor.report.tables import render_json

    return render_json(report)


def _render_csv(report: Report) -> str:
    from monitor.report.tables import render_csv

    return render_csv(report)


def _render_html(report: Report) -> str:
    from monitor.report.html import render_html

    return render_html(report)


_RENDERERS: dict[str, Callable[[Report], str]] = {
    "table": _render_table,
    "json": _render_json,
    "csv": _render_csv,
    "html": _render_html,
}
