"""``retrieval-monitor logs import|metrics`` and ``judgments from-clicks``: production traffic.

The logs are kept in a DuckDB database file named by ``--db`` (made by ``logs import``), not
in the monitor's store: they are many more rows than runs, and DuckDB aggregates them in
place. ``judgments from-clicks`` reads that file and adds the grades to the suite's
judgment layers in the store, as ``judgments add`` does. With ``--engine spark`` the same
SQL runs on Spark over the file's tables (:mod:`monitor.traffic.spark`).
"""

from __future__ import annotations

import argparse
import getpass
import json
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from monitor.cli.run import add_config_options, load, store_target

if TYPE_CHECKING:
    from monitor.config.windows import Window
    from monitor.traffic.engine import Connection, Reader
    from monitor.traffic.online import OnlineMetrics


def _add_db(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db", type=Path, required=True, metavar="PATH", help="the traffic database (DuckDB)"
    )


def _add_window(parser: argparse.ArgumentParser, default: str | None) -> None:
    told = f"default {default}" if default else "default: every stored search"
    parser.add_argument(
        "--window", default=default, metavar="LENGTH", help=f"30m, 24h, 7d or 2w ({told})"
    )
    parser.add_argument("--until", metavar="TIME", help="the window's end, ISO 8601 (default: now)")
    parser.add_argument(
        "--click-action",
        default="click",
        metavar="NAME",
        help="the action_name of clicks (default click)",
    )


def _add_engine(parser: argparse.ArgumentParser, *, config: bool = True) -> None:
    """Add ``--engine`` and Spark's options; ``config``: add ``--config`` too (a command that
    has one of its own reads Spark's settings from it as well)."""
    from monitor.traffic.engine import ENGINES  # no DuckDB, no pyspark: only the names

    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default=ENGINES[0],
        help="where the SQL runs: DuckDB in process, or Spark (the spark extra; default duckdb)",
    )
    parser.add_argument(
        "--spark-master",
        metavar="URL",
        help="with --engine spark: the master (default $MONITOR_SPARK_MASTER, else the "
        "config's traffic: spark: master, else local[2])",
    )
    parser.add_argument(
        "--spark-conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="with --engine spark: a Spark setting (repeatable; also $MONITOR_SPARK_CONF and "
        "the config's traffic: spark: conf)",
    )
    if config:
        parser.add_argument(
            "--config",
            type=Path,
            metavar="FILE",
            help="with --engine spark: a config whose traffic: spark: section gives the settings",
        )


@contextmanager
def _engine(args: argparse.Namespace, connection: Connection) -> Iterator[Reader]:
    """Yield what the aggregations read: ``connection`` itself, or its tables on Spark."""
    if args.engine == "duckdb":
        yield connection
        return
    from monitor.traffic.spark import on_spark, settings_from

    section = None
    if args.config is not None:
        from monitor.config import load_config

        section = load_config(args.config).traffic
    settings = settings_from(args.spark_master, args.spark_conf, section=section)
    with on_spark(connection, settings) as reader:
        yield reader


def register(subparsers: Any) -> None:
    """Add the ``logs`` sub-command with ``import`` and ``metrics``."""
    from monitor.traffic.importer import MIN_DISTINCT_CLIENTS

    parser = subparsers.add_parser(
        "logs", help="import query and click logs; online metrics of a window of traffic"
    )
    actions = parser.add_subparsers(dest="logs_command", metavar="ACTION", required=True)
    reading = actions.add_parser(
        "import",
        help="read UBI query and event logs (NDJSON, Parquet, CSV; gzip or not) into --db",
    )
    reading.add_argument(
        "--queries",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="a query log (repeatable)",
    )
    reading.add_argument(
        "--events",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="an event log (repeatable)",
    )
    reading.add_argument(
        "--db", type=Path, metavar="PATH", help="the traffic database (default: the config's)"
    )
    reading.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="a config whose traffic: section gives the database and the client floor",
    )
    reading.add_argument(
        "--min-distinct-clients",
        type=int,
        metavar="N",
        help=f"drop queries fewer clients issued (default the config's, else "
        f"{MIN_DISTINCT_CLIENTS})",
    )
    reading.add_argument(
        "--skip-bad",
        type=int,
        default=0,
        metavar="N",
        help="skip up to N bad rows, counted (default 0: the first is an error)",
    )
    reading.add_argument(
        "--keep-attribute",
        metavar="FIELD",
        help="keep this query-log field (e.g. query_attributes.device) for online segments",
    )
    reading.set_defaults(handler=import_command)
    metrics = actions.add_parser(
        "metrics", help="zero-result rate, CTR, abandonment, ... of a window, per application"
    )
    _add_db(metrics)
    _add_window(metrics, "7d")
    metrics.add_argument(
        "--reformulation-gap",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="a next search within this many seconds can reformulate (default 300)",
    )
    metrics.add_argument(
        "--paulscore-factor",
        type=float,
        default=0.5,
        metavar="F",
        help="PaulScore's factor, above 0 and below 1 (default 0.5)",
    )
    metrics.add_argument("--format", choices=("text", "json"), default="text", help="default: text")
    _add_engine(metrics)
    metrics.set_defaults(handler=metrics_command)


