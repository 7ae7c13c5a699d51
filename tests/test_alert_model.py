"""The alert model: identities, wording, labels, annotations and the dictionary form."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from monitor.alerts import text
from monitor.alerts.model import (
    Alert,
    AlertIdentity,
    FailureReason,
    RegressionDetails,
    SegmentShift,
    WorseQuery,
    failures_checked,
)
from monitor.config.model import Check, LinksConfig, RuleConfig
from monitor.errors import UsageError
from monitor.metrics.spec import parse_metric

T0 = datetime(2030, 1, 1, 9, 0, tzinfo=timezone.utc)
RECALL_DROP = RuleConfig(Check.MAX_DROP, 0.05, parse_metric("recall@5"), "critical")


def details(**changes: object) -> RegressionDetails:
    """Return the evidence of a recall@5 drop from 0.81 to 0.70."""
    values: dict[str, object] = {
        "metric": "recall@5",
        "check": "max_drop",
        "threshold": 0.05,
        "current": 0.70,
        "baseline": 0.81,
        "p_value": 0.002,
        "ci_low": -0.16,
        "ci_high": -0.06,
        "confidence": 0.95,
        "segment": SegmentShift("language", "fr", 12, 0.80, 0.55),
        "worse_queries": (
            WorseQuery("q17", "where is the travel policy?", 1.0, 0.0, ("d3", "d9"), ("d1",)),
        ),
    }
    values.update(changes)
    return RegressionDetails(**values)  # type: ignore[arg-type]


def regression(**changes: object) -> Alert:
    """Return a firing recall@5 regression of suite ``nightly``."""
    return Alert.regression("nightly", RECALL_DROP, details(**changes), at=T0)


# --- identity ------------------------------------------------------------------------------


def test_fingerprint_depends_on_the_identity_only() -> None:
    """Two alerts about the same condition at different times share a fingerprint."""
    later = Alert.regression("nightly", RECALL_DROP, details(current=0.5), at=T0 + timedelta(1))
    assert regression().fingerprint == later.fingerprint


def test_fingerprint_is_stable_across_releases() -> None:
    """The fingerprint is a fixed function of kind, suite, rule and metric."""
    # printf 'regression\x1fnightly\x1frecall@5 max_drop\x1frecall@5' | sha256sum | cut -c1-16
    identity = AlertIdentity("regression", "nightly", "recall@5 max_drop", "recall@5")
    assert "e7ab34aa4d627786" == identity.fingerprint


@pytest.mark.parametrize(
    "other",
    [
        AlertIdentity("regression", "weekly", "recall@5 max_drop", "recall@5"),
        AlertIdentity("regression", "nightly", "recall@5 min", "recall@5"),
        AlertIdentity("regression", "nightly", "recall@5 max_drop", "recall@10"),
        AlertIdentity("monitor_failure", "nightly", "recall@5 max_drop", "recall@5"),
    ],
)
def test_each_part_of_the_identity_changes_the_fingerprint(other: AlertIdentity) -> None:
    """Changing the suite, rule, metric or kind gives another fingerprint."""
    identity = AlertIdentity("regression", "nightly", "recall@5 max_drop", "recall@5")
    assert identity.fingerprint != other.fingerprint


def test_a_rule_config_gives_name_metric_and_severity() -> None:
    """Built from a RuleConfig, the alert takes the rule's name, metric and severity."""
    alert = regression()
    assert ("recall@5 max_drop", "recall@5", "critical") == (
        alert.rule,
        alert.identity.metric,
        alert.severity,
    )


def test_a_regression_starts_firing_at_the_given_time() -> None:
    """A new alert fires from ``at`` and has no end."""
    alert = regression()
    assert ("firing", T0, None) == (alert.status, alert.starts_at, alert.ends_at)


def test_resolved_sets_status_and_end() -> None:
    """Resolving keeps the identity and start and sets ``ends_at``."""
    end = T0 + timedelta(hours=3)
    resolved = regression().resolved(end)
    assert ("resolved", T0, end, regression().fingerprint) == (
        resolved.status,
        resolved.starts_at,
        resolved.ends_at,
        resolved.fingerprint,
    )


# --- wording -------------------------------------------------------------------------------


def test_regression_summary_names_suite_metric_and_values() -> None:
    """The summary is one sentence with the suite, the metric, both values and the limit."""
    expected = "nightly: recall@5 dropped from 0.81 to 0.7 (more than the allowed 0.05)"
    assert expected == regression().summary


