"""``retrieval-monitor run``: run the suites once and exit (for cron and Kubernetes CronJobs).

Exit codes are :class:`monitor.exits.ExitCode` (the contract in the README). With several
suites, every suite runs and the most serious code wins.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from monitor.config.model import MonitorConfig
    from monitor.exporters import SuiteSnapshot
    from monitor.outcome import Published

#: The config file used when ``--config`` is not given and it exists in the working folder.
LOCAL_CONFIG = Path("config/monitor.yaml")


def register(subparsers: Any) -> None:
    """Add the ``run`` sub-command."""
    parser = subparsers.add_parser(
        "run",
        help="run the suites once and exit (cron, Kubernetes CronJob)",
        description=(
            "Run every suite (or those named) once: search, measure, store, compare with the "
            "baseline, report. Without --config, uses ./config/monitor.yaml if present, else "
            "the embedded default (the bundled Larkfield suite, SQLite in the user's data "
            "folder)."
        ),
    )
    add_config_options(parser)
    parser.add_argument(
        "--suite", action="append", metavar="NAME", help="run only this suite (repeatable)"
    )
    parser.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit 4 when a rule breaches (a quality gate for CI pipelines)",
    )
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text for people, or one JSON object for every suite (default: text)",
    )
    parser.add_argument(
        "--metrics-out",
        type=Path,
        metavar="FILE",
        help="write the runs' gauges to FILE in the Prometheus text format (atomically)",
    )
    parser.add_argument(
        "--failed-queries",
        metavar="PATH",
        help="write each suite's failed queries (no hit, with their top 5 ids) as JSONL to PATH; "
        "{suite} in PATH is replaced by the suite name",
    )
    parser.add_argument(
        "--no-progress", action="store_true", help="never draw a progress bar (log lines instead)"
    )
    parser.set_defaults(handler=run)


def add_config_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--config`` and ``--store``, shared by the commands that read a config."""
    parser.add_argument("--config", type=Path, metavar="FILE", help="the YAML config file")
    parser.add_argument(
        "--store", metavar="URL_OR_PATH", help="the store to use instead of the config's"
    )


def load(args: argparse.Namespace) -> MonitorConfig:
    """Return the config named by ``--config``, the local one, or the embedded default."""
    from monitor.config import default_config, load_config

    if args.config is not None:
        return load_config(args.config)
    if LOCAL_CONFIG.is_file():
        return load_config(LOCAL_CONFIG)
    return default_config()


def store_target(args: argparse.Namespace, config: MonitorConfig) -> str:
    """Return the store URL or path: ``--store`` if given, else the config's."""
    if args.store:
        return str(args.store)
    return config.store.url.reveal()


def run(args: argparse.Namespace) -> int:
    """Run the suites; return the most serious exit code among them."""
    from monitor.config import config_hash
    from monitor.errors import MonitorError
    from monitor.exits import ExitCode, classify, most_serious
    from monitor.job import run_suite
    from monitor.report import render_comparison
    from monitor.store import open_store

    config = load(args)
    names = args.suite or list(config.suites)
    suites = [config.suite(name) for name in names]
    snapshots: list[SuiteSnapshot] = []
    codes: list[ExitCode] = []
    reports: list[dict[str, Any]] = []
    with open_store(store_target(args, config)) as store:
        for suite in suites:
            try:
                outcome = run_suite(
                    suite,
                    store,
                    config_hash=config_hash(suite),
                    progress=False if args.no_progress else None,
                    sinks=[snapshots.append] if args.metrics_out else (),
                )
            except MonitorError as error:
                row = classify(error)
                print(
                    f"retrieval-monitor: suite {suite.name}: {row.outcome}: {error}",
                    file=sys.stderr,
                )
                codes.append(row.code)
                reports.append({"suite": suite.name, row.outcome: str(error)})
                continue
            comparison = outcome.comparison
            published = outcome.published
            if args.failed_queries:
                from monitor.runner import write_failed_queries

                path = args.failed_queries.replace("{suite}", suite.name)
                write_failed_queries(outcome.result, outcome.evaluation, path)
            if args.format == "json":
                reports.append(
                    {
                        "suite": suite.name,
                        "run_id": outcome.run_id,
                        "means": dict(outcome.run.means),
                        "comparison": comparison.to_dict(),
                        "alerts": {
                            "firing": list(published.firing),
                            "resolved": list(published.resolved),
                            "undelivered": published.undelivered,
                        },
                        "export_errors": list(published.export_errors),
                    }
                )
            else:
                print(render_comparison(comparison, outcome.run.means))
                print(_published_text(published))
                print(f"stored as run {outcome.run_id} in {getattr(store, 'location', store)}")
                print()
            for problem in published.export_errors:
                print(
                    f"retrieval-monitor: suite {suite.name}: export failed: {problem}",
                    file=sys.stderr,
                )
            if comparison.verdict == "evalset_changed":
                codes.append(ExitCode.USAGE)
            elif published.export_errors:
                codes.append(ExitCode.UNEXPECTED)
            elif comparison.regression and args.fail_on_regression:
                codes.append(ExitCode.QUALITY_GATE)
            else:
                codes.append(ExitCode.OK)
    if args.metrics_out is not None:
        _write_metrics(args.metrics_out, snapshots)
    if args.format == "json":
        json.dump({"suites": reports}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    return int(most_serious(codes))


def _published_text(published: Published) -> str:
    firing = ", ".join(published.firing) or "none"
    text = f"alerts firing: {firing}"
    if published.resolved:
        text += f"; resolved: {', '.join(published.resolved)}"
    if published.undelivered:
        text += f"; {published.undelivered} notification(s) kept in the outbox for the next run"
    return text


def _write_metrics(path: Path, snapshots: list[SuiteSnapshot]) -> None:
    """Write every suite's gauges, merged into one exposition, to ``path`` atomically."""
    from prometheus_client.metrics_core import Metric

    from monitor.exporters import merge
    from monitor.exporters.gauges import render_families
    from monitor.io import write_text_atomic

    families: list[Metric] = []
    for snapshot in snapshots:
        families = merge(families, snapshot)
    write_text_atomic(path, render_families(families))