def register_from_clicks(actions: Any) -> None:
    """Add ``judgments from-clicks`` to the ``judgments`` actions."""
    parser = actions.add_parser(
        "from-clicks", help="grade (query, doc) pairs from click logs and add them as a layer"
    )
    add_config_options(parser)
    parser.add_argument("--suite", required=True, metavar="NAME", help="the suite")
    _add_db(parser)
    parser.add_argument(
        "--model", choices=("coec", "ctr_share"), default="coec", help="default: coec"
    )
    parser.add_argument(
        "--max-rank", type=int, default=10, metavar="K", help="count ranks 1..K (default 10)"
    )
    parser.add_argument(
        "--min-impressions",
        type=int,
        default=10,
        metavar="N",
        help="leave pairs shown fewer times unjudged (default 10)",
    )
    parser.add_argument(
        "--prior", type=float, default=1.0, metavar="X", help="additive prior (default 1)"
    )
    parser.add_argument(
        "--cutoffs",
        metavar="A,B,...",
        help="score cut-offs of grades 1, 2, ... (default 0.5,1,2 coec; 0.1,0.25,0.5 ctr_share)",
    )
    _add_window(parser, None)
    parser.add_argument("--who", metavar="NAME", help="who added them (default: your user name)")
    parser.add_argument(
        "--override", action="store_true", help="replace grades that conflict with earlier ones"
    )
    _add_engine(parser, config=False)
    parser.set_defaults(handler=from_clicks_command)


def register_sample(actions: Any) -> None:
    """Add ``evalset sample`` to the ``evalset`` actions."""
    from monitor.cli.arguments import count, integer, output_file

    # The methods of monitor.traffic.sample, named here so that building the parser imports
    # no numpy (tests/test_package.py); a test holds the two lists alike.
    methods = ("topn", "random", "pps", "stratified")

    parser = actions.add_parser(
        "sample",
        help="sample an eval set's queries from a window of traffic (a new version of a file)",
        description="Sample query keys from the traffic database into an eval set file, each "
        "with its searches, inclusion probability and stratum. An existing --output is kept "
        "as its next numbered version (NAME.v1.jsonl, ...) before the new one is written.",
    )
    parser.add_argument(
        "--from", dest="db", type=Path, required=True, metavar="LOGS", help="the traffic database"
    )
    parser.add_argument("--method", choices=methods, required=True, help="how keys are drawn")
    parser.add_argument("--size", type=count, required=True, metavar="N", help="queries")
    parser.add_argument("--seed", type=integer(what="a seed"), default=0, metavar="S", help="0")
    parser.add_argument(
        "--window", metavar="LENGTH", help="30m, 24h, 7d or 2w (default: every stored search)"
    )
    parser.add_argument("--until", metavar="TIME", help="the window's end, ISO 8601 (default: now)")
    parser.add_argument(
        "--output", type=output_file, required=True, metavar="FILE", help="the eval set to write"
    )
    _add_engine(parser)
    parser.set_defaults(handler=sample_command)


