"""A run against its baseline as terminal text: metrics, verdict, rules, diffs, segments."""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from pathlib import Path

from monitor.compare import Comparison, RuleOutcome
from monitor.compare.coverage import held_cutoff, labels_todo
from monitor.config.model import config_option
from monitor.metrics.bands import BAND_NAMES, DEFAULT_BANDS, MEANINGS, Band, Bands
from monitor.report.intervals import METRIC_CI
from monitor.terminal import printable

_MARK = {
    "ok": "ok",
    "breach": "BREACH",
    "insufficient_evidence": "noise?",
    "pending": "pending",
    "skipped": "skipped",
    "unjudged": "labels?",
    "unverified": "unverified",
}
_VERDICT = {
    "ok": "ok: no rule breached",
    "regression": "REGRESSION: a rule breached with significant evidence",
    "insufficient_evidence": "insufficient evidence: a threshold was passed, but the drop is "
    "not significant",
    "unjudged": "unjudged: labels needed; a rule breached, but its top k holds documents "
    "nobody judged (regression alert held)",
    "no_baseline": "no baseline yet: pin one with `retrieval-monitor baseline set`",
    "evalset_changed": "eval set changed: not compared; pin a new baseline",
}


def _verdict(comparison: Comparison, config_file: Path | None) -> str:
    """Return the verdict in words: what fired, and, without a baseline, the command that
    pins this run as printed (with the suite's config)."""
    if comparison.verdict == "regression":
        rules = bool(comparison.breaches)
        invariants = bool(comparison.invariant_breaches)
        if invariants and not rules:
            return "REGRESSION: an invariant broke (checked exactly, no test needed)"
        if invariants:
            return "REGRESSION: a rule breached with significant evidence, and an invariant broke"
    if comparison.verdict == "no_baseline":
        config = config_option(config_file)
        suite = shlex.quote(comparison.suite)
        return (
            f"no baseline yet: pin this run with `retrieval-monitor baseline set{config} "
            f"--suite {suite}`"
        )
    return _VERDICT[comparison.verdict]


def render_comparison(
    comparison: Comparison,
    means: Mapping[str, float],
    *,
    queries: int = 5,
    bands: Bands = DEFAULT_BANDS,
    config_file: Path | None = None,
) -> str:
    """Return the comparison as text, ``means`` being the current run's metric means, each
    read by its band (``bands``: the suite's edges); ``config_file`` goes into the commands
    it prints (the suite's, None for the default).

    Control characters are left out (:func:`monitor.terminal.printable`).
    """
    lines = [
        f"suite {comparison.suite}: "
        + ("a run not recorded" if comparison.run_id is None else f"run {comparison.run_id}")
        + (f" vs baseline run {comparison.baseline_run_id}" if comparison.baseline_run_id else ""),
        f"verdict: {_verdict(comparison, config_file)}"
        + (" (pruned: as measured when the run ran)" if comparison.pruned else ""),
        "",
    ]
    changes = {c.metric: c for c in comparison.metrics}
    name_width = max((len(m) for m in means), default=6)
    judged_only = any(c.judged_only_current is not None for c in comparison.metrics)
    extra = f"  {'-J base':>8}  {'-J now':>8}" if judged_only else ""
    lines.append(
        f"{'metric':<{name_width}}  {'baseline':>8}  {'current':>8}  {'band':<6}  "
        f"{'delta':>8}{extra}  {METRIC_CI}"
    )
    read = {metric: bands.of(metric, value) for metric, value in means.items()}
    for metric, value in means.items():
        band = read[metric]
        reading = f"{'' if band is None else band.name:<6}"
        change = changes.get(metric)
        if change is None:
            lines.append(f"{metric:<{name_width}}  {'':>8}  {value:>8.4f}  {reading}".rstrip())
            continue
        ci = (
            f"[{change.ci_low:+.4f}, {change.ci_high:+.4f}]"
            if change.ci_low is not None and change.ci_high is not None
            else ""
        )
        only = (
            f"  {_fixed(change.judged_only_baseline)}  {_fixed(change.judged_only_current)}"
            if judged_only
            else ""
        )
        lines.append(
            f"{metric:<{name_width}}  {change.baseline:>8.4f}  {change.current:>8.4f}  {reading}  "
            f"{change.delta:>+8.4f}{only}  {ci}".rstrip()
        )
    if judged_only:
        lines.append("(-J: judged-only, unjudged documents removed before scoring)")
    lines += _band_lines(band for band in read.values() if band is not None)
    lines += _coverage_lines(comparison, config_file)
    lines += _overlap_lines(comparison, queries)
    if comparison.rules:
        lines += ["", "rules:"]
        lines += [
            f"  [{_MARK[r.status]:>7}] {r.rule}: {r.message}{_rule_interval(r)}"
            for r in comparison.rules
        ]
    if comparison.invariants:
        lines += ["", "invariants:"]
        for invariant in comparison.invariants:
            lines.append(f"  [{_MARK[invariant.status]:>7}] {invariant.name}: {invariant.message}")
            lines += [
                f"      {q.query_id}: missing {', '.join(q.missing_ids)} from the top {q.k}"
                for q in invariant.queries[:queries]
            ]
            if len(invariant.queries) > queries:
                lines.append(f"      ... and {len(invariant.queries) - queries} more")
    if comparison.worse_for():
        shown = comparison.worse_for()[:queries]
        lines += [
            "",
            f"queries that got worse on {comparison.primary_metric} "
            f"(top {len(shown)} of those that lost):",
        ]
        for diff in shown:
            text = diff.query if len(diff.query) <= 60 else diff.query[:57] + "..."
            moved = f"{_rank(diff.baseline_first_rank)} -> {_rank(diff.current_first_rank)}"
            lines.append(
                f"  {diff.query_id} {diff.baseline:.3f} -> {diff.current:.3f} {diff.change} "
                f"(first relevant at {moved}): {text}"
            )
            lines.append(f"      expected {', '.join(diff.expected_ids)}")
            lines.append(f"      baseline {', '.join(diff.baseline_ids)}")
            lines.append(f"      current  {', '.join(diff.current_ids)}")
    keys = dict.fromkeys(s.key for s in comparison.segments_for())
    for key in keys:
        driver = comparison.driving_segment(key)
        rows = [s for s in comparison.segments_for() if s.key == key]
        lines += ["", f"by {key} ({comparison.primary_metric}):"]
        for seg in rows:
            flag = "  <- drove the drop" if driver is seg else ""
            lines.append(
                f"  {seg.value:<16} n={seg.n:<4} {seg.baseline:.3f} -> {seg.current:.3f} "
                f"({seg.delta:+.3f}; contributes {seg.contribution:+.4f}){flag}"
            )
    if comparison.notes:
        lines += ["", *(f"note: {n}" for n in comparison.notes)]
    if comparison.warnings:
        lines += ["", *(f"warning: {w}" for w in comparison.warnings)]
    # Query texts and ids come from the eval set and the backend: keep them from driving the
    # terminal.
    return printable("\n".join(lines))


