"""The dictionary forms of alerts and of the comparison records they carry.

The version-1 forms in ``tests/data/alerts`` were written by the alert model of the release
before version 2 (``Alert.to_dict`` of commit 61385a9), as a store holds them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from monitor.alerts.build import failure_alert, regression_alert
from monitor.alerts.model import SEVERITIES, Alert, FailureReason, RegressionDetails
from monitor.alerts.testing import breach, segment, worse
from monitor.compare.records import Change, QueryDiff, RuleOutcome, RuleStatus, SegmentChange
from monitor.config.common import LinksConfig
from monitor.config.model import Check
from monitor.errors import UsageError

DATA = Path(__file__).resolve().parent / "data" / "alerts"
T0 = datetime(2030, 1, 1, 9, 0, tzinfo=timezone.utc)


def stored(name: str) -> dict[str, Any]:
    """Return the stored alert form ``tests/data/alerts/<name>.json``."""
    return dict(json.loads((DATA / f"{name}.json").read_text(encoding="utf-8")))


def through_json(alert: Alert) -> Alert:
    """Return ``alert`` written with to_dict, sent through JSON and read back."""
    return Alert.from_dict(json.loads(json.dumps(alert.to_dict(), allow_nan=False)))


# --- version 1 ---------------------------------------------------------------------------------


def test_a_version_1_regression_keeps_its_identity_texts_and_times() -> None:
    """The fingerprint, wording, labels, links and times of a stored v1 alert read unchanged."""
    data = stored("regression-v1")
    alert = Alert.from_dict(data)
    assert (
        data["fingerprint"],
        "critical",
        data["summary"],
        data["description"],
        {"team": "search"},
        "https://r/8",
        T0,
        "firing",
    ) == (
        alert.fingerprint,
        alert.severity,
        alert.summary,
        alert.description,
        dict(alert.labels),
        alert.links.report,
        alert.starts_at,
        alert.status,
    )


def test_a_version_1_regression_reads_as_the_rule_outcome_it_described() -> None:
    """The figures of a v1 form become a breached RuleOutcome of the alert's rule."""
    expected = breach(
        "recall@5", 0.70, 0.81, severity="critical", p_value=0.002, ci_low=-0.16, ci_high=-0.06
    )
    assert expected == Alert.from_dict(stored("regression-v1")).details.outcome  # type: ignore[union-attr]


def test_a_version_1_segment_reads_with_an_unknown_contribution() -> None:
    """A v1 segment had no contribution: it reads as NaN, the rest as it was."""
    found = Alert.from_dict(stored("regression-v1")).details.segment  # type: ignore[union-attr]
    assert found is not None
    assert (("language", "fr", "recall@5", 12, 0.80, 0.55, -0.25), True) == (
        (found.key, found.value, found.metric, found.n, found.baseline, found.current,
         round(found.delta, 12)),
        math.isnan(found.contribution),
    )  # fmt: skip


def test_version_1_retrieved_ids_read_as_the_current_ids() -> None:
    """A v1 worse query's retrieved ids are the QueryDiff's current ids."""
    (query,) = Alert.from_dict(stored("regression-v1")).details.worse_queries  # type: ignore[union-attr]
    assert ("q17", "recall@5", ("d3", "d9"), ("d1",), 1.0, 0.0) == (
        query.query_id,
        query.metric,
        query.expected_ids,
        query.current_ids,
        query.baseline,
        query.current,
    )


def test_a_version_1_evidence_keeps_confidence_and_runs() -> None:
    """The interval's level and the run ids of a v1 form are kept."""
    details = Alert.from_dict(stored("regression-v1")).details
    assert details is not None
    assert (0.95, 8, 5) == (details.confidence, details.run_id, details.baseline_run_id)


def test_a_version_1_operational_regression_is_no_quality_rule() -> None:
    """A v1 error-rate alert has no metric identity and reads as an operational outcome."""
    alert = Alert.from_dict(stored("operational-v1"))
    outcome = alert.details.outcome  # type: ignore[union-attr]
    assert (None, Check.ERROR_RATE_MAX, "error_rate", False, None) == (
        alert.identity.metric,
        outcome.check,
        outcome.metric,
        outcome.quality,
        outcome.baseline,
    )


