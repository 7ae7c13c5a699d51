"""The stylesheet of the HTML report (:func:`monitor.report.html.render_html`), inlined in
its page: the classes the page's parts carry, in the colours :mod:`monitor.report.svg`
draws its charts with."""

from __future__ import annotations

#: The page's one stylesheet: no other is fetched (its Content-Security-Policy forbids it).
STYLESHEET = """
:root { --ink:#0f172a; --soft:#475569; --line:#e2e8f0; --bg:#f8fafc; --red:#dc2626;
  --red-bg:#fef2f2; --amber:#b45309; --amber-bg:#fffbeb; --green:#15803d; --green-bg:#f0fdf4;
  --grey-bg:#f1f5f9; --blue:#2563eb; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink); line-height: 1.45;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
  sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 28px 48px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 32px 0 10px; padding-bottom: 4px;
  border-bottom: 1px solid var(--line); }
h3 { font-size: 14px; margin: 18px 0 6px; }
p { margin: 6px 0; }
code, .id, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: 12.5px; }
.meta { color: var(--soft); }
.links a { margin-right: 14px; }
.verdict { margin: 18px 0 8px; padding: 14px 18px; border-radius: 8px;
  border-left: 6px solid; }
.verdict strong { font-size: 18px; margin-right: 10px; }
.v-ok { background: var(--green-bg); border-color: var(--green); }
.v-regression { background: var(--red-bg); border-color: var(--red); }
.v-insufficient_evidence, .v-evalset_changed, .v-unjudged { background: var(--amber-bg);
  border-color: var(--amber); }
.v-no_baseline { background: var(--grey-bg); border-color: var(--soft); }
.warnings { background: var(--amber-bg); border: 1px solid #fcd34d; border-radius: 8px;
  padding: 8px 16px 8px 34px; margin: 10px 0; }
.warnings li { margin: 3px 0; }
table { border-collapse: collapse; width: 100%; background: #fff;
  border: 1px solid var(--line); }
th, td { padding: 6px 9px; border-bottom: 1px solid var(--line); text-align: left;
  vertical-align: top; }
th { background: var(--grey-bg); font-weight: 600; font-size: 12.5px; color: var(--soft); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.watched td:first-child { font-weight: 600; }
.neg { color: var(--red); }
.pos { color: var(--green); }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px;
  font-weight: 600; white-space: nowrap; }
.s-ok { background: var(--green-bg); color: var(--green); }
.s-breach { background: var(--red); color: #fff; }
.s-insufficient_evidence, .s-pending, .s-unjudged { background: var(--amber-bg);
  color: var(--amber);
  border: 1px solid #fcd34d; }
.s-skipped { background: var(--grey-bg); color: var(--soft); }
.band { font-size: 12px; font-weight: 600; border-bottom: 1px dotted; cursor: help; }
.b-high { color: var(--green); }
.b-medium { color: var(--amber); }
.b-low { color: var(--red); }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(340px, 1fr));
  gap: 14px; }
figure { margin: 0; background: #fff; border: 1px solid var(--line); border-radius: 8px;
  padding: 10px 12px 8px; }
figcaption { font-size: 12.5px; color: var(--soft); }
figcaption b { color: var(--ink); font-size: 13.5px; }
svg.chart { width: 100%; height: auto; display: block; }
svg.chart text { font-size: 11px; fill: var(--soft); }
svg.chart text.ref { font-size: 10.5px; font-weight: 600; }
svg.glyph { vertical-align: middle; }
.legend span { margin-right: 14px; white-space: nowrap; }
.key { display: inline-block; width: 18px; height: 0; vertical-align: middle;
  margin-right: 4px; border-top: 2px solid; }
ol.ids, ul.ids { margin: 0; padding-left: 22px; }
ol.ids li, ul.ids li { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: 12px; white-space: nowrap; }
li.hit { color: var(--green); font-weight: 600; }
li.hit::after { content: " \\2713"; }
.qtext { max-width: 320px; overflow-wrap: anywhere; }
.dtext { color: var(--soft); font-size: 11.5px; max-width: 240px; white-space: normal;
  overflow-wrap: anywhere; font-family: system-ui, sans-serif; font-weight: normal; }
/* Worse queries: fixed columns, so passage texts wrap inside theirs, never past the page. */
table.diffs { table-layout: fixed; }
table.diffs td { overflow-wrap: anywhere; }
table.diffs th { white-space: normal; }
table.diffs th:nth-child(1) { width: 20%; }
table.diffs th:nth-child(2), table.diffs th:nth-child(3) { width: 7%; }
table.diffs th:nth-child(4) { width: 9%; }
table.diffs th:nth-child(5) { width: 11%; }
.qid { font-weight: 600; }
.driver { color: var(--red); font-weight: 600; font-size: 12px; }
footer { margin-top: 36px; color: var(--soft); font-size: 12px; }
"""
