"""``retrieval-monitor k-sweep``: every measure at several k, and the k to use."""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any

from monitor.cli import arguments
from monitor.cli.evaluate import add_judged_run_options, scoring_options
from monitor.errors import InputError, UsageError


def register(subparsers: Any) -> None:
    """Add the ``k-sweep`` sub-command."""
    parser = subparsers.add_parser(
        "k-sweep",
        help="tabulate every measure at several k and recommend k per use case",
        description="Tabulate every measure at several cutoffs k and recommend k per use case.",
    )
    add_judged_run_options(parser)
    parser.add_argument(
        "--ks",
        default="1,3,5,10,20",
        metavar="K1,K2,...",
        help="cutoffs to sweep (default: 1,3,5,10,20)",
    )
    parser.add_argument(
        "--format",
        choices=("table", "json"),
        default="table",
        help="a table with bar charts, or one JSON object (default: table)",
    )
    parser.add_argument(
        "--output",
        metavar="FILE",
        type=arguments.output_file,
        help="also write the sweep as JSON to FILE",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Sweep and print; return the exit code."""
    from monitor.io import write_text_atomic
    from monitor.metrics.ksweep import k_sweep

    sweep = k_sweep(args.qrels, args.run, _parse_ks(args.ks), **scoring_options(args))
    if not sweep.counts.evaluated:
        raise InputError(args.qrels, "at least one judged query with a relevant document")
    payload = json.dumps(sweep.to_dict(), indent=2) + "\n"
    if args.output is not None:
        write_text_atomic(args.output, payload)
    if args.format == "json":
        sys.stdout.write(payload)
    else:
        ascii_only = (sys.stdout.encoding or "").lower().replace("-", "") != "utf8"
        print(sweep)
        print()
        print(sweep.bars(ascii_only=ascii_only))
    return 0


#: The deepest cutoff swept, as deep as a suite's k may be.
MAX_K = 100_000


def _parse_ks(text: str) -> list[int]:
    ks: list[int] = []
    for part in text.split(","):
        part = part.strip()
        # ASCII digits only: str.isdigit() and int() also read other scripts' digits.
        if not _K.fullmatch(part) or not 1 <= int(part) <= MAX_K:
            raise UsageError(
                f"--ks: expected integers from 1 to {MAX_K} separated by commas, found {part!r}"
            )
        ks.append(int(part))
    return ks


_K = re.compile(r"\+?[0-9]{1,6}", re.ASCII)
