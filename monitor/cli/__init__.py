"""The ``retrieval-monitor`` command line.

Each sub-command lives in its own module with ``register(subparsers)``; :func:`main` maps the
errors they raise to exit codes through :data:`EXIT_CODES`, the one table of them.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence

from monitor import errors
from monitor.cli import baseline, config, daemon, evaluate, ksweep, pipelines, report, run
from monitor.logs import LOG_FORMATS, configure_logging

#: Exit code of each error family; the first matching class wins, so subclasses come first.
EXIT_CODES: tuple[tuple[type[errors.MonitorError], int], ...] = (
    (errors.SearchBackendError, 3),
    (errors.SearchSetupError, 2),
    (errors.NotifierSetupError, 2),
    (errors.BaselineError, 2),
    (errors.StoreLookupError, 2),
    (errors.UsageError, 2),
    (errors.InputError, 2),
    (errors.ConfigError, 2),
    (errors.MonitorError, 1),
)

#: Exit code of an error the monitor did not expect (a bug, or a fault outside it).
UNEXPECTED = 1

_COMMANDS = (run, daemon, baseline, config, evaluate, ksweep, pipelines, report)


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser with every sub-command."""
    parser = argparse.ArgumentParser(
        prog="retrieval-monitor",
        description="Know every day whether your retrieval still finds the right documents.",
    )
    parser.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default=LOG_FORMATS[0],
        help=f"how log lines on stderr are written (default {LOG_FORMATS[0]})",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in _COMMANDS:
        command.register(subparsers)
    return parser


def exit_code(error: BaseException) -> int:
    """Return the documented exit code for ``error``."""
    for family, code in EXIT_CODES:
        if isinstance(error, family):
            return code
    return UNEXPECTED


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit code."""
    args = build_parser().parse_args(argv)
    configure_logging(args.log_format)
    try:
        code: int = args.handler(args)
    except errors.MonitorError as error:
        print(f"retrieval-monitor: error: {error}", file=sys.stderr)
        return exit_code(error)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (e.g. `| head`): not an error
        sys.stderr.close()
        return 0
    except Exception as error:  # report, with the traceback, and exit with the documented code
        traceback.print_exc()
        print(f"retrieval-monitor: unexpected error: {error!r}", file=sys.stderr)
        return UNEXPECTED
    return code
