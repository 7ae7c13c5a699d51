"""``retrieval-monitor interleave score|simulate``: which of two interleaved searches wins.

``score`` credits the clicks of a traffic database (``logs import``) to the teams of a team
log (the ``interleave`` search kind's ``team_log``), joined by query id; ``simulate`` lets a
click model click interleavings of two searches over an eval set's judgments and says how
many impressions a live test needs.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from monitor.cli import arguments
from monitor.errors import UsageError

if TYPE_CHECKING:
    from monitor.evalset import EvalSet
    from monitor.search.base import Search
    from monitor.traffic.clickmodel import Simulation
    from monitor.traffic.preference import Preference


def register(subparsers: Any) -> None:
    """Add the ``interleave`` sub-command with ``score`` and ``simulate``."""
    parser = subparsers.add_parser(
        "interleave", help="score an interleaving test from click logs, or simulate one"
    )
    actions = parser.add_subparsers(dest="interleave_command", metavar="ACTION", required=True)
    score = actions.add_parser(
        "score",
        help="credit the clicks of --logs to the teams of --teams: wins, delta, interval, p",
        description="Join a team log with the searches and clicks of a traffic database by "
        "query id and give the preference between the two searches.",
    )
    score.add_argument(
        "--teams", type=Path, required=True, metavar="FILE", help="the team log (JSONL)"
    )
    score.add_argument(
        "--logs", type=Path, required=True, metavar="DB", help="the traffic database (DuckDB)"
    )
    score.add_argument(
        "--click-action", default="click", metavar="NAME", help="the action_name of clicks"
    )
    score.add_argument(
        "--session-gap",
        type=arguments.seconds(),
        default=1800.0,
        metavar="SECONDS",
        help="a client's pause that starts a new session (default 1800)",
    )
    _add_statistics(score)
    score.set_defaults(handler=score_command)
    simulate = actions.add_parser(
        "simulate",
        help="simulate clicks on interleavings of two searches from an eval set's judgments",
        description="Interleave two searches (search specs or run files) over an eval set's "
        "queries, click them with a click model driven by the judgments, give the preference "
        "and the impressions a live test needs. The judgments come from --judgments, a "
        "suite's eval set (--config, --suite) or the default config's (the bundled set).",
    )
    for team in ("a", "b"):
        simulate.add_argument(
            f"--{team}",
            required=True,
            metavar="SPEC",
            help="replay:FILE, replay:larkfield/METHOD, python:MODULE:CALLABLE, a YAML "
            "mapping with a kind, or a run file",
        )
    simulate.add_argument(
        "--judgments", type=Path, metavar="FILE", help="an eval set or TREC qrels file"
    )
    simulate.add_argument("--config", type=Path, metavar="FILE", help="the YAML config file")
    simulate.add_argument("--suite", metavar="NAME", help="the suite whose eval set to use")
    simulate.add_argument(
        "--impressions",
        type=arguments.integer(1, 10_000_000, what="impressions"),
        default=10_000,
        metavar="N",
        help="simulated impressions (default 10000)",
    )
    simulate.add_argument(
        "-k", type=arguments.integer(1, 1000, what="k"), default=10, help="list length (10)"
    )
    simulate.add_argument(
        "--click-model", choices=("pbm", "cascade"), default="pbm", help="default: pbm"
    )
    simulate.add_argument(
        "--alpha", type=arguments.share, default=0.05, help="the live test's level (0.05)"
    )
    simulate.add_argument(
        "--power", type=arguments.share, default=0.8, help="the live test's power (0.8)"
    )
    _add_statistics(simulate)
    simulate.set_defaults(handler=simulate_command)


def _add_statistics(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--seed", type=arguments.integer(what="a seed"), default=0, metavar="S", help="0"
    )
    parser.add_argument(
        "--iterations",
        type=arguments.integer(1, 1_000_000, what="iterations"),
        default=2000,
        metavar="N",
        help="bootstrap resamples (default 2000)",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text", help="default: text")


def score_command(args: argparse.Namespace) -> int:
    """Print the preference the clicks on the served interleavings give; exit 5 without any."""
    from monitor.traffic.engine import connect
    from monitor.traffic.preference import preference
    from monitor.traffic.teams import read_team_log, score_clicks

    served = read_team_log(args.teams)
    connection = connect(args.logs, read_only=True)
    try:
        scored = score_clicks(
            connection, served, click_action=args.click_action, session_gap=args.session_gap
        )
    finally:
        connection.close()
    if not scored.outcomes:
        from monitor.traffic.errors import NoInterleavedTrafficError

        raise NoInterleavedTrafficError(args.teams, args.logs, len(served))
    found = preference(scored.outcomes, scored.sessions, seed=args.seed, iterations=args.iterations)
    if args.format == "json":
        document = {
            "served": len(served),
            "missing": scored.missing,
            "uncredited_clicks": scored.uncredited,
            **found.to_dict(),
        }
        print(json.dumps(document))
        return 0
    print(
        f"{len(served)} served interleavings, {found.impressions} of them in {args.logs} "
        f"({scored.missing} not); {scored.uncredited} clicks on documents not served"
    )
    print("\n".join(_preference_lines(found)))
    return 0


def simulate_command(args: argparse.Namespace) -> int:
    """Print what a simulated interleaving test of --a and --b finds."""
    from monitor.metrics.evaluation import evaluate
    from monitor.search import close_search
    from monitor.search.interleave import answer
    from monitor.traffic.clickmodel import ClickModel, simulate

    evalset = _evalset(args)
    judgments = {query.id: dict(query.judgments) for query in evalset}
    rankings: dict[str, dict[str, list[str]]] = {}
    for team in ("a", "b"):
        search = _search(getattr(args, team), f"--{team}")
        try:
            rankings[team] = {
                query.id: [hit.id for hit in answer(search, query, args.k)] for query in evalset
            }
        finally:
            close_search(search)
    result = simulate(
        rankings["a"],
        rankings["b"],
        judgments,
        impressions=args.impressions,
        seed=args.seed,
        model=ClickModel(args.click_model),
        k=args.k,
        alpha=args.alpha,
        power=args.power,
        iterations=args.iterations,
    )
    metric = f"ndcg@{args.k}"
    ndcg = {team: evaluate(judgments, rankings[team], [metric]).means[metric] for team in "ab"}
    if args.format == "json":
        document = {
            "a": args.a,
            "b": args.b,
            "queries": result.queries,
            "k": result.k,
            "click_model": args.click_model,
            metric: ndcg,
            **result.preference.to_dict(),
            "alpha": result.alpha,
            "power": result.power,
            "impressions_needed": result.needed,
        }
        print(json.dumps(document))
        return 0
    print("\n".join(_simulation_lines(args, result, metric, ndcg)))
    return 0


def _simulation_lines(
    args: argparse.Namespace, result: Simulation, metric: str, ndcg: dict[str, float]
) -> list[str]:
    found = result.preference
    lines = [
        f"a = {args.a}, b = {args.b}: {metric} a {ndcg['a']:.4f}, b {ndcg['b']:.4f}",
        f"{found.impressions} simulated impressions of {result.queries} queries (k {result.k}, "
        f"click model {args.click_model}, seed {args.seed}): {found.clicked} clicked "
        f"({result.clicked_share:.1%})",
        *_preference_lines(found),
    ]
    if result.needed is None:
        lines.append("no difference to size a live test for (delta is 0 or no data)")
    else:
        lines.append(
            f"a live test needs about {result.needed} impressions to find this delta "
            f"(two-sided, alpha {result.alpha:g}, power {result.power:g})"
        )
    return lines


def _preference_lines(found: Preference) -> list[str]:
    confidence = f"{found.confidence:.0%}"
    if found.delta is None or found.interval is None:
        delta = "delta no data"
    else:
        low, high = found.interval
        delta = f"delta {found.delta:+.4f} ({confidence} interval {low:+.4f} to {high:+.4f})"
    session = "no data" if found.session_delta is None else f"{found.session_delta:+.4f}"
    preferred = {"a": "a", "b": "b", None: "neither (the interval covers 0)"}[found.preferred]
    return [
        f"impressions {found.impressions}: a wins {found.wins}, b wins {found.losses}, "
        f"ties {found.ties}; {delta}; sign test p {_p(found.p_value)}",
        f"sessions with a click {found.sessions}: a wins {found.session_wins}, b wins "
        f"{found.session_losses}, ties {found.session_ties}; session delta {session}",
        f"preferred: {preferred}",
    ]


def _p(value: float) -> str:
    return f"{value:.4f}" if value >= 1e-4 or value == 0 else f"{value:.1e}"


def _evalset(args: argparse.Namespace) -> EvalSet:
    """Return the eval set of --judgments, of --config/--suite, or of the default config."""
    from monitor.cli.run import load
    from monitor.evalset import EvalSet
    from monitor.evalset.suite import load_evalset

    if args.judgments is not None:
        if args.suite is not None or args.config is not None:
            raise UsageError("give --judgments or --config/--suite, not both")
        return EvalSet.load(args.judgments)
    config = load(args)
    if args.suite is None:
        if len(config.suites) != 1:
            raise UsageError(f"--suite is needed: {config.source} has {', '.join(config.suites)}")
        (suite,) = config.suites.values()
    else:
        suite = config.suite(args.suite)
    return load_evalset(suite.evalset)


def _search(spec: str, where: str) -> Search:
    """Build the search a spec names; a bare path to a file is a run file to replay."""
    from monitor.cli.pipelines import parse_search_spec
    from monitor.search import build_search

    text = spec.strip()
    if not text.startswith("{") and ":" not in text and Path(text).is_file():
        return build_search("replay", {"path": text})
    kind, options = parse_search_spec(text, where)
    return build_search(kind, options)
