"""``retrieval-monitor gate``: judge a candidate search against the approved baseline (CI).

Each suite's eval set runs through the candidate (a search spec, a saved run file, or the
suite's own search) and is compared with the suite's baseline (a baseline file from
``baseline export``, or the store's pinned one) under the suite's rules. Nothing is written
to the store unless ``--record``; with only baseline files and no ``--record`` the store is
never opened. The exit code is the most serious of the suites' (:mod:`monitor.cli.exits`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol, cast

from monitor.cli import arguments
from monitor.cli.exits import ExitCode
from monitor.cli.run import add_config_options, load, store_target
from monitor.errors import UsageError

if TYPE_CHECKING:
    from monitor.config.model import SuiteConfig
    from monitor.gate.baseline_file import BaselineFile
    from monitor.gate.compose import Baseline, Candidate
    from monitor.gate.records import GateResult, GateVerdict
    from monitor.metrics.bands import Bands
    from monitor.store import Store

#: What ``--on-insufficient-evidence`` may say, the first being the default.
INSUFFICIENT_POLICIES: Final = ("pass", "fail", "code")

#: The exit code of an insufficient-evidence verdict under each policy.
_INSUFFICIENT_CODES: Final = {
    "pass": ExitCode.OK,
    "fail": ExitCode.QUALITY_GATE,
    "code": ExitCode.INSUFFICIENT_EVIDENCE,
}

#: The ``format`` value of ``gate --format json``, and its version.
JSON_FORMAT: Final = "retrieval-monitor-gate"
JSON_VERSION: Final = 1

_VERDICT_TEXT: Final[Mapping[str, str]] = {
    "pass": "PASS",
    "regression": "REGRESSION",
    "insufficient_evidence": "INSUFFICIENT EVIDENCE",
    "error": "ERROR",
}


def register(subparsers: Any) -> None:
    """Add the ``gate`` sub-command."""
    parser = subparsers.add_parser(
        "gate",
        help="judge a candidate search against the approved baseline (a pull-request gate)",
        description=(
            "Run each suite's eval set through the candidate (--candidate SPEC, --run FILE, or "
            "the suite's own search), compare it with the approved baseline (--baseline-file, "
            "or the store's pinned baseline) under the suite's rules, and exit 0 (pass), "
            "4 (regression), 2 (config or input error) or 3 (backend failure). Nothing is "
            "written to the store unless --record."
        ),
    )
    add_config_options(parser)
    parser.add_argument(
        "--suite",
        action="append",
        required=True,
        metavar="NAME",
        help="a suite to gate (repeatable)",
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--candidate",
        metavar="SPEC",
        help="the search to gate: a YAML mapping such as '{kind: http, url: ...}' or "
        "replay:FILE, replay:larkfield/METHOD, python:MODULE:CALLABLE (default: the suite's "
        "own search)",
    )
    which.add_argument(
        "--run", type=Path, metavar="FILE", help="gate a saved run (a TREC or JSON run file)"
    )
    parser.add_argument(
        "--baseline-file",
        action="append",
        default=[],
        type=Path,
        metavar="FILE",
        help="a baseline file from `baseline export`, for the suite it names (repeatable; "
        "default: the store's pinned baseline)",
    )
    parser.add_argument(
        "--junit",
        type=arguments.output_file,
        metavar="FILE",
        help="write the verdicts as JUnit XML to FILE",
    )
    parser.add_argument(
        "--markdown",
        type=arguments.output_file,
        metavar="FILE",
        help="write the markdown summary to FILE",
    )
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text for people, or one JSON object for every suite (default: text)",
    )
    parser.add_argument(
        "--record", action="store_true", help="store the candidate's run (default: store nothing)"
    )
    parser.add_argument(
        "--on-insufficient-evidence",
        choices=INSUFFICIENT_POLICIES,
        default=INSUFFICIENT_POLICIES[0],
        help="what a change that passes a threshold without significance does: pass (exit 0, "
        "the default), fail (exit 4) or code (exit 5)",
    )
    parser.add_argument(
        "--no-progress", action="store_true", help="never draw a progress bar (log lines instead)"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Gate every suite named; return the most serious exit code among them."""
    from monitor.cli.exits import classify, most_serious
    from monitor.config import config_hash
    from monitor.errors import MonitorError
    from monitor.gate.compose import gate_suite
    from monitor.gate.records import GateResult
    from monitor.secrets import suite_scrubber
    from monitor.store import open_store

    config = load(args)
    suites = [config.suite(name) for name in dict.fromkeys(args.suite)]
    given = _candidate(args)
    files = _baseline_files(args.baseline_file, suites)
    results: list[GateResult] = []
    codes: list[ExitCode] = []
    runs: list[int | None] = []
    with ExitStack() as stack:
        store: Store | None = None
        target = store_target(args, config)
        if args.record or (any(s.name not in files for s in suites) and _exists(target)):
            store = stack.enter_context(open_store(target))
        for suite in suites:
            candidate = given or _suite_candidate(suite)
            try:
                baseline = _baseline(suite, files, store)
                gated = gate_suite(
                    suite,
                    baseline,
                    candidate,
                    config_hash=config_hash(suite),
                    progress=False if args.no_progress else None,
                    record_in=store if args.record else None,
                    judgments_from=store if suite.name not in files else None,
                )
            except MonitorError as error:
                said = suite_scrubber(suite)(str(error))
                print(f"retrieval-monitor: suite {suite.name}: error: {said}", file=sys.stderr)
                source = files[suite.name].path if suite.name in files else "store"
                results.append(
                    GateResult(
                        suite.name,
                        "error",
                        candidate.label,
                        source,
                        error=said,
                        links=suite.links,
                    )
                )
                codes.append(classify(error).code)
                runs.append(None)
                continue
            results.append(gated.result)
            codes.append(verdict_code(gated.result.verdict, args.on_insufficient_evidence))
            runs.append(gated.run.run_id)
            if args.format == "text":
                print(_text(gated.result, gated.run.means, suite.bands))
    code = most_serious(codes)
    if args.format == "json":
        document = gate_document(results, codes, runs, code)
        json.dump(document, sys.stdout, indent=2)
        sys.stdout.write("\n")
    write_ci_outputs(
        results,
        junit=args.junit,
        markdown=args.markdown,
        environ=os.environ,
        annotations_to=sys.stderr if args.format == "json" else sys.stdout,
    )
    return int(code)


