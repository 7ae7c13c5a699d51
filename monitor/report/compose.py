"""Compose a report: a stored run of a suite against its baseline, with the suite's trends.

The comparison is the one the job stored with the run when it was computed from what the
report would compute it from (:mod:`monitor.job.stored`); otherwise it is computed again
from the stored runs with the suite's current rules, significance settings and segments. The
eval set supplies query texts and segment metadata (when it cannot be loaded the report
still renders, without them, and says so). The
judgments are those stored with each query of the run: a suite judged by a reference search
is never searched again to make a report.

What every report of a suite reads alike (the eval set, the judgments in force and their
digests, the baseline: a :class:`ReportBasis`; the trends: :class:`SuiteTrends`) can be built
once by :func:`report_basis` and :func:`suite_trends` and handed to :func:`compose_report`
for each run, as the web app does while they stay the same.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, TypeAlias

from monitor.errors import MonitorError, StoreLookupError, UsageError
from monitor.report.records import Report, Trend

if TYPE_CHECKING:
    from monitor.compare.power import PowerFigure
    from monitor.compare.records import Comparison, RuleOutcome
    from monitor.config.model import SuiteConfig
    from monitor.evalset import EvalSet
    from monitor.records import MetaValue
    from monitor.store import RunLabels, RunRecord, Store

#: How many recent runs are searched for the latest one that is not the baseline.
SEARCH_RUNS = 200


@dataclass(frozen=True, slots=True)
class LoadedEvalSet:
    """A suite's frozen eval set as read from its file, or why it could not be read, and the
    digest of the files it was read from (None for a bundled set, or files that changed
    while they were read)."""

    evalset: EvalSet | None
    problem: str | None = None
    files: str | None = None


def load_frozen(suite: SuiteConfig) -> LoadedEvalSet:
    """Return the suite's frozen eval set; an unreadable one gives the error's message."""
    from monitor.evalset.cache import load_tracked

    try:
        evalset, files = load_tracked(suite.evalset)
    except (MonitorError, OSError) as error:
        return LoadedEvalSet(None, str(error))
    return LoadedEvalSet(evalset, files=files)


@dataclass(frozen=True, slots=True)
class SuiteJudgments:
    """A suite's eval set as every report of it reads it.

    ``effective`` is the frozen set with the suite's judgment layers in force and ``labels``
    its digests (``labels_of``); ``qrels`` are its grades; ``metadata`` and ``texts`` come
    from the frozen set, by query id. All but ``loaded`` are None when the set could not be
    read; ``effective``, ``labels`` and ``qrels`` are None for a suite judged by a reference
    search (its judgments are those stored with each run).
    """

    loaded: LoadedEvalSet
    effective: EvalSet | None = None
    labels: RunLabels | None = None
    qrels: Mapping[str, Mapping[str, int]] | None = None
    metadata: Mapping[str, Mapping[str, MetaValue]] | None = None
    texts: Mapping[str, str] | None = None

    @property
    def frozen(self) -> EvalSet | None:
        """Return the frozen eval set, None when it could not be read."""
        return self.loaded.evalset


def suite_judgments(
    store: Store, suite: SuiteConfig, loaded: LoadedEvalSet | None = None
) -> SuiteJudgments:
    """Return the suite's judgments in force in ``store`` (``loaded``: its frozen set, read
    from its file when not given)."""
    from monitor.judgments.merge import labels_of
    from monitor.judgments.suite import suite_evalset

    loaded = loaded or load_frozen(suite)
    frozen = loaded.evalset
    if frozen is None:
        return SuiteJudgments(loaded)
    columns = frozen.columns()  # the set's queries by id, read from its columns
    metadata, texts = columns.by_id(columns.metadata), columns.by_id(columns.texts)
    if suite.evalset.reference is not None:
        return SuiteJudgments(loaded, metadata=metadata, texts=texts)
    effective = suite_evalset(store, suite, frozen)
    kept = _kept_labels(store, suite, loaded) if effective is frozen else None
    return SuiteJudgments(
        loaded,
        effective=effective,
        labels=kept or labels_of(effective),
        qrels=effective.columns().qrels(),
        metadata=metadata,
        texts=texts,
    )


def _kept_labels(store: Store, suite: SuiteConfig, loaded: LoadedEvalSet) -> RunLabels | None:
    """Return the labels of the frozen set as the job kept them for its files (None when
    the files changed since, or none were kept): the set is not read again to digest it."""
    from monitor.evalset import digests
    from monitor.store.layers import RunLabels

    if loaded.evalset is None or loaded.files is None:
        return None
    found = digests.known(store.get_state(digests.NAMESPACE, suite.name), loaded.files)
    if found is None:
        return None
    loaded.evalset.adopt_fingerprint(found.fingerprint)
    return RunLabels(found.queries_fingerprint, found.judgments_version)


@dataclass(frozen=True, slots=True)
class ReportBasis:
    """What every report of a suite reads alike: its judgments and its baseline as stored."""

    judgments: SuiteJudgments
    baseline: RunRecord | None


def report_basis(
    store: Store,
    suite: SuiteConfig,
    *,
    judgments: SuiteJudgments | None = None,
    read_run: Callable[[int], RunRecord] | None = None,
) -> ReportBasis:
    """Return the basis of the suite's reports; ``read_run`` reads the baseline by id
    (default: from ``store``), so a caller keeping runs in memory reads it from there."""
    judgments = judgments or suite_judgments(store, suite)
    if read_run is None:
        return ReportBasis(judgments, store.get_baseline(suite.name))
    baseline_id = next((b.run_id for b in store.list_baselines() if b.suite == suite.name), None)
    return ReportBasis(judgments, None if baseline_id is None else read_run(baseline_id))


@dataclass(frozen=True, slots=True)
class SuiteTrends:
    """A suite's trends of ``charted`` figures, and how many earlier runs were re-scored."""

    charted: tuple[str, ...]
    trends: tuple[Trend, ...]
    rescored: int = 0


