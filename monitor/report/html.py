"""A report as one self-contained HTML page: inline CSS and SVG, no script, no network.

The page shows the verdict, the warnings, the rule outcomes with their p-values and
intervals, trend charts of the main figures across the suite's runs, every metric's change,
the queries that got worse, and the segment breakdown. Every string from outside the code
(query texts and ids, document ids, pipeline and suite names, segment values, messages,
links) is escaped; a Content-Security-Policy forbids scripts and remote loads besides.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from html import escape
from pathlib import Path
from urllib.parse import urlsplit

from monitor.compare.coverage import held_cutoff, labels_todo
from monitor.compare.records import Comparison, QueryDiff, RuleOutcome, SegmentChange
from monitor.report import svg
from monitor.report.bands import band_cell, band_legend
from monitor.report.intervals import METRIC_CI
from monitor.report.records import Report
from monitor.report.stylesheet import STYLESHEET
from monitor.store.records import RunFigures, RunRecord

_VERDICT = {
    "ok": ("OK", "No rule breached."),
    "regression": ("Regression", "A rule breached with significant evidence."),
    "insufficient_evidence": (
        "Insufficient evidence",
        "A threshold was passed, but the change is within noise: reported, not alerted.",
    ),
    "unjudged": (
        "Labels needed",
        "A rule breached, but the top k now holds documents nobody judged: the regression "
        "alert is held until they are labelled.",
    ),
    "no_baseline": (
        "No baseline",
        "Nothing to compare with: pin one with `retrieval-monitor baseline set`.",
    ),
    "evalset_changed": (
        "Eval set changed",
        "The eval set differs from the baseline's: not compared. Pin a new baseline.",
    ),
}
_STATUS = {
    "ok": "ok",
    "breach": "breach",
    "insufficient_evidence": "noise?",
    "pending": "pending",
    "skipped": "skipped",
    "unjudged": "labels?",
    "unverified": "unverified",
}
_CHANGE = {
    "lost_hit": ("lost hit", "a relevant document was in the top k and none is now"),
    "moved_down": ("moved down", "the first relevant document now ranks lower"),
    "recall_fell": ("recall fell", "fewer relevant documents in the top k"),
    "score_fell": ("score fell", "the same documents, in an order the measure likes less"),
}
#: The run figures shown beside the metrics, with how each reads.
_FIGURES: tuple[tuple[str, bool, Callable[[RunFigures], float | int | None]], ...] = (
    ("latency p50", True, lambda f: f.latency.p50),
    ("latency p95", True, lambda f: f.latency.p95),
    ("latency p99", True, lambda f: f.latency.p99),
    ("error rate", False, lambda f: f.error_rate),
    ("zero-result rate", False, lambda f: f.zero_result_rate),
    ("queries", False, lambda f: f.sent),
    ("failed queries", False, lambda f: f.failed),
)
_LINK_SCHEMES = ("http", "https")
#: How much of a document's text a query diff shows (the rest on hover).
_DOC_TEXT_CHARS = 90


def render_html(report: Report) -> str:
    """Return ``report`` as one self-contained HTML document."""
    comparison = report.comparison
    headline = _VERDICT[comparison.verdict][0]
    title = f"{comparison.suite}: run {comparison.run_id} {headline.lower()}"
    body = [
        _header(report),
        _verdict(comparison),
        _warnings(comparison.warnings),
        _rules(comparison.rules),
        _trends(report),
        _metrics(report),
        _coverage(comparison, report.config_file),
        _overlap(comparison),
        _figures(report.run, report.baseline),
        _queries(comparison, report.doc_texts),
        _segments(comparison),
        _footer(report),
    ]
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            # No script, nothing fetched: only the inline style applies.
            '<meta http-equiv="Content-Security-Policy" '
            "content=\"default-src 'none'; style-src 'unsafe-inline'\">",
            '<meta name="referrer" content="no-referrer">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{_e(title)}</title>",
            f"<style>{STYLESHEET}</style>",
            "</head>",
            "<body><main>",
            *(part for part in body if part),
            "</main></body>",
            "</html>",
            "",
        ]
    )


def _header(report: Report) -> str:
    comparison, run, baseline = report.comparison, report.run, report.baseline
    against = (
        f" vs baseline run {_e(comparison.baseline_run_id)}"
        if comparison.baseline_run_id is not None
        else ""
    )
    lines = [
        f"<header><h1>Suite <code>{_e(comparison.suite)}</code>: run {_e(run.run_id)}"
        f"{against}</h1>",
        f'<p class="meta">run {_e(run.run_id)}: pipeline <code>{_e(run.pipeline)}</code>, '
        f"started {_e(_when(run.started_at))}, {len(run.queries)} queries, took "
        f"{_e(_seconds(run.duration_seconds))}</p>",
    ]
    if baseline is not None:
        lines.append(
            f'<p class="meta">baseline run {_e(baseline.run_id)}: pipeline '
            f"<code>{_e(baseline.pipeline)}</code>, started {_e(_when(baseline.started_at))}"
            "</p>"
        )
    links = [_link(label, url) for label, url in report.links.items()]
    if links:
        lines.append(f'<p class="links">{"".join(links)}</p>')
    lines.append("</header>")
    return "\n".join(lines)


def _link(label: str, url: str) -> str:
    """Return a link to ``url``, or its text when it is not a web address."""
    if urlsplit(url).scheme.lower() in _LINK_SCHEMES:
        return f'<a href="{_e(url)}" rel="noopener noreferrer">{_e(label)}</a>'
    return f"<span>{_e(label)}: <code>{_e(url)}</code></span>"


def _verdict(comparison: Comparison) -> str:
    headline, detail = _VERDICT[comparison.verdict]
    follows = ""
    if comparison.primary_metric and comparison.worse_for():
        metric = _e(comparison.primary_metric)
        follows = f" Query and segment diffs follow <code>{metric}</code>."
    breaches = comparison.breaches
    fired = ""
    if breaches:
        names = ", ".join(f"<code>{_e(rule.rule)}</code>" for rule in breaches)
        fired = f" Fired: {names}."
    if comparison.pruned:
        fired += " Pruned: as measured when the run ran."
    return (
        f'<section class="verdict v-{_e(comparison.verdict)}" id="verdict">'
        f"<strong>{_e(headline)}</strong>{_e(detail)}{fired}{follows}</section>"
    )


def _warnings(warnings: Sequence[str]) -> str:
    if not warnings:
        return ""
    items = "".join(f"<li>{_e(warning)}</li>" for warning in warnings)
    return f'<section id="warnings"><ul class="warnings">{items}</ul></section>'


def _rules(rules: Sequence[RuleOutcome]) -> str:
    if not rules:
        return '<h2 id="rules">Rules</h2><p class="meta">The suite has no rules.</p>'
    rows = []
    for rule in rules:
        interval = _interval(rule.metric, rule.ci_low, rule.ci_high)
        ci_cell = '<td class="num"></td>'
        if interval:
            ci_cell = (
                f'<td class="num" title="{_e(rule.ci_label)}">'
                f"{_e(f'{rule.ci_method} {interval}')}</td>"
            )
        rows.append(
            "<tr>"
            f"<td>{_badge(rule.status)}</td>"
            f"<td><code>{_e(rule.rule)}</code></td>"
            f"<td>{_e(rule.severity)}</td>"
            f'<td class="num">{_e(_figure(rule.metric, rule.baseline))}</td>'
            f'<td class="num">{_e(_figure(rule.metric, rule.current))}</td>'
            f'<td class="num{_sign(rule.delta)}">{_e(_figure(rule.metric, rule.delta, True))}</td>'
            f"{ci_cell}"
            f'<td class="num">{_e(_p(rule.p_value))}</td>'
            f"<td>{_e(rule.message)}</td>"
            "</tr>"
        )
    return (
        '<h2 id="rules">Rules</h2>'
        "<table><thead><tr><th>status</th><th>rule</th><th>severity</th>"
        '<th class="num">baseline</th><th class="num">current</th><th class="num">delta</th>'
        '<th class="num">95% interval</th><th class="num">p</th><th>detail</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
        '<p class="meta">The interval is the bootstrap 95% CI of the mean delta (the t 95% '
        "CI of the current mean for a <code>min</code> rule); p is the one-sided paired test "
        "that the current run is worse. <i>noise?</i>: over the threshold but not "
        "significant, so not alerted.</p>"
    )


def _trends(report: Report) -> str:
    if not report.trends:
        return ""
    figures = []
    for trend in report.trends:
        chart = svg.trend_chart(
            trend, current=report.run.run_id, baseline_run=report.comparison.baseline_run_id
        )
        unit = svg.unit_label(trend)
        shown = len(trend.points)
        span = (
            f"last {shown} of {trend.total_runs} runs"
            if trend.total_runs > shown
            else f"{shown} run{'s' if shown != 1 else ''}"
        )
        failed = sum(1 for point in trend.points if point.status == "failed")
        notes = [span]
        if failed:
            notes.append(f"{failed} failed")
        for name, line in (
            ("alerts below", trend.alert_below),
            ("alerts above", trend.alert_above),
        ):
            if line is not None:
                notes.append(f"{name} {_figure(trend.figure, line)}")
        figures.append(
            f"<figure><figcaption><b>{_e(trend.label)}</b>{f' ({_e(unit)})' if unit else ''}"
            f" &middot; {_e(', '.join(notes))}</figcaption>{chart}</figure>"
        )
    legend = (
        '<p class="legend meta">'
        f'<span><i class="key" style="border-color:{svg.SERIES}"></i>run</span>'
        f'<span><i class="key" style="border-color:{svg.BASELINE};border-top-style:dashed">'
        "</i>baseline value</span>"
        f'<span><i class="key" style="border-color:{svg.ALERT};border-top-style:dotted"></i>'
        "where a rule fires</span>"
        "<span>large dot: this run; ring: the baseline run; red band and &times;: a failed run"
        "</span></p>"
    )
    return f'<h2 id="trends">Trends</h2><div class="charts">{"".join(figures)}</div>{legend}'


def _metrics(report: Report) -> str:
    means = report.run.means
    if not means:
        return ""
    changes = {change.metric: change for change in report.comparison.metrics}
    watched = {rule.metric for rule in report.comparison.rules}
    span = max(
        (
            abs(value)
            for change in changes.values()
            for value in (change.ci_low, change.ci_high, change.delta)
            if value is not None and math.isfinite(value)
        ),
        default=1.0,
    )
    judged_only = any(c.judged_only_current is not None for c in changes.values())
    rows = []
    for metric, value in means.items():
        change = changes.get(metric)
        css = ' class="watched"' if metric in watched else ""
        if change is None:
            blank = "<td></td><td></td>" if judged_only else ""
            rows.append(
                f'<tr{css}><td><code>{_e(metric)}</code></td><td class="num">&ndash;</td>'
                f'<td class="num">{_e(_num(value))}</td>{band_cell(report.bands, metric, value)}'
                f"<td></td>{blank}<td></td><td></td></tr>"
            )
            continue
        only = (
            f'<td class="num">{_e(_num(change.judged_only_baseline))}</td>'
            f'<td class="num">{_e(_num(change.judged_only_current))}</td>'
            if judged_only
            else ""
        )
        rows.append(
            f"<tr{css}><td><code>{_e(metric)}</code></td>"
            f'<td class="num">{_e(_num(change.baseline))}</td>'
            f'<td class="num">{_e(_num(change.current))}</td>'
            f"{band_cell(report.bands, metric, value)}"
            f'<td class="num{_sign(change.delta)}">{_e(_num(change.delta, signed=True))}</td>'
            f"{only}"
            f'<td class="num">{_e(_interval(metric, change.ci_low, change.ci_high))}</td>'
            f"<td>{svg.interval_glyph(change.ci_low, change.ci_high, change.delta, span)}</td>"
            "</tr>"
        )
    note = (
        ""
        if changes
        else '<p class="meta">No baseline measured these metrics: current values only.</p>'
    )
    return (
        '<h2 id="metrics">Metrics</h2>'
        '<table><thead><tr><th>metric</th><th class="num">baseline</th>'
        '<th class="num">current</th><th>band</th><th class="num">delta</th>'
        + (
            '<th class="num">judged-only baseline</th><th class="num">judged-only current</th>'
            if judged_only
            else ""
        )
        + f'<th class="num">{_e(METRIC_CI)}</th><th>delta and interval (0 in the middle)</th>'
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table>{note}"
        '<p class="meta">Bold: a rule watches the metric. The interval is the paired '
        "t 95% CI of the mean per-query delta."
        + (
            " Judged-only: the same metric with unjudged documents removed from each ranking "
            "before scoring (trec_eval -J), so a drop that vanishes there came from them."
            if judged_only
            else ""
        )
        + "</p>"
        + band_legend(report.bands, means)
    )


def _coverage(comparison: Comparison, config_file: Path | None) -> str:
    if not comparison.coverage:
        return ""
    deepest = max(change.k for change in comparison.coverage)
    held = {held_cutoff(o.metric, deepest) for o in comparison.held}
    rows = "".join(
        f'<tr><td><code>{_e(c.metric)}</code></td><td class="num">{_e(_num(c.baseline))}</td>'
        f'<td class="num">{_e(_num(c.current))}</td>'
        f'<td class="num{_sign(-c.drop)}">{_e(_num(-c.drop, signed=True))}</td>'
        f'<td class="num">{_e(c.unjudged_added)}</td>'
        f'<td class="num">{_e(c.queries)} of {_e(c.n)}</td>'
        f"<td>{_badge('unjudged') if c.k in held else ''}</td></tr>"
        for c in comparison.coverage
    )
    todo = (
        f'<p class="meta">Label them: <code>'
        f"{_e(labels_todo(comparison.suite, comparison.run_id, config_file))}"
        "</code></p>"
        if comparison.held
        else ""
    )
    return (
        '<h2 id="coverage">Judgment coverage</h2>'
        '<table><thead><tr><th>coverage</th><th class="num">baseline</th>'
        '<th class="num">current</th><th class="num">change</th>'
        '<th class="num">unjudged documents that came in</th><th class="num">queries</th>'
        f"<th></th></tr></thead><tbody>{rows}</tbody></table>{todo}"
        '<p class="meta">Over the queries whose judgments include a non-relevant document. '
        "A rule that breached where coverage fell by more than <code>coverage.max_drop</code> "
        "is held: labels are needed before it is called a regression.</p>"
    )


def _overlap(comparison: Comparison, shown: int = 10) -> str:
    overlap = comparison.overlap
    if overlap is None or not overlap.n:
        return ""
    moved = overlap.moved_most(shown)
    rows = "".join(
        f'<tr><td class="qid">{_e(q.query_id)}</td><td class="num">{_e(_num(q.rbo))}</td>'
        f'<td class="num">{_e(_num(q.jaccard))}</td></tr>'
        for q in moved
    )
    table = (
        '<table><thead><tr><th>query</th><th class="num">rank-biased overlap</th>'
        f'<th class="num">Jaccard@{_e(overlap.k)}</th></tr></thead><tbody>{rows}</tbody></table>'
        if rows
        else ""
    )
    return (
        f'<h2 id="overlap">Overlap with the baseline&#39;s top {_e(overlap.k)}</h2>'
        f"<p>Rank-biased overlap (extrapolated, p = {_e(f'{overlap.persistence:g}')}) "
        f"<b>{_e(_num(overlap.rbo))}</b>, Jaccard@{_e(overlap.k)} "
        f"<b>{_e(_num(overlap.jaccard))}</b> over {_e(overlap.n)} queries answered in both "
        "runs. It needs no judgments: it says how far the rankings moved.</p>"
        f"{table}"
    )


def _figures(run: RunRecord, baseline: RunRecord | None) -> str:
    rows = []
    for label, seconds, read in _FIGURES:
        now = read(run.figures) if run.ok else None
        old = read(baseline.figures) if baseline is not None else None
        if now is None and old is None:
            continue
        show = _seconds if seconds else _rate
        rows.append(
            f'<tr><td>{_e(label)}</td><td class="num">{_e(show(old))}</td>'
            f'<td class="num">{_e(show(now))}</td></tr>'
        )
    if not rows:
        return ""
    return (
        '<h2 id="figures">Run figures</h2>'
        '<table style="width:auto"><thead><tr><th>figure</th><th class="num">baseline</th>'
        f'<th class="num">current</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


def _queries(comparison: Comparison, texts: Mapping[str, str]) -> str:
    diffs = comparison.worse_for()
    if not diffs:
        if comparison.baseline_run_id is None or comparison.verdict == "evalset_changed":
            return ""
        if comparison.pruned:  # not none: they went with the per-query detail
            return ""
        return '<h2 id="queries">Queries that got worse</h2><p class="meta">None.</p>'
    rows = "".join(_query_row(diff, texts) for diff in diffs)
    return (
        '<h2 id="queries">Queries that got worse</h2>'
        f'<p class="meta">The {len(diffs)} queries that lost most on '
        f"<code>{_e(comparison.primary_metric)}</code>, largest loss first. "
        "Relevant documents are green and ticked.</p>"
        '<table class="diffs"><thead><tr><th>query</th><th class="num">baseline</th>'
        '<th class="num">current</th><th>change</th>'
        '<th class="num">first relevant rank</th><th>expected</th><th>baseline top</th>'
        f"<th>current top</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _query_row(diff: QueryDiff, texts: Mapping[str, str]) -> str:
    label, meaning = _CHANGE.get(diff.change, (diff.change, ""))
    relevant = set(diff.expected_ids)
    text = f'<div class="qtext">{_e(diff.query)}</div>' if diff.query else ""
    return (
        f'<tr><td><div class="qid id">{_e(diff.query_id)}</div>{text}</td>'
        f'<td class="num">{_e(_num(diff.baseline, 3))}</td>'
        f'<td class="num neg">{_e(_num(diff.current, 3))}</td>'
        f'<td title="{_e(meaning)}">{_e(label)}</td>'
        f'<td class="num">{_e(_rank(diff.baseline_first_rank))} &rarr; '
        f"{_e(_rank(diff.current_first_rank))}</td>"
        f"<td>{_ids(diff.expected_ids, relevant, texts, ordered=False)}</td>"
        f"<td>{_ids(diff.baseline_ids, relevant, texts)}</td>"
        f"<td>{_ids(diff.current_ids, relevant, texts)}</td></tr>"
    )


def _ids(
    ids: Iterable[str], relevant: set[str], texts: Mapping[str, str], *, ordered: bool = True
) -> str:
    items = "".join(
        ('<li class="hit">' if ordered and doc in relevant else "<li>")
        + f"{_e(doc)}{_doc_text(texts.get(doc))}</li>"
        for doc in ids
    )
    if not items:
        return '<span class="meta">none</span>'
    tag = "ol" if ordered else "ul"
    return f'<{tag} class="ids">{items}</{tag}>'


def _doc_text(text: str | None) -> str:
    """Return a document's text shortened to a line, the whole of it on hover."""
    if not text:
        return ""
    short = text if len(text) <= _DOC_TEXT_CHARS else text[: _DOC_TEXT_CHARS - 3] + "..."
    return f'<div class="dtext" title="{_e(text)}">{_e(short)}</div>'


