"""The suite key `drift`: read once into a DriftConfig, refused with file, line and key."""

from __future__ import annotations

import pytest

from monitor.config import load_config_text
from monitor.config.model import DriftConfig, SuiteConfig
from monitor.drift.settings import DriftSettings
from monitor.errors import ConfigError
from tests.test_config_errors import SOURCE, suite_file

LOGS = "drift: {logs: /data/t.duckdb, reference: 28d, current: 7d"


def suite(body: str) -> SuiteConfig:
    """Return suite `nightly` of a config whose suite body is ``body``."""
    return load_config_text(suite_file(body), SOURCE, env={}).suite("nightly")


def test_a_suite_has_no_drift_check_by_default() -> None:
    """Without `drift`, the suite checks no drift."""
    assert None is suite("metrics: [mrr@10]").drift


def test_drift_takes_the_defaults_of_the_command() -> None:
    """`logs`, `reference` and `current` alone take every default."""
    found = suite(LOGS + "}").drift
    assert DriftConfig(found.logs, "28d", "7d", DriftSettings()) == found  # type: ignore[union-attr]


def test_drift_reads_every_key() -> None:
    """Every key is read as written."""
    body = (
        LOGS + ", name: weekly, alpha: 0.01, permutations: 500, seed: 3, min_queries: 20,"
        " max_rows: 400, max_auc: 0.7, max_centroid_distance: 0.05, weighting: searches,"
        " embedding: http, severity: critical}"
    )
    settings = DriftSettings(0.01, 500, 3, 20, 400, max_auc=0.7, max_centroid_distance=0.05)
    found = suite(body).drift
    assert found is not None
    expected = DriftConfig(
        found.logs, "28d", "7d", settings, "weekly", "searches", "http", "critical"
    )
    assert expected == found


@pytest.mark.parametrize(
    ("body", "key", "expected"),
    [
        ("drift: {reference: 28d, current: 7d}", "drift", "the key 'logs'"),
        (LOGS.replace("28d", "four weeks") + "}", "drift.reference", "START..END"),
        (LOGS.replace("7d", "2026-11-08..2026-11-01") + "}", "drift.current", "START..END"),
        (LOGS + ", alpha: 0.9}", "drift.alpha", "a number above 0"),
        (LOGS + ", permutations: 0}", "drift.permutations", "an integer"),
        (LOGS + ", max_auc: 0.2}", "drift.max_auc", "a number from 0.5 to 1"),
        (LOGS + ", weighting: heavy}", "drift.weighting", "distinct or searches"),
        (LOGS + ", min_queries: 80, max_rows: 60}", "drift", "max_rows"),
        (LOGS + ", alfa: 0.1}", "drift.alfa", "did you mean 'alpha'?"),
    ],
)
def test_a_malformed_value_names_its_file_line_and_key(body: str, key: str, expected: str) -> None:
    """Each malformed value raises a ConfigError at suites.nightly.<key> on line 3."""
    with pytest.raises(ConfigError) as info:
        suite(body)
    error = info.value
    assert (SOURCE, f"suites.nightly.{key}", 3) == (error.source, error.key, error.line)
    assert expected in error.expected
