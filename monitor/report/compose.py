"""Compose a report: a stored run of a suite against its baseline, with the suite's trends.

The comparison is computed again from the stored runs with the suite's current rules,
significance settings and segments; the eval set supplies query texts and segment metadata
(when it cannot be loaded the report still renders, without them, and says so). The
judgments are those stored with each query of the run: a suite judged by a reference search
is never searched again to make a report.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from monitor.errors import MonitorError, StoreLookupError, UsageError
from monitor.report.records import Report

if TYPE_CHECKING:
    from collections.abc import Mapping

    from monitor.compare.records import Comparison, RuleOutcome
    from monitor.config.model import SuiteConfig
    from monitor.evalset import EvalSet
    from monitor.evalset.power import PowerFigure
    from monitor.store import RunRecord, Store

#: How many recent runs are searched for the latest one that is not the baseline.
SEARCH_RUNS = 200


def compose_report(
    store: Store, suite: SuiteConfig, *, run_id: int | None = None, now: datetime | None = None
) -> Report:
    """Return the report of run ``run_id`` (default: the latest) of ``suite`` in ``store``.

    The latest run is the newest ok run that is not the pinned baseline itself. Raise
    UsageError when the suite has no successful run, or ``run_id`` is not one of its ok runs.
    """
    from monitor.compare import compare_runs
    from monitor.evalset.suite import load_evalset
    from monitor.report.history import build_trends, chart_metrics, with_overlap

    baseline = store.get_baseline(suite.name)
    baseline_id = baseline.run_id if baseline is not None else None
    if run_id is None:
        run = _latest_run(store, suite.name, baseline_id)
    else:
        run = _chosen_run(store, suite.name, run_id)
    warnings: list[str] = []
    if baseline is not None and run.run_id == baseline_id:
        warnings.append(f"run {run.run_id} is the suite's baseline: it is compared with itself")

    metadata = texts = qrels = None
    try:
        evalset = load_evalset(suite.evalset)
        if suite.evalset.reference is not None:
            evalset = _judged_as_stored(evalset, run)
    except (MonitorError, OSError) as error:
        warnings.append(
            f"the eval set could not be loaded ({error}): no query texts and no segments"
        )
    else:
        metadata = {query.id: query.metadata for query in evalset}
        texts = {query.id: query.text for query in evalset}
        from monitor.judgments.rescore import queries_changed

        changed = queries_changed(store, run, evalset)
        # Coverage and judged-only figures need the very judgments the run was scored with.
        qrels = None if changed else evalset.qrels()
        if changed:
            warnings.append(
                f"the eval set changed since run {run.run_id}: query texts and segments come "
                "from its current version"
            )

    if metadata is not None and suite.evalset.reference is None:
        from monitor.judgments.suite import rescored_pair, suite_evalset

        # Judgments changed since a run was measured: both are re-scored, not discarded.
        run, baseline, notes = rescored_pair(store, suite, evalset, run, baseline)
        warnings.extend(notes)
        if not changed:
            qrels = suite_evalset(store, suite, evalset).qrels()
    significance = suite.significance
    history = _rule_history(store, suite, run)
    comparison = compare_runs(
        run,
        baseline,
        suite.rules,
        significance=significance,
        segments=suite.segments if metadata is not None else (),
        metadata=metadata,
        texts=texts,
        history=history,
        qrels=qrels,
        coverage=suite.coverage,
    )
    comparison = replace(
        comparison,
        warnings=(*comparison.warnings, *warnings),
        rules=with_power(comparison.rules, _powers(suite, baseline, run)),
    )

    errors = {
        summary.run_id: summary.error or "failed"
        for summary in store.list_runs(suite.name, limit=SEARCH_RUNS)
        if summary.status == "failed"
    }
    charted = chart_metrics(suite.rules, list(run.means))
    # Coverage is charted beside the quality figures: a fall explains a drop of theirs.
    coverage = [name for name in run.means if name.startswith("judged@")]
    charted = tuple(dict.fromkeys((*charted, *coverage)))
    history_frame = store.history(suite.name, charted)
    if metadata is not None and suite.evalset.reference is None:
        from monitor.judgments.suite import rescored_history

        history_frame, count = rescored_history(store, suite, evalset, history_frame)
        if count:
            comparison = replace(
                comparison,
                warnings=(
                    *comparison.warnings,
                    f"trends: {count} earlier run(s) re-scored under the judgments in force",
                ),
            )
    history_frame, overlaps = with_overlap(store, suite.name, history_frame)
    charted = (*charted, *overlaps)
    trends = build_trends(
        history_frame,
        charted,
        baseline=baseline,
        rules=suite.rules,
        errors=errors,
    )
    links = {
        name: url
        for name in ("dashboard", "runbook", "report")
        if (url := getattr(suite.links, name)) is not None
    }
    texts, problem = diff_texts(suite, comparison)
    if problem:
        comparison = replace(comparison, warnings=(*comparison.warnings, problem))
    return Report(
        comparison=comparison,
        run=run,
        baseline=baseline,
        trends=trends,
        links=links,
        generated_at=now or datetime.now(timezone.utc),
        doc_texts=texts,
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


def _chosen_run(store: Store, suite: str, run_id: int) -> RunRecord:
    try:
        run = store.get_run(run_id)
    except StoreLookupError:
        raise UsageError(f"no run {run_id} in the store") from None
    if run.suite != suite:
        raise UsageError(f"run {run_id} belongs to suite {run.suite!r}, not {suite!r}")
    if not run.ok:
        raise UsageError(f"run {run_id} failed ({run.error}): it has no metrics to report")
    return run


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
    from monitor.job import rule_history

    if suite.significance.persistence is None:
        return {}
    return rule_history(store, suite.name, before=run.run_id)


def with_power(
    rules: tuple[RuleOutcome, ...], figures: Mapping[str, PowerFigure]
) -> tuple[RuleOutcome, ...]:
    """Return ``rules`` with each drop rule's minimal detectable drop added to its message.

    ``figures`` are :func:`monitor.evalset.power.rule_powers` of the run and its baseline.
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
    from monitor.evalset.power import rule_powers

    if baseline is None:
        return {}
    return rule_powers(suite.rules, baseline, run, suite.significance.alpha)