def test_a_version_1_failure_reads() -> None:
    """A v1 monitor failure reads as the failure alert the builder makes today."""
    expected = failure_alert(
        "nightly", FailureReason.SEARCH_BACKEND_DOWN, "connection refused", at=T0
    )
    assert expected == Alert.from_dict(stored("failure-v1"))


@pytest.mark.parametrize("name", ["regression-v1", "operational-v1", "failure-v1"])
def test_a_version_1_alert_is_written_again_as_version_2(name: str) -> None:
    """An alert read from a v1 form is written as version 2."""
    assert 2 == Alert.from_dict(stored(name)).to_dict()["version"]


def test_a_version_1_alert_written_again_keeps_its_unknown_contribution() -> None:
    """A v1 segment's NaN contribution, written as null in version 2, reads back as NaN."""
    again = through_json(Alert.from_dict(stored("regression-v1")))
    found = again.details.segment  # type: ignore[union-attr]
    assert found is not None
    assert (float, True) == (type(found.contribution), math.isnan(found.contribution))


def test_a_version_1_alert_written_again_reads_back_the_same() -> None:
    """Apart from the unknown contribution, the v1 alert survives being written as v2."""
    first = Alert.from_dict(stored("regression-v1"))
    again = through_json(first)
    assert first.to_dict() == again.to_dict()


def test_a_version_1_form_with_an_unknown_check_is_refused() -> None:
    """A v1 form whose check the config does not know is a UsageError, not a traceback."""
    data = stored("regression-v1")
    data["details"]["check"] = "max_dorp"
    with pytest.raises(UsageError, match="not an alert in dictionary form"):
        Alert.from_dict(data)


# --- version 2 ---------------------------------------------------------------------------------


def test_an_unknown_dictionary_form_is_refused() -> None:
    """A dictionary of another version is a UsageError, not a wrong alert."""
    data = failure_alert("s", "store_unwritable", "x", at=T0).to_dict() | {"version": 99}
    with pytest.raises(UsageError, match="version 99"):
        Alert.from_dict(data)


def test_a_regression_with_its_evidence_round_trips_through_json() -> None:
    """A resolved regression with outcome, segment and worse queries reads back equal."""
    details = RegressionDetails(
        breach("ndcg@10", 0.55, 0.70, p_value=0.01, ci_low=-0.2, ci_high=-0.1),
        segment=segment("language", "fr", 9, 0.9, 0.4, metric="ndcg@10"),
        worse_queries=(worse("q1", "text", 1.0, 0.0, ("d1",), ("d7",), metric="ndcg@10"),),
        confidence=0.95,
        run_id=8,
        baseline_run_id=5,
    )
    alert = regression_alert(
        "nightly", details, at=T0, labels={"team": "search"}, links=LinksConfig(runbook="rb")
    ).resolved(T0 + timedelta(hours=1))
    assert alert == through_json(alert)


def test_the_version_2_form_holds_the_records_own_forms() -> None:
    """The evidence of version 2 is the outcome's, segment's and queries' own to_dict."""
    found = breach("ndcg@10", 0.55, 0.70)
    change = segment("language", "fr", 9, 0.9, 0.4, metric="ndcg@10")
    diff = worse("q1", metric="ndcg@10")
    form = regression_alert("s", RegressionDetails(found, change, (diff,)), at=T0).to_dict()
    assert (found.to_dict(), change.to_dict(), [diff.to_dict()]) == (
        form["details"]["outcome"],
        form["details"]["segment"],
        form["details"]["worse_queries"],
    )


texts = st.text(min_size=1, max_size=20)
numbers = st.floats(-1e6, 1e6, allow_nan=False)
optional = st.none() | numbers
ids = st.lists(texts, max_size=4).map(tuple)
ranks = st.none() | st.integers(1, 100)
moments = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(timezone.utc)
)


def outcomes(metric: st.SearchStrategy[str] = texts) -> st.SearchStrategy[RuleOutcome]:
    """Return a strategy of rule outcomes (of a metric drawn from ``metric``)."""
    return st.builds(
        RuleOutcome,
        rule=texts,
        check=st.sampled_from(Check),
        metric=metric,
        threshold=numbers,
        severity=st.sampled_from(SEVERITIES),
        status=st.sampled_from(get_args(RuleStatus)),
        current=optional,
        baseline=optional,
        delta=optional,
        p_value=st.none() | st.floats(0, 1),
        ci_low=optional,
        ci_high=optional,
        quality=st.booleans(),
        message=st.text(max_size=20),
    )


