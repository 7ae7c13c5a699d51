"""What CI systems read of gated suites: a markdown summary, workflow annotations, JUnit XML.

Each renderer is a pure function of the :class:`~monitor.gate.records.GateResult` records;
writing the text somewhere (a file, ``$GITHUB_STEP_SUMMARY``, standard output) is the
caller's. The sentences about a breached rule are those of the alerts
(:mod:`monitor.alerts.text`), so a pull request and a page say the same thing.

Suite names, rule names, query texts, doc ids, warnings and error messages come from configs,
eval sets and search backends, so each output escapes them in its own way: markdown
backslash-escapes every ASCII punctuation character (nothing an outside string holds can open
a link, an image, an HTML tag or a table cell), annotations use GitHub's percent-escapes, and
JUnit XML is built by :mod:`xml.etree.ElementTree` with the characters XML cannot hold
replaced.
"""

# No ``from __future__ import annotations`` here: it would bind the name ``annotations``,
# which is one of the renderers (every annotation below also evaluates on Python 3.10).
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Final
from urllib.parse import quote

from monitor.alerts import text
from monitor.alerts.model import RegressionDetails
from monitor.compare.coverage import labels_todo
from monitor.compare.records import (
    Comparison,
    InvariantOutcome,
    QueryDiff,
    RuleOutcome,
    RuleStatus,
)
from monitor.config.common import LinksConfig
from monitor.gate.records import GateResult, GateVerdict
from monitor.terminal import printable

#: Most queries shown per breached metric in the markdown summary and a JUnit failure.
SHOWN_QUERIES: Final = 5

#: The verdict of a suite in words, for the heading of its section.
VERDICT_WORDS: Final[Mapping[GateVerdict, str]] = MappingProxyType(
    {
        "pass": "PASS",
        "regression": "REGRESSION",
        "insufficient_evidence": "INSUFFICIENT EVIDENCE",
        "error": "ERROR",
    }
)
#: The verdicts from the most to the least serious: the summary leads with the worst.
_SERIOUSNESS: Final[tuple[GateVerdict, ...]] = (
    "error",
    "regression",
    "insufficient_evidence",
    "pass",
)
_VERDICT_SENTENCES: Final[Mapping[GateVerdict, str]] = MappingProxyType(
    {
        "pass": "no rule breached.",
        "regression": "a rule breached with significant evidence.",
        "insufficient_evidence": "a threshold was passed, but the change is not significant.",
        "error": "the candidate could not be measured.",
    }
)
#: Comparison verdicts under which no rule could be checked against the baseline.
_NOT_COMPARED: Final[Mapping[str, str]] = MappingProxyType(
    {
        "no_baseline": "the suite has no baseline to compare with.",
        "evalset_changed": "the eval set changed since the baseline was measured.",
    }
)
_STATUS_WORDS: Final[Mapping[RuleStatus, str]] = MappingProxyType(
    {
        "ok": "ok",
        "breach": "**BREACH**",
        "insufficient_evidence": "not significant",
        "pending": "pending",
        "skipped": "skipped",
        "unjudged": "labels needed",
        "unverified": "unverified",
    }
)

# CommonMark lets a backslash escape any ASCII punctuation character, and an escaped one is
# always literal text (GFM table pipes included). Only the characters that can start markup
# are escaped, so that the summary reads as text in a log or an e-mail too: \ ` * [ ] < >
# | ~ & (code, emphasis, links and images, HTML and entities, cells, strikethrough); an
# underscore unless it sits inside a word (which never emphasises); the ':' of '://' and
# the '.' of 'www.' (GitHub's bare-URL links); and a first character that would make the
# line a heading, list, quote or rule.
_MARKDOWN_SPECIAL: Final = re.compile(
    r"([\\`*\[\]<>|~&])|(?<![A-Za-z0-9])(_)|(_)(?![A-Za-z0-9])|(:)(?=//)|(?<=\bwww)(\.)",
    re.IGNORECASE,
)
_LEADING_MARKUP: Final = re.compile(r"^([#+\-=!>]|\d+(?=[.)]))")
_LINE_BREAKS: Final = re.compile(r"[\r\n\u2028\u2029]+")
# The characters a URL keeps in a link destination; the others are percent-encoded.
_URL_SAFE: Final = ":/?#[]@!$&'()*+,;=%~"
# What XML 1.0 cannot hold: most C0 controls, lone surrogates, U+FFFE and U+FFFF.
_NOT_XML: Final = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def markdown_summary(results: Sequence[GateResult]) -> str:
    """Return the gated suites as GitHub-flavoured markdown, the overall verdict first."""
    lines = [f"# Quality gate: {_overall(results)}", ""]
    if not results:
        return "\n".join([*lines, "No suite was gated.", ""])
    lines += ["| suite | verdict | candidate | baseline |", "|---|---|---|---|"]
    lines += [
        f"| {_md(r.suite)} | {VERDICT_WORDS[r.verdict]} | {_md(r.candidate)} | {_md(r.baseline)} |"
        for r in results
    ]
    for result in results:
        lines += ["", *_markdown_suite(result)]
    return "\n".join(lines) + "\n"