#: Returns the suite's trends of the figures given, drawn against the baseline given.
TrendsOf: TypeAlias = Callable[[tuple[str, ...], "RunRecord | None"], SuiteTrends]


def suite_trends(
    store: Store,
    suite: SuiteConfig,
    judgments: SuiteJudgments,
    charted: tuple[str, ...],
    baseline: RunRecord | None,
) -> SuiteTrends:
    """Return the suite's trends of ``charted`` over its history, earlier runs re-scored
    under the judgments in force, each run's stored overlap with its baseline beside them."""
    from monitor.compare.history import with_overlap
    from monitor.report.history import MAX_POINTS, build_trends

    errors = {
        summary.run_id: summary.error or "failed"
        for summary in store.list_runs(suite.name, limit=SEARCH_RUNS)
        if summary.status == "failed"
    }
    frame = store.history(suite.name, charted)
    count = 0
    if judgments.frozen is not None and judgments.effective is not None:
        from monitor.judgments.suite import rescored_history

        effective = None if judgments.labels is None else (judgments.effective, judgments.labels)
        frame, count = rescored_history(store, suite, judgments.frozen, frame, effective=effective)
    frame, overlaps = with_overlap(store, suite.name, frame, MAX_POINTS)
    trends = build_trends(
        frame, (*charted, *overlaps), baseline=baseline, rules=suite.rules, errors=errors
    )
    return SuiteTrends(charted, trends, count)


def _charted(suite: SuiteConfig, run: RunRecord) -> tuple[str, ...]:
    """Return the figures a report of ``run`` charts: the rules' metrics (else the first
    measured), then the judgment coverage the run recorded, which explains a drop of theirs."""
    from monitor.report.history import chart_metrics

    charted = chart_metrics(suite.rules, list(run.means))
    coverage = [name for name in run.means if name.startswith("judged@")]
    return tuple(dict.fromkeys((*charted, *coverage)))