def _band_lines(read: Iterable[Band]) -> list[str]:
    """Return what each band shown means, best first; nothing when no mean has a band."""
    names = {band.name for band in read}
    if not names:
        return []
    lines = ["(band of the current mean, a reading aid and never an alert:"]
    lines += [f" {name}: {MEANINGS[name]}" for name in BAND_NAMES if name in names]
    lines[-1] += ")"
    return lines


def _fixed(value: float | None) -> str:
    """Return ``value`` in an 8-wide column, ``-`` when unknown."""
    return f"{'-':>8}" if value is None else f"{value:>8.4f}"


def _coverage_lines(comparison: Comparison, config_file: Path | None) -> list[str]:
    """Return the judgment coverage at each k against the baseline, held rules flagged."""
    if not comparison.coverage:
        return []
    deepest = max(change.k for change in comparison.coverage)
    held = {held_cutoff(o.metric, deepest) for o in comparison.held}
    lines = ["", "coverage (queries with a judged non-relevant document):"]
    for change in comparison.coverage:
        flag = "  <- labels needed" if change.k in held else ""
        lines.append(
            f"  {change.metric} {change.baseline:.4f} -> {change.current:.4f} "
            f"({-change.drop:+.4f}): {change.unjudged_added} unjudged documents entered "
            f"the top {change.k} in {change.queries} of {change.n} queries{flag}"
        )
    if comparison.held:
        if comparison.run_id is None:  # a gated candidate not stored: no queue to list yet
            lines.append(
                "  label them: run the gate again with --record; it stores the candidate "
                "and names the judgments todo command of its run"
            )
        else:
            todo = labels_todo(comparison.suite, comparison.run_id, config_file)
            lines.append(f"  label them: {todo}")
    return lines


def _overlap_lines(comparison: Comparison, queries: int) -> list[str]:
    """Return the overlap with the baseline's top k, and the queries that moved most."""
    overlap = comparison.overlap
    if overlap is None or not overlap.n:
        return []
    lines = [
        "",
        f"overlap with the baseline's top {overlap.k} (no judgments needed): "
        f"rank-biased overlap (p = {overlap.persistence:g}) {overlap.rbo:.4f}, "
        f"Jaccard@{overlap.k} {overlap.jaccard:.4f} over {overlap.n} queries",
    ]
    moved = overlap.moved_most(queries)
    if moved:
        lines.append(
            "  moved most: "
            + ", ".join(f"{q.query_id} {q.rbo:.3f} (Jaccard {q.jaccard:.3f})" for q in moved)
        )
    return lines


def _rule_interval(rule: RuleOutcome) -> str:
    """Return ``"; <method> 95% CI of <delta or mean> [low, high]"``, or "" without one."""
    if rule.ci_low is None or rule.ci_high is None:
        return ""
    spec = "+.4f" if rule.check != "min" else ".4f"
    return f"; {rule.ci_label} [{rule.ci_low:{spec}}, {rule.ci_high:{spec}}]"


def _rank(rank: int | None) -> str:
    return "-" if rank is None else str(rank)