def sample_command(args: argparse.Namespace) -> int:
    """Write the sampled eval set, keeping the file it replaces as a numbered version."""
    from monitor.evalset.formats import format_of
    from monitor.evalset.model import EvalSet
    from monitor.traffic.engine import connect
    from monitor.traffic.sample import draw, population

    span = _window(args)
    format_of(args.output)  # an output whose format is unknown fails before any work
    connection = connect(args.db, read_only=True, create=False)
    try:
        with _engine(args, connection) as reader:
            pop = population(reader, span)
    finally:
        connection.close()
    sample = draw(pop, args.method, args.size, args.seed)
    name = f"traffic sample: {args.method}, seed {args.seed}, window {span.label}"
    kept = _keep_version(args.output)
    EvalSet(name, sample.queries()).save(args.output)
    print(
        f"{args.output}: {len(sample.chosen)} of {len(pop)} query keys "
        f"({int(pop.searches.sum())} searches, {span}) by {args.method}, seed {args.seed}"
    )
    if len(sample.chosen) < args.size:
        print(f"warning: the window has {len(pop)} query keys, fewer than --size {args.size}")
    if kept is not None:
        print(f"the earlier version is kept as {kept}")
    print("its queries are unjudged: judge them with `judgments from-clicks` or the labeling queue")
    return 0


def _keep_version(path: Path) -> Path | None:
    """Rename an existing ``path`` to its next free ``STEM.vN.SUFFIXES``; return that name."""
    if not path.exists():
        return None
    suffixes = "".join(path.suffixes)
    stem = path.name[: len(path.name) - len(suffixes)] if suffixes else path.name
    number = 1
    while (kept := path.with_name(f"{stem}.v{number}{suffixes}")).exists():
        number += 1
    path.rename(kept)
    return kept


def _window(args: argparse.Namespace) -> Window:
    from monitor.config.windows import EVERYTHING, parse_moment, window

    if args.window is None:
        if args.until is None:
            return EVERYTHING
        return type(EVERYTHING)(EVERYTHING.start, parse_moment(args.until))
    return window(args.window, args.until)


def import_command(args: argparse.Namespace) -> int:
    """Import the logs into the traffic database and print what was stored."""
    from monitor.errors import UsageError
    from monitor.traffic.engine import connect
    from monitor.traffic.importer import MIN_DISTINCT_CLIENTS, import_logs

    db, floor = args.db, args.min_distinct_clients
    if args.config is not None:
        from monitor.config import load_config

        section = load_config(args.config).traffic
        if section is None:
            raise UsageError(f"{args.config}: no traffic: section to take the database from")
        db = db or section.database
        floor = section.min_distinct_clients if floor is None else floor
    if db is None:
        raise UsageError("logs import needs --db PATH, or --config FILE with a traffic: section")
    connection = connect(db)
    try:
        summary = import_logs(
            connection,
            args.queries,
            args.events,
            min_distinct_clients=MIN_DISTINCT_CLIENTS if floor is None else floor,
            skip_bad=args.skip_bad,
            keep_attribute=args.keep_attribute,
        )
    finally:
        connection.close()
    for line in summary.lines():
        print(line)
    return 0


