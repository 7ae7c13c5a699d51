"""The gate's renderers on hand-built results: the markdown summary, the workflow annotations
and the JUnit XML, with outside strings escaped in each."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import replace

import pytest
from junitparser import Error, Failure, JUnitXml, Skipped, TestSuite

from monitor.alerts.testing import breach, segment, worse
from monitor.compare.records import (
    Comparison,
    InvariantOutcome,
    InvariantQuery,
    RuleOutcome,
    RuleStatus,
    Verdict,
)
from monitor.config.common import LinksConfig
from monitor.config.model import Check
from monitor.gate.records import GateResult, gate_verdict
from monitor.gate.render import annotations, junit_xml, markdown_summary

LINKS = LinksConfig(report="https://ci.example/report/7", runbook="https://wiki.example/gate")


def rule(
    status: RuleStatus,
    metric: str = "ndcg@10",
    current: float = 0.62,
    baseline: float = 0.66,
    *,
    p_value: float | None = 0.21,
) -> RuleOutcome:
    """Return a drop rule of ``metric`` with the given status and a bootstrap interval."""
    return RuleOutcome(
        rule=f"{metric} max_drop",
        check=Check.MAX_DROP,
        metric=metric,
        threshold=0.03,
        severity="warning",
        status=status,
        current=current,
        baseline=baseline,
        delta=current - baseline,
        p_value=p_value,
        ci_low=-0.09,
        ci_high=0.01,
        quality=True,
    )


def error_rate_ok() -> RuleOutcome:
    """Return an error-rate rule that holds (no baseline, no interval)."""
    return RuleOutcome(
        "error_rate_max", Check.ERROR_RATE_MAX, "error_rate", 0.05, "critical", "ok", 0.0
    )


def gated(comparison: Comparison, links: LinksConfig = LINKS) -> GateResult:
    """Return the gate's result of ``comparison``, a replayed run against a baseline file."""
    return GateResult(
        suite=comparison.suite,
        verdict=gate_verdict(comparison),
        candidate="replay:candidate.trec",
        baseline="baseline.json",
        comparison=comparison,
        links=links,
    )


def passing() -> GateResult:
    """Return a suite whose every rule holds."""
    return gated(
        Comparison(
            "docs",
            None,
            None,
            "ok",
            rules=(rule("ok", current=0.65, p_value=0.6), error_rate_ok()),
            primary_metric="ndcg@10",
        )
    )


def regressed() -> GateResult:
    """Return a suite whose recall@5 dropped significantly, with two queries that lost."""
    recall = breach("recall@5", 0.70, 0.81, p_value=0.004, ci_low=-0.17, ci_high=-0.05)
    return gated(
        Comparison(
            "docs",
            None,
            None,
            "regression",
            rules=(recall, rule("ok", current=0.65, p_value=0.6), error_rate_ok()),
            worse_queries=(
                worse("Q7", "reset a password", 1.0, 0.0, ["d1", "d2"], ["d9", "d8"]),
                worse("Q3", "invoice pdf", 1.0, 0.5, ["d4"], ["d5", "d4"], change="moved_down"),
                worse("Q9", "ndcg only", 1.0, 0.0, ["d6"], ["d7"], metric="ndcg@10"),
            ),
            segments=(segment("language", "de", 4, 0.9, 0.5, contribution=-0.08),),
            warnings=("2 judged queries failed in the candidate and were left out",),
            primary_metric="recall@5",
        )
    )


def insufficient() -> GateResult:
    """Return a suite whose ndcg@10 passed its threshold without a significant change."""
    return gated(
        Comparison(
            "docs",
            None,
            None,
            "insufficient_evidence",
            rules=(rule("insufficient_evidence"), error_rate_ok()),
            worse_queries=(worse("Q9", "ndcg only", 1.0, 0.0, ["d6"], ["d7"], metric="ndcg@10"),),
            primary_metric="ndcg@10",
        ),
        links=LinksConfig(),
    )


def errored(
    message: str = "search backend at http://search:9200 refused the connection",
) -> GateResult:
    """Return a suite whose candidate could not be measured."""
    return GateResult("faq", "error", "http", "store run 12", error=message)


# -- markdown -------------------------------------------------------------------------------