def diffs(metric: st.SearchStrategy[str] = texts) -> st.SearchStrategy[QueryDiff]:
    """Return a strategy of per-query diffs (of a metric drawn from ``metric``)."""
    return st.builds(
        QueryDiff,
        query_id=texts,
        query=st.text(max_size=40),
        metric=metric,
        baseline=numbers,
        current=numbers,
        change=st.sampled_from(get_args(Change)),
        expected_ids=ids,
        baseline_ids=ids,
        current_ids=ids,
        baseline_first_rank=ranks,
        current_first_rank=ranks,
    )


def segment_changes(metric: st.SearchStrategy[str] = texts) -> st.SearchStrategy[SegmentChange]:
    """Return a strategy of segment changes (of a metric drawn from ``metric``)."""
    return st.builds(
        SegmentChange,
        key=texts,
        value=texts,
        metric=metric,
        n=st.integers(0, 1000),
        baseline=numbers,
        current=numbers,
        delta=numbers,
        contribution=numbers,
    )


@st.composite
def evidence(draw: st.DrawFn) -> RegressionDetails:
    """Return regression evidence whose segment and queries are of the outcome's metric."""
    metric = draw(texts)
    same = st.just(metric)
    return RegressionDetails(
        outcome=draw(outcomes(same)),
        segment=draw(st.none() | segment_changes(same)),
        worse_queries=tuple(draw(st.lists(diffs(same), max_size=3))),
        confidence=draw(st.none() | st.floats(0, 1)),
        run_id=draw(st.none() | st.integers(1, 10**6)),
        baseline_run_id=draw(st.none() | st.integers(1, 10**6)),
    )


@pytest.mark.slow
@given(
    suite=texts,
    found=evidence(),
    start=moments,
    resolved=st.booleans(),
    labels=st.dictionaries(texts, texts, max_size=3),
    report=st.none() | texts,
    pipeline=st.none() | texts,
)
def test_a_regression_round_trips_through_json(
    suite: str,
    found: RegressionDetails,
    start: datetime,
    resolved: bool,
    labels: dict[str, str],
    report: str | None,
    pipeline: str | None,
) -> None:
    """A regression written with to_dict and read back through JSON is equal to the original."""
    alert = regression_alert(
        suite, found, at=start, labels=labels, links=LinksConfig(report=report), pipeline=pipeline
    )
    if resolved:
        alert = alert.resolved(start + timedelta(minutes=5))
    assert alert == through_json(alert)


@pytest.mark.slow
@given(suite=texts, reason=st.sampled_from(FailureReason), message=st.text(), start=moments)
def test_a_failure_round_trips_through_json(
    suite: str, reason: FailureReason, message: str, start: datetime
) -> None:
    """A monitor failure written with to_dict and read back through JSON is equal to it."""
    alert = failure_alert(suite, reason, message, at=start)
    assert alert == through_json(alert)


# --- the comparison's records --------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("strategy", "read"),
    [
        (outcomes(), RuleOutcome.from_dict),
        (diffs(), QueryDiff.from_dict),
        (segment_changes(), SegmentChange.from_dict),
    ],
    ids=["RuleOutcome", "QueryDiff", "SegmentChange"],
)
@given(data=st.data())
def test_a_record_round_trips_through_its_dictionary_form(
    strategy: st.SearchStrategy[Any], read: Callable[[dict[str, Any]], Any], data: st.DataObject
) -> None:
    """A comparison record written with to_dict and read back through JSON is equal to it."""
    record = data.draw(strategy)
    assert record == read(json.loads(json.dumps(record.to_dict(), allow_nan=False)))


def test_a_rule_outcome_writes_its_check_by_the_yaml_key() -> None:
    """The check of a RuleOutcome's dictionary form is the config's key, ``max_drop``."""
    assert "max_drop" == breach("recall@5").to_dict()["check"]


def test_a_query_diff_form_carries_its_loss() -> None:
    """A QueryDiff's form adds the derived loss, which reading ignores."""
    diff = worse("q1", baseline=0.75, current=0.25)
    form = diff.to_dict()
    assert (0.5, diff) == (form["loss"], QueryDiff.from_dict(form))
