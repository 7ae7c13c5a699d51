"""``retrieval-monitor baseline`` and ``runs``: pin baselines and list stored runs."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from monitor.cli import arguments
from monitor.cli.run import add_config_options, load, store_target
from monitor.errors import UsageError

if TYPE_CHECKING:
    from monitor.config.model import SuiteConfig
    from monitor.store import Store


def register(subparsers: Any) -> None:
    """Add the ``baseline`` and ``runs`` sub-commands."""
    baseline = subparsers.add_parser(
        "baseline", help="pin, show and list the baseline run of each suite"
    )
    actions = baseline.add_subparsers(dest="action", metavar="ACTION", required=True)

    pin = actions.add_parser("set", help="pin a run as a suite's baseline")
    add_config_options(pin)
    pin.add_argument("--suite", required=True, metavar="NAME", help="the suite to pin it for")
    which = pin.add_mutually_exclusive_group()
    which.add_argument("--run", type=arguments.row_id, metavar="ID", help="the run to pin")
    which.add_argument(
        "--latest", action="store_true", help="pin the suite's latest ok run (the default)"
    )
    pin.set_defaults(handler=set_baseline)

    show = actions.add_parser("show", help="show a suite's baseline run")
    add_config_options(show)
    show.add_argument("--suite", required=True, metavar="NAME", help="the suite to show")
    show.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default: text)"
    )
    show.set_defaults(handler=show_baseline)

    listing = actions.add_parser("list", help="list every suite's baseline")
    add_config_options(listing)
    listing.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default: text)"
    )
    listing.set_defaults(handler=list_baselines)

    export = actions.add_parser(
        "export",
        help="write a suite's baseline run to a JSON file, for `gate --baseline-file` (no store)",
    )
    add_config_options(export)
    export.add_argument("--suite", required=True, metavar="NAME", help="the suite to export")
    export.add_argument(
        "--output",
        required=True,
        type=arguments.output_file,
        metavar="FILE",
        help="the baseline file to write",
    )
    export.set_defaults(handler=export_baseline)

    runs = subparsers.add_parser("runs", help="list stored runs")
    runs_actions = runs.add_subparsers(dest="action", metavar="ACTION", required=True)
    runs_list = runs_actions.add_parser("list", help="list stored runs, newest first")
    add_config_options(runs_list)
    runs_list.add_argument("--suite", metavar="NAME", help="only this suite's runs")
    runs_list.add_argument(
        "--limit",
        type=arguments.count,
        default=20,
        metavar="N",
        help="list at most N runs (default 20)",
    )
    runs_list.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default: text)"
    )
    runs_list.set_defaults(handler=list_runs)


def set_baseline(args: argparse.Namespace) -> int:
    """Pin the run given, or the suite's latest ok run, as its baseline."""
    from monitor.store import open_store

    config = load(args)
    suite = config.suite(args.suite)  # an unknown suite is an error naming the known ones
    with open_store(store_target(args, config)) as store:
        run_id = args.run
        if run_id is None:
            latest = store.latest_run(args.suite)
            run_id = None if latest is None else latest.run_id
            if latest is None and suite.baseline is not None and suite.baseline.bundled_run:
                run_id = _seeded(suite, store)  # the suite's seed, as its first run pins it
            if run_id is None:
                from monitor.config.model import config_option

                where = config_option(suite.config_file)
                raise UsageError(
                    f"suite {args.suite!r} has no ok run to pin; run "
                    f"`retrieval-monitor run{where} --suite {args.suite}` first"
                )
        pinned = store.set_baseline(args.suite, run_id)
    print(f"suite {pinned.suite}: baseline is now run {pinned.run_id}")
    return 0


def _seeded(suite: SuiteConfig, store: Store) -> int | None:
    """Store and pin the suite's seed baseline run (``baseline.bundled_run``) as its first
    run does; return its id (None when it measured nothing)."""
    from monitor.config import config_hash
    from monitor.evalset.suite import load_evalset
    from monitor.job.suite import seed_baseline
    from monitor.judgments.suite import suite_evalset

    evalset = suite_evalset(store, suite, load_evalset(suite.evalset))
    return seed_baseline(suite, store, evalset, config_hash(suite))


def show_baseline(args: argparse.Namespace) -> int:
    """Print the suite's baseline run and its means."""
    from monitor.store import open_store

    config = load(args)
    config.suite(args.suite)  # an unknown suite is an error naming the known ones
    with open_store(store_target(args, config)) as store:
        run = store.get_baseline(args.suite)
    if run is None:
        raise UsageError(f"suite {args.suite!r} has no baseline; pin one with `baseline set`")
    if args.format == "json":
        _dump(
            {
                "suite": run.suite,
                "run_id": run.run_id,
                "pipeline": run.pipeline,
                "started_at": run.started_at.isoformat(),
                "evalset_fingerprint": run.evalset_fingerprint,
                "means": dict(run.means),
            }
        )
        return 0
    print(
        f"suite {run.suite}: baseline run {run.run_id} ({run.pipeline}), "
        f"started {run.started_at:%Y-%m-%d %H:%M:%S} UTC"
    )
    print(f"eval set {run.evalset_fingerprint}")
    for metric, value in run.means.items():
        print(f"  {metric:<16} {value:.4f}")
    return 0