PASSING_MD = """\
# Quality gate: PASS (1 of 1 suites)

| suite | verdict | candidate | baseline |
|---|---|---|---|
| docs | PASS | replay:candidate.trec | baseline.json |

## docs: PASS

**PASS**: no rule breached. Candidate replay:candidate.trec, baseline baseline.json.

| rule | limit | baseline | current | delta | interval | p-value | status |
|---|---:|---:|---:|---:|---|---:|---|
| ndcg@10 max_drop | 0.03 | 0.66 | 0.65 | -0.01 | bootstrap 95% CI of delta [-0.09, 0.01] \
| 0.6 | ok |
| error_rate_max | 0.05 | n/a | 0 | n/a | n/a | n/a | ok |

Links: [report](<https://ci.example/report/7>) · [runbook](<https://wiki.example/gate>)
"""

REGRESSED_MD = """\
# Quality gate: REGRESSION (1 of 1 suites)

| suite | verdict | candidate | baseline |
|---|---|---|---|
| docs | REGRESSION | replay:candidate.trec | baseline.json |

## docs: REGRESSION

**REGRESSION**: a rule breached with significant evidence. Candidate replay:candidate.trec, \
baseline baseline.json.

| rule | limit | baseline | current | delta | interval | p-value | status |
|---|---:|---:|---:|---:|---|---:|---|
| recall@5 max_drop | 0.05 | 0.81 | 0.7 | -0.11 | bootstrap 95% CI of delta [-0.17, -0.05] \
| 0.004 | **BREACH** |
| ndcg@10 max_drop | 0.03 | 0.66 | 0.65 | -0.01 | bootstrap 95% CI of delta [-0.09, 0.01] \
| 0.6 | ok |
| error_rate_max | 0.05 | n/a | 0 | n/a | n/a | n/a | ok |

### Queries that got worse on recall@5

| query | text | baseline | current | expected | retrieved |
|---|---|---:|---:|---|---|
| Q7 | reset a password | 1 | 0 | d1, d2 | d9, d8 |
| Q3 | invoice pdf | 1 | 0.5 | d4 | d5, d4 |

### Warnings

- 2 judged queries failed in the candidate and were left out

Links: [report](<https://ci.example/report/7>) · [runbook](<https://wiki.example/gate>)
"""

INSUFFICIENT_MD = """\
# Quality gate: INSUFFICIENT EVIDENCE (1 of 1 suites)

| suite | verdict | candidate | baseline |
|---|---|---|---|
| docs | INSUFFICIENT EVIDENCE | replay:candidate.trec | baseline.json |

## docs: INSUFFICIENT EVIDENCE

**INSUFFICIENT EVIDENCE**: a threshold was passed, but the change is not significant. \
Candidate replay:candidate.trec, baseline baseline.json.

| rule | limit | baseline | current | delta | interval | p-value | status |
|---|---:|---:|---:|---:|---|---:|---|
| ndcg@10 max_drop | 0.03 | 0.66 | 0.62 | -0.04 | bootstrap 95% CI of delta [-0.09, 0.01] \
| 0.21 | not significant |
| error_rate_max | 0.05 | n/a | 0 | n/a | n/a | n/a | ok |
"""


@pytest.mark.parametrize(
    ("result", "expected"),
    [(passing(), PASSING_MD), (regressed(), REGRESSED_MD), (insufficient(), INSUFFICIENT_MD)],
    ids=["pass", "regression", "insufficient-evidence"],
)
def test_markdown_summary_of_one_suite(result: GateResult, expected: str) -> None:
    """The summary of one suite is its verdict, its rules table, its worst queries, warnings
    and links, exactly as snapshotted."""
    assert expected == markdown_summary([result])


def test_markdown_summary_leads_with_the_most_serious_verdict() -> None:
    """With several suites, the heading gives the worst verdict and how many suites have it."""
    summary = markdown_summary([passing(), regressed(), errored()])
    assert "# Quality gate: ERROR (1 of 3 suites)" == summary.splitlines()[0]


def test_markdown_summary_names_an_errored_suites_error() -> None:
    """An errored suite says ERROR and its error, and has no rules table."""
    summary = markdown_summary([errored("backend down")])
    section = summary.split("## faq: ERROR", 1)[1]
    assert "Error: backend down" in section
    assert "| rule |" not in section


