"""Gate one suite: measure a candidate on the suite's eval set and judge it against a baseline.

:func:`gate_suite` takes the scheduled run's path (:mod:`monitor.job.path`: eval set ->
search -> metrics -> the store's record -> comparison with the baseline) with two
differences. Nothing is
written unless a store is given to record the candidate's run in. And the suite's
persistence is left out: persistence keeps a scheduled run from alerting on one noisy run
out of many, while the gate judges one candidate once, so with no history a significant
breach would otherwise stay ``pending`` and pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from monitor.config.model import config_option
from monitor.errors import UsageError
from monitor.evalset.corpus import corpus_for
from monitor.evalset.suite import load_evalset
from monitor.gate.records import GateResult, gate_verdict
from monitor.job.measurable import check_measured, measured_anything
from monitor.job.path import calibration_of, compare_with_baseline, measure, search_suite
from monitor.judgments import align_baseline
from monitor.judgments.suite import suite_evalset
from monitor.logs import get_logger
from monitor.runner.reference import judge_by_reference
from monitor.search import build_search, close_search

if TYPE_CHECKING:
    from monitor.config.model import SuiteConfig
    from monitor.evalset import EvalSet
    from monitor.store import Store
    from monitor.store.records import RunRecord

log = get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Candidate:
    """What the gate measures: a search plug-in's kind and options, and how to name it."""

    label: str
    kind: str
    options: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Baseline:
    """The approved run a candidate is judged against, and where it came from.

    ``source`` names it for people (``baseline.json``, ``store run 12``).
    """

    run: RunRecord
    source: str


@dataclass(frozen=True, slots=True)
class GatedSuite:
    """One suite gated: the gate's result and the candidate's run (stored when recorded)."""

    result: GateResult
    run: RunRecord


class EvalSetMismatchError(UsageError):
    """The baseline was measured on another eval set than the suite's: no fair comparison."""

    def __init__(self, suite: str, source: str, baseline: str, current: str) -> None:
        super().__init__(
            f"suite {suite!r}: the baseline ({source}) was measured on eval set {baseline}, "
            f"but the suite's eval set is now {current}; export a new baseline on this eval set"
        )
        self.suite = suite
        self.source = source
        self.baseline = baseline
        self.current = current


def _seed(suite: SuiteConfig, evalset: EvalSet, config_hash: str) -> Baseline:
    """Return the suite's seed baseline measured on ``evalset``; raise UsageError without one."""
    from monitor.job.suite import seed_record

    name = suite.baseline.bundled_run if suite.baseline is not None else None
    if not name:
        config = config_option(suite.config_file)
        raise UsageError(
            f"suite {suite.name!r} has no baseline: pin one with `retrieval-monitor baseline "
            f"set{config} --suite {suite.name}` after a run, give --baseline-file, or name a "
            "seed in the suite's baseline.bundled_run"
        )
    return Baseline(seed_record(suite, evalset, config_hash), f"bundled run {name}")


def suite_candidate(suite: SuiteConfig) -> Candidate:
    """Return the suite's own configured search as the candidate."""
    return Candidate(suite.pipeline, suite.search.kind, suite.search.plugin_options())


def gate_suite(
    suite: SuiteConfig,
    baseline: Baseline | None,
    candidate: Candidate,
    *,
    config_hash: str = "",
    progress: bool | None = None,
    record_in: Store | None = None,
    judgments_from: Store | None = None,
) -> GatedSuite:
    """Measure ``candidate`` on ``suite``'s eval set and judge it against ``baseline``.

    The candidate's run is saved in ``record_in`` when given, and nowhere otherwise. A
    baseline measured on another eval set raises :class:`EvalSetMismatchError` before any
    query is sent; a failed search backend raises its SearchBackendError. With
    ``judgments_from`` (the store the baseline was pinned in) the candidate is scored with the
    suite's judgment layers too, and a baseline measured with other judgments of the same
    queries is re-scored under them. Without a ``baseline`` (none pinned, no file) the
    suite's seed baseline (``baseline.bundled_run``) is measured and judged against, so that
    the gate can be the first command; a suite without one raises UsageError.
    """

    evalset = load_evalset(suite.evalset)
    if suite.evalset.reference is not None:
        evalset = judge_by_reference(evalset, suite.evalset.reference, suite.evalset.reference_k)
    notes: tuple[str, ...] = ()
    layered = judgments_from is not None and suite.evalset.reference is None
    frozen = evalset
    if judgments_from is not None and layered:
        evalset = suite_evalset(judgments_from, suite, frozen)
        if baseline is not None:
            corpus = corpus_for(suite.evalset, suite.metrics)
            aligned = align_baseline(judgments_from, baseline.run, evalset, frozen, corpus=corpus)
            if aligned.baseline is not None and aligned.note is not None:
                baseline, notes = replace(baseline, run=aligned.baseline), (aligned.note,)
    if baseline is None:
        baseline = _seed(suite, evalset, config_hash)
    if not measured_anything(baseline.run.means):
        raise UsageError(
            f"suite {suite.name!r}: the baseline ({baseline.source}) measured nothing, so "
            "every candidate would pass it; pin and export a run that measured"
        )
    if baseline.run.evalset_fingerprint != evalset.fingerprint:
        raise EvalSetMismatchError(
            suite.name, baseline.source, baseline.run.evalset_fingerprint, evalset.fingerprint
        )
    search = build_search(candidate.kind, dict(candidate.options))
    try:
        result = search_suite(suite, evalset, search, progress=progress, label=f"{suite.name} gate")
        check_measured(suite, evalset, result)  # a candidate that answered nothing fails
    finally:
        close_search(search)
    run, _ = measure(suite, evalset, config_hash, result, pipeline=candidate.label)
    if record_in is not None:
        run = record_in.get_run(record_in.save_run(run))
        log.info("gate_run_recorded", suite=suite.name, run_id=run.run_id)
    no_persistence = replace(suite.significance, persistence=None)
    calibration = None
    if judgments_from is not None and layered:
        # The judgments' store holds the layers: an alert_labels: calibrated suite gates on
        # the judge-corrected figures there as its scheduled runs do.
        calibration = calibration_of(suite, judgments_from, frozen, run, baseline.run)
    comparison = compare_with_baseline(
        suite,
        run,
        baseline.run,
        evalset,
        history={},
        significance=no_persistence,
        calibration=calibration,
    )
    if notes:
        comparison = replace(comparison, warnings=(*comparison.warnings, *notes))
    verdict = gate_verdict(comparison)
    gated = GateResult(
        suite=suite.name,
        verdict=verdict,
        candidate=candidate.label,
        baseline=baseline.source,
        comparison=comparison,
        links=suite.links,
        config_file=suite.config_file,
    )
    return GatedSuite(gated, run)
