"""The ``retrieval-monitor`` command line.

Each sub-command lives in its own module with ``register(subparsers)``; :func:`main` maps the
errors they raise to exit codes through :mod:`monitor.cli.exits`, the one table of them.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence

from monitor import errors
from monitor.cli import (
    baseline,
    config,
    corpus,
    daemon,
    drift,
    evalset,
    evaluate,
    gate,
    interleave,
    judgments,
    ksweep,
    online,
    pipelines,
    report,
    run,
    serve,
    store,
    sweep,
    traffic,
)
from monitor.cli.exits import ExitCode, exit_code
from monitor.cli.version import VersionAction
from monitor.logs import LOG_FORMATS, LOG_LEVELS, configure_logging

_COMMANDS = (
    run,
    daemon,
    baseline,
    config,
    evaluate,
    ksweep,
    sweep,
    pipelines,
    report,
    gate,
    evalset,
    corpus,
    judgments,
    traffic,
    interleave,
    drift,
    online,
    serve,
    store,
)


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser with every sub-command."""
    parser = argparse.ArgumentParser(
        prog="retrieval-monitor",
        description="Know every day whether your retrieval still finds the right documents.",
    )
    parser.add_argument("--version", action=VersionAction, help="print the version and exit")
    parser.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default=LOG_FORMATS[0],
        help=f"how log lines on stderr are written (default {LOG_FORMATS[0]})",
    )
    loudness = parser.add_mutually_exclusive_group()
    loudness.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default="info",
        help="the least serious log lines written on stderr (default info)",
    )
    loudness.add_argument(
        "-q",
        "--quiet",
        dest="log_level",
        action="store_const",
        const="warning",
        help="write only warnings and errors on stderr (--log-level warning)",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in _COMMANDS:
        command.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit code."""
    from monitor.secrets import scrub_shapes

    args = build_parser().parse_args(argv)
    configure_logging(args.log_format, level=LOG_LEVELS[args.log_level])
    try:
        code: int = args.handler(args)
    except errors.MonitorError as error:
        print(f"retrieval-monitor: error: {scrub_shapes(str(error))}", file=sys.stderr)
        return int(exit_code(error))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (e.g. `| head`): not an error
        sys.stderr.close()
        return 0
    except Exception as error:  # report, with the traceback, and exit with the documented code
        traceback.print_exc()
        print(f"retrieval-monitor: unexpected error: {scrub_shapes(repr(error))}", file=sys.stderr)
        return int(ExitCode.UNEXPECTED)
    return code
