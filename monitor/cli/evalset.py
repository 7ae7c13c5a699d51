"""``retrieval-monitor evalset check|stats``: eval set hygiene and what a set holds."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from monitor.cli.exits import ExitCode
from monitor.cli.run import add_config_options, load, store_target
from monitor.errors import UsageError

if TYPE_CHECKING:
    from monitor.compare.power import PowerFigure
    from monitor.config.model import MonitorConfig, SuiteConfig
    from monitor.evalset.hygiene import CheckReport
    from monitor.store import RunRecord


def register(subparsers: Any) -> None:
    """Add the ``evalset`` sub-command with ``check`` and ``stats``."""
    parser = subparsers.add_parser(
        "evalset",
        help="check an eval set for leakage, duplicates and power; show what it holds",
        description="Check an eval set (exit 4 when a finding is an error) or show its counts.",
    )
    actions = parser.add_subparsers(dest="evalset_command", metavar="ACTION", required=True)
    check = actions.add_parser(
        "check",
        help="leakage, duplicates, missing passages, small segments and power of the rules",
        description="Check a suite's eval set (--config, --suite) or an eval set file (PATH). "
        "Exit 0 when clean, 4 when a finding has severity error.",
    )
    check.add_argument("path", nargs="?", type=Path, metavar="PATH", help="an eval set file")
    check.add_argument("--corpus", type=Path, metavar="FILE", help="the passages beside PATH")
    add_config_options(check)
    check.add_argument("--suite", help="the suite whose eval set, rules and segments to check")
    _add_format(check)
    check.set_defaults(handler=run_check)
    stats = actions.add_parser(
        "stats",
        help="queries, judgments, grades, metadata values and fingerprint of an eval set",
        description="Show what an eval set holds: a file (PATH), a suite's (--config, "
        "--suite), or without either the default config's (the bundled set).",
    )
    stats.add_argument("path", nargs="?", type=Path, metavar="PATH", help="an eval set file")
    stats.add_argument("--config", type=Path, metavar="FILE", help="the YAML config file")
    stats.add_argument("--suite", help="the suite whose eval set to show")
    _add_format(stats)
    stats.set_defaults(handler=run_stats)
    from monitor.cli.generate import register_generate
    from monitor.cli.traffic import register_sample

    register_sample(actions)
    register_generate(actions)


def _add_format(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format", choices=("table", "json"), default="table", help="(default: table)"
    )


def run_check(args: argparse.Namespace) -> int:
    """Check one eval set and print the report; return 4 when a finding is an error."""
    from monitor.evalset import EvalSet
    from monitor.evalset.corpus import Corpus
    from monitor.evalset.hygiene import check_evalset

    if args.path is not None:
        if args.suite is not None or args.config is not None:
            raise UsageError("give an eval set PATH or --config/--suite, not both")
        corpus = Corpus.load(args.corpus) if args.corpus is not None else None
        report = check_evalset(EvalSet.load(args.path), corpus)
    else:
        if args.corpus is not None:
            raise UsageError("--corpus goes with an eval set PATH; a suite names its own")
        report = _check_suite(args)
    if args.format == "json":
        json.dump(report.to_dict(), sys.stdout)
        sys.stdout.write("\n")
    else:
        print(report)
    return int(ExitCode.QUALITY_GATE) if report.has_errors else int(ExitCode.OK)


def _suite(args: argparse.Namespace, config: MonitorConfig) -> SuiteConfig:
    """Return the suite ``--suite`` names in ``config``, or its only suite."""
    if args.suite is None:
        if len(config.suites) != 1:
            raise UsageError(f"--suite is needed: {config.source} has {', '.join(config.suites)}")
        (suite,) = config.suites.values()
        return suite
    return config.suite(args.suite)


def _check_suite(args: argparse.Namespace) -> CheckReport:
    from monitor.evalset.corpus import load_corpus
    from monitor.evalset.hygiene import Finding, check_evalset
    from monitor.evalset.suite import load_evalset

    config = load(args)
    suite = _suite(args, config)
    evalset = load_evalset(suite.evalset)
    figures, note = suite_power(suite, store_target(args, config))
    notes = [] if note is None else [Finding("power", "info", note)]
    return check_evalset(
        evalset,
        load_corpus(suite.evalset),
        segments=suite.segments,
        power=figures,
        power_notes=notes,
        relevance_level=suite.scoring.relevance_level,
    )


def suite_power(suite: SuiteConfig, target: str) -> tuple[list[PowerFigure], str | None]:
    """Return the power figure of each drop rule of ``suite``, and a note on their source.

    The baseline comes from the store at ``target`` (never created here), else from the
    suite's bundled seed baseline run; the latest stored run gives the paired deltas.
    """
    from monitor.compare.power import rule_power
    from monitor.store import open_store
    from monitor.store.location import store_location

    baseline: RunRecord | None = None
    latest: RunRecord | None = None
    path = store_location(target).path
    if path is None or path.expanduser().exists():
        with open_store(target) as store:
            baseline = store.get_baseline(suite.name)
            if baseline is not None:
                latest = store.latest_run(suite.name)
    note = None
    if baseline is None:
        baseline = _seed_baseline(suite)
        if baseline is None:
            return [], "no power figures: the suite has no baseline yet"
        note = "power from the seed baseline run's values (no stored baseline yet)"
    alpha = suite.significance.alpha
    figures = [rule_power(rule, baseline, latest, alpha) for rule in suite.rules]
    return [f for f in figures if f is not None], note


def _seed_baseline(suite: SuiteConfig) -> RunRecord | None:
    """Return the bundled seed baseline run of ``suite`` scored in memory, or None."""
    from monitor.evalset import bundled
    from monitor.evalset.corpus import corpus_for
    from monitor.evalset.suite import load_evalset
    from monitor.metrics.evaluation import evaluate
    from monitor.store import QueryRecord, RunRecord

    if suite.baseline is None or not suite.baseline.bundled_run:
        return None
    collection, _, method = suite.baseline.bundled_run.partition("/")
    if collection != "larkfield":
        return None
    evalset = load_evalset(suite.evalset)
    corpus = corpus_for(suite.evalset, suite.metrics)
    result = evaluate(evalset, bundled.larkfield_run(method), suite.metrics, corpus=corpus)
    frame = result.per_query
    now = datetime.now(timezone.utc)
    queries = tuple(
        QueryRecord(str(qid), {str(k): float(v) for k, v in row.items()})
        for qid, row in frame.iterrows()
    )
    return RunRecord(
        suite=suite.name,
        pipeline=suite.baseline.bundled_run,
        started_at=now,
        finished_at=now,
        means=result.means,
        queries=queries,
    )


def run_stats(args: argparse.Namespace) -> int:
    """Print what an eval set holds; return 0."""
    from monitor.evalset import EvalSet
    from monitor.evalset.hygiene import evalset_stats
    from monitor.evalset.suite import load_evalset

    if args.path is not None:
        if args.suite is not None or args.config is not None:
            raise UsageError("give an eval set PATH or --config/--suite, not both")
        evalset = EvalSet.load(args.path)
    else:
        evalset = load_evalset(_suite(args, load(args)).evalset)
    stats = evalset_stats(evalset)
    if args.format == "json":
        json.dump(stats.to_dict(), sys.stdout)
        sys.stdout.write("\n")
    else:
        print(stats)
    return 0
