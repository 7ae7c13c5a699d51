"""``retrieval-monitor compare-pipelines``: A/B several search functions on one eval set."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from monitor.cli import arguments
from monitor.cli.evaluate import add_scoring_options, scoring_options
from monitor.errors import UsageError


def register(subparsers: Any) -> None:
    """Add the ``compare-pipelines`` sub-command."""
    parser = subparsers.add_parser(
        "compare-pipelines",
        help="run several search pipelines on one eval set and compare them",
        description=(
            "Run several search pipelines on one eval set and print one table of metrics, "
            "latency and errors, with the significance of each difference from the first "
            "pipeline. Pipelines come from --pipeline NAME=SPEC options (SPEC is a YAML "
            "mapping such as '{kind: http, url: ..., ids: ...}', or the shorthands "
            "'replay:FILE', 'replay:larkfield/METHOD' and 'python:MODULE:CALLABLE') or from the "
            "suites of --config (each suite's search, on the first suite's eval set). "
            "A pipeline whose every query failed is a failed search backend: the table is "
            "still printed, with the pipeline marked FAILED, stderr names it and its errors, "
            "and the exit code is 3, whichever pipelines worked. A pipeline where only some "
            "queries failed is compared on the queries it answered (a failed query is left "
            "out of its means and of the paired tests) with a warning on stderr."
        ),
    )
    parser.add_argument(
        "--pipeline",
        action="append",
        default=[],
        metavar="NAME=SPEC",
        help="a pipeline to compare (repeatable; the first is the reference)",
    )
    parser.add_argument(
        "--config", type=Path, metavar="FILE", help="take the pipelines from this config's suites"
    )
    parser.add_argument(
        "--suite",
        action="append",
        metavar="NAME",
        help="with --config, only these suites (repeatable)",
    )
    parser.add_argument(
        "--evalset",
        type=Path,
        metavar="FILE",
        help="the eval set (default: the config's, else the bundled Larkfield)",
    )
    parser.add_argument(
        "--queries", type=Path, metavar="TSV", help="query texts for a TREC qrels eval set"
    )
    parser.add_argument(
        "--metrics",
        metavar="M1,M2,...",
        default="hit_rate@1,recall@5,mrr@10,ndcg@10",
        help="metrics (default: hit_rate@1,recall@5,mrr@10,ndcg@10)",
    )
    parser.add_argument(
        "--k",
        type=arguments.count,
        default=10,
        metavar="N",
        help="results asked of each search (default 10)",
    )
    parser.add_argument(
        "--concurrency",
        type=arguments.integer(1, 1024),
        default=4,
        metavar="N",
        help="queries in flight at once per pipeline (default 4)",
    )
    parser.add_argument(
        "--timeout",
        type=arguments.seconds(),
        default=10.0,
        metavar="SECONDS",
        help="seconds one query may take before it counts as failed (default 10)",
    )
    parser.add_argument(
        "--alpha",
        type=arguments.share,
        default=0.05,
        help="significance level of the paired randomization test (default 0.05)",
    )
    parser.add_argument(
        "--iterations",
        type=arguments.integer(1, 10_000_000),
        default=10000,
        metavar="N",
        help="sign flips of the randomization test (default 10000)",
    )
    parser.add_argument(
        "--format",
        choices=("table", "json"),
        default="table",
        help="output format (default: table)",
    )
    # trec_eval's scoring options, as evaluate takes them; with --config, the first suite's
    # scoring section gives those not given here.
    add_scoring_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Build the pipelines, run them, print the comparison."""
    from monitor.compare.pipelines import compare_pipelines
    from monitor.evalset import EvalSet, bundled
    from monitor.evalset.suite import load_evalset
    from monitor.metrics.spec import parse_metrics
    from monitor.runner.reference import judge_by_reference
    from monitor.search import build_search, close_search

    specs: dict[str, tuple[str, dict[str, object]]] = {}
    evalset = None
    scoring: dict[str, Any] | None = None
    if args.config is not None:
        from monitor.config import load_config

        config = load_config(args.config)
        for name in args.suite or list(config.suites):
            suite = config.suite(name)
            specs[name] = (suite.search.kind, suite.search.plugin_options())
            if evalset is None:
                scoring = suite.scoring.options()  # scored as the suite whose eval set it is
                evalset = load_evalset(suite.evalset)
                if suite.evalset.reference is not None:
                    reference, depth = suite.evalset.reference, suite.evalset.reference_k
                    evalset = judge_by_reference(evalset, reference, depth)
    for item in args.pipeline:
        name, spec = _parse_pipeline(item)
        if name in specs:
            raise UsageError(f"--pipeline: the name {name!r} is given twice")
        specs[name] = spec
    if len(specs) < 2:
        raise UsageError("compare-pipelines needs at least two pipelines (--pipeline or --config)")
    if args.evalset is not None:
        evalset = EvalSet.load(args.evalset, queries=args.queries)
    evalset = evalset or bundled.larkfield_evalset()
    metrics = parse_metrics(args.metrics)

    searches = {}
    try:
        for name, (kind, options) in specs.items():
            searches[name] = build_search(kind, options)
        comparison = compare_pipelines(
            evalset,
            searches,
            metrics,
            alpha=args.alpha,
            iterations=args.iterations,
            k=args.k,
            concurrency=args.concurrency,
            timeout=args.timeout,
            scoring=scoring_options(args, scoring),
        )
    finally:
        for search in searches.values():
            close_search(search)
    if args.format == "json":
        json.dump(comparison.to_dict(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(comparison)
    for warning in comparison.warnings():
        print(f"retrieval-monitor: warning: {warning}", file=sys.stderr)
    failure = comparison.backend_failure()
    if failure is not None:  # a dead pipeline is a failed backend, never a result (exit 3)
        sys.stdout.flush()
        raise failure
    return 0


def _parse_pipeline(item: str) -> tuple[str, tuple[str, dict[str, object]]]:
    """Parse ``NAME=SPEC`` into the name and the plug-in's (kind, options)."""
    name, sep, spec = item.partition("=")
    name, spec = name.strip(), spec.strip()
    if not sep or not name or not spec:
        raise UsageError(f"--pipeline: expected NAME=SPEC, found {item!r}")
    return name, parse_search_spec(spec, f"--pipeline {name}")


def parse_search_spec(spec: str, where: str) -> tuple[str, dict[str, object]]:
    """Parse a search spec into the plug-in's (kind, options); ``where`` starts each error.

    A spec is a YAML mapping with a ``kind`` or one of the shorthands ``replay:FILE``,
    ``replay:larkfield/METHOD`` and ``python:MODULE:CALLABLE``.
    """
    import yaml

    spec = spec.strip()
    if spec.startswith("{"):
        try:
            options = yaml.safe_load(spec)
        except yaml.YAMLError as exc:
            raise UsageError(f"{where}: the spec is not valid YAML: {exc}") from None
        if not isinstance(options, dict) or not isinstance(options.get("kind"), str):
            raise UsageError(f"{where}: expected a mapping with a 'kind', found {spec!r}")
        kind = options.pop("kind")
        return kind, options
    kind, _, argument = spec.partition(":")
    if kind == "replay" and argument.startswith("larkfield/"):
        return "replay", {"bundled": argument}
    if kind == "replay" and argument:
        return "replay", {"path": argument}
    if kind == "python" and argument:
        return "python", {"target": argument}
    raise UsageError(
        f"{where}: expected a YAML mapping or replay:FILE, replay:larkfield/METHOD or "
        f"python:MODULE:CALLABLE, found {spec!r}"
    )