def compose_report(
    store: Store,
    suite: SuiteConfig,
    *,
    run_id: int | None = None,
    now: datetime | None = None,
    basis: ReportBasis | None = None,
    trends_of: TrendsOf | None = None,
) -> Report:
    """Return the report of run ``run_id`` (default: the latest) of ``suite`` in ``store``.

    The latest run is the newest ok run that is not the pinned baseline itself. Raise
    UsageError when the suite has no successful run, or ``run_id`` is not one of its ok runs.
    ``basis`` (see :func:`report_basis`) and ``trends_of`` (default :func:`suite_trends`)
    give what the report shares with the suite's other reports; they are built here when
    not given.
    """
    from monitor.job.stored import comparison_key, evalset_identity, stored_comparison

    basis = basis or report_basis(store, suite)
    judged = basis.judgments
    baseline = basis.baseline
    baseline_id = baseline.run_id if baseline is not None else None
    if run_id is None:
        run = _latest_run(store, suite.name, baseline_id)
    elif baseline is not None and run_id == baseline_id:
        run = baseline  # the baseline's own report: it is read already
    else:
        run = _chosen_run(store, suite.name, run_id)
    if run.pruned_at is not None and run.run_id != baseline_id:
        return _pruned_report(store, suite, run, basis, trends_of, now)
    warnings: list[str] = []
    if baseline is not None and run.run_id == baseline_id:
        warnings.append(f"run {run.run_id} is the suite's baseline: it is compared with itself")

    qrels = None
    evalset = judged.frozen
    if evalset is None:
        warnings.append(
            f"the eval set could not be loaded ({judged.loaded.problem}): "
            "no query texts and no segments"
        )
    else:
        # A layer changes grades only: the judgments' labels hold the frozen set's queries
        # fingerprint, read once for the suite (the web app keeps them between pages).
        current = None if judged.labels is None else judged.labels.queries_fingerprint
        if suite.evalset.reference is not None:
            evalset, current = _judged_as_stored(evalset, run), None
        from monitor.judgments.rescore import queries_changed

        changed = queries_changed(store, run, evalset, current)
        # Coverage and judged-only figures need the very judgments the run was scored with.
        if not changed:
            qrels = evalset.qrels() if suite.evalset.reference is not None else judged.qrels
        if changed:
            warnings.append(
                f"the eval set changed since run {run.run_id}: query texts and segments come "
                "from its current version"
            )

    if evalset is not None and suite.evalset.reference is None:
        from monitor.judgments.suite import rescored_pair

        # Judgments changed since a run was measured: both are re-scored, not discarded.
        effective = None
        if judged.effective is not None and judged.labels is not None:
            effective = (judged.effective, judged.labels)
        run, baseline, notes = rescored_pair(
            store, suite, evalset, run, baseline, effective=effective
        )
        warnings.extend(notes)
    history = _rule_history(store, suite, run)
    frozen = judged.frozen
    key = comparison_key(
        suite,
        store,
        run,
        baseline,
        evalset=None if frozen is None else evalset_identity(suite, frozen, judged.loaded.files),
        judgments=_judgments_read(suite, evalset, judged, qrels),
        history=history,
        invariants=bool(suite.invariants),
    )
    comparison = stored_comparison(store, key)
    if comparison is None:
        comparison = _compared(store, suite, run, baseline, evalset, judged, history, qrels)
    comparison = replace(
        comparison,
        warnings=(*comparison.warnings, *warnings),
        rules=with_power(comparison.rules, _powers(suite, baseline, run)),
    )

    charted = _charted(suite, run)
    if trends_of is None:
        trended = suite_trends(store, suite, judged, charted, baseline)
    else:
        trended = trends_of(charted, baseline)
    if trended.rescored:
        comparison = replace(
            comparison,
            warnings=(
                *comparison.warnings,
                f"trends: {trended.rescored} earlier run(s) re-scored under the judgments in force",
            ),
        )
    links = {
        name: url
        for name in ("dashboard", "runbook", "report")
        if (url := getattr(suite.links, name)) is not None
    }
    doc_texts, problem = diff_texts(suite, comparison)
    if problem:
        comparison = replace(comparison, warnings=(*comparison.warnings, problem))
    return Report(
        comparison=comparison,
        run=run,
        baseline=baseline,
        trends=trended.trends,
        links=links,
        generated_at=now or datetime.now(timezone.utc),
        doc_texts=doc_texts,
        config_file=suite.config_file,
        bands=suite.bands,
    )