def verdict_code(verdict: GateVerdict, on_insufficient_evidence: str) -> ExitCode:
    """Return the exit code of a suite's verdict under the insufficient-evidence policy."""
    if verdict == "regression":
        return ExitCode.QUALITY_GATE
    if verdict == "insufficient_evidence":
        return _INSUFFICIENT_CODES[on_insufficient_evidence]
    if verdict == "error":  # the error's own code is taken where it is caught
        return ExitCode.UNEXPECTED
    return ExitCode.OK


def gate_document(
    results: Sequence[GateResult],
    codes: Sequence[ExitCode],
    runs: Sequence[int | None],
    code: ExitCode,
) -> dict[str, Any]:
    """Return the JSON document of ``gate --format json`` (its shape is in the README)."""
    return {
        "format": JSON_FORMAT,
        "version": JSON_VERSION,
        "exit_code": int(code),
        "suites": [
            {
                "suite": result.suite,
                "verdict": result.verdict,
                "exit_code": int(suite_code),
                "candidate": result.candidate,
                "baseline": result.baseline,
                "recorded_run_id": run_id,
                "error": result.error,
                "comparison": None if result.comparison is None else result.comparison.to_dict(),
            }
            for result, suite_code, run_id in zip(results, codes, runs, strict=True)
        ],
    }


def write_ci_outputs(
    results: Sequence[GateResult],
    *,
    junit: Path | None,
    markdown: Path | None,
    environ: Mapping[str, str],
    annotations_to: Any,
) -> None:
    """Write what CI systems read: JUnit XML, the markdown summary, GitHub annotations.

    The markdown goes to ``markdown`` and is appended to ``$GITHUB_STEP_SUMMARY`` when that is
    set; the workflow commands (``::error`` lines) are written to ``annotations_to`` when
    ``GITHUB_ACTIONS`` is ``true``. The renderers are imported only when something is asked.
    """
    from monitor.io import write_text_atomic

    summary_path = environ.get("GITHUB_STEP_SUMMARY")
    on_github = environ.get("GITHUB_ACTIONS") == "true"
    if junit is None and markdown is None and not summary_path and not on_github:
        return
    render = _renderers()
    if junit is not None:
        write_text_atomic(junit, render.junit_xml(results))
    if markdown is not None or summary_path:
        text = render.markdown_summary(results)
        if markdown is not None:
            write_text_atomic(markdown, text)
        if summary_path:
            try:
                with open(summary_path, "a", encoding="utf-8") as summary:
                    summary.write(text if text.endswith("\n") else text + "\n")
            except OSError as exc:
                raise UsageError(
                    f"GITHUB_STEP_SUMMARY: cannot append to {summary_path}: {exc.strerror}"
                ) from None
    if on_github:
        for line in render.annotations(results):
            print(line, file=annotations_to)


