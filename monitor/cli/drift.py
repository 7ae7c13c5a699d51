"""``retrieval-monitor drift check``: are the current window's queries like the reference's?

Two windows of the traffic database (``--logs DB --reference WINDOW --current WINDOW``) or
two query files (``--reference-file F --current-file F``) are embedded and compared
(:mod:`monitor.drift`). With ``--suite``, the suite's ``drift:`` section names the windows
and settings, and the result is stored and its alert raised or resolved
(:mod:`monitor.drift.publish`). The verdict sets the exit code: ``ok`` 0, ``drift`` 4 (as a failed
quality gate), ``no data`` 5 (a window with too few queries to tell).
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from monitor.cli import arguments
from monitor.cli.exits import ExitCode
from monitor.cli.run import add_config_options, load, store_target
from monitor.errors import UsageError

if TYPE_CHECKING:
    from monitor.drift.check import DriftResult
    from monitor.drift.queries import QuerySample

#: The exit code of each verdict.
VERDICT_CODES = {
    "ok": ExitCode.OK,
    "drift": ExitCode.QUALITY_GATE,
    "no data": ExitCode.INSUFFICIENT_EVIDENCE,
}


def register(subparsers: Any) -> None:
    """Add the ``drift`` sub-command with ``check``."""
    parser = subparsers.add_parser(
        "drift", help="label-free query drift between two windows of traffic or two query files"
    )
    actions = parser.add_subparsers(dest="drift_command", metavar="ACTION", required=True)
    check = actions.add_parser(
        "check",
        help="MMD permutation test, domain classifier AUC and centroid distance of two samples",
        description="Embed two samples of queries and test whether they come from one "
        "distribution. Exit 0 when ok, 4 on drift, 5 when a sample has too few queries.",
    )
    add_config_options(check)
    check.add_argument(
        "--suite", metavar="NAME", help="check the suite's drift: section; store and alert it"
    )
    check.add_argument("--logs", type=Path, metavar="DB", help="the traffic database (DuckDB)")
    check.add_argument(
        "--reference",
        metavar="WINDOW",
        help="START..END (ISO 8601), or a length (28d) ending where --current starts",
    )
    check.add_argument(
        "--current", metavar="WINDOW", help="START..END, or a length (7d) ending at --until"
    )
    check.add_argument(
        "--until", metavar="TIME", help="where a window given as a length ends (default: now)"
    )
    check.add_argument("--reference-file", type=Path, metavar="FILE", help="reference queries")
    check.add_argument("--current-file", type=Path, metavar="FILE", help="current queries")
    check.add_argument(
        "--embedding-kind", default="onnx", metavar="KIND", help="the embedder (default onnx)"
    )
    check.add_argument(
        "--weighting",
        choices=("distinct", "searches"),
        default="distinct",
        help="each query key once, or once a search (default distinct)",
    )
    check.add_argument(
        "--alpha", type=arguments.share, default=0.05, metavar="A", help="default 0.05"
    )
    check.add_argument(
        "--seed", type=arguments.integer(what="a seed"), default=0, metavar="S", help="default 0"
    )
    check.add_argument(
        "--permutations", type=arguments.count, default=200, metavar="B", help="default 200"
    )
    check.add_argument(
        "--min-queries", type=arguments.count, default=50, metavar="N", help="default 50"
    )
    check.add_argument(
        "--max-rows",
        type=arguments.count,
        default=1000,
        metavar="N",
        help="queries compared per side at most, a seeded subsample above (default 1000)",
    )
    check.add_argument("--max-auc", type=float, metavar="X", help="drift above this AUC too")
    check.add_argument(
        "--max-centroid-distance", type=float, metavar="X", help="drift above this 1 - cos too"
    )
    check.add_argument("--format", choices=("text", "json"), default="text", help="default: text")
    check.set_defaults(handler=check_command)


def _samples(args: argparse.Namespace) -> tuple[QuerySample, QuerySample]:
    from monitor.config.windows import parse_moment, windows
    from monitor.drift.queries import read_query_file, window_queries

    files = args.reference_file is not None or args.current_file is not None
    logs = args.logs is not None or args.reference is not None or args.current is not None
    if files and not logs and args.reference_file and args.current_file:
        return read_query_file(args.reference_file), read_query_file(args.current_file)
    if logs and not files and args.logs and args.reference and args.current:
        from monitor.traffic.engine import connect

        now = datetime.now(timezone.utc).replace(tzinfo=None)
        until = now if args.until is None else parse_moment(args.until)
        reference, current = windows(args.reference, args.current, until=until)
        connection = connect(args.logs, read_only=True, create=False)
        try:
            return window_queries(connection, reference), window_queries(connection, current)
        finally:
            connection.close()
    raise UsageError(
        "drift check: expected --logs DB --reference WINDOW --current WINDOW, "
        "or --reference-file FILE --current-file FILE"
    )


def check_command(args: argparse.Namespace) -> int:
    """Print the drift statistics and verdict of two samples; exit by the verdict."""
    if args.suite is not None:
        return suite_command(args)
    from monitor.drift.queries import check_queries, open_embedder
    from monitor.drift.settings import DriftSettings

    settings = DriftSettings(
        alpha=args.alpha,
        permutations=args.permutations,
        seed=args.seed,
        min_queries=args.min_queries,
        max_rows=args.max_rows,
        max_auc=args.max_auc,
        max_centroid_distance=args.max_centroid_distance,
    )
    reference, current = _samples(args)
    embedder = open_embedder(args.embedding_kind)
    try:
        result = check_queries(reference, current, embedder, settings, args.weighting)
        model = embedder.model_id
    finally:
        embedder.close()
    if args.format == "json":
        body = result.to_json()
        body["reference"]["source"] = reference.source
        body["current"]["source"] = current.source
        body["model"] = model
        body["weighting"] = args.weighting
        print(json.dumps(body))
    else:
        print("\n".join(render(result, reference.source, current.source, model)))
    return int(VERDICT_CODES[result.status])


def suite_command(args: argparse.Namespace) -> int:
    """Check the suite's configured drift windows, store the result, raise or resolve."""
    from monitor.alerts.base import close_notifiers
    from monitor.alerts.registry import build_notifiers
    from monitor.drift.publish import run_suite_check
    from monitor.drift.queries import open_embedder
    from monitor.store import open_store

    given = [args.logs, args.reference, args.current, args.reference_file, args.current_file]
    if any(value is not None for value in given):
        raise UsageError(
            "drift check --suite: the suite's drift: section names the logs and windows; "
            "leave out --logs, --reference, --current and the files"
        )
    config = load(args)
    suite = config.suite(args.suite)
    if suite.drift is None:
        raise UsageError(f"suite {suite.name!r} has no drift: section in its config")
    embedder = open_embedder(suite.drift.embedding)
    notifiers = build_notifiers(suite)
    try:
        with open_store(store_target(args, config)) as store:
            at = datetime.now(timezone.utc)
            result, spans, report = run_suite_check(store, suite, embedder, notifiers, at)
        model = embedder.model_id
    finally:
        close_notifiers(notifiers.values())
        embedder.close()
    told = [f"alert {alert.rule} firing" for alert in report.firing]
    told += [f"alert {alert.rule} resolved" for alert in report.resolved]
    if args.format == "json":
        body = result.to_json()
        body["reference"]["source"] = f"window {spans[0].label}"
        body["current"]["source"] = f"window {spans[1].label}"
        body.update(model=model, weighting=suite.drift.weighting, suite=suite.name, alerts=told)
        print(json.dumps(body))
    else:
        lines = render(result, f"window {spans[0].label}", f"window {spans[1].label}", model)
        print("\n".join([f"suite {suite.name}: {suite.drift.name}", *lines, *told]))
    return int(VERDICT_CODES[result.status])


def render(result: DriftResult, reference: str, current: str, model: str) -> list[str]:
    """Return the text report of ``result``: the samples, the three figures, the verdict."""
    lines = [
        f"reference: {reference}: {result.reference_queries} queries, "
        f"{result.reference_rows} compared",
        f"current:   {current}: {result.current_queries} queries, {result.current_rows} compared",
        f"embedder:  {model}",
    ]
    if result.mmd is not None and result.auc is not None and result.centroid is not None:
        lines += [
            f"MMD^2 {result.mmd.mmd2:.6f} (bandwidth {result.mmd.bandwidth:.4f}), "
            f"p = {result.mmd.p_value:.4f} by {result.mmd.permutations} permutations",
            f"domain classifier AUC {result.auc.auc:.4f} "
            f"(p = {result.auc.p_value:.4g}, {result.auc.folds}-fold)",
            f"centroid distance {result.centroid.cosine:.6f} (1 - cos), "
            f"{result.centroid.euclidean:.6f} (Euclidean)",
        ]
    verdict = f"verdict: {result.status}"
    if result.reasons:
        verdict += f" ({'; '.join(result.reasons)})"
    return [*lines, verdict]