def export_baseline(args: argparse.Namespace) -> int:
    """Write the suite's baseline run, with what it was measured on, as a baseline file."""
    from monitor.config import config_hash
    from monitor.gate.baseline_file import write_baseline
    from monitor.job.measurable import measured_anything
    from monitor.store import open_store

    config = load(args)
    suite = config.suite(args.suite)  # an unknown suite is an error naming the known ones
    with open_store(store_target(args, config)) as store:
        run = store.get_baseline(suite.name)
        pinned = next((b for b in store.list_baselines() if b.suite == suite.name), None)
    from monitor.config.model import config_option

    where = config_option(suite.config_file)
    pin = f"`retrieval-monitor baseline set{where} --suite {suite.name}`"
    if run is None:
        raise UsageError(f"suite {suite.name!r} has no baseline; pin one with {pin}")
    if not measured_anything(run.means):
        raise UsageError(
            f"suite {suite.name!r}: baseline run {run.run_id} measured nothing (pinned before "
            f"such runs failed); pin a run that measured with {pin}, then export it"
        )
    write_baseline(
        args.output,
        replace(run, config_hash=config_hash(suite)),
        metrics=[str(metric) for metric in suite.metrics],
        pinned_at=None if pinned is None else pinned.pinned_at,
    )
    print(f"suite {suite.name}: baseline run {run.run_id} written to {args.output}")
    return 0


def list_baselines(args: argparse.Namespace) -> int:
    """Print every suite's baseline."""
    from monitor.store import open_store

    config = load(args)
    with open_store(store_target(args, config)) as store:
        baselines = store.list_baselines()
    if args.format == "json":
        _dump(
            [
                {"suite": b.suite, "run_id": b.run_id, "pinned_at": b.pinned_at.isoformat()}
                for b in baselines
            ]
        )
        return 0
    if not baselines:
        print("no baseline pinned yet")
        return 0
    width = max(24, *(len(b.suite) for b in baselines))
    print(f"{'suite':<{width}} {'run':<8} pinned (UTC)")
    for b in baselines:
        print(f"{b.suite:<{width}} {b.run_id:<8} {b.pinned_at:%Y-%m-%d %H:%M:%S}")
    return 0


def list_runs(args: argparse.Namespace) -> int:
    """Print stored runs, newest first."""
    from monitor.store import open_store

    if args.limit <= 0:
        raise UsageError(f"--limit: expected a positive integer, found {args.limit}")
    config = load(args)
    if args.suite is not None:
        config.suite(args.suite)  # an unknown suite is an error naming the known ones
    with open_store(store_target(args, config)) as store:
        runs = store.list_runs(args.suite, limit=args.limit)
        pinned = {b.suite: b.run_id for b in store.list_baselines()}
    if args.format == "json":
        _dump(
            [
                {
                    "run_id": r.run_id,
                    "suite": r.suite,
                    "pipeline": r.pipeline,
                    "status": r.status,
                    "started_at": r.started_at.isoformat(),
                    "queries": r.query_count,
                    "baseline": pinned.get(r.suite) == r.run_id,
                    "error": r.error,
                }
                for r in runs
            ]
        )
        return 0
    if not runs:
        print("no run stored yet")
        return 0
    rows = [
        (
            str(r.run_id),
            f"{r.started_at:%Y-%m-%d %H:%M:%S}",
            r.suite,
            r.status,
            r.pipeline,
            "yes" if pinned.get(r.suite) == r.run_id else "",
            r.error or "",
        )
        for r in runs
    ]
    for line in _columns(_RUN_COLUMNS, rows, right=1):
        print(line)
    return 0


_RUN_COLUMNS = ("run", "started (UTC)", "suite", "status", "pipeline", "baseline", "error")


def _columns(
    header: tuple[str, ...], rows: Sequence[tuple[str, ...]], *, right: int = 0
) -> list[str]:
    """Return ``header`` and ``rows`` as aligned lines, the first ``right`` right-aligned."""
    widths = [max(len(cells[i]) for cells in (header, *rows)) for i in range(len(header))]
    return [
        "  ".join(
            cell.rjust(width) if i < right else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()
        for cells in (header, *rows)
    ]


def _dump(value: object) -> None:
    json.dump(value, sys.stdout, indent=2)
    sys.stdout.write("\n")