def metrics_command(args: argparse.Namespace) -> int:
    """Print the online metrics of the window; exit 5 when it holds no search."""
    from monitor.errors import UsageError
    from monitor.traffic.engine import connect
    from monitor.traffic.online import online_metrics

    gap = args.reformulation_gap
    if not (math.isfinite(gap) and gap >= 0):
        raise UsageError(f"--reformulation-gap must be a number of seconds >= 0, not {gap}")
    factor = args.paulscore_factor
    if not 0.0 < factor < 1.0:
        raise UsageError(f"--paulscore-factor must be above 0 and below 1, not {factor}")
    span = _window(args)
    connection = connect(args.db, read_only=True)
    try:
        with _engine(args, connection) as reader:
            found = online_metrics(
                reader,
                span,
                click_action=args.click_action,
                reformulation_gap=gap,
                paulscore_factor=factor,
            )
    finally:
        connection.close()
    if args.format == "json":
        print(json.dumps(_metrics_json(span, found)))
    else:
        print("\n".join(_metrics_text(span, found)))
    return 0


def _metrics_json(span: Window, found: Sequence[OnlineMetrics]) -> dict[str, Any]:
    return {
        "window": {"start": f"{span.start.isoformat()}Z", "end": f"{span.end.isoformat()}Z"},
        "applications": [
            {
                "application": item.application,
                "searches": item.searches,
                "searches_with_results": item.with_results,
                **item.values,
            }
            for item in found
        ],
    }


def _metrics_text(span: Window, found: Sequence[OnlineMetrics]) -> list[str]:
    names = list(found[0].values)
    heads = ["application", "searches", "with_results", *names]
    table = [
        [
            "(all)" if item.application is None else item.application,
            str(item.searches),
            str(item.with_results),
            *("no data" if v is None else f"{v:.4f}" for v in item.values.values()),
        ]
        for item in found
    ]
    widths = [max(len(row[i]) for row in [heads, *table]) for i in range(len(heads))]
    lines = [f"online metrics, {span}"]
    for row in [heads, *table]:
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
    return [line.rstrip() for line in lines]


def from_clicks_command(args: argparse.Namespace) -> int:
    """Grade pairs from the clicks and add the grades of eval-set queries as a layer."""
    from monitor.errors import UsageError
    from monitor.evalset.suite import load_evalset
    from monitor.judgments import add_layer
    from monitor.store import open_store
    from monitor.traffic.clicks import ClickSettings, click_grades, keep_grades, parse_cutoffs
    from monitor.traffic.engine import connect
    from monitor.traffic.keys import query_key

    settings = ClickSettings(
        model=args.model,
        max_rank=args.max_rank,
        min_impressions=args.min_impressions,
        prior=args.prior,
        cutoffs=None if args.cutoffs is None else parse_cutoffs(args.cutoffs),
        click_action=args.click_action,
    )
    span = _window(args)
    source = f"{settings.source} window={span.label}"
    config = load(args)
    suite = config.suite(args.suite)
    frozen = load_evalset(suite.evalset)
    store = open_store(store_target(args, config))
    by_key: dict[str, list[str]] = {}
    for query in frozen:
        by_key.setdefault(query_key(query.text), []).append(query.id)
    with store:
        connection = connect(args.db, create=False)
        try:
            with _engine(args, connection) as reader:
                graded = click_grades(reader, settings, span)
            matched = [item for item in graded if item.query_key in by_key]
            grades: dict[str, dict[str, int]] = {}
            for item in matched:
                for query_id in by_key[item.query_key]:
                    grades.setdefault(query_id, {})[item.doc] = item.grade
            keys = {item.query_key for item in graded}
            if not grades:
                raise UsageError(
                    f"{args.db}: none of the {len(keys)} click-graded queries is a query of "
                    f"suite {suite.name!r} (matched by normalised text); nothing to add"
                )
            layer = add_layer(
                store,
                suite.name,
                grades,
                frozen=frozen,
                source=source,
                who=args.who or getpass.getuser(),
                override=args.override,
            )
            keep_grades(connection, layer.layer_id or 0, suite.name, matched, by_key)
        finally:
            connection.close()
    unmatched = len(keys - set(by_key))
    print(
        f"layer {layer.layer_id} added to {suite.name}: {layer.size} grades from {source}; "
        f"graded queries not in the eval set: {unmatched}; the counts and confidence of each "
        f"grade are in table click_grades of {args.db}"
    )
    return 0