def annotations(results: Sequence[GateResult]) -> list[str]:
    """Return GitHub workflow command lines: an ``::error`` per breached rule and per errored
    suite, a ``::warning`` per rule whose change is not significant."""
    lines: list[str] = []
    for result in results:
        if result.comparison is None:
            message = result.error or "the candidate could not be measured"
            lines.append(_command("error", f"{result.suite}: gate error", message))
            continue
        for rule in result.comparison.rules:
            title = f"{result.suite}: {rule.rule}"
            if rule.breached:
                lines.append(_command("error", title, _breach_line(result, rule)))
            elif rule.status == "insufficient_evidence":
                lines.append(_command("warning", title, _insufficient_reason(result.suite, rule)))
        for invariant in result.comparison.invariant_breaches:
            lines.append(
                _command(
                    "error",
                    f"{result.suite}: {invariant.rule}",
                    f"{invariant.message}; queries: "
                    + ", ".join(q.query_id for q in invariant.queries[:SHOWN_QUERIES]),
                )
            )
    return lines


def junit_xml(results: Sequence[GateResult]) -> str:
    """Return JUnit XML (UTF-8): a ``<testsuite>`` per suite and a ``<testcase>`` per rule; a
    breach is a ``<failure>``, insufficient evidence or an unevaluated rule ``<skipped>``, an
    errored suite one ``<error>`` case."""
    root = ET.Element("testsuites", name="retrieval-monitor gate")
    totals = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    for result in results:
        suite = _junit_suite(result)
        root.append(suite)
        for key in totals:
            totals[key] += int(suite.get(key, "0"))
    for key, count in totals.items():
        root.set(key, str(count))
    ET.indent(root)
    document: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return document.decode("utf-8") + "\n"


def _md(value: str) -> str:
    """Return ``value`` as literal markdown text on one line: each character that could
    start markup backslash-escaped (see ``_MARKDOWN_SPECIAL``), control characters and line
    breaks taken out."""
    one_line = printable(_LINE_BREAKS.sub(" ", value).replace("\t", " ")).strip()
    escaped = _MARKDOWN_SPECIAL.sub(lambda found: "\\" + found.group(0), one_line)
    return _LEADING_MARKUP.sub(_escape_lead, escaped)


def _escape_lead(found: re.Match[str]) -> str:
    """Return a line's first character escaped (a list number's dot after its digits)."""
    lead = found.group(0)
    return "\\" + lead if not lead.isdigit() else lead + "\\"


# -- markdown ---------------------------------------------------------------------------------


def _overall(results: Sequence[GateResult]) -> str:
    if not results:
        return "NO SUITE"
    worst = min((r.verdict for r in results), key=_SERIOUSNESS.index)
    failing = sum(1 for r in results if r.verdict == worst)
    return f"{VERDICT_WORDS[worst]} ({failing} of {len(results)} suites)"


def _markdown_suite(result: GateResult) -> list[str]:
    word = VERDICT_WORDS[result.verdict]
    lines = [
        f"## {_md(result.suite)}: {word}",
        "",
        f"**{word}**: {_VERDICT_SENTENCES[result.verdict]} "
        f"Candidate {_md(result.candidate)}, baseline {_md(result.baseline)}.",
    ]
    comparison = result.comparison
    if comparison is None:
        lines += ["", f"Error: {_md(result.error or 'no further detail')}"]
    else:
        if comparison.verdict in _NOT_COMPARED:
            lines += ["", f"Not compared: {_NOT_COMPARED[comparison.verdict]}"]
        lines += _markdown_rules(comparison.rules)
        lines += _markdown_labels_needed(comparison, result.config_file)
        lines += _markdown_invariants(comparison.invariants)
        lines += _markdown_worst(comparison)
        if comparison.warnings:
            lines += ["", "### Warnings", ""]
            lines += [f"- {_md(warning)}" for warning in comparison.warnings]
    return lines + _markdown_links(result.links)