class _Renderers(Protocol):
    """The renderers of :mod:`monitor.gate.render`, as the gate calls them."""

    def markdown_summary(self, results: Sequence[GateResult]) -> str: ...
    def annotations(self, results: Sequence[GateResult]) -> list[str]: ...
    def junit_xml(self, results: Sequence[GateResult]) -> str: ...


def _renderers() -> _Renderers:
    """Return :mod:`monitor.gate.render`, imported only when an output needs it."""
    import importlib

    return cast("_Renderers", importlib.import_module("monitor.gate.render"))


def _candidate(args: argparse.Namespace) -> Candidate | None:
    """Return the candidate given on the command line, or None for each suite's own search."""
    from monitor.cli.pipelines import parse_search_spec
    from monitor.gate.compose import Candidate

    if args.candidate is not None:
        kind, options = parse_search_spec(args.candidate, "--candidate")
        return Candidate(args.candidate.strip(), kind, options)
    if args.run is not None:
        return Candidate(f"replay:{args.run}", "replay", {"path": str(args.run)})
    return None


def _suite_candidate(suite: SuiteConfig) -> Candidate:
    from monitor.gate.compose import suite_candidate

    return suite_candidate(suite)


def _baseline_files(
    paths: Sequence[Path], suites: Sequence[SuiteConfig]
) -> dict[str, BaselineFile]:
    """Read the baseline files, each for the suite it names; refuse one for no gated suite."""
    from monitor.gate.baseline_file import read_baseline

    gated = [suite.name for suite in suites]
    files: dict[str, BaselineFile] = {}
    for path in paths:
        read = read_baseline(path)
        suite = read.run.suite
        if suite not in gated:
            raise UsageError(
                f"--baseline-file {path}: holds the baseline of suite {suite!r}, which is not "
                f"gated; gated suites: {', '.join(gated)}"
            )
        if suite in files:
            raise UsageError(
                f"--baseline-file {path}: suite {suite!r} already has a baseline file "
                f"({files[suite].path})"
            )
        files[suite] = read
    return files


def _exists(target: str) -> bool:
    """Return whether the store at ``target`` may hold a baseline: a SQLite file that is not
    there holds none, and the gate, which stores nothing, does not create it."""
    from monitor.store.location import store_location

    where = store_location(target)
    return where.kind != "sqlite" or where.path is None or where.path.exists()


def _baseline(
    suite: SuiteConfig, files: Mapping[str, BaselineFile], store: Store | None
) -> Baseline | None:
    """Return the suite's baseline: its baseline file, else the store's pinned run, else None
    (the gate measures the suite's seed baseline)."""
    from monitor.config import config_hash
    from monitor.gate.compose import Baseline
    from monitor.logs import get_logger

    if suite.name in files:
        read = files[suite.name]
        if read.run.config_hash and read.run.config_hash != config_hash(suite):
            get_logger(__name__).warning(
                "gate_config_changed", suite=suite.name, baseline_file=read.path
            )
        return Baseline(read.run, read.path)
    run = None if store is None else store.get_baseline(suite.name)
    return None if run is None else Baseline(run, f"store run {run.run_id}")


def _text(result: GateResult, means: Mapping[str, float], bands: Bands) -> str:
    """Return a suite's verdict line and its comparison, each mean read by ``bands``."""
    from monitor.report import render_comparison

    line = (
        f"gate: suite {result.suite}: {_VERDICT_TEXT[result.verdict]} "
        f"(candidate {result.candidate} vs baseline {result.baseline})"
    )
    if result.comparison is None:
        return line
    shown = render_comparison(result.comparison, means, bands=bands, config_file=result.config_file)
    return f"{line}\n{shown}\n"