def test_regression_description_holds_the_evidence() -> None:
    """The description gives the change, interval, p-value, segment and worse queries."""
    expected = "\n".join(
        [
            "recall@5: 0.81 in the baseline, 0.7 now (-0.11, -13.6%); rule max_drop 0.05.",
            "Change: 95% interval [-0.16, -0.06], p = 0.002.",
            "Driven by language=fr: 0.8 -> 0.55 over 12 queries.",
            "Queries that got worse:",
            "- q17 'where is the travel policy?': 1 -> 0; expected d3, d9; retrieved d1",
        ]
    )
    assert expected == regression().description


@pytest.mark.parametrize(
    ("check", "metric", "threshold", "current", "baseline", "summary"),
    [
        ("min", "ndcg@10", 0.5, 0.42, None, "s: ndcg@10 is 0.42, below the minimum of 0.5"),
        (
            "max_relative_drop",
            "ndcg@10",
            0.1,
            0.6,
            0.8,
            "s: ndcg@10 dropped from 0.8 to 0.6 (more than the allowed 10%)",
        ),
        (
            "error_rate_max",
            "error_rate",
            0.01,
            0.05,
            None,
            "s: error_rate is 0.05, above the maximum of 0.01",
        ),
        (
            "latency_p95_max_relative_rise",
            "latency_p95_seconds",
            0.5,
            2.0,
            1.0,
            "s: latency_p95_seconds rose from 1 to 2, more than 50%",
        ),
        (
            "index_size_max_relative_drop",
            "index_size",
            0.2,
            50000.0,
            120000.0,
            "s: index_size dropped from 120,000 to 50,000 (more than the allowed 20%)",
        ),
    ],
)
def test_summary_per_check(
    check: str,
    metric: str,
    threshold: float,
    current: float,
    baseline: float | None,
    summary: str,
) -> None:
    """Each check reads as its own sentence."""
    evidence = RegressionDetails(metric, check, threshold, current, baseline)
    assert summary == Alert.regression("s", f"{check}", evidence, at=T0).summary


@pytest.mark.parametrize(
    ("reason", "summary"),
    [
        (FailureReason.EVALSET_MISSING, "nightly: the eval set cannot be read"),
        (FailureReason.SEARCH_BACKEND_DOWN, "nightly: the search backend is not answering"),
        (
            FailureReason.ERROR_BUDGET_EXCEEDED,
            "nightly: more queries failed than the error budget allows",
        ),
        (
            FailureReason.STORE_UNWRITABLE,
            "nightly: the results cannot be written to the store",
        ),
    ],
)
def test_each_monitor_failure_has_its_own_identity_and_wording(
    reason: FailureReason, summary: str
) -> None:
    """A failure alert is named by its reason and says what went wrong."""
    alert = Alert.monitor_failure("nightly", reason, "boom", at=T0)
    assert (summary, reason.value, "monitor_failure", "critical", "boom") == (
        alert.summary,
        alert.rule,
        alert.kind,
        alert.severity,
        alert.description,
    )


def test_failure_reasons_have_distinct_fingerprints() -> None:
    """No two failure reasons of a suite share a fingerprint."""
    prints = {Alert.monitor_failure("s", r, "x", at=T0).fingerprint for r in FailureReason}
    assert len(FailureReason) == len(prints)


def test_an_unknown_failure_reason_lists_the_known_ones() -> None:
    """A reason that is not a FailureReason is a UsageError naming the known reasons."""
    with pytest.raises(UsageError, match="evalset_missing, search_backend_down"):
        Alert.monitor_failure("s", "disk_full", "x", at=T0)


@pytest.mark.parametrize(
    ("failed", "checked"),
    [
        (None, set(FailureReason)),
        (FailureReason.EVALSET_MISSING, {FailureReason.EVALSET_MISSING}),
        (
            "search_backend_down",
            {FailureReason.EVALSET_MISSING, FailureReason.SEARCH_BACKEND_DOWN},
        ),
    ],
)
def test_failures_checked_follow_the_order_of_a_run(
    failed: FailureReason | str | None, checked: set[FailureReason]
) -> None:
    """A run that stopped at a failure has checked that failure and the ones before it."""
    assert {r.value for r in checked} == failures_checked(failed)


# --- labels and annotations -----------------------------------------------------------------