def _compared(
    store: Store,
    suite: SuiteConfig,
    run: RunRecord,
    baseline: RunRecord | None,
    evalset: EvalSet | None,
    judged: SuiteJudgments,
    history: Mapping[str, Sequence[bool]],
    qrels: Mapping[str, Mapping[str, int]] | None,
) -> Comparison:
    """Return the comparison of ``run`` with ``baseline`` computed afresh under the suite's
    rules, with the query texts and metadata of ``judged``'s frozen set (when it was read)
    and the judge's agreement and calibrated figures of its layers."""
    from monitor.compare import compare_runs

    agreement = calibration = None
    if evalset is not None and suite.evalset.reference is None:
        from monitor.job.path import calibration_of
        from monitor.judgments.suite import judge_agreement

        agreement = judge_agreement(store, suite, evalset, keep=False)
        # Read only: calibrated figures are computed from the layers, never stored here.
        calibration = calibration_of(suite, store, evalset, run, baseline)
    return compare_runs(
        run,
        baseline,
        suite.rules,
        significance=suite.significance,
        segments=suite.segments if judged.metadata is not None else (),
        metadata=judged.metadata,
        texts=judged.texts,
        history=history,
        qrels=qrels,
        coverage=suite.coverage,
        invariants=suite.invariants,
        agreement=agreement,
        calibration=calibration,
    )


def _pruned_report(
    store: Store,
    suite: SuiteConfig,
    run: RunRecord,
    basis: ReportBasis,
    trends_of: TrendsOf | None,
    now: datetime | None,
) -> Report:
    """Return the report of a run whose per-query detail was pruned: its comparison as kept
    when it ran (it cannot be computed again without the detail), its means and the trends."""
    from monitor.compare.history import kept_comparison

    comparison = kept_comparison(store, suite.name, int(run.run_id or 0))
    when = run.pruned_at.date().isoformat() if run.pruned_at is not None else "?"
    if comparison is None:
        comparison = _unkept_comparison(suite, run, basis.baseline)
        note = (
            f"run {run.run_id} was pruned on {when}, before verdicts were kept: its verdict "
            "and rule outcomes are not known; only its means remain"
        )
    else:
        note = (
            f"run {run.run_id} was pruned on {when}: its verdict, rule outcomes and means are "
            "those measured when it ran; query diffs, segments and overlap went with its "
            "per-query detail"
        )
    comparison = replace(comparison, warnings=(note, *comparison.warnings))
    kept_baseline = basis.baseline
    if kept_baseline is not None and kept_baseline.run_id != comparison.baseline_run_id:
        kept_baseline = None  # compared then with a baseline no longer pinned
    charted = _charted(suite, run)
    if trends_of is None:
        trended = suite_trends(store, suite, basis.judgments, charted, basis.baseline)
    else:
        trended = trends_of(charted, basis.baseline)
    links = {
        name: url
        for name in ("dashboard", "runbook", "report")
        if (url := getattr(suite.links, name)) is not None
    }
    return Report(
        comparison=comparison,
        run=run,
        baseline=kept_baseline,
        trends=trended.trends,
        links=links,
        generated_at=now or datetime.now(timezone.utc),
        bands=suite.bands,
        config_file=suite.config_file,
    )


def _unkept_comparison(
    suite: SuiteConfig, run: RunRecord, baseline: RunRecord | None
) -> Comparison:
    """Return the comparison of a run pruned before comparisons were kept: every rule
    skipped, since none can be judged again without the per-query detail."""
    from monitor.compare.records import Comparison, RuleOutcome

    rules = tuple(
        RuleOutcome(
            rule=rule.name,
            check=rule.check,
            metric=rule.check.value if rule.metric is None else str(rule.metric),
            threshold=rule.threshold,
            severity=rule.severity,
            status="skipped",
            message="not kept: the run was pruned before rule outcomes were stored",
        )
        for rule in suite.rules
    )
    return Comparison(
        suite=suite.name,
        run_id=run.run_id,
        baseline_run_id=None if baseline is None else baseline.run_id,
        verdict="insufficient_evidence",
        rules=rules,
        pruned=True,
    )


def diff_texts(suite: SuiteConfig, comparison: Comparison) -> tuple[dict[str, str], str]:
    """Return the text of each document the comparison's query diffs name, and a warning
    (empty when none) if the suite's corpus could not be read."""
    from monitor.judgments.suite import doc_texts

    ids = {
        doc
        for diff in comparison.worse_queries
        for doc in (*diff.expected_ids, *diff.baseline_ids, *diff.current_ids)
    }
    if not ids:
        return {}, ""
    try:
        text_of = doc_texts(suite)
    except (MonitorError, OSError) as error:
        return {}, f"the corpus could not be read ({error}): query diffs show ids only"
    return {doc: text for doc in sorted(ids) if (text := text_of(doc))}, ""


