"""``retrieval-monitor run``: run the suites once and exit (for cron and Kubernetes CronJobs).

Exit codes are :class:`monitor.cli.exits.ExitCode` (the contract in the README). With several
suites, every suite runs and the most serious code wins.

SIGTERM (what Kubernetes sends on ``activeDeadlineSeconds``, an eviction or a node drain)
asks the run to stop: no query starts after it, and the suite's attempt is stored as a
``failed`` run, its lock released, its failure alert sent and its failure gauges exported, as
for a failed search backend (exit 3). Suites still to come fail the same way at once, without
a query. A second SIGTERM, or ``--shutdown-grace`` seconds passing first, ends the process at
once with 143 (128 + SIGTERM, as if it had not been handled).
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import threading
from dataclasses import replace
from pathlib import Path
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any

from monitor.cli import arguments

if TYPE_CHECKING:
    from monitor.cli.exits import ExitCode
    from monitor.compare.power import PowerFigure
    from monitor.config.model import MonitorConfig, SuiteConfig
    from monitor.errors import StoreError
    from monitor.exporters import SuiteSnapshot
    from monitor.job.outcome import Published, SuiteOutcome
    from monitor.job.shards import Shard, ShardOutcome
    from monitor.store import Store

#: The config file used when ``--config`` is not given and it exists in the working folder.
LOCAL_CONFIG = Path("config/monitor.yaml")

#: Seconds a run asked to stop has to record, alert and export before it ends at once. Below
#: Kubernetes' default terminationGracePeriodSeconds of 30, so the pod is not killed first.
DEFAULT_SHUTDOWN_GRACE_SECONDS = 20.0

#: The exit status of a run ended at once by a second SIGTERM or a spent grace: that of a
#: process the signal killed.
KILLED_BY_SIGTERM = 128 + signal.SIGTERM


def register(subparsers: Any) -> None:
    """Add the ``run`` sub-command."""
    parser = subparsers.add_parser(
        "run",
        help="run the suites once and exit (cron, Kubernetes CronJob)",
        description=(
            "Run every suite (or those named) once: search, measure, store, compare with the "
            "baseline, report. Without --config, uses ./config/monitor.yaml if present, else "
            "the embedded default (the bundled Larkfield suite, SQLite in the user's data "
            "folder)."
        ),
    )
    add_config_options(parser)
    parser.add_argument(
        "--suite", action="append", metavar="NAME", help="run only this suite (repeatable)"
    )
    parser.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit 4 when a rule breaches (a quality gate for CI pipelines)",
    )
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text for people, or one JSON object for every suite (default: text)",
    )
    parser.add_argument(
        "--metrics-out",
        type=arguments.output_file,
        metavar="FILE",
        help="write the runs' gauges to FILE in the Prometheus text format (atomically)",
    )
    parser.add_argument(
        "--failed-queries",
        type=arguments.output_template,
        metavar="PATH",
        help="write each suite's failed queries (no hit, with their top 5 ids) as JSONL to PATH; "
        "{suite} in PATH is replaced by the suite name",
    )
    parser.add_argument(
        "--no-progress", action="store_true", help="never draw a progress bar (log lines instead)"
    )
    parser.add_argument(
        "--shutdown-grace",
        type=float,
        default=DEFAULT_SHUTDOWN_GRACE_SECONDS,
        metavar="SECONDS",
        help="after a SIGTERM, how long the run may take to record its failure, release its "
        "lock, alert and export before it ends at once "
        f"(default {DEFAULT_SHUTDOWN_GRACE_SECONDS:g})",
    )
    shard = parser.add_argument_group(
        "sharded runs",
        "Run one slice of each suite's eval set as a part of one run attempt shared by every "
        "shard; the shard that completes the attempt measures, compares, stores and alerts "
        "as an unsharded run (see jobs/README.md).",
    )
    shard.add_argument(
        "--shard",
        type=arguments.shard,
        metavar="INDEX/COUNT",
        help="run shard INDEX (0-based) of COUNT (default: $JOB_COMPLETION_INDEX of "
        "$MONITOR_SHARD_COUNT when set, as in a Kubernetes Indexed Job)",
    )
    shard.add_argument(
        "--attempt",
        metavar="NAME",
        help="the run attempt the shards share, such as the Job's name "
        "(default: $MONITOR_SHARD_ATTEMPT)",
    )
    shard.add_argument(
        "--shard-deadline",
        type=arguments.seconds(),
        metavar="SECONDS",
        help="seconds from the attempt's first shard until a missing part fails it "
        "(default: $MONITOR_SHARD_DEADLINE, else 3600)",
    )
    parser.set_defaults(handler=run)


def _shard_settings(args: argparse.Namespace) -> tuple[Shard | None, str, float | None]:
    """Return the shard, attempt and deadline of a sharded run (shard None: unsharded)."""
    from monitor.errors import UsageError
    from monitor.job.shards import ATTEMPT_VARIABLE, DEADLINE_VARIABLE, Shard, shard_from_env

    shard = Shard.parse(args.shard) if args.shard else shard_from_env()
    if shard is None:
        return None, "", None
    attempt = (args.attempt or os.environ.get(ATTEMPT_VARIABLE, "")).strip()
    if not attempt:
        raise UsageError(
            f"shard {shard}: name the run attempt the shards share with --attempt or "
            f"${ATTEMPT_VARIABLE} (a Kubernetes Job's name)"
        )
    deadline = args.shard_deadline
    if deadline is None and os.environ.get(DEADLINE_VARIABLE):
        raw = os.environ[DEADLINE_VARIABLE]
        try:
            deadline = float(raw)
        except ValueError:
            raise UsageError(
                f"environment variable {DEADLINE_VARIABLE}: expected seconds, found {raw!r}"
            ) from None
    if deadline is not None and not (
        math.isfinite(deadline) and 0 < deadline <= arguments.LONGEST_SECONDS
    ):
        raise UsageError(
            f"environment variable {DEADLINE_VARIABLE}: expected a number of seconds above 0 "
            f"of at most {arguments.LONGEST_SECONDS:g}, found {deadline}"
        )
    return shard, attempt, deadline


def add_config_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--config`` and ``--store``, shared by the commands that read a config."""
    parser.add_argument("--config", type=Path, metavar="FILE", help="the YAML config file")
    parser.add_argument(
        "--store", metavar="URL_OR_PATH", help="the store to use instead of the config's"
    )