def _segments(comparison: Comparison) -> str:
    if not comparison.segments_for():
        return ""
    keys = dict.fromkeys(segment.key for segment in comparison.segments_for())
    span = max((abs(s.contribution) for s in comparison.segments_for()), default=1.0)
    parts = [
        '<h2 id="segments">Segments</h2>'
        f'<p class="meta">How each segment changed on <code>{_e(comparison.primary_metric)}'
        "</code>. A segment's contribution is its summed per-query delta over all compared "
        "queries: a key's contributions add up to the overall delta.</p>"
    ]
    for key in keys:
        driver = comparison.driving_segment(key)
        rows = "".join(
            _segment_row(segment, driver is segment, span)
            for segment in comparison.segments_for()
            if segment.key == key
        )
        parts.append(
            f"<h3>by <code>{_e(key)}</code></h3>"
            '<table><thead><tr><th>value</th><th class="num">queries</th>'
            '<th class="num">baseline</th><th class="num">current</th>'
            '<th class="num">delta</th><th class="num">contribution</th><th></th>'
            f"</tr></thead><tbody>{rows}</tbody></table>"
        )
    return "".join(parts)


def _segment_row(segment: SegmentChange, driver: bool, span: float) -> str:
    flag = ' <span class="driver">drove the drop</span>' if driver else ""
    return (
        f"<tr><td><code>{_e(segment.value)}</code>{flag}</td>"
        f'<td class="num">{segment.n}</td>'
        f'<td class="num">{_e(_num(segment.baseline, 3))}</td>'
        f'<td class="num">{_e(_num(segment.current, 3))}</td>'
        f'<td class="num{_sign(segment.delta)}">{_e(_num(segment.delta, 3, signed=True))}</td>'
        f'<td class="num{_sign(segment.contribution)}">'
        f"{_e(_num(segment.contribution, 4, signed=True))}</td>"
        f"<td>{svg.bar_glyph(segment.contribution, span)}</td></tr>"
    )


