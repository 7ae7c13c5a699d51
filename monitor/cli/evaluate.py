"""``retrieval-monitor evaluate``: score a saved run against judgments."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Mapping
from typing import Any

from monitor.cli import arguments
from monitor.errors import InputError, UsageError
from monitor.metrics.names import NAME_STYLES, NameStyle, display_name
from monitor.metrics.spec import AVERAGES


def register(subparsers: Any) -> None:
    """Add the ``evaluate`` sub-command."""
    parser = subparsers.add_parser(
        "evaluate",
        help="score a saved run against relevance judgments",
        description="Score a saved run against relevance judgments (trec_eval definitions).",
    )
    add_judged_run_options(parser)
    parser.add_argument(
        "-m",
        "--metrics",
        metavar="M1,M2,...",
        help="metric names, canonical or as trec_eval, ir_measures or ranx write them "
        "(default: hit_rate, recall, precision, mrr, ndcg, map at 1, 3, 5, 10)",
    )
    parser.add_argument(
        "--format",
        choices=("table", "json", "csv", "trec_eval"),
        default="table",
        help="a table, one JSON object, CSV with a row per query, or trec_eval's "
        "'measure<TAB>query<TAB>value' lines (default: table)",
    )
    parser.add_argument(
        "--names",
        choices=NAME_STYLES,
        default=None,
        help="the metric names printed (default: trec_eval with --format trec_eval, "
        "else canonical); a metric the tool has no name for keeps its canonical name",
    )
    parser.add_argument(
        "-q", "--per-query", action="store_true", help="also print every query's values"
    )
    add_unit_options(parser)
    parser.add_argument(
        "--grades",
        default="exact",
        metavar="exact|truncate",
        help="how qrels grades written as decimals are read: exact takes 1.0 as 1 and refuses "
        "0.5 and 1e1 naming the line; truncate reads the integer prefix, as trec_eval's atol "
        "(1.7 and 1e1 are 1) (default: exact)",
    )
    parser.set_defaults(handler=run)


def add_unit_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--unit``, ``--unit-cut`` and ``--corpus``: count sections or documents."""
    parser.add_argument(
        "--unit",
        metavar="FIELD",
        help="count units instead of passages: section (doc_id, section), document (doc_id), "
        "or corpus fields joined by + (default: passage)",
    )
    parser.add_argument(
        "--unit-cut",
        choices=("passages", "units"),
        help="cut at k returned passages (default) or at k distinct units (with --unit; a "
        "metric naming its unit names its cut too: recall@5[section:units])",
    )
    parser.add_argument(
        "--corpus",
        metavar="FILE",
        help="the passages with their unit fields (.jsonl, .csv, .tsv, gzip accepted)",
    )


def unit_metrics(args: argparse.Namespace) -> tuple[Any, Any]:
    """Return the metrics with ``--unit`` applied, and the ``--corpus`` (or None)."""
    from dataclasses import replace

    from monitor.evalset.corpus import Corpus
    from monitor.metrics.spec import default_metrics, parse_metrics

    metrics = default_metrics() if args.metrics is None else parse_metrics(args.metrics)
    named = [m for m in metrics if m.unit is not None]
    if args.unit_cut is not None and (args.unit is None or named):
        if not named:
            raise UsageError("--unit-cut goes with --unit (or a metric naming its unit)")
        example = replace(named[0], unit_cut=args.unit_cut)
        raise UsageError(
            f"--unit-cut does not apply to {named[0]}, which names its unit: name the cut "
            f"with it, as {example}"
        )
    if args.unit is not None:
        cut = args.unit_cut or "passages"
        metrics = tuple(
            m if m.unit is not None else replace(m, unit=args.unit, unit_cut=cut) for m in metrics
        )
    corpus = Corpus.load(args.corpus) if args.corpus is not None else None
    if corpus is None and any(m.unit is not None for m in metrics):
        raise UsageError("--corpus FILE is needed to count units (--unit or a [unit] metric)")
    return metrics, corpus