def no_run_error(suite: str) -> UsageError:
    """Return the error for a suite that has no run in the store yet."""
    return UsageError(
        f"no run of suite {suite} yet; run `retrieval-monitor run --suite {suite}` first"
    )


def _latest_run(store: Store, suite: str, baseline_id: int | None) -> RunRecord:
    """Return the suite's newest ok run that is not its baseline (the baseline if alone).

    A seeded baseline is stored just after the suite's first run, so the newest run alone
    would be the baseline compared with itself.
    """
    latest = store.latest_run(suite)
    if latest is None:
        failed = store.latest_run(suite, status=None)
        if failed is not None:
            raise UsageError(
                f"no successful run of suite {suite!r} yet: run {failed.run_id} failed "
                f"({failed.error}); fix it and run `retrieval-monitor run --suite {suite}`"
            )
        raise no_run_error(suite)
    if latest.run_id != baseline_id:
        return latest
    for summary in store.list_runs(suite, limit=SEARCH_RUNS):
        if summary.status == "ok" and summary.run_id != baseline_id:
            return store.get_run(summary.run_id)
    return latest


def suite_run(store: Store, suite: str, run_id: int) -> RunRecord:
    """Return run ``run_id`` of ``suite``; UsageError when the store has no such run or it
    belongs to another suite."""
    try:
        run = store.get_run(run_id)
    except StoreLookupError:
        raise UsageError(f"no run {run_id} in the store") from None
    if run.suite != suite:
        raise UsageError(f"run {run_id} belongs to suite {run.suite!r}, not {suite!r}")
    return run


def _chosen_run(store: Store, suite: str, run_id: int) -> RunRecord:
    run = suite_run(store, suite, run_id)
    if not run.ok:
        raise UsageError(f"run {run_id} failed ({run.error}): it has no metrics to report")
    return run


def _judgments_read(
    suite: SuiteConfig,
    evalset: EvalSet | None,
    judged: SuiteJudgments,
    qrels: Mapping[str, Mapping[str, int]] | None,
) -> str | None:
    """Return the version of the judgments the report's comparison reads (None: it reads
    none): a reference search's, those the run was judged with; else the suite's in force."""
    if qrels is None or evalset is None:
        return None
    if suite.evalset.reference is not None:
        from monitor.judgments import labels_of

        return labels_of(evalset).judgments_version
    return None if judged.labels is None else judged.labels.judgments_version


def _judged_as_stored(evalset: EvalSet, run: RunRecord) -> EvalSet:
    """Return ``evalset`` judged as ``run`` was: its stored relevant ids, grade 1 each.

    A reference search judges every id of its top k relevant with grade 1, so the stored ids
    give those judgments whole, and the eval set's fingerprint matches the run's while its
    queries and texts are unchanged.
    """
    from monitor.evalset import EvalSet
    from monitor.records import Query

    stored = {query.query_id: query.relevant_ids for query in run.queries}
    return EvalSet(
        name=evalset.name,
        queries=[
            Query(q.id, q.text, dict.fromkeys(stored.get(q.id, ()), 1), q.metadata) for q in evalset
        ],
    )


def _rule_history(store: Store, suite: SuiteConfig, run: RunRecord) -> dict[str, list[bool]]:
    """Return each rule's breach flags from the runs before ``run``, for persistence."""
    from monitor.compare.history import rule_history

    if suite.significance.persistence is None:
        return {}
    return rule_history(store, suite.name, before=run.run_id)


def with_power(
    rules: tuple[RuleOutcome, ...], figures: Mapping[str, PowerFigure]
) -> tuple[RuleOutcome, ...]:
    """Return ``rules`` with each drop rule's minimal detectable drop added to its message.

    ``figures`` are :func:`monitor.compare.power.rule_powers` of the run and its baseline.
    """
    out = []
    for outcome in rules:
        figure = figures.get(outcome.rule)
        if figure is not None:
            outcome = replace(outcome, message=f"{outcome.message}; {figure.clause()}")
        out.append(outcome)
    return tuple(out)


def _powers(
    suite: SuiteConfig, baseline: RunRecord | None, run: RunRecord
) -> dict[str, PowerFigure]:
    from monitor.compare.power import rule_powers

    if baseline is None:
        return {}
    return rule_powers(suite.rules, baseline, run, suite.significance.alpha)