def load(args: argparse.Namespace) -> MonitorConfig:
    """Return the config named by ``--config``, the local one, or the embedded default."""
    from monitor.config import default_config, load_config

    if args.config is not None:
        return load_config(args.config)
    if LOCAL_CONFIG.is_file():
        return load_config(LOCAL_CONFIG)
    return default_config()


def _unopened(
    suites: list[SuiteConfig],
    error: StoreError,
    args: argparse.Namespace,
    snapshots: list[SuiteSnapshot],
) -> int:
    """Report a store that cannot be opened as each suite's failure: its gauges and its
    store_unwritable alert, as a store failing mid-run does; return exit code 1."""
    from datetime import datetime, timezone

    from monitor.cli.exits import ExitCode
    from monitor.job.publish import publish_store_failure
    from monitor.secrets import suite_scrubber

    for suite in suites:
        said = suite_scrubber(suite)(str(error))
        print(f"retrieval-monitor: suite {suite.name}: error: {said}", file=sys.stderr)
        sinks = [snapshots.append] if args.metrics_out else ()
        publish_store_failure(suite, error, sinks, clock=lambda: datetime.now(timezone.utc))
    if args.metrics_out is not None:
        _write_metrics(args.metrics_out, snapshots)
    return int(ExitCode.UNEXPECTED)


def store_target(args: argparse.Namespace, config: MonitorConfig) -> str:
    """Return the store URL or path: ``--store`` if given, else the config's."""
    if args.store:
        return str(args.store)
    return config.store.url.reveal()


