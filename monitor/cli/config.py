"""``retrieval-monitor config``: validate a config file, print its JSON Schema."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    """Add the ``config`` sub-command."""
    parser = subparsers.add_parser("config", help="validate a config file or print its schema")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    validate = actions.add_parser(
        "validate", help="check a config file (exit 0 when valid, 2 with the first error)"
    )
    validate.add_argument("file", type=Path, metavar="FILE", help="the YAML config file to check")
    validate.add_argument(
        "--structure-only",
        action="store_true",
        help="check syntax, keys and values only: unset environment variables read as a "
        "placeholder, the files the config names are not opened, no plug-in is built",
    )
    validate.set_defaults(handler=validate_config)
    schema = actions.add_parser("schema", help="print the config's JSON Schema (for editors)")
    schema.set_defaults(handler=print_schema)


def validate_config(args: argparse.Namespace) -> int:
    """Load and check the file, build (then close) its plug-ins; print a one-line summary.
    With ``--structure-only``, check what needs neither the environment nor the files."""
    import os

    from monitor.cli.validate import check_config
    from monitor.config import load_config
    from monitor.config.nodes import Placeholders

    if not args.structure_only:
        config = check_config(args.file)
        names = ", ".join(config.suites)
        print(f"{args.file}: valid; {len(config.suites)} suite(s): {names}")
        return 0
    environ = Placeholders(os.environ)
    config = load_config(args.file, env=environ)
    names = ", ".join(config.suites)
    unset = ", ".join(environ.missing) or "none"
    print(
        f"{args.file}: structure valid; {len(config.suites)} suite(s): {names}; "
        f"unset variables read as placeholders: {unset}; files and plug-ins not checked "
        f"(retrieval-monitor config validate {args.file} checks them)"
    )
    return 0


def print_schema(args: argparse.Namespace) -> int:
    """Print the JSON Schema."""
    from monitor.config import config_schema

    json.dump(config_schema(), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0