@pytest.mark.parametrize(
    ("verdict", "sentence"),
    [
        ("no_baseline", "Not compared: the suite has no baseline to compare with."),
        ("evalset_changed", "Not compared: the eval set changed since the baseline was measured."),
    ],
)
def test_markdown_summary_says_when_a_suite_was_not_compared(
    verdict: Verdict, sentence: str
) -> None:
    """A comparison that could not use its baseline says why, above its skipped rules."""
    summary = markdown_summary([gated(Comparison("docs", None, None, verdict))])
    assert sentence in summary.splitlines()


def test_markdown_summary_of_no_suite_says_so() -> None:
    """Gating no suite gives a heading and one sentence, not an empty table."""
    assert "# Quality gate: NO SUITE\n\nNo suite was gated.\n" == markdown_summary([])


def test_markdown_summary_shows_at_most_five_worst_queries_per_metric() -> None:
    """A breached metric lists its five worst queries, not every query that lost."""
    result = regressed()
    assert result.comparison is not None
    many = tuple(worse(f"Q{n}", "q", 1.0, 0.0, ["d1"], ["d2"]) for n in range(8))
    comparison = Comparison(
        "docs", None, None, "regression", rules=result.comparison.rules, worse_queries=many
    )
    rows = [line for line in markdown_summary([gated(comparison)]).splitlines() if "| q |" in line]
    assert ["Q0", "Q1", "Q2", "Q3", "Q4"] == [row.split(" | ")[0].strip("| ") for row in rows]


def test_markdown_link_urls_are_percent_encoded() -> None:
    """A link with spaces or angle brackets stays one link destination."""
    links = LinksConfig(report="https://ci.example/r?q=a b<c>")
    summary = markdown_summary([gated(Comparison("docs", None, None, "ok"), links)])
    assert "Links: [report](<https://ci.example/r?q=a%20b%3Cc%3E>)" in summary


HOSTILE = [
    "[click](https://evil.example)",
    "![pixel](https://evil.example/p.png)",
    "<img src=x onerror=alert(1)>",
    "a | b | c",
    "line one\nline two\r\n# heading",
    "%0A::error::injected",
    "]]> &amp; `code` *bold* _em_",
    "\x1b[31mred\x07",
]


def hostile_result(value: str) -> GateResult:
    """Return a regressed suite whose every outside string is ``value``."""
    recall = breach("recall@5", 0.70, 0.81, rule=f"recall@5 {value}")
    comparison = Comparison(
        value,
        None,
        None,
        "regression",
        rules=(recall,),
        worse_queries=(worse(value, value, 1.0, 0.0, [value], [value, "d2"]),),
        warnings=(value,),
    )
    return GateResult(value, "regression", value, value, comparison)


@pytest.mark.parametrize("value", HOSTILE)
def test_markdown_escapes_hostile_strings_into_inert_text(value: str) -> None:
    """A hostile suite name, rule, query, id or warning renders as text: the summary has the
    same markup as one of plain strings (no link, image, HTML, emphasis or table cell more),
    as a CommonMark parser with GFM tables renders it."""
    markdown_it = pytest.importorskip("markdown_it")
    parser = markdown_it.MarkdownIt("commonmark").enable("table")

    def tags(text: str) -> list[str]:
        summary = markdown_summary([hostile_result(text), errored(text)])
        return re.findall(r"</?[a-z][^>]*>", parser.render(summary))

    assert tags("plain") == tags(value)
    summary = markdown_summary([hostile_result(value)])
    rows = [line for line in summary.splitlines() if line.startswith("| ")]
    cells = {len(re.split(r"(?<!\\)\|", row)) for row in rows if "recall" in row}
    assert {10} == cells  # 8 cells of the rules table between 9 unescaped pipes