def run(args: argparse.Namespace) -> int:
    """Run the suites; return the most serious exit code among them."""
    from monitor.cli.exits import ExitCode, classify, most_serious
    from monitor.config import config_hash
    from monitor.errors import InternalError, MonitorError, StoreError, UsageError
    from monitor.job import run_shard, run_suite
    from monitor.report import render_comparison
    from monitor.report.compose import with_power
    from monitor.secrets import suite_scrubber
    from monitor.store import open_store

    grace = args.shutdown_grace
    if not (math.isfinite(grace) and grace >= 0):
        raise UsageError(f"--shutdown-grace must be a number of seconds >= 0, not {grace}")
    shard, attempt, deadline = _shard_settings(args)
    config = load(args)
    names = args.suite or list(config.suites)
    suites = [config.suite(name) for name in names]
    snapshots: list[SuiteSnapshot] = []
    codes: list[ExitCode] = []
    reports: list[dict[str, Any]] = []
    try:
        opened = open_store(store_target(args, config))
    except StoreError as error:
        return _unopened(suites, error, args, snapshots)
    with Termination(grace) as termination, opened as store:
        for suite in suites:
            where: dict[str, Any] = {}
            try:
                if shard is None:
                    outcome = run_suite(
                        suite,
                        store,
                        config_hash=config_hash(suite),
                        progress=False if args.no_progress else None,
                        sinks=[snapshots.append] if args.metrics_out else (),
                        cancel=termination.requested,
                        # Only the failed-query log reads the hits once the run is stored.
                        keep_outcomes=bool(args.failed_queries),
                    )
                else:
                    sharded = run_shard(
                        suite,
                        store,
                        shard,
                        attempt,
                        deadline_seconds=deadline,
                        config_hash=config_hash(suite),
                        progress=False if args.no_progress else None,
                        sinks=[snapshots.append] if args.metrics_out else (),
                        cancel=termination.requested,
                    )
                    where = {"shard": str(shard), "attempt": attempt, "part": sharded.result}
                    if sharded.outcome is None:
                        codes.append(_report_part(suite.name, sharded, args.format, reports))
                        continue
                    outcome = sharded.outcome
            except MonitorError as error:
                row = classify(error)
                said = suite_scrubber(suite)(str(error))
                print(
                    f"retrieval-monitor: suite {suite.name}: {row.outcome}: {said}", file=sys.stderr
                )
                codes.append(row.code)
                reports.append({"suite": suite.name, row.outcome: said})
                continue
            powers = _powers(store, suite, outcome)
            comparison = replace(
                outcome.comparison, rules=with_power(outcome.comparison.rules, powers)
            )
            published = outcome.published
            if args.failed_queries:
                from monitor.metrics.failed import write_failed_queries

                path = args.failed_queries.replace("{suite}", suite.name)
                if outcome.result is None:  # asked for above: never let go
                    raise InternalError("writing the failed-query log", "no outcomes kept")
                write_failed_queries(outcome.result, outcome.evaluation, path)
            if args.format == "json":
                reports.append(
                    {
                        "suite": suite.name,
                        **where,
                        "run_id": outcome.run_id,
                        "means": dict(outcome.run.means),
                        # The overlap's per-query rows are built a block at a time as written.
                        "comparison": comparison.to_dict(lazy_rows=True),
                        "power": [figure.to_dict() for figure in powers.values()],
                        "alerts": {
                            "firing": list(published.firing),
                            "resolved": list(published.resolved),
                            "undelivered": published.undelivered,
                        },
                        "export_errors": list(published.export_errors),
                    }
                )
            else:
                print(
                    render_comparison(
                        comparison,
                        outcome.run.means,
                        bands=suite.bands,
                        config_file=suite.config_file,
                    )
                )
                print(_published_text(published))
                print(f"stored as run {outcome.run_id} in {getattr(store, 'location', store)}")
                print()
            for problem in published.export_errors:
                print(
                    f"retrieval-monitor: suite {suite.name}: export failed: {problem}",
                    file=sys.stderr,
                )
            if comparison.verdict == "evalset_changed":
                codes.append(ExitCode.USAGE)
            elif published.export_errors:
                codes.append(ExitCode.UNEXPECTED)
            elif comparison.regression and args.fail_on_regression:
                codes.append(ExitCode.QUALITY_GATE)
            else:
                codes.append(ExitCode.OK)
            # The report holds what it prints: the run itself (a million queries' rankings,
            # its baseline's, the eval set) goes now, not when the reports are written.
            del outcome, comparison, powers, published
    if args.metrics_out is not None:
        _write_metrics(args.metrics_out, snapshots)
    if args.format == "json":
        from monitor.cli.json_out import json_pieces

        sys.stdout.writelines(json_pieces({"suites": reports}))
        sys.stdout.write("\n")
    return int(most_serious(codes))