def test_label_set_adds_identity_labels_that_win_over_static_ones() -> None:
    """Static labels are kept, but cannot replace alertname, suite, rule or severity."""
    alert = Alert.regression(
        "nightly",
        RECALL_DROP,
        details(),
        at=T0,
        labels={"team": "search", "suite": "spoofed"},
        pipeline="bm25",
    )
    assert {
        "team": "search",
        "pipeline": "bm25",
        "alertname": "RetrievalRegression",
        "suite": "nightly",
        "rule": "recall@5 max_drop",
        "metric": "recall@5",
        "severity": "critical",
    } == alert.label_set()


def test_a_failure_has_no_metric_label() -> None:
    """Monitor failures are labelled RetrievalMonitorFailure and carry no metric."""
    labels = Alert.monitor_failure("s", "store_unwritable", "x", at=T0).label_set()
    assert ("RetrievalMonitorFailure", False) == (labels["alertname"], "metric" in labels)


def test_annotations_hold_texts_evidence_and_links() -> None:
    """Annotations are strings: summary, description, the figures and the links."""
    alert = Alert.regression(
        "nightly",
        RECALL_DROP,
        details(),
        at=T0,
        links=LinksConfig(report="https://r/1", dashboard="https://d", runbook="https://rb"),
    )
    annotations = alert.annotations()
    assert {
        "metric": "recall@5",
        "current": "0.7",
        "baseline": "0.81",
        "delta": "-0.11",
        "p_value": "0.002",
        "confidence_interval": "[-0.16, -0.06]",
        "segment": "language=fr",
        "worse_queries": "q17",
        "runbook_url": "https://rb",
        "dashboard_url": "https://d",
        "report_url": "https://r/1",
    } == {k: v for k, v in annotations.items() if k not in ("summary", "description")}


def test_plain_text_shows_status_summary_and_links() -> None:
    """The terminal form starts with the status and severity and ends with the links."""
    alert = Alert.regression(
        "nightly", RECALL_DROP, details(), at=T0, links=LinksConfig(runbook="https://rb")
    )
    lines = text.plain(alert.resolved(T0 + timedelta(hours=1))).splitlines()
    assert [
        "[RESOLVED] critical nightly: recall@5 dropped from 0.81 to 0.7 "
        "(more than the allowed 0.05)",
        "  from 2030-01-01T09:00:00+00:00 to 2030-01-01T10:00:00+00:00",
        "  runbook: https://rb",
    ] == lines


def test_long_id_lists_are_cut() -> None:
    """A query line shows five ids and says how many more there are."""
    query = WorseQuery("q1", "x", 1.0, 0.0, tuple(f"d{i}" for i in range(8)), ())
    assert "expected d0, d1, d2, d3, d4 (+3 more); retrieved none" in text.worse_query(query)


# --- from a comparison -----------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """The fields of a comparison's rule outcome."""

    rule: str = "recall@5 max_drop"
    check: str = "max_drop"
    metric: str = "recall@5"
    threshold: float = 0.05
    severity: str = "warning"
    current: float | None = 0.7
    baseline: float | None = 0.81
    p_value: float | None = 0.01
    ci_low: float | None = -0.2
    ci_high: float | None = -0.02
    quality: bool = True


@dataclass(frozen=True)
class Diff:
    """The fields of a comparison's per-query diff."""

    query_id: str
    metric: str = "recall@5"
    query: str = "text"
    baseline: float = 1.0
    current: float = 0.0
    expected_ids: tuple[str, ...] = ("d1",)
    current_ids: tuple[str, ...] = ("d7",)


@dataclass(frozen=True)
class Segment:
    """The fields of a comparison's segment change."""

    key: str = "language"
    value: str = "fr"
    n: int = 9
    baseline: float = 0.9
    current: float = 0.4


def test_from_outcome_keeps_the_diffs_of_its_metric_up_to_the_limit() -> None:
    """Only diffs of the outcome's metric are kept, at most ``max_queries``."""
    diffs = [Diff("q1"), Diff("q2", metric="ndcg@10"), Diff("q3"), Diff("q4")]
    alert = Alert.from_outcome("s", Outcome(), at=T0, worse_queries=diffs, max_queries=2)
    assert ["q1", "q3"] == [q.query_id for q in alert.details.worse_queries]  # type: ignore[union-attr]