@pytest.mark.parametrize("value", HOSTILE)
def test_markdown_keeps_every_line_break_and_control_out_of_outside_strings(value: str) -> None:
    """An outside string cannot start a line of its own (a heading, a row) nor hold a control."""
    summary = markdown_summary([hostile_result(value)])
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f]", summary)
    starts = {line.split(" ", 1)[0] for line in summary.splitlines() if line}
    assert starts <= {"#", "##", "###", "|", "|---|---|---|---|", "**REGRESSION**:", "-"} | {
        "|---|---:|---:|---:|---:|---|---:|---|",
        "|---|---|---:|---:|---|---|",
    }


# -- annotations ----------------------------------------------------------------------------


def test_annotations_give_an_error_per_breach_and_a_warning_per_insufficient_rule() -> None:
    """A breached rule is an ::error, a not-significant one a ::warning, a holding one nothing."""
    lines = annotations([regressed(), insufficient(), passing()])
    assert ["error", "warning"] == [line[2:].split(" ", 1)[0] for line in lines]


def test_annotation_of_a_breach_says_what_broke_with_its_evidence() -> None:
    """The error names the suite and rule in its title, and the drop, the interval, the
    p-value and the worst queries in its message."""
    (line,) = annotations([regressed()])
    assert (
        "::error title=docs%3A recall@5 max_drop::docs: recall@5 dropped from 0.81 to 0.7 "
        "(more than the allowed 0.05); bootstrap 95%25 CI of delta [-0.17, -0.05], "
        "p = 0.004; worst queries: Q7, Q3"
    ) == line


def test_annotation_of_insufficient_evidence_says_why_it_cannot_tell() -> None:
    """The warning says the threshold was passed without a significant change."""
    (line,) = annotations([insufficient()])
    assert (
        "::warning title=docs%3A ndcg@10 max_drop::docs: ndcg@10 passed its threshold, but the "
        "change is not significant (insufficient evidence); bootstrap 95%25 CI of delta "
        "[-0.09, 0.01], p = 0.21"
    ) == line


def test_annotation_of_an_errored_suite_is_one_error_with_its_message() -> None:
    """An errored suite gives one ::error carrying its error."""
    expected = ["::error title=faq%3A gate error::backend down"]
    assert expected == annotations([errored("backend down")])


@pytest.mark.parametrize(
    ("raw", "title", "message"),
    [
        ("50%", "50%25%3A gate error", "50%25"),
        ("a\nb", "a%0Ab%3A gate error", "a%0Ab"),
        ("a\r\nb", "a%0D%0Ab%3A gate error", "a%0D%0Ab"),
        ("%0A::x", "%250A%3A%3Ax%3A gate error", "%250A::x"),
        ("a,b:c", "a%2Cb%3Ac%3A gate error", "a,b:c"),
        ("bell\x07", "bell%3A gate error", "bell"),
    ],
)
def test_annotations_escape_as_github_decodes(raw: str, title: str, message: str) -> None:
    """%, CR and LF are percent-escaped everywhere, ':' and ',' in the title too, and control
    characters dropped, so one annotation stays one line that says what it was given."""
    assert [f"::error title={title}::{message}"] == annotations(
        [GateResult(raw, "error", "http", "store", error=raw)]
    )


@pytest.mark.parametrize("value", HOSTILE)
def test_annotations_stay_one_line_each(value: str) -> None:
    """No outside string can end an annotation line and start a workflow command."""
    lines = annotations([hostile_result(value), errored(value)])
    assert 2 == len(lines)
    assert all("\n" not in line and "\r" not in line for line in lines)


# -- JUnit XML ------------------------------------------------------------------------------


def parsed(results: list[GateResult]) -> JUnitXml:
    """Return the JUnit XML of ``results`` as junitparser reads it."""
    return JUnitXml.fromstring(junit_xml(results).encode("utf-8"))


def test_junit_has_one_suite_per_gated_suite_and_one_case_per_rule() -> None:
    """Each suite is a <testsuite> of its rules, named by rule with the suite as class."""
    report = parsed([regressed(), errored()])
    suites = list(report)
    assert ["docs", "faq"] == [suite.name for suite in suites]
    cases = [(case.classname, case.name) for case in suites[0]]
    assert [
        ("docs", "recall@5 max_drop"),
        ("docs", "ndcg@10 max_drop"),
        ("docs", "error_rate_max"),
    ] == cases


