"""``retrieval-monitor daemon``: run every suite on its schedule until stopped (Deployment).

Each suite runs on its ``schedule`` (cron or interval) and once at start-up (unless
``--no-initial-run``), through the same composer as ``run``; ``/metrics`` is served on
``--metrics-address``:``--metrics-port`` (default: the first ``kind: http`` exporter of the
config, else 127.0.0.1:9108). Logs are one event a line on stderr, logfmt or JSON as the
global ``--log-format`` says.

Signals: SIGTERM and SIGINT stop scheduling and wait up to ``--shutdown-grace`` seconds for
the running suites, then exit 0 (a run still going is abandoned: every store write is one
transaction and a run's record is written at its end, so nothing is half-written; a second
signal abandons it at once).
SIGHUP reloads the config: a config that does not load is logged and the old one kept.
With ``--ui-port`` (or a ``ui:`` section in the config) the daemon also serves the web app
of ``serve``, showing each suite's next scheduled run; it keeps the config it started with.

Exit codes: 0 stopped by a signal; 2 a config or usage error at start-up; 1 the store
cannot be opened at start-up, or an unexpected error. A failing suite never stops the
daemon: it is logged (``event=run_failed``) and counted.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import TYPE_CHECKING, Any

from monitor.cli import arguments
from monitor.cli.run import add_config_options, load, store_target

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from datetime import datetime

    from monitor.config.model import MonitorConfig
    from monitor.web.server import WebServer


def register(subparsers: Any) -> None:
    """Add the ``daemon`` sub-command."""
    parser = subparsers.add_parser(
        "daemon",
        help="run the suites on their schedules and serve /metrics (Deployment, systemd)",
        description=(
            "Run every suite on its schedule until SIGTERM or SIGINT, serving /metrics. "
            "SIGHUP reloads the config. Config and store as for `run`."
        ),
    )
    add_config_options(parser)
    parser.add_argument(
        "--metrics-address",
        metavar="ADDRESS",
        help="address to serve /metrics on (default: the config's http exporter, or 127.0.0.1)",
    )
    parser.add_argument(
        "--metrics-port",
        type=arguments.port,
        metavar="N",
        help="port to serve /metrics on (default: the config's http exporter, or 9108)",
    )
    parser.add_argument(
        "--ui-port",
        type=arguments.port,
        metavar="N",
        help="serve the web app (as `serve` does) on this port too (default: the config's ui)",
    )
    parser.add_argument(
        "--ui-address",
        metavar="ADDRESS",
        help="address of the web app (default: the config's ui, or 127.0.0.1)",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="the web app also answers requests for host NAME (as `serve --allow-host`)",
    )
    parser.add_argument(
        "--auth-token-env",
        metavar="VAR",
        help="the web app requires the bearer token held in environment variable VAR",
    )
    parser.add_argument(
        "--allow-labeling",
        action="store_true",
        help="let the web app's query pages add grades to the suites' judgment layers",
    )
    parser.add_argument(
        "--no-initial-run",
        action="store_true",
        help="wait for each suite's first scheduled time instead of running it at start-up",
    )
    parser.add_argument(
        "--shutdown-grace",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="how long a stop waits for the running suites before abandoning them (default 30)",
    )
    parser.set_defaults(handler=daemon)


def daemon(args: argparse.Namespace) -> int:
    """Run the daemon until a stop signal; return 0."""
    from monitor.daemon import Daemon, SchedulerCollector
    from monitor.errors import UsageError
    from monitor.exporters import start_http_exporter
    from monitor.logs import get_logger
    from monitor.store import open_store

    if not args.shutdown_grace >= 0:
        raise UsageError(f"--shutdown-grace must be 0 or more, not {args.shutdown_grace}")
    if args.metrics_port is not None and not 0 <= args.metrics_port <= 65535:
        raise UsageError(f"--metrics-port must be from 0 to 65535, not {args.metrics_port}")
    config = load_built(args)
    # Open the store once before scheduling anything: a store that is unreachable or newer
    # than this code stops the start-up with its exit code instead of failing every run.
    open_store(store_target(args, config)).close()
    if ui_address(args, config) is not None:
        from monitor.web.extra import require_web

        require_web()  # before anything starts: a missing extra is one line, nothing left running
    endpoint = start_http_exporter(*metrics_address(args, config))
    get_logger("monitor.daemon").info("metrics_serving", url=endpoint.url)
    service = Daemon(
        config,
        store_target=lambda new: store_target(args, new),
        reload_config=lambda: load_built(args),
        metrics=endpoint,
        initial_run=not args.no_initial_run,
        shutdown_grace=args.shutdown_grace,
    )
    endpoint.register(SchedulerCollector(service.snapshot))
    ui = start_ui(args, config, service.next_run_times)
    service.install_signal_handlers()
    abandoned = service.serve()
    if ui is not None:
        ui.stop()
    if not abandoned:
        endpoint.close()
        return 0
    # The pool's worker threads are joined at interpreter exit, which would wait for the
    # abandoned runs without limit; end the process now instead.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def ui_address(args: argparse.Namespace, config: MonitorConfig) -> tuple[str, int] | None:
    """Return where to serve the web app: the options, the config's ``ui``; None: not at all."""
    from monitor.config.model import UiConfig

    if args.ui_port is None and config.ui is None:
        return None
    ui = config.ui or UiConfig()
    address = args.ui_address if args.ui_address is not None else ui.address
    return address, args.ui_port if args.ui_port is not None else ui.port


def start_ui(
    args: argparse.Namespace,
    config: MonitorConfig,
    next_runs: Callable[[], Mapping[str, datetime | None]],
) -> WebServer | None:
    """Start the web app in a thread when asked for; return it (None when not asked)."""
    from monitor.cli.serve import web_settings
    from monitor.logs import get_logger
    from monitor.web.server import WebServer

    where = ui_address(args, config)
    if where is None:
        return None
    options = argparse.Namespace(
        address=where[0],
        port=where[1],
        allow_host=args.allow_host,
        auth_token_env=args.auth_token_env,
        allow_labeling=args.allow_labeling,
        store=args.store,
    )
    server = WebServer(web_settings(options, config, next_runs=next_runs), *where)
    server.start()
    get_logger("monitor.daemon").info("web_serving", url=server.url)
    return server


def load_built(args: argparse.Namespace) -> MonitorConfig:
    """Return the config as ``run`` reads it, after building every plug-in once as
    ``config validate`` does: the daemon refuses at start and on reload what a scheduled run
    would fail to build."""
    from monitor.cli.validate import check_builds

    config = load(args)
    check_builds(config)
    return config


def metrics_address(args: argparse.Namespace, config: MonitorConfig) -> tuple[str, int]:
    """Return where to serve ``/metrics``: the options, the config's http exporter, defaults."""
    from monitor.config.common import HttpExporterConfig

    exporter = next(
        (
            exporter
            for suite in config.suites.values()
            for exporter in suite.exporters
            if isinstance(exporter, HttpExporterConfig)
        ),
        HttpExporterConfig(),
    )
    address = args.metrics_address if args.metrics_address is not None else exporter.address
    port = args.metrics_port if args.metrics_port is not None else exporter.port
    return address, port