def test_from_outcome_carries_the_statistics_and_segment() -> None:
    """The outcome's values, p-value and interval and the driving segment become details."""
    alert = Alert.from_outcome("s", Outcome(), at=T0, segment=Segment(), confidence=0.95)
    assert (
        details(
            p_value=0.01,
            ci_low=-0.2,
            ci_high=-0.02,
            segment=SegmentShift("language", "fr", 9, 0.9, 0.4),
            worse_queries=(),
        )
        == alert.details
    )


def test_from_outcome_puts_the_metric_in_the_identity_of_quality_rules_only() -> None:
    """An operational rule (error rate) has no metric in its identity."""
    outcome = Outcome(rule="error_rate_max", check="error_rate_max", metric="error_rate")
    operational = Alert.from_outcome("s", Outcome(**{**outcome.__dict__, "quality": False}), at=T0)
    assert (None, "recall@5") == (
        operational.identity.metric,
        Alert.from_outcome("s", Outcome(), at=T0).identity.metric,
    )


def test_from_outcome_reads_the_comparison_records() -> None:
    """The comparison module's records fit the outcome, diff and segment shapes."""
    records = pytest.importorskip("monitor.compare.records")
    outcome = records.RuleOutcome(
        rule="recall@5 max_drop",
        check="max_drop",
        metric="recall@5",
        threshold=0.05,
        severity="critical",
        status="breach",
        current=0.7,
        baseline=0.81,
        quality=True,
    )
    alert = Alert.from_outcome("s", outcome, at=T0)
    assert ("recall@5 max_drop", "critical") == (alert.rule, alert.severity)


# --- validation and the dictionary form ---------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"starts_at": datetime(2030, 1, 1)}, "timezone-aware"),
        ({"status": "resolved"}, "resolved alert has ends_at"),
        ({"ends_at": T0}, "resolved alert has ends_at"),
        ({"severity": "fatal"}, "severity 'fatal'"),
        ({"summary": ""}, "needs a summary"),
        ({"labels": {"team": 3}}, "must be strings"),
    ],
)
def test_invalid_alerts_are_refused(changes: dict[str, object], message: str) -> None:
    """An alert that cannot be sent correctly raises UsageError."""
    fields = {
        "identity": AlertIdentity("regression", "s", "r"),
        "severity": "warning",
        "summary": "x",
        "starts_at": T0,
        **changes,
    }
    with pytest.raises(UsageError, match=message):
        Alert(**fields)  # type: ignore[arg-type]


def test_an_unknown_dictionary_form_is_refused() -> None:
    """A dictionary of another version is a UsageError, not a wrong alert."""
    data = regression().to_dict() | {"version": 99}
    with pytest.raises(UsageError, match="version 99"):
        Alert.from_dict(data)


texts = st.text(min_size=1, max_size=20)
numbers = st.floats(-1e6, 1e6, allow_nan=False)
ids = st.lists(texts, max_size=4).map(tuple)
moments = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(timezone.utc)
)
worse = st.builds(WorseQuery, texts, texts, numbers, numbers, ids, ids)
segments = st.builds(SegmentShift, texts, texts, st.integers(0, 1000), numbers, numbers)
evidence = st.builds(
    RegressionDetails,
    metric=texts,
    check=texts,
    threshold=numbers,
    current=st.none() | numbers,
    baseline=st.none() | numbers,
    p_value=st.none() | st.floats(0, 1),
    ci_low=st.none() | numbers,
    ci_high=st.none() | numbers,
    segment=st.none() | segments,
    worse_queries=st.lists(worse, max_size=3).map(tuple),
    run_id=st.none() | st.integers(1, 10**6),
)


@given(
    suite=texts,
    rule=texts,
    metric=st.none() | texts,
    found=evidence,
    start=moments,
    resolved=st.booleans(),
    labels=st.dictionaries(texts, texts, max_size=3),
    report=st.none() | texts,
)
def test_the_dictionary_form_round_trips_through_json(
    suite: str,
    rule: str,
    metric: str | None,
    found: RegressionDetails,
    start: datetime,
    resolved: bool,
    labels: dict[str, str],
    report: str | None,
) -> None:
    """An alert written with to_dict and read back through JSON is equal to the original."""
    alert = Alert.regression(
        suite,
        rule,
        found,
        at=start,
        metric=metric,
        labels=labels,
        links=LinksConfig(report=report),
    )
    if resolved:
        alert = alert.resolved(start + timedelta(minutes=5))
    assert alert == Alert.from_dict(json.loads(json.dumps(alert.to_dict())))