def test_junit_breach_is_a_failure_with_its_figures() -> None:
    """A breached rule fails with the alert's sentence as message and its figures as text."""
    (docs,) = list(parsed([regressed()]))
    case = next(iter(docs))
    (failure,) = case.result
    assert isinstance(failure, Failure)
    assert "docs: recall@5 dropped from 0.81 to 0.7 (more than the allowed 0.05)" == failure.message
    assert failure.text is not None
    assert "0.81 in the baseline, 0.7 now" in failure.text
    assert "p = 0.004" in failure.text
    assert "Driven by language=de" in failure.text
    assert "Q7 'reset a password': 1 -> 0; expected d1, d2; retrieved d9, d8" in failure.text


def test_junit_insufficient_evidence_is_skipped_with_the_reason() -> None:
    """A rule whose change is not significant is skipped, the reason in its message."""
    (docs,) = list(parsed([insufficient()]))
    (skipped,) = next(iter(docs)).result
    assert isinstance(skipped, Skipped)
    assert skipped.message is not None
    assert "not significant (insufficient evidence)" in skipped.message


def test_junit_rule_that_could_not_be_evaluated_is_skipped_with_its_message() -> None:
    """A rule the comparison skipped is skipped, its own message as reason."""
    unevaluated = RuleOutcome(
        "recall@5 max_drop", Check.MAX_DROP, "recall@5", 0.05, "warning", "skipped",
        message="no baseline",
    )  # fmt: skip
    comparison = Comparison("docs", None, None, "no_baseline", rules=(unevaluated,))
    (docs,) = list(parsed([gated(comparison)]))
    (skipped,) = next(iter(docs)).result
    assert "docs: recall@5 max_drop: no baseline" == skipped.message


def test_junit_errored_suite_is_one_error_case() -> None:
    """An errored suite has one test case, in error with the suite's error."""
    (faq,) = list(parsed([errored("backend down")]))
    (case,) = list(faq)
    (error,) = case.result
    assert isinstance(error, Error)
    assert ("gate", "faq", "backend down") == (case.name, case.classname, error.message)


def test_junit_counts_agree_with_the_cases() -> None:
    """tests, failures, errors and skipped count the cases of each suite and of the whole."""
    report = parsed([regressed(), insufficient(), passing(), errored()])
    counts = [(s.tests, s.failures, s.errors, s.skipped) for s in report]
    assert [(3, 1, 0, 0), (2, 0, 0, 1), (2, 0, 0, 0), (1, 0, 1, 0)] == counts
    root = ET.fromstring(junit_xml([regressed(), insufficient(), passing(), errored()]))
    assert {"tests": "8", "failures": "1", "errors": "1", "skipped": "1"} == {
        key: root.get(key) for key in ("tests", "failures", "errors", "skipped")
    }


def test_junit_structure_is_testsuites_of_testsuites_of_testcases() -> None:
    """The document is UTF-8 XML: <testsuites>, then <testsuite>s whose children are
    <properties> and <testcase>s, each case holding at most one outcome element."""
    document = junit_xml([regressed(), insufficient(), errored()])
    assert document.startswith("<?xml version='1.0' encoding='utf-8'?>\n")
    root = ET.fromstring(document.encode("utf-8"))
    assert "testsuites" == root.tag
    for suite in root:
        assert "testsuite" == suite.tag
        assert {"name", "tests", "failures", "errors", "skipped"} <= set(suite.attrib)
        assert ["properties"] == [child.tag for child in suite][:1]
        for case in suite.findall("testcase"):
            assert {"name", "classname"} <= set(case.attrib)
            assert len(case) <= 1
            assert {child.tag for child in case} <= {"failure", "skipped", "error"}
        assert int(suite.get("tests", "")) == len(suite.findall("testcase"))


def test_junit_properties_name_the_verdict_candidate_and_baseline() -> None:
    """Each suite's properties say its verdict and what was compared with what."""
    (docs,) = list(parsed([regressed()]))
    assert {
        "verdict": "regression",
        "candidate": "replay:candidate.trec",
        "baseline": "baseline.json",
    } == {prop.name: prop.value for prop in docs.properties()}


