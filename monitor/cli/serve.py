"""``retrieval-monitor serve``: the web app over the store, on 127.0.0.1:8321 by default.

Read-only unless ``--allow-labeling``. Bound to a loopback address unless a bearer token is
given with ``--auth-token-env VAR`` (the token is read from that environment variable, never
from the command line, where other users of the machine would see it). It answers only
requests naming a loopback host, the bound address or a name given with ``--allow-host``
(for serving under a DNS name). Exit codes: 0 stopped
by a signal; 2 a config or usage error (an unset token variable, a non-loopback address
without a token, a bad port).
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import re
from typing import TYPE_CHECKING, Any

from monitor.cli import arguments
from monitor.cli.run import add_config_options, load, store_target

if TYPE_CHECKING:
    from monitor.web import WebSettings

#: What ``--allow-host`` takes: a host name or an address, without a port.
_HOST_NAME = re.compile(r"\[?[A-Za-z0-9.:-]+\]?")


def register(subparsers: Any) -> None:
    """Add the ``serve`` sub-command."""
    from monitor.web import DEFAULT_ADDRESS, DEFAULT_PORT

    parser = subparsers.add_parser(
        "serve",
        help="serve the web app: suites, runs, queries, the simulator and labeling",
        description=(
            "Serve the suites, runs and queries of the store as web pages, with the metric "
            "simulator. Config and store as for `run`. Read-only unless --allow-labeling."
        ),
    )
    add_config_options(parser)
    add_web_options(parser, address=DEFAULT_ADDRESS, port=DEFAULT_PORT)
    parser.set_defaults(handler=serve)


def add_web_options(parser: argparse.ArgumentParser, *, address: str, port: int | None) -> None:
    """Add ``--address``, ``--port``, ``--allow-host``, ``--auth-token-env`` and
    ``--allow-labeling``."""
    parser.add_argument(
        "--address", default=address, metavar="ADDRESS", help=f"address to bind (default {address})"
    )
    parser.add_argument(
        "--port",
        type=arguments.port,
        default=port,
        metavar="N",
        help=f"port to listen on (default {port})",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="also answer requests for host NAME (a DNS name the app is served under); "
        "repeatable. Loopback names and the bound address are always answered",
    )
    parser.add_argument(
        "--auth-token-env",
        metavar="VAR",
        help="require the bearer token held in environment variable VAR (needed off loopback)",
    )
    parser.add_argument(
        "--allow-labeling",
        action="store_true",
        help="let query pages add grades to the suite's judgment layer (off: read-only)",
    )


def web_settings(args: argparse.Namespace, config: Any, **extra: Any) -> WebSettings:
    """Return the app's settings from the options; raise UsageError on a bad combination."""
    from monitor.errors import UsageError
    from monitor.store import open_store
    from monitor.web import WebSettings

    if args.port is not None and not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be from 0 to 65535, not {args.port}")
    token = None
    if args.auth_token_env:
        token = os.environ.get(args.auth_token_env)
        if not token:
            raise UsageError(
                f"--auth-token-env {args.auth_token_env}: that environment variable is unset "
                "or empty; expected the token in it"
            )
    if token is None and not loopback(args.address):
        raise UsageError(
            f"--address {args.address} is reachable from other machines: give a token with "
            "--auth-token-env VAR, or bind 127.0.0.1"
        )
    for name in args.allow_host:
        if not _HOST_NAME.fullmatch(name):
            raise UsageError(
                f"--allow-host {name!r}: expected a host name or address, such as "
                "monitor.example.com"
            )
    target = store_target(args, config)
    return WebSettings(
        config=config,
        store=lambda: open_store(target),
        auth_token=token,
        allow_labeling=args.allow_labeling,
        address=args.address,
        allowed_hosts=tuple(args.allow_host),
        **extra,
    )


def loopback(address: str) -> bool:
    """Return whether ``address`` is a loopback address (or ``localhost``)."""
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def serve(args: argparse.Namespace) -> int:
    """Serve the app until stopped; return 0."""
    from monitor.web.extra import require_web

    require_web()
    import uvicorn

    from monitor.logs import get_logger
    from monitor.web import create_app

    config = load(args)
    app = create_app(web_settings(args, config))
    get_logger("monitor.web").info("web_serving", url=f"http://{args.address}:{args.port}/")
    uvicorn.run(app, host=args.address, port=args.port, log_level="warning", access_log=False)
    return 0
