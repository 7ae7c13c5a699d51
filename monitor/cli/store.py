"""``retrieval-monitor store prune``: apply retention by hand and say what it frees."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from monitor.cli.run import add_config_options, load, store_target

if TYPE_CHECKING:
    from monitor.store.retention import PruneResult, Retention


def register(subparsers: Any) -> None:
    """Add the ``store`` sub-command."""
    store = subparsers.add_parser("store", help="look after the store: prune per-query detail")
    actions = store.add_subparsers(dest="action", metavar="ACTION", required=True)
    prune = actions.add_parser(
        "prune",
        help="drop the per-query detail of runs past each suite's retention (means stay)",
    )
    add_config_options(prune)
    prune.add_argument(
        "--suite",
        action="append",
        metavar="NAME",
        help="only this suite (repeatable; default every suite of the config)",
    )
    prune.add_argument(
        "--dry-run", action="store_true", help="list what would be pruned, change nothing"
    )
    prune.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default: text)"
    )
    prune.set_defaults(handler=prune_store)


def prune_store(args: argparse.Namespace) -> int:
    """Prune every chosen suite that has a retention; print the runs and bytes freed."""
    from monitor.store import open_store

    config = load(args)
    names = list(dict.fromkeys(args.suite)) if args.suite else list(config.suites)
    suites = [config.suite(name) for name in names]  # an unknown one names the known ones
    results: list[PruneResult] = []
    unset: list[str] = []
    with open_store(store_target(args, config)) as store:
        for suite in suites:
            if suite.retention is None:
                unset.append(suite.name)
                continue
            results.append(store.prune(suite.name, suite.retention, dry_run=args.dry_run))
    if args.format == "json":
        print(json.dumps(_json(results, unset, args.dry_run), indent=2))
    else:
        print("\n".join(_text(results, unset, args.dry_run)))
    return 0


def _json(results: list[PruneResult], unset: list[str], dry_run: bool) -> dict[str, object]:
    return {
        "dry_run": dry_run,
        "suites": [
            {
                "suite": result.suite,
                "retention": _policy(result.retention),
                "runs": [
                    {
                        "run_id": run.run_id,
                        "started_at": run.started_at.isoformat(),
                        "bytes": run.bytes,
                    }
                    for run in result.runs
                ],
                "bytes_freed": result.bytes_freed,
                "bytes_returned": result.bytes_returned,
            }
            for result in results
        ],
        "without_retention": unset,
        "bytes_freed": sum(result.bytes_freed for result in results),
        "bytes_returned": _returned(results),
    }


def _returned(results: list[PruneResult]) -> int | None:
    """Return the bytes handed back by the prunes that measure it; None when none does."""
    measured = [r.bytes_returned for r in results if r.bytes_returned is not None]
    return sum(measured) if measured else None


def _policy(retention: Retention) -> dict[str, object]:
    per_query = retention.runs if retention.runs is not None else retention.describe()
    return {"per_query": per_query, "keep": list(retention.keep)}


def _text(results: list[PruneResult], unset: list[str], dry_run: bool) -> list[str]:
    verb = "would prune" if dry_run else "pruned"
    lines: list[str] = []
    for result in results:
        keep = ", ".join(result.retention.keep) or "nothing"
        head = f"suite {result.suite}: per-query detail for {result.retention.describe()}"
        lines.append(f"{head}, keeping {keep}")
        if not result.runs:
            lines.append("  nothing to prune")
            continue
        ids = _ranges([run.run_id for run in result.runs])
        lines.append(f"  {verb} {len(result.runs)} runs ({ids}): {_size(result.bytes_freed)}")
        if not dry_run and result.bytes_returned is not None:
            lines.append(f"  returned to the file system: {_size(result.bytes_returned)}")
    for name in unset:
        lines.append(f"suite {name}: no retention set (store.retention), nothing pruned")
    total = sum(result.bytes_freed for result in results)
    runs = sum(len(result.runs) for result in results)
    lines.append(f"total: {verb} {runs} runs, {_size(total)} of per-query data")
    return lines


def _ranges(ids: list[int]) -> str:
    """Return ``1-3, 7`` for ``[1, 2, 3, 7]``."""
    spans: list[list[int]] = []
    for run_id in sorted(ids):
        if spans and run_id == spans[-1][1] + 1:
            spans[-1][1] = run_id
        else:
            spans.append([run_id, run_id])
    text = ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in spans)
    return f"runs {text}"


def _size(count: int) -> str:
    if count < 1_000_000:
        return f"{count / 1000:.1f} kB"
    return f"{count / 1e6:.1f} MB"