def _powers(store: Store, suite: SuiteConfig, outcome: SuiteOutcome) -> dict[str, PowerFigure]:
    """Return the power figure of each drop rule of the run, by rule name.

    The baseline the run was compared with is the outcome's own (read again only when the
    outcome does not hold it); each figure comes from its per-query values and the run's,
    as ``report`` gives it.
    """
    from monitor.compare.power import rule_powers

    baseline_id = outcome.comparison.baseline_run_id
    if baseline_id is None:
        return {}
    if baseline_id == outcome.run_id:
        baseline = outcome.run
    elif outcome.baseline is not None and outcome.baseline.run_id == baseline_id:
        baseline = outcome.baseline
    else:
        baseline = store.get_run(baseline_id)
    return rule_powers(suite.rules, baseline, outcome.run, suite.significance.alpha)


def _report_part(
    suite: str, sharded: ShardOutcome, format: str, reports: list[dict[str, Any]]
) -> ExitCode:
    """Report a shard that did not finish its attempt; return its exit code.

    A part stored while others are missing is success (0); a part of an attempt that was
    already closed without a run (failed) is the failure it joins (3).
    """
    from monitor.cli.exits import ExitCode

    attempt = sharded.attempt
    failed = attempt.status == "failed"
    if format == "json":
        reports.append(
            {
                "suite": suite,
                "shard": str(sharded.shard),
                "attempt": attempt.attempt,
                "part": sharded.result,
                "parts_stored": len(attempt.parts),
                "parts_missing": [f"{i}/{attempt.count}" for i in attempt.missing],
                **({"error": attempt.error} if failed else {}),
            }
        )
    elif failed:
        print(
            f"retrieval-monitor: suite {suite}: attempt {attempt.attempt!r} already failed: "
            f"{attempt.error}",
            file=sys.stderr,
        )
    else:
        print(
            f"suite {suite}: part {sharded.shard} of attempt {attempt.attempt!r} stored; "
            f"{len(attempt.parts)} of {attempt.count} parts in"
        )
    return ExitCode.BACKEND if failed else ExitCode.OK


class Termination:
    """SIGTERM handling for the length of a run, as a context manager.

    The first SIGTERM sets :attr:`requested`, which the runner checks before each query. A
    second SIGTERM, or ``grace`` seconds passing after the first before the context exits,
    ends the process at once with :data:`KILLED_BY_SIGTERM`. Signal handlers can only be set
    from the main thread; elsewhere the context changes nothing.
    """

    def __init__(self, grace: float) -> None:
        self.grace = grace
        self.requested = threading.Event()
        self._finished = threading.Event()
        self._wake = threading.Event()
        self._previous: Any = None
        self._installed = False

    def __enter__(self) -> Termination:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGTERM, self._on_signal)
            self._installed = True
            threading.Thread(target=self._watch, name="monitor-grace", daemon=True).start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if not self._installed:
            return
        # The handler goes first: a signal arriving while an event's lock is held below
        # would otherwise run a handler that waits for that same lock.
        signal.signal(signal.SIGTERM, self._previous)
        self._finished.set()
        self._wake.set()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.requested.is_set():
            _end_now("a second SIGTERM came")
        self.requested.set()
        self._wake.set()

    def _watch(self) -> None:
        """End the process once the grace after a stop request has run out."""
        self._wake.wait()
        if not self._finished.wait(self.grace):
            _end_now(f"the shutdown grace of {self.grace:g} s ran out")


def _end_now(reason: str) -> None:
    """End the process at once, saying why on stderr (nothing else is safe from a handler)."""
    message = f"retrieval-monitor: terminated at once: {reason}\n"
    os.write(2, message.encode())
    os._exit(KILLED_BY_SIGTERM)


def _published_text(published: Published) -> str:
    firing = ", ".join(published.firing) or "none"
    text = f"alerts firing: {firing}"
    if published.resolved:
        text += f"; resolved: {', '.join(published.resolved)}"
    if published.undelivered:
        text += f"; {published.undelivered} notification(s) kept in the outbox for the next run"
    return text


def _write_metrics(path: Path, snapshots: list[SuiteSnapshot]) -> None:
    """Write every suite's gauges, merged into one exposition, to ``path`` atomically."""
    from prometheus_client.metrics_core import Metric

    from monitor.exporters import merge
    from monitor.exporters.gauges import render_families
    from monitor.io import write_text_atomic

    families: list[Metric] = []
    for snapshot in snapshots:
        families = merge(families, snapshot)
    write_text_atomic(path, render_families(families))