def _markdown_labels_needed(comparison: Comparison, config_file: Path | None) -> list[str]:
    """Return, when a breach was held for unjudged documents, how coverage fell and the
    command that lists the documents to label."""
    if comparison.verdict != "unjudged" and not comparison.held:
        return []
    lines = ["", "### Labels needed", ""]
    for change in comparison.coverage:
        sentence = (
            f"{change.metric}: {text.number(change.baseline)} in the baseline, "
            f"{text.number(change.current)} now; {change.unjudged_added} unjudged documents "
            f"entered the top {change.k} in {change.queries} of {change.n} queries."
        )
        lines.append(f"- {_md(sentence)}")
    if comparison.run_id is None:  # the candidate was not stored: no queue to list yet
        lines.append(
            f"- Label them: run the gate again with {_code('--record')}; it stores the "
            f"candidate and names the {_code('judgments todo')} command of its run."
        )
    else:
        command = labels_todo(comparison.suite, comparison.run_id, config_file)
        lines.append(f"- Label them: {_code(command)}")
    return lines


def _code(value: str) -> str:
    """Return ``value`` as an inline code span on one line (a backtick cannot end it)."""
    one_line = _LINE_BREAKS.sub(" ", value).replace("\t", " ").replace("`", "'")
    return f"`{printable(one_line).strip()}`"


def _markdown_invariants(invariants: Sequence[InvariantOutcome]) -> list[str]:
    if not invariants:
        return []
    lines = ["", "| invariant | status | what was checked |", "|---|---|---|"]
    for invariant in invariants:
        status = {"ok": "ok", "breach": "broken", "skipped": "skipped"}[invariant.status]
        lines.append(f"| {_md(invariant.name)} | {status} | {_md(invariant.message)} |")
    for invariant in invariants:
        if not invariant.breached:
            continue
        lines += ["", f"### {_md(invariant.name)}: queries that broke it", ""]
        lines += [
            f"- {_md(q.query_id)}: missing {_markdown_ids(q.missing_ids)} from the top {q.k}; "
            f"retrieved {_markdown_ids(q.retrieved_ids)}"
            for q in invariant.queries[:SHOWN_QUERIES]
        ]
        if len(invariant.queries) > SHOWN_QUERIES:
            lines.append(f"- and {len(invariant.queries) - SHOWN_QUERIES} more")
    return lines