@pytest.mark.parametrize("value", HOSTILE)
def test_junit_carries_hostile_strings_as_text(value: str) -> None:
    """Hostile names and messages parse back as the same text (controls replaced), never as
    markup: the document stays well-formed and one suite of one case."""
    document = junit_xml([hostile_result(value), errored(value)])
    report = JUnitXml.fromstring(document.encode("utf-8"))
    suites: list[TestSuite] = list(report)
    shown = re.sub("[\x00-\x08\x0b\x0c\x0e-\x1f]", "\ufffd", value)
    assert [shown, "faq"] == [suite.name for suite in suites]
    (case,) = list(suites[0])
    assert f"recall@5 {shown}" == case.name
    (error,) = next(iter(suites[1])).result
    assert shown == error.message


def test_junit_replaces_characters_xml_cannot_hold() -> None:
    """A NUL or other C0 control in an error becomes U+FFFD, so the file still parses."""
    (faq,) = list(parsed([errored("bad\x00byte\x0b")]))
    (error,) = next(iter(faq)).result
    assert "bad\ufffdbyte\ufffd" == error.message


def broken_invariant() -> GateResult:
    """Return a suite whose rules hold but whose no_lost_hits@5 invariant broke for Q34."""
    invariant = InvariantOutcome(
        name="no_lost_hits@5",
        kind="no_lost_hits",
        status="breach",
        queries=(InvariantQuery("Q34", 5, ("d9a5",), ("ce19", "cc7d")),),
        message="1 of 40 queries with a relevant hit in the baseline's top 5 lost it",
    )
    return gated(
        Comparison(
            "docs",
            None,
            None,
            "regression",
            rules=(error_rate_ok(),),
            invariants=(invariant,),
            primary_metric="ndcg@10",
        )
    )


def test_a_broken_invariant_is_in_every_output_query_by_query() -> None:
    """The markdown lists the breaking query, the annotation names it, JUnit fails its case."""
    result = broken_invariant()
    markdown = markdown_summary([result])
    (line,) = annotations([result])
    (suite,) = list(parsed([result]))
    outcome = {case.name: [type(r).__name__ for r in case.result] for case in suite}
    assert "- Q34: missing d9a5 from the top 5; retrieved ce19, cc7d" in markdown
    assert line.startswith("::error title=docs%3A invariant no_lost_hits@5::")
    assert "Q34" in line
    assert ["Failure"] == outcome["invariant no_lost_hits@5"]


def held() -> GateResult:
    """Return a suite whose ndcg@10 drop was held: 12 unjudged documents came into its top 10."""
    from monitor.compare.coverage import CoverageChange

    return gated(
        Comparison(
            "docs",
            7,
            3,
            "unjudged",
            rules=(rule("unjudged"), error_rate_ok()),
            coverage=(CoverageChange(10, 1.0, 0.85, 40, 12, 6),),
            primary_metric="ndcg@10",
        )
    )


def test_markdown_summary_of_a_held_suite_gives_the_labeling_command() -> None:
    """An unjudged verdict adds a labels-needed part: coverage, counts and the todo command."""
    summary = markdown_summary([held()])
    part = summary.split("### Labels needed\n\n", 1)[1].split("\n\n", 1)[0]
    assert (
        "- judged@10: 1 in the baseline, 0.85 now; 12 unjudged documents entered "
        "the top 10 in 6 of 40 queries.\n"
        "- Label them: `retrieval-monitor judgments todo --suite docs --run 7`"
    ) == part.rstrip("\n").split("\n\n")[0]


def test_a_held_candidate_not_recorded_is_told_to_record_not_given_another_runs_queue() -> None:
    """A gated candidate not stored has no queue yet: the summary says to run with --record,
    never a todo command that would list the latest stored run's queue instead."""
    result = held()
    assert result.comparison is not None
    unstored = replace(result, comparison=replace(result.comparison, run_id=None))
    part = markdown_summary([unstored]).split("### Labels needed\n\n", 1)[1]
    assert (True, False) == ("`--record`" in part, "todo --suite" in part), part


@pytest.mark.parametrize("result", [passing(), regressed(), insufficient()])
def test_markdown_summary_without_held_rules_has_no_labeling_part(result: GateResult) -> None:
    """Suites with every rule judged show no labels-needed part."""
    assert "Labels needed" not in markdown_summary([result])