def _footer(report: Report) -> str:
    made = f" at {_e(_when(report.generated_at))}" if report.generated_at is not None else ""
    return f"<footer>Made by retrieval-monitor{made}.</footer>"


def _badge(status: str) -> str:
    return f'<span class="badge s-{_e(status)}">{_e(_STATUS.get(status, status))}</span>'


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _num(value: float | None, digits: int = 4, *, signed: bool = False) -> str:
    if value is None or not math.isfinite(value):
        return "\u2013"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _sign(value: float | None) -> str:
    if value is None or not math.isfinite(value) or abs(value) < 1e-12:
        return ""
    return " neg" if value < 0 else " pos"


def _figure(metric: str, value: float | None, signed: bool = False) -> str:
    """Return a rule's figure as it reads best: seconds for latency, else a plain number."""
    if value is None or not math.isfinite(value):
        return "\u2013" if not signed else ""
    if metric.startswith("latency"):
        text = _seconds(abs(value) if signed else value)
        return ("+" if value >= 0 else "-") + text if signed else text
    if "@" in metric:
        return _num(value, signed=signed)
    return f"{value:+.4g}" if signed else f"{value:.4g}"


def _interval(metric: str, low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return ""
    return f"[{_figure(metric, low, True)}, {_figure(metric, high, True)}]"


def _p(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:.1e}" if value < 0.00005 else f"{value:.4f}"


def _seconds(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "\u2013"
    if value >= 1 or value == 0:
        return f"{value:.3g} s"
    if value >= 1e-3:
        return f"{value * 1e3:.3g} ms"
    return f"{value * 1e6:.3g} \u00b5s"


def _rate(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "\u2013"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.4g}"


def _rank(rank: int | None) -> str:
    return "none" if rank is None else str(rank)


def _when(moment: datetime | None) -> str:
    return "" if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S UTC")