def add_judged_run_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--qrels``, ``--run`` and the scoring options (trec_eval's), shared with ``k-sweep``."""
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
    add_scoring_options(parser)


def add_scoring_options(parser: argparse.ArgumentParser) -> None:
    """Add trec_eval's scoring options: ``-c``, ``--average``, ``-l``, ``-M`` and ``-J``."""
    parser.add_argument(
        "-c",
        "--include-no-relevant",
        action="store_true",
        help="also average over the judged queries with no relevant judgment, as zeros: "
        "the same as --average all",
    )
    parser.add_argument(
        "--average",
        choices=AVERAGES,
        default=None,
        help="the queries of the means: answerable (those with a relevant judgment; the "
        "default), trec_eval (those in both qrels and run, no-relevant ones as 0: trec_eval "
        "without -c) or all (every judged query, missing ones 0: trec_eval -c)",
    )
    parser.add_argument(
        "-l",
        "--relevance-level",
        type=_positive,
        default=None,
        metavar="N",
        help="binary measures count grades >= N as relevant; ndcg, dcg, err and rbp keep "
        "the grades as gains, as trec_eval -l does (default: 1)",
    )
    parser.add_argument(
        "-M",
        "--max-docs",
        type=_positive,
        default=None,
        metavar="N",
        help="cut each ranking to its first N (trec_eval's order) before every measure, as "
        "trec_eval -M: a cut run, so -M100 ndcg is not ndcg@100 (its ideal ranking is not cut)",
    )
    parser.add_argument(
        "-J",
        "--judged-only",
        action="store_true",
        help="remove the documents without a judgment (grade >= 0) from each ranking before "
        "scoring, as trec_eval -J",
    )


def scoring_options(
    args: argparse.Namespace, defaults: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Return the scoring keyword arguments of ``evaluate`` the options above set; those
    not given take ``defaults`` (a suite's ``scoring``), else trec_eval's defaults."""
    if args.include_no_relevant and args.average not in (None, "all"):
        raise UsageError(
            f"--include-no-relevant is --average all; it cannot go with --average {args.average}"
        )
    given = {
        "average": "all" if args.include_no_relevant else args.average,
        "relevance_level": args.relevance_level,
        "max_docs": args.max_docs,
        "judged_only": args.judged_only or None,
    }
    options: dict[str, Any] = {
        "average": None,
        "relevance_level": 1,
        "max_docs": None,
        "judged_only": False,
        **(defaults or {}),
    }
    options.update((key, value) for key, value in given.items() if value is not None)
    return options


#: A positive integer in ASCII digits (str.isdigit() also takes other scripts' digits),
#: small enough for the metric engine's 64-bit arrays.
_positive = arguments.integer(1, what="a positive integer")


def run(args: argparse.Namespace) -> int:
    """Evaluate and print; return the exit code."""
    from monitor.metrics.evaluation import evaluate

    metrics, corpus = unit_metrics(args)
    result = evaluate(
        args.qrels,
        args.run,
        metrics,
        corpus=corpus,
        grades=args.grades,
        **scoring_options(args),
    )
    names: NameStyle = args.names or ("trec_eval" if args.format == "trec_eval" else "canonical")
    if not result.query_ids:
        raise InputError(args.qrels, "at least one judged query with a relevant document")
    if result.duplicates:
        print(
            f"retrieval-monitor: warning: {result.duplicates} repeated doc ids dropped in "
            f"{result.queries_with_duplicates} queries (each counted once, at its best position)",
            file=sys.stderr,
        )
    if args.format == "json":
        json.dump(result.to_dict(per_query=args.per_query, names=names), sys.stdout)
        sys.stdout.write("\n")
    elif args.format == "csv":
        _write_csv(result, per_query=args.per_query, names=names)
    elif args.format == "trec_eval":
        sys.stdout.write(result.to_trec_eval(per_query=args.per_query, names=names))
    else:
        print(result.format_table(names))
        if args.per_query:
            frame = result.per_query
            frame.columns = [display_name(str(m), names) for m in result.metrics]
            print()
            print(frame.to_string(float_format=lambda v: f"{v:.4f}"))
    return 0


def _write_csv(result: Any, *, per_query: bool, names: NameStyle) -> None:
    """Write one row per query (with --per-query) and a last row ``all`` with the means."""
    writer = csv.writer(sys.stdout, lineterminator="\n")
    keys = [str(m) for m in result.metrics]
    writer.writerow(["query_id", *(display_name(key, names) for key in keys)])
    if per_query:
        for qid, row in zip(
            result.query_ids, result.per_query.itertuples(index=False), strict=True
        ):
            writer.writerow([qid, *(repr(float(v)) for v in row)])
    writer.writerow(["all", *(repr(result.means[key]) for key in keys)])
