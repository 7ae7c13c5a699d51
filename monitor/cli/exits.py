"""The exit codes of ``retrieval-monitor``: one table, read by the CLI, the docs and the tests.

:class:`ExitCode` holds each code with what it means (the README's exit-code table is held
against :attr:`ExitCode.meaning` by a test) and its place in the seriousness order: when
several suites run, the most serious code wins (:func:`most_serious`). :data:`ERROR_CODES`
maps each error family to its code and to what happened to the suite: a suite held by another
process's lock is ``skipped`` with 0, every other error is an ``error``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum
from types import MappingProxyType
from typing import Final, Literal

from monitor import errors
from monitor.traffic.errors import NoInterleavedTrafficError, NoTrafficError


class ExitCode(IntEnum):
    """An exit code of the command line, with its meaning and seriousness."""

    OK = 0
    UNEXPECTED = 1
    USAGE = 2
    BACKEND = 3
    QUALITY_GATE = 4
    INSUFFICIENT_EVIDENCE = 5

    @property
    def meaning(self) -> str:
        """Return what the code means, as the README's exit-code table says it."""
        return _MEANINGS[self]

    @property
    def seriousness(self) -> int:
        """Return the code's rank: 0 for the most serious (1), higher for less serious ones."""
        return SERIOUSNESS.index(self)


_MEANINGS: Final = MappingProxyType(
    {
        ExitCode.OK: (
            "the run completed; regressions are reported by alerts and gauges, not by failure. "
            "Also when a suite is skipped because another process is running it (the store's "
            "per-suite lock)"
        ),
        ExitCode.USAGE: (
            "config or usage error (bad option, bad config value, malformed input file, unknown "
            "metric, a search or notifier that cannot be built, a run, baseline or suite that "
            "does not exist), eval set missing, or eval set changed since the baseline"
        ),
        ExitCode.BACKEND: (
            "the search backend failed, the error budget was exceeded, or the run answered too "
            "few of its answerable queries to measure (`runner.min_measured`, the "
            "`not_measured` alert, `gate` too), or `run` was stopped by SIGTERM (`run` stores a "
            "`failed` run; `compare-pipelines` exits 3 when every query of a pipeline failed), "
            "or `evalset generate`'s generator failed on every passage (or its judge could not "
            "be reached)"
        ),
        ExitCode.QUALITY_GATE: (
            "a quality gate failed: a rule breached, only with `--fail-on-regression` (for CI "
            "pipelines), or `gate` found a regression (or, with `--on-insufficient-evidence "
            "fail`, could not tell), or `evalset check` found a finding of severity error, or "
            "`drift check` found query drift"
        ),
        ExitCode.INSUFFICIENT_EVIDENCE: (
            "`gate --on-insufficient-evidence code` only: the gate cannot tell, a rule's "
            "threshold was passed but the change is not significant; or `logs metrics` or "
            "`online run` found no search in its window (no data, never a rate of 0); or "
            "`interleave score` found none of the team log's searches in the traffic database; "
            "or `drift check` found a window with too few queries to tell"
        ),
        ExitCode.UNEXPECTED: (
            "an unexpected error (a bug, or a fault outside the monitor such as an unwritable "
            "store), or the gauges could not be exported (the run is stored, the alerts sent)"
        ),
    }
)

#: The codes from the most to the least serious: with several suites, the first one met wins.
SERIOUSNESS: Final[tuple[ExitCode, ...]] = (
    ExitCode.UNEXPECTED,
    ExitCode.BACKEND,
    ExitCode.USAGE,
    ExitCode.QUALITY_GATE,
    ExitCode.INSUFFICIENT_EVIDENCE,
    ExitCode.OK,
)

#: The codes only ``gate`` returns, on request: scheduled runs (``run``) never do.
GATE_ONLY: Final = frozenset({ExitCode.INSUFFICIENT_EVIDENCE})

#: What an error did to the suite it stopped: ``skipped`` (not run, nothing wrong) or ``error``.
Outcome = Literal["skipped", "error"]


@dataclass(frozen=True, slots=True)
class ErrorCode:
    """An error family's exit code and what it means for the suite it stopped."""

    family: type[errors.MonitorError]
    code: ExitCode
    outcome: Outcome = "error"


#: Exit code of each error family; the first matching row wins, so subclasses come first.
ERROR_CODES: Final[tuple[ErrorCode, ...]] = (
    ErrorCode(errors.StoreLockedError, ExitCode.OK, "skipped"),
    ErrorCode(NoTrafficError, ExitCode.INSUFFICIENT_EVIDENCE),
    ErrorCode(NoInterleavedTrafficError, ExitCode.INSUFFICIENT_EVIDENCE),
    ErrorCode(errors.SearchBackendError, ExitCode.BACKEND),
    ErrorCode(errors.GeneratorError, ExitCode.BACKEND),
    ErrorCode(errors.SearchSetupError, ExitCode.USAGE),
    ErrorCode(errors.NotifierSetupError, ExitCode.USAGE),
    ErrorCode(errors.BaselineError, ExitCode.USAGE),
    ErrorCode(errors.StoreLookupError, ExitCode.USAGE),
    ErrorCode(errors.UsageError, ExitCode.USAGE),
    ErrorCode(errors.InputError, ExitCode.USAGE),
    ErrorCode(errors.ConfigError, ExitCode.USAGE),
    ErrorCode(errors.MonitorError, ExitCode.UNEXPECTED),
)

#: The row for an error the monitor did not expect (a bug, or a fault outside it).
_UNEXPECTED: Final = ErrorCode(errors.MonitorError, ExitCode.UNEXPECTED)


def classify(error: BaseException) -> ErrorCode:
    """Return the row of :data:`ERROR_CODES` that ``error`` falls under."""
    return next((row for row in ERROR_CODES if isinstance(error, row.family)), _UNEXPECTED)


def exit_code(error: BaseException) -> ExitCode:
    """Return the documented exit code for ``error``."""
    return classify(error).code


def most_serious(codes: Iterable[ExitCode]) -> ExitCode:
    """Return the most serious of ``codes`` (:data:`SERIOUSNESS`), or OK when there are none."""
    return min(codes, key=lambda code: code.seriousness, default=ExitCode.OK)
