"""``retrieval-monitor online run|pin``: the online suites of the config's ``traffic:`` section.

``online run`` measures each online suite's window once (or ``--suite NAME``), as the daemon
does on its schedule, and prints its figures and rules; it exits 0 when the runs completed
(a breach is told by alerts and gauges; with ``--fail-on-regression`` a breach exits 4), and
5 when a window held no search (no data). ``online pin`` pins a stored window (the latest
by default) as the suite's baseline for ``baseline: pinned``.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from monitor.cli.run import add_config_options, load, store_target

if TYPE_CHECKING:
    from monitor.config.model import MonitorConfig
    from monitor.config.traffic import TrafficConfig
    from monitor.job.online import OnlineResult


def register(subparsers: Any) -> None:
    """Add the ``online`` sub-command with ``run`` and ``pin``."""
    parser = subparsers.add_parser(
        "online", help="online suites: metrics of windows of traffic, compared and alerted on"
    )
    actions = parser.add_subparsers(dest="online_command", metavar="ACTION", required=True)
    running = actions.add_parser("run", help="measure each online suite's window once")
    add_config_options(running)
    running.add_argument("--suite", metavar="NAME", help="only this online suite")
    running.add_argument(
        "--now", metavar="TIME", help="the window's end, ISO 8601 (default: the clock's now)"
    )
    running.add_argument(
        "--fail-on-regression", action="store_true", help="exit 4 when a rule breached"
    )
    running.set_defaults(handler=run_command)
    pinning = actions.add_parser("pin", help="pin a stored window as an online suite's baseline")
    add_config_options(pinning)
    pinning.add_argument("--suite", required=True, metavar="NAME", help="the online suite")
    pinning.add_argument(
        "--window-id", type=int, metavar="ID", help="the stored window (default: the latest)"
    )
    pinning.set_defaults(handler=pin_command)


def _traffic(config: MonitorConfig) -> TrafficConfig:
    from monitor.errors import UsageError

    if config.traffic is None or not config.traffic.online:
        raise UsageError(f"{config.source}: no online suite (the 'traffic: online:' section)")
    return config.traffic


def run_command(args: argparse.Namespace) -> int:
    """Run the online suites once; print each one's figures and rules."""
    from datetime import datetime, timezone

    from monitor.cli.exits import ExitCode, most_serious
    from monitor.config.windows import parse_moment
    from monitor.job.online import run_online
    from monitor.store import open_store

    config = load(args)
    traffic = _traffic(config)
    suites = [traffic.online_suite(args.suite)] if args.suite else list(traffic.online.values())
    if args.now is None:
        now = datetime.now(timezone.utc)
    else:
        now = parse_moment(args.now, "--now").replace(tzinfo=timezone.utc)
    codes: list[ExitCode] = []
    with open_store(store_target(args, config)) as store:
        for suite in suites:
            result = run_online(traffic, suite, store, now=now)
            print("\n".join(result_lines(result)))
            if result.no_data:
                codes.append(ExitCode.INSUFFICIENT_EVIDENCE)
            elif result.export_errors:
                codes.append(ExitCode.UNEXPECTED)
            elif result.breached and args.fail_on_regression:
                codes.append(ExitCode.QUALITY_GATE)
    return int(most_serious(codes))


def _number(value: float | None) -> str:
    return "no data" if value is None else f"{value:.4f}"


def result_lines(result: OnlineResult) -> list[str]:
    """Return what ``online run`` prints for one suite's run."""
    head = f"online suite {result.suite}, {result.window} (window {result.window_id})"
    if result.no_data:
        return [head, "no data: no search in the window; alert no_data fires"]
    metrics = list(result.groups[0].values)
    heads = ["application", "segment", "searches", *metrics]
    table = [
        [g.application, g.segment, str(g.searches), *(_number(v) for v in g.values.values())]
        for g in result.groups
    ]
    widths = [max(len(row[i]) for row in [heads, *table]) for i in range(len(heads))]
    lines = [head, f"baseline: {result.baseline}"]
    for row in [heads, *table]:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    for outcome in result.outcomes:
        lines.append(f"rule {outcome.rule}: {outcome.status}: {outcome.message}")
    lines.append(f"alerts firing: {', '.join(result.firing) or 'none'}")
    lines.extend(f"export failed: {error}" for error in result.export_errors)
    return lines


def pin_command(args: argparse.Namespace) -> int:
    """Pin a stored window as the online suite's baseline."""
    from monitor.errors import UsageError
    from monitor.store import open_store

    config = load(args)
    suite = _traffic(config).online_suite(args.suite)
    with open_store(store_target(args, config)) as store:
        if args.window_id is None:
            pinned = store.latest_online_window(suite.name)
            if pinned is None:
                raise UsageError(
                    f"online suite {suite.name!r} has no stored window with data; "
                    "`retrieval-monitor online run` measures one"
                )
        else:
            pinned = store.online_window(args.window_id)
        window_id = pinned.window_id or 0
        if pinned.status != "ok":
            raise UsageError(f"online window {window_id} held no search: nothing to compare with")
        store.pin_online_window(suite.name, window_id)
    print(
        f"online suite {suite.name}: window {window_id} ({pinned.start:%Y-%m-%dT%H:%M:%S}Z to "
        f"{pinned.end:%Y-%m-%dT%H:%M:%S}Z, {pinned.searches} searches) pinned as its baseline"
    )
    return 0
