"""The suite keys `coverage` and the `min_overlap` check: read once, refused with file,
line and key when malformed."""

from __future__ import annotations

import pytest

from monitor.alerts.model import Alert
from monitor.config import Check, load_config_text
from monitor.config.model import CoverageConfig, SuiteConfig
from monitor.errors import ConfigError
from tests.test_config_errors import SOURCE, suite_file


def suite(body: str) -> SuiteConfig:
    """Return suite `nightly` of a config whose suite body is ``body``."""
    return load_config_text(suite_file(body), SOURCE, env={}).suite("nightly")


def test_coverage_defaults_to_a_drop_of_five_points_and_a_warning() -> None:
    """Without `coverage`, max_drop is 0.05, severity warning, and no queue URL."""
    assert CoverageConfig(0.05, "warning", None) == suite("metrics: [mrr@10]").coverage


def test_coverage_reads_every_key() -> None:
    """max_drop, severity and queue_url are read as written."""
    body = "coverage: {max_drop: 0.1, severity: critical, queue_url: 'https://l.example/{suite}'}"
    assert CoverageConfig(0.1, "critical", "https://l.example/{suite}") == suite(body).coverage


def test_defaults_coverage_merges_key_by_key() -> None:
    """A suite's own coverage.severity keeps the max_drop set in defaults."""
    text = "defaults:\n  coverage: {max_drop: 0.2}\n" + suite_file("coverage: {severity: info}")
    merged = load_config_text(text, SOURCE, env={}).suite("nightly").coverage
    assert (0.2, "info") == (merged.max_drop, merged.severity)


@pytest.mark.parametrize(
    ("body", "key", "expected"),
    [
        ("coverage: {max_drop: 1.5}", "coverage.max_drop", "a number from 0 to 1"),
        ("coverage: {severity: loud}", "coverage.severity", "a severity"),
        ("coverage: {queue_url: 'labels/{suite}'}", "coverage.queue_url", "an http(s) URL"),
        ("coverage: {queue_url: 'https://l/{who}'}", "coverage.queue_url", "no other {...}"),
        ("coverage: {max_drops: 0.1}", "coverage.max_drops", "did you mean 'max_drop'?"),
        ("rules: [{min_overlap: 2}]", "rules[0].min_overlap", "a number from 0 to 1"),
        ("rules: [{min_overlap: 0.5, metric: mrr@10}]", "rules[0].metric", "no 'metric'"),
    ],
)
def test_a_malformed_value_names_its_file_line_and_key(body: str, key: str, expected: str) -> None:
    """Each malformed value raises a ConfigError at suites.nightly.<key> on line 3."""
    with pytest.raises(ConfigError) as info:
        suite(body)
    error = info.value
    assert (SOURCE, f"suites.nightly.{key}", 3) == (error.source, error.key, error.line)
    assert expected in error.expected


def test_min_overlap_is_a_rule_without_a_metric() -> None:
    """`- min_overlap: 0.5` is the check MIN_OVERLAP with threshold 0.5 and no metric."""
    (rule,) = suite("rules: [{min_overlap: 0.5}]").rules
    assert (Check.MIN_OVERLAP, 0.5, None, "min_overlap") == (
        rule.check,
        rule.threshold,
        rule.metric,
        rule.name,
    )


def test_a_labels_needed_alert_round_trips_through_its_dictionary_form() -> None:
    """The store keeps a labels-needed alert as a dict and reads the same alert back."""
    from datetime import datetime, timezone

    from monitor.alerts.model import AlertIdentity

    alert = Alert(
        identity=AlertIdentity("labels_needed", "nightly", "labels_needed"),
        severity="info",
        summary="nightly: labels needed",
        starts_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
    )
    assert alert == Alert.from_dict(alert.to_dict())
    assert "RetrievalLabelsNeeded" == alert.label_set()["alertname"]
