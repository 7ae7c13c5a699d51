"""``retrieval-monitor sweep``: one search parameter of a vector kind, value by value.

Runs the suite's queries once per value (nothing stored) and prints, per value, the suite's
main metric, ``ann_recall@k`` against the exact search of the same store and the p95
latency (:mod:`monitor.job.sweep`); ``--plot`` draws them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from monitor.cli import arguments
from monitor.cli.run import load
from monitor.errors import UsageError


def register(subparsers: Any) -> None:
    """Add the ``sweep`` sub-command."""
    parser = subparsers.add_parser(
        "sweep",
        help="run a vector suite once per value of an index parameter (ef_search)",
        description=(
            "Run a pgvector or qdrant suite's queries once per value of one search parameter "
            "(pgvector: a session setting such as hnsw.ef_search; qdrant: hnsw_ef) and print "
            "the main metric, the ANN recall against the exact search and the p95 latency of "
            "each. Nothing is stored."
        ),
    )
    # No --store: a sweep stores nothing.
    parser.add_argument("--config", type=Path, metavar="FILE", help="the YAML config file")
    parser.add_argument("--suite", required=True, metavar="NAME", help="the suite to sweep")
    parser.add_argument(
        "--param",
        required=True,
        metavar="NAME=V1,V2,...",
        help="the parameter and its values, e.g. hnsw.ef_search=10,20,50,100,200",
    )
    parser.add_argument(
        "--metric", metavar="NAME", help="the metric shown (default: the suite's deepest recall)"
    )
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="a table, or one JSON object (default: text)",
    )
    parser.add_argument(
        "--plot",
        metavar="FILE",
        type=arguments.output_file,
        help="also draw the sweep into FILE (.svg; .png with matplotlib installed)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Sweep and print; return the exit code."""
    from monitor.evalset.suite import load_evalset
    from monitor.io import write_bytes_atomic, write_text_atomic
    from monitor.job.sweep import parse_param, sweep

    name, values = parse_param(args.param)
    plot = None if args.plot is None else Path(args.plot)
    if plot is not None and plot.suffix.lower() not in (".svg", ".png"):
        raise UsageError(f"--plot: expected a .svg or .png file, found {plot.name!r}")
    suite = load(args).suite(args.suite)
    evalset = load_evalset(suite.evalset)
    if suite.evalset.reference is not None:
        from monitor.runner.reference import judge_by_reference

        evalset = judge_by_reference(evalset, suite.evalset.reference, suite.evalset.reference_k)
    result = sweep(suite, evalset, name, values, metric=args.metric, progress=False)
    if args.format == "json":
        sys.stdout.write(json.dumps(result.to_dict(), indent=2) + "\n")
    else:
        print(result)
    if plot is not None and plot.suffix.lower() == ".png":
        from monitor.report.sweep_svg import sweep_png

        try:
            png = sweep_png(result)
        except ImportError:
            raise UsageError(
                "--plot: a .png needs matplotlib (pip install matplotlib); or write a .svg"
            ) from None
        write_bytes_atomic(plot, png)
    elif plot is not None:
        from monitor.report.sweep_svg import sweep_svg

        write_text_atomic(plot, sweep_svg(result))
    return 0
