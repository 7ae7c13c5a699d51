"""The alert model: identities, wording, labels, annotations and validation."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from monitor.alerts import text
from monitor.alerts.build import failure_alert, regression_alert
from monitor.alerts.model import (
    Alert,
    AlertIdentity,
    FailureReason,
    RegressionDetails,
    failures_checked,
)
from monitor.alerts.testing import breach, segment, worse
from monitor.compare.records import RuleOutcome
from monitor.config.common import LinksConfig
from monitor.errors import UsageError

T0 = datetime(2030, 1, 1, 9, 0, tzinfo=timezone.utc)


def outcome(**changes: Any) -> RuleOutcome:
    """Return the critical breach of ``recall@5 max_drop``: 0.81 to 0.70, significant."""
    values: dict[str, Any] = {
        "metric": "recall@5",
        "current": 0.70,
        "baseline": 0.81,
        "threshold": 0.05,
        "severity": "critical",
        "p_value": 0.002,
        "ci_low": -0.16,
        "ci_high": -0.06,
    }
    return breach(**{**values, **changes})


def details(**changes: Any) -> RegressionDetails:
    """Return the evidence of the recall@5 drop, with a segment and a worse query."""
    values: dict[str, Any] = {
        "outcome": outcome(),
        "confidence": 0.95,
        "segment": segment("language", "fr", 12, 0.80, 0.55),
        "worse_queries": (
            worse("q17", "where is the travel policy?", 1.0, 0.0, ("d3", "d9"), ("d1",)),
        ),
    }
    return RegressionDetails(**{**values, **changes})


def regression(**changes: Any) -> Alert:
    """Return a firing recall@5 regression of suite ``nightly``."""
    return regression_alert("nightly", details(**changes), at=T0)


# --- identity ------------------------------------------------------------------------------


def test_fingerprint_depends_on_the_identity_only() -> None:
    """Two alerts about the same condition at different times share a fingerprint."""
    later = regression_alert("nightly", details(outcome=outcome(current=0.5)), at=T0 + timedelta(1))
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


def test_the_rule_outcome_gives_name_metric_and_severity() -> None:
    """A regression alert takes the breached rule's name, metric and severity."""
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
            "Change: bootstrap 95% CI of delta [-0.16, -0.06], p = 0.002.",
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
    found = breach(metric, current, baseline, check=check, threshold=threshold)
    assert summary == regression_alert("s", RegressionDetails(found), at=T0).summary


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
    alert = failure_alert("nightly", reason, "boom", at=T0)
    assert (summary, reason.value, "monitor_failure", "critical", "boom") == (
        alert.summary,
        alert.rule,
        alert.kind,
        alert.severity,
        alert.description,
    )


def test_failure_reasons_have_distinct_fingerprints() -> None:
    """No two failure reasons of a suite share a fingerprint."""
    prints = {failure_alert("s", r, "x", at=T0).fingerprint for r in FailureReason}
    assert len(FailureReason) == len(prints)


def test_an_unknown_failure_reason_lists_the_known_ones() -> None:
    """A reason that is not a FailureReason is a UsageError naming the known reasons."""
    with pytest.raises(UsageError, match="evalset_missing, run_terminated, search_backend_down"):
        failure_alert("s", "disk_full", "x", at=T0)


