"""``retrieval-monitor judgments``: the labeling queue, judgment layers and their export."""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from monitor.cli import arguments
from monitor.cli.run import add_config_options, load, store_target
from monitor.terminal import counted, printable

if TYPE_CHECKING:
    from monitor.config.model import SuiteConfig
    from monitor.evalset import EvalSet
    from monitor.store import Store


def register(subparsers: Any) -> None:
    """Add the ``judgments`` sub-command and its actions."""
    parser = subparsers.add_parser(
        "judgments", help="list label holes, add graded layers, list and export the judgments"
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    todo = actions.add_parser(
        "todo", help="list unjudged (query, doc) pairs the run and its baseline retrieved"
    )
    add_config_options(todo)
    todo.add_argument("--suite", required=True, metavar="NAME", help="the suite")
    todo.add_argument(
        "--run", type=arguments.row_id, metavar="ID", help="the run (default: the latest ok)"
    )
    todo.add_argument(
        "--depth",
        type=arguments.count,
        default=10,
        metavar="K",
        help="pool the top K of each (default 10)",
    )
    todo.add_argument(
        "--format", choices=("csv", "jsonl", "trec"), default="csv", help="default: csv"
    )
    todo.add_argument(
        "--output", type=arguments.output_file, metavar="FILE", help="write to FILE, not stdout"
    )
    todo.set_defaults(handler=todo_command)

    add = actions.add_parser("add", help="store graded pairs as a new judgment layer")
    add_config_options(add)
    add.add_argument("--suite", required=True, metavar="NAME", help="the suite")
    add.add_argument("file", type=Path, metavar="FILE", help="filled todo CSV, JSONL or qrels")
    add.add_argument("--source", metavar="NAME", help="where the grades come from (default FILE)")
    add.add_argument("--who", metavar="NAME", help="who graded them (default: your user name)")
    add.add_argument(
        "--format", choices=("csv", "jsonl", "trec"), help="the file's format (default: suffix)"
    )
    add.add_argument(
        "--override", action="store_true", help="replace grades that conflict with earlier ones"
    )
    add.set_defaults(handler=add_command)

    listing = actions.add_parser("list", help="list the suite's judgment layers")
    add_config_options(listing)
    listing.add_argument("--suite", required=True, metavar="NAME", help="the suite")
    listing.add_argument("--format", choices=("text", "json"), default="text", help="default: text")
    listing.set_defaults(handler=list_command)

    export = actions.add_parser(
        "export", help="write the merged judgments (frozen set + human layers)"
    )
    add_config_options(export)
    export.add_argument("--suite", required=True, metavar="NAME", help="the suite")
    export.add_argument(
        "--format", choices=("trec", "jsonl"), default="jsonl", help="default: jsonl"
    )
    export.add_argument(
        "--output", type=arguments.output_file, metavar="FILE", help="write to FILE, not stdout"
    )
    export.set_defaults(handler=export_command)

    agreement = actions.add_parser(
        "agreement", help="how often each judge agrees with human grades on their overlap"
    )
    add_config_options(agreement)
    agreement.add_argument("--suite", required=True, metavar="NAME", help="the suite")
    agreement.add_argument(
        "--format", choices=("text", "json"), default="text", help="default: text"
    )
    agreement.set_defaults(handler=agreement_command)

    verify = actions.add_parser(
        "verify", help="draw a stratified sample of the judge's grades for people, blind"
    )
    add_config_options(verify)
    verify.add_argument("--suite", required=True, metavar="NAME", help="the suite")
    verify.add_argument(
        "--share",
        type=arguments.share,
        default=0.1,
        metavar="X",
        help="the share of the judge's unverified grades to draw (default 0.1)",
    )
    verify.add_argument(
        "--seed", type=arguments.integer(0, what="a seed"), default=0, metavar="N",
        help="the seed of the draw (default 0)",
    )  # fmt: skip
    verify.add_argument(
        "--by",
        choices=("pair", "query"),
        default="pair",
        help="draw pairs, or whole queries with all their judge grades (for alert_labels: "
        "calibrated); default: pair",
    )
    verify.add_argument(
        "--format", choices=("csv", "jsonl", "trec"), default="csv", help="default: csv"
    )
    verify.add_argument(
        "--output", type=arguments.output_file, metavar="FILE", help="write to FILE, not stdout"
    )
    verify.set_defaults(handler=verify_command)

    from monitor.cli.traffic import register_from_clicks

    register_from_clicks(actions)


def _open(args: argparse.Namespace) -> tuple[SuiteConfig, Store, EvalSet]:
    from monitor.evalset.suite import load_evalset
    from monitor.store import open_store

    config = load(args)
    suite = config.suite(args.suite)
    store = open_store(store_target(args, config))
    return suite, store, load_evalset(suite.evalset)


def _emit(text: str, output: Path | None) -> None:
    from monitor.io import write_text_atomic

    if output is None:
        sys.stdout.write(text)
    else:
        write_text_atomic(output, text)


def todo_command(args: argparse.Namespace) -> int:
    """Print the labeling queue of a run and its baseline."""
    from monitor.errors import StoreLookupError, UsageError
    from monitor.judgments import effective_evalset
    from monitor.judgments.suite import doc_texts
    from monitor.judgments.todo import todo_items, write_todo

    suite, store, frozen = _open(args)
    with store:
        if args.run is None:
            run = store.latest_run(suite.name)
            if run is None:
                raise UsageError(f"suite {suite.name!r} has no ok run to list label holes of")
        else:
            run = store.get_run(args.run)
            if run.suite != suite.name:
                raise StoreLookupError(store.location, f"run of suite {suite.name!r}", args.run)
        runs = [run]
        baseline = store.get_baseline(suite.name)
        if baseline is not None and baseline.run_id != run.run_id:
            runs.append(baseline)
        evalset = effective_evalset(store, suite.name, frozen)
    items = todo_items(evalset, runs, depth=args.depth, doc_text=doc_texts(suite))
    _emit(write_todo(items, args.format), args.output)
    print(f"{len(items)} unjudged pairs", file=sys.stderr)
    return 0


def add_command(args: argparse.Namespace) -> int:
    """Store a graded file as a judgment layer."""
    from monitor.judgments import add_layer
    from monitor.judgments.files import read_grades

    grades = read_grades(args.file, args.format)
    suite, store, frozen = _open(args)
    with store:
        layer = add_layer(
            store,
            suite.name,
            grades,
            frozen=frozen,
            source=args.source or args.file.name,
            who=args.who or getpass.getuser(),
            override=args.override,
        )
    size = counted(layer.size, "grade")
    print(f"layer {layer.layer_id} added to {suite.name}: {size} from {layer.source}")
    return 0


def list_command(args: argparse.Namespace) -> int:
    """List the suite's judgment layers with their provenance."""
    from monitor.judgments import effective_evalset, judgments_version

    suite, store, frozen = _open(args)
    with store:
        layers = store.layers(suite.name)
        version = judgments_version(effective_evalset(store, suite.name, frozen))
    rows = [
        {
            "layer_id": layer.layer_id,
            "kind": layer.kind,
            "source": layer.source,
            "who": layer.who,
            "created_at": layer.created_at.isoformat(),
            "grades": layer.size,
            "override": layer.override,
        }
        for layer in layers
    ]
    if args.format == "json":
        print(json.dumps({"suite": suite.name, "judgments_version": version, "layers": rows}))
        return 0
    print(f"suite {suite.name}: judgments {version}")
    table = [
        [
            str(row["layer_id"]),
            str(row["kind"]),
            str(row["grades"]),
            "yes" if row["override"] else "no",
            f"{layer.created_at:%Y-%m-%d %H:%M:%S}",
            printable(str(row["who"])),
            printable(str(row["source"])),
        ]
        for row, layer in zip(rows, layers, strict=True)
    ]
    header = ["layer", "kind", "grades", "override", "created (UTC)", "who", "source"]
    widths = [max(len(cells[i]) for cells in [header, *table]) for i in range(len(header))]
    right = {0, 2}  # numbers line up on their last digit
    for cells in [header, *table]:
        padded = [
            cell.rjust(width) if i in right else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ]
        print("  ".join(padded).rstrip())
    return 0


def export_command(args: argparse.Namespace) -> int:
    """Write the merged judgments (frozen + human layers), to commit as the next frozen file."""
    from monitor.evalset.formats import Contents, format_evalset
    from monitor.evalset.trec import format_qrels
    from monitor.judgments import effective_evalset

    suite, store, frozen = _open(args)
    with store:
        evalset = effective_evalset(store, suite.name, frozen)
    if args.format == "trec":
        text = format_qrels(evalset.queries)
    else:
        text = format_evalset(Contents(evalset.name, evalset.columns()), "jsonl")
    _emit(text, args.output)
    return 0


def agreement_command(args: argparse.Namespace) -> int:
    """Print each judge's agreement with human grades (and store it for the layer state)."""
    from monitor.judgments.agreement import ITERATIONS, LEVEL, SEED, suite_agreement
    from monitor.judgments.judges import DEFAULT_MAX_GRADE

    suite, store, frozen = _open(args)
    top = suite.judge.max_grade if suite.judge is not None else DEFAULT_MAX_GRADE
    with store:
        found = suite_agreement(store, suite.name, frozen, max_grade=top)
    if args.format == "json":
        method = (
            f"{LEVEL:.0%} percentile bootstrap over queries, {ITERATIONS} resamples, seed {SEED}"
        )
        judges = [agreement.to_state() for agreement in found]
        print(
            json.dumps(
                {
                    "suite": suite.name,
                    "kappa_weights": "quadratic",
                    "interval": method,
                    "judges": judges,
                }
            )
        )
        return 0
    if not found:
        print(f"suite {suite.name}: no judge layer yet")
    for agreement in found:
        for line in agreement.lines():
            print(printable(line))
    return 0


def verify_command(args: argparse.Namespace) -> int:
    """Write a blind, stratified sample of the suite judge's unverified grades."""
    from monitor.judgments.todo import write_todo
    from monitor.judgments.verify import suite_verify_sample

    suite, store, frozen = _open(args)
    with store:
        sample = suite_verify_sample(
            suite, store, frozen, share=args.share, seed=args.seed, by=args.by
        )
    _emit(write_todo(sample.items, args.format), args.output)
    strata = "; ".join(stratum.describe() for stratum in sample.strata)
    print(
        f"{len(sample.items)} of {sample.population} unverified judge grades drawn "
        f"(seed {args.seed}){': ' + strata if strata else ''}",
        file=sys.stderr,
    )
    return 0