def _markdown_rules(rules: Sequence[RuleOutcome]) -> list[str]:
    if not rules:
        return ["", "No rules apply to this suite."]
    lines = [
        "",
        "| rule | limit | baseline | current | delta | interval | p-value | status |",
        "|---|---:|---:|---:|---:|---|---:|---|",
    ]
    for rule in rules:
        cells = [
            _md(rule.rule),
            text.limit(rule),
            text.number(rule.baseline),
            text.number(rule.current),
            _signed(rule.delta),
            _interval(rule),
            text.number(rule.p_value),
            _STATUS_WORDS[rule.status],
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _markdown_worst(comparison: Comparison) -> list[str]:
    lines: list[str] = []
    for metric in _breached_metrics(comparison):
        worse = comparison.worse_for(metric)[:SHOWN_QUERIES]
        if not worse:
            continue
        lines += [
            "",
            f"### Queries that got worse on {_md(metric)}",
            "",
            "| query | text | baseline | current | expected | retrieved |",
            "|---|---|---:|---:|---|---|",
        ]
        lines += [_markdown_query(query) for query in worse]
    return lines


def _markdown_query(query: QueryDiff) -> str:
    cells = [
        _md(query.query_id),
        _md(text.shorten(query.query)),
        text.number(query.baseline),
        text.number(query.current),
        _markdown_ids(query.expected_ids),
        _markdown_ids(query.current_ids),
    ]
    return "| " + " | ".join(cells) + " |"


def _markdown_ids(ids: tuple[str, ...]) -> str:
    if not ids:
        return "none"
    shown = ", ".join(_md(doc_id) for doc_id in ids[: text.SHOWN_IDS])
    more = len(ids) - text.SHOWN_IDS
    return shown if more <= 0 else f"{shown} \\(\\+{more} more\\)"


def _markdown_links(links: LinksConfig) -> list[str]:
    found = [
        f"[{label}](<{quote(printable(url), safe=_URL_SAFE)}>)"
        for label, url in (
            ("report", links.report),
            ("dashboard", links.dashboard),
            ("runbook", links.runbook),
        )
        if url
    ]
    return ["", "Links: " + " · ".join(found)] if found else []


def _breached_metrics(comparison: Comparison) -> list[str]:
    """Return the metrics of the breached quality rules, each once, in rule order."""
    return list(dict.fromkeys(r.metric for r in comparison.breaches if r.quality))


def _interval(rule: RuleOutcome) -> str:
    if rule.ci_low is None or rule.ci_high is None:
        return "n/a"
    return f"{rule.ci_label} [{text.number(rule.ci_low)}, {text.number(rule.ci_high)}]"


def _signed(value: float | None) -> str:
    shown = text.number(value)
    return f"+{shown}" if value is not None and value > 0 else shown


# -- annotations ------------------------------------------------------------------------------


def _command(level: str, title: str, message: str) -> str:
    """Return one workflow command line, ``::level title=...::message``, escaped."""
    # Escaped first, so CR and LF say where they were; the other controls are dropped.
    title, message = printable(_escape_property(title)), printable(_escape_data(message))
    return f"::{level} title={title}::{message}"


def _escape_data(value: str) -> str:
    # GitHub's runner decodes these three in a command's message (and % first).
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    # A property value also ends at ',' and the properties at '::'.
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")


def _breach_line(result: GateResult, rule: RuleOutcome) -> str:
    line = text.regression_summary(result.suite, rule)
    evidence = _evidence(rule)
    if evidence:
        line += f"; {evidence}"
    if rule.quality and result.comparison is not None:
        worst = result.comparison.worse_for(rule.metric)[:SHOWN_QUERIES]
        if worst:
            line += "; worst queries: " + ", ".join(query.query_id for query in worst)
    return line


def _insufficient_reason(suite: str, rule: RuleOutcome) -> str:
    reason = (
        f"{suite}: {rule.metric} passed its threshold, but the change is not significant"
        " (insufficient evidence)"
    )
    evidence = _evidence(rule)
    return f"{reason}; {evidence}" if evidence else reason


def _evidence(rule: RuleOutcome) -> str:
    parts = []
    if rule.ci_low is not None and rule.ci_high is not None:
        parts.append(_interval(rule))
    if rule.p_value is not None:
        parts.append(f"p = {text.number(rule.p_value)}")
    return ", ".join(parts)


# -- JUnit XML --------------------------------------------------------------------------------


def _junit_suite(result: GateResult) -> ET.Element:
    suite = ET.Element("testsuite", name=_xml(result.suite))
    properties = ET.SubElement(suite, "properties")
    for name, value in (
        ("verdict", result.verdict),
        ("candidate", result.candidate),
        ("baseline", result.baseline),
    ):
        ET.SubElement(properties, "property", name=name, value=_xml(value))
    counts = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    comparison = result.comparison
    if comparison is None:
        case = ET.SubElement(suite, "testcase", name="gate", classname=_xml(result.suite))
        message = _xml(result.error or "the candidate could not be measured")
        error = ET.SubElement(case, "error", message=message, type="error")
        error.text = message
        counts["tests"], counts["errors"] = 1, 1
    else:
        for rule in comparison.rules:
            _junit_case(suite, result.suite, rule, comparison)
            counts["tests"] += 1
            counts["failures"] += rule.breached
            counts["skipped"] += rule.status in ("insufficient_evidence", "skipped")
        for invariant in comparison.invariants:
            case = ET.SubElement(
                suite, "testcase", name=_xml(invariant.rule), classname=_xml(result.suite)
            )
            counts["tests"] += 1
            if invariant.breached:
                failure = ET.SubElement(
                    case, "failure", message=_xml(invariant.message), type="invariant"
                )
                failure.text = _xml(
                    "\n".join(
                        f"{q.query_id}: missing {', '.join(q.missing_ids)} from the top {q.k}"
                        for q in invariant.queries
                    )
                )
                counts["failures"] += 1
            elif invariant.status == "skipped":
                ET.SubElement(case, "skipped", message=_xml(invariant.message))
                counts["skipped"] += 1
    for key, count in counts.items():
        suite.set(key, str(count))
    return suite


def _junit_case(parent: ET.Element, suite: str, rule: RuleOutcome, comparison: Comparison) -> None:
    case = ET.SubElement(parent, "testcase", name=_xml(rule.rule), classname=_xml(suite))
    if rule.breached:
        worse = comparison.worse_for(rule.metric)[:SHOWN_QUERIES] if rule.quality else ()
        segment = comparison.driving_segment(metric=rule.metric) if rule.quality else None
        details = RegressionDetails(rule, segment=segment, worse_queries=worse)
        failure = ET.SubElement(
            case, "failure", message=_xml(text.regression_summary(suite, rule)), type="breach"
        )
        failure.text = _xml(text.regression_description(details))
    elif rule.status == "insufficient_evidence":
        ET.SubElement(case, "skipped", message=_xml(_insufficient_reason(suite, rule)))
    elif rule.status == "skipped":
        reason = rule.message or "the rule could not be evaluated"
        ET.SubElement(case, "skipped", message=_xml(f"{suite}: {rule.rule}: {reason}"))


def _xml(value: str) -> str:
    """Return ``value`` with the characters XML 1.0 cannot hold replaced by U+FFFD."""
    return _NOT_XML.sub("\ufffd", value)
