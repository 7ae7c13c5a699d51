"""``retrieval-monitor evaluate``: score a saved run against judgments."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from typing import Any

from monitor.errors import InputError


def register(subparsers: Any) -> None:
    """Add the ``evaluate`` sub-command."""
    parser = subparsers.add_parser(
        "evaluate",
        help="score a saved run against relevance judgments",
        description="Score a saved run against relevance judgments (trec_eval definitions).",
    )
    add_judged_run_options(parser)
    parser.add_argument(
        "--metrics",
        metavar="M1,M2,...",
        help="metric names (default: hit_rate, recall, precision, mrr, ndcg, map at 1, 3, 5, 10)",
    )
    parser.add_argument(
        "--format",
        choices=("table", "json", "csv"),
        default="table",
        help="a table, one JSON object, or CSV with a row per query (default: table)",
    )
    parser.add_argument("--per-query", action="store_true", help="also print every query's values")
    parser.add_argument(
        "--grades",
        default="exact",
        metavar="exact|truncate",
        help="how qrels grades written as decimals are read: exact takes 1.0 as 1 and refuses "
        "0.5 naming its line; truncate cuts toward zero, as trec_eval does (default: exact)",
    )
    parser.set_defaults(handler=run)


def add_judged_run_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--qrels``, ``--run`` and ``--include-no-relevant``, shared with ``k-sweep``."""
    parser.add_argument(
        "--qrels",
        required=True,
        metavar="FILE",
        help="TREC qrels or an eval set (.jsonl, .json, .csv, .yaml)",
    )
    parser.add_argument(
        "--run",
        required=True,
        metavar="FILE",
        help="TREC run file or JSON run: {qid: [doc ids best first]} or {qid: {doc: score}}",
    )
    parser.add_argument(
        "--include-no-relevant",
        action="store_true",
        help="count queries with no relevant judgment as zeros (trec_eval -c)",
    )


def run(args: argparse.Namespace) -> int:
    """Evaluate and print; return the exit code."""
    from monitor.evaluation import evaluate

    result = evaluate(
        args.qrels,
        args.run,
        args.metrics,
        include_no_relevant=args.include_no_relevant,
        grades=args.grades,
    )
    if not result.query_ids:
        raise InputError(args.qrels, "at least one judged query with a relevant document")
    if result.duplicates:
        print(
            f"retrieval-monitor: warning: {result.duplicates} repeated doc ids dropped in "
            f"{result.queries_with_duplicates} queries (each counted once, at its best position)",
            file=sys.stderr,
        )
    if args.format == "json":
        json.dump(result.to_dict(per_query=args.per_query), sys.stdout)
        sys.stdout.write("\n")
    elif args.format == "csv":
        _write_csv(result, per_query=args.per_query)
    else:
        print(result)
        if args.per_query:
            print()
            print(result.per_query.to_string(float_format=lambda v: f"{v:.4f}"))
    return 0


def _write_csv(result: Any, *, per_query: bool) -> None:
    """Write one row per query (with --per-query) and a last row ``all`` with the means."""
    writer = csv.writer(sys.stdout, lineterminator="\n")
    names = [str(m) for m in result.metrics]
    writer.writerow(["query_id", *names])
    if per_query:
        for qid, row in zip(
            result.query_ids, result.per_query.itertuples(index=False), strict=True
        ):
            writer.writerow([qid, *(repr(float(v)) for v in row)])
    writer.writerow(["all", *(repr(result.means[name]) for name in names)])