@pytest.mark.parametrize(
    ("failed", "checked"),
    [
        (None, set(FailureReason)),
        (FailureReason.SUITE_LOCKED, {FailureReason.SUITE_LOCKED}),
        (
            FailureReason.EVALSET_MISSING,
            {FailureReason.SUITE_LOCKED, FailureReason.EVALSET_MISSING},
        ),
        (
            "search_backend_down",
            {
                FailureReason.SUITE_LOCKED,
                FailureReason.EVALSET_MISSING,
                FailureReason.RUN_TERMINATED,
                FailureReason.SEARCH_BACKEND_DOWN,
            },
        ),
        (
            FailureReason.RUN_TERMINATED,
            {
                FailureReason.SUITE_LOCKED,
                FailureReason.EVALSET_MISSING,
                FailureReason.RUN_TERMINATED,
            },
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
    """Static labels are kept, but cannot replace alertname, service, suite, rule or severity."""
    alert = regression_alert(
        "nightly",
        details(),
        at=T0,
        labels={"team": "search", "suite": "spoofed", "service": "billing"},
        pipeline="bm25",
    )
    assert {
        "team": "search",
        "pipeline": "bm25",
        "alertname": "RetrievalRegression",
        "service": "retrieval-monitor",
        "suite": "nightly",
        "rule": "recall@5 max_drop",
        "metric": "recall@5",
        "severity": "critical",
    } == alert.label_set()


def test_a_failure_has_no_metric_label() -> None:
    """Monitor failures are labelled RetrievalMonitorFailure and carry no metric."""
    labels = failure_alert("s", "store_unwritable", "x", at=T0).label_set()
    assert ("RetrievalMonitorFailure", False) == (labels["alertname"], "metric" in labels)


def test_annotations_hold_texts_evidence_and_links() -> None:
    """Annotations are strings: summary, description, the figures and the links."""
    alert = regression_alert(
        "nightly",
        details(),
        at=T0,
        links=LinksConfig(report="https://r/1", dashboard="https://d", runbook="https://rb"),
    )
    annotations = text.alert_annotations(alert)
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
    alert = regression_alert("nightly", details(), at=T0, links=LinksConfig(runbook="https://rb"))
    lines = text.plain(alert.resolved(T0 + timedelta(hours=1))).splitlines()
    assert [
        "[RESOLVED] critical nightly: recall@5 max_drop holds again",
        "  from 2030-01-01T09:00:00+00:00 to 2030-01-01T10:00:00+00:00",
        "  runbook: https://rb",
    ] == lines


def test_plain_text_of_a_firing_alert_gives_summary_evidence_and_start() -> None:
    """While firing, the terminal form gives the summary, the description and the start."""
    lines = text.plain(regression()).splitlines()
    assert [
        "[FIRING] critical nightly: recall@5 dropped from 0.81 to 0.7 (more than the allowed 0.05)",
        *(f"  {line}" for line in regression().description.splitlines()),
        "  since 2030-01-01T09:00:00+00:00",
    ] == lines


def test_plain_text_of_a_resolved_regression_does_not_repeat_the_firing_sentence() -> None:
    """A resolved alert's terminal form neither says that recall dropped nor shows evidence."""
    resolved = text.plain(regression().resolved(T0 + timedelta(hours=1)))
    assert (False, False) == (regression().summary in resolved, "Driven by" in resolved)


@pytest.mark.parametrize(
    ("alert", "headline"),
    [
        (regression(), "nightly: recall@5 dropped from 0.81 to 0.7 (more than the allowed 0.05)"),
        (regression().resolved(T0), "nightly: recall@5 max_drop holds again"),
        (
            failure_alert("nightly", "search_backend_down", "refused", at=T0).resolved(T0),
            "nightly: the monitor measures again (search_backend_down is over)",
        ),
    ],
)
def test_the_headline_follows_the_status(alert: Alert, headline: str) -> None:
    """A firing alert's headline is its summary; a resolved one says the condition is over."""
    assert headline == text.headline(alert)


def test_the_summary_annotation_of_a_resolved_alert_is_its_resolved_headline() -> None:
    """Receivers told of a resolve read that the rule holds again, not that it broke."""
    resolved = regression().resolved(T0 + timedelta(hours=1))
    assert "nightly: recall@5 max_drop holds again" == text.alert_annotations(resolved)["summary"]


@pytest.mark.parametrize(
    "alert",
    [regression(), failure_alert("nightly", "store_unwritable", "x", at=T0)],
    ids=["regression", "monitor_failure"],
)
def test_every_alert_carries_the_service_label(alert: Alert) -> None:
    """Regressions and failures alike are labelled service=retrieval-monitor."""
    assert "retrieval-monitor" == alert.label_set()["service"]


def test_long_id_lists_are_cut() -> None:
    """A query line shows five ids and says how many more there are."""
    query = worse("q1", "x", 1.0, 0.0, tuple(f"d{i}" for i in range(8)), ())
    assert "expected d0, d1, d2, d3, d4 (+3 more); retrieved none" in text.worse_query(query)


# --- validation and the dictionary form ---------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"segment": segment("language", "fr", 12, 0.8, 0.5, metric="ndcg@10")},
            "segment of ndcg@10, not of the rule's recall@5",
        ),
        (
            {"worse_queries": (worse("q1", metric="mrr@10"),)},
            "worse query of mrr@10, not of the rule's recall@5",
        ),
    ],
)
def test_evidence_of_another_metric_is_refused(changes: dict[str, Any], message: str) -> None:
    """A segment or worse query must be about the breached rule's own metric."""
    with pytest.raises(UsageError, match=message):
        details(**changes)


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
