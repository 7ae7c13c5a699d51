"""``retrieval-monitor report``: show a stored run against its suite's baseline.

The comparison is computed again from the stored runs with the suite's current rules,
significance settings and segments; the eval set supplies query texts and segment metadata
(when it cannot be loaded the report still renders, without them, and says so). Formats:
``table`` (terminal text), ``json`` (one object), ``csv`` (one row per metric) and ``html``
(one self-contained page with trend charts). Exit codes: 0 the report was written; 2 an
unknown suite or run, or no run of the suite yet.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from monitor.cli.run import add_config_options, load, store_target
from monitor.errors import MonitorError, StoreLookupError, UsageError

if TYPE_CHECKING:
    from monitor.config.model import SuiteConfig
    from monitor.report.records import Report
    from monitor.store import RunRecord, Store

FORMATS = ("table", "json", "csv", "html")

#: How many recent runs are searched for the latest one that is not the baseline.
_SEARCH_RUNS = 200


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
    parser.add_argument("--run", type=int, metavar="ID", dest="run_id", help="report on this run")
    parser.add_argument("--format", choices=FORMATS, default="table")
    parser.add_argument(
        "--output", type=Path, metavar="FILE", help="write to FILE (atomically) instead of stdout"
    )
    parser.set_defaults(handler=report)


def report(args: argparse.Namespace) -> int:
    """Render the report in the chosen format to stdout or ``--output``; return 0."""
    from monitor.io import write_text_atomic
    from monitor.store import open_store

    config = load(args)
    suite = config.suite(args.suite)
    target = store_target(args, config)
    if _missing_sqlite_file(target):  # opening it would create an empty database
        raise _no_run(suite.name)
    with open_store(target) as store:
        built = build_report(store, suite, run_id=args.run_id)
    text = _RENDERERS[args.format](built)
    if args.output is not None:
        write_text_atomic(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


def build_report(
    store: Store, suite: SuiteConfig, *, run_id: int | None = None, now: datetime | None = None
) -> Report:
    """Return the report of run ``run_id`` (default: the latest) of ``suite`` in ``store``."""
    from monitor.compare import compare_runs
    from monitor.job import load_evalset
    from monitor.report.history import build_trends, chart_metrics
    from monitor.report.records import Report

    baseline = store.get_baseline(suite.name)
    baseline_id = baseline.run_id if baseline is not None else None
    if run_id is None:
        run = _latest_run(store, suite.name, baseline_id)
    else:
        run = _chosen_run(store, suite.name, run_id)
    warnings: list[str] = []
    if baseline is not None and run.run_id == baseline_id:
        warnings.append(f"run {run.run_id} is the suite's baseline: it is compared with itself")

    metadata = texts = None
    try:
        evalset = load_evalset(suite.evalset)
    except (MonitorError, OSError) as error:
        warnings.append(
            f"the eval set could not be loaded ({error}): no query texts and no segments"
        )
    else:
        metadata = {query.id: query.metadata for query in evalset}
        texts = {query.id: query.text for query in evalset}
        if evalset.fingerprint != run.evalset_fingerprint:
            warnings.append(
                f"the eval set changed since run {run.run_id}: query texts and segments come "
                "from its current version"
            )

    significance = suite.significance
    history = _rule_history(store, suite, run)
    comparison = compare_runs(
        run,
        baseline,
        suite.rules,
        significance=significance,
        segments=suite.segments if metadata is not None else (),
        metadata=metadata,
        texts=texts,
        history=history,
    )
    comparison = replace(comparison, warnings=(*comparison.warnings, *warnings))

    errors = {
        summary.run_id: summary.error or "failed"
        for summary in store.list_runs(suite.name, limit=_SEARCH_RUNS)
        if summary.status == "failed"
    }
    charted = chart_metrics(suite.rules, list(run.means))
    trends = build_trends(
        store.history(suite.name, charted),
        charted,
        baseline=baseline,
        rules=suite.rules,
        errors=errors,
    )
    links = {
        name: url
        for name in ("dashboard", "runbook", "report")
        if (url := getattr(suite.links, name)) is not None
    }
    return Report(
        comparison=comparison,
        run=run,
        baseline=baseline,
        trends=trends,
        links=links,
        generated_at=now or datetime.now(timezone.utc),
    )


def _latest_run(store: Store, suite: str, baseline_id: int | None) -> RunRecord:
    """Return the suite's newest ok run that is not its baseline (the baseline if alone).

    A seeded baseline is stored just after the suite's first run, so the newest run alone
    would be the baseline compared with itself.
    """
    latest = store.latest_run(suite)
    if latest is None:
        failed = store.latest_run(suite, status=None)
        if failed is not None:
            raise UsageError(
                f"no successful run of suite {suite!r} yet: run {failed.run_id} failed "
                f"({failed.error}); fix it and run `retrieval-monitor run --suite {suite}`"
            )
        raise _no_run(suite)
    if latest.run_id != baseline_id:
        return latest
    for summary in store.list_runs(suite, limit=_SEARCH_RUNS):
        if summary.status == "ok" and summary.run_id != baseline_id:
            return store.get_run(summary.run_id)
    return latest


def _chosen_run(store: Store, suite: str, run_id: int) -> RunRecord:
    try:
        run = store.get_run(run_id)
    except StoreLookupError:
        raise UsageError(f"no run {run_id} in the store") from None
    if run.suite != suite:
        raise UsageError(f"run {run_id} belongs to suite {run.suite!r}, not {suite!r}")
    if not run.ok:
        raise UsageError(f"run {run_id} failed ({run.error}): it has no metrics to report")
    return run


def _rule_history(store: Store, suite: SuiteConfig, run: RunRecord) -> dict[str, list[bool]]:
    """Return each rule's breach flags from the runs before ``run``, for persistence."""
    from monitor.job import rule_history

    if suite.significance.persistence is None:
        return {}
    return rule_history(store, suite.name, before=run.run_id)


def _missing_sqlite_file(target: str) -> bool:
    """Return whether ``target`` names a SQLite file that does not exist."""
    from monitor.store.location import store_location

    path = store_location(target).path
    return path is not None and not path.expanduser().exists()


def _no_run(suite: str) -> UsageError:
    return UsageError(
        f"no run of suite {suite} yet; run `retrieval-monitor run --suite {suite}` first"
    )


def _render_table(report: Report) -> str:
    from monitor.report import render_comparison

    return render_comparison(report.comparison, report.run.means) + "\n"


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
