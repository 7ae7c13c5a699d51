"""Load on one PostgreSQL: concurrent suites and sharded runs lose nothing and alert once.

Needs the PostgreSQL server at ``MONITOR_POSTGRES_URL`` (default: the one
``scripts/start-postgres.sh`` starts); skipped without it. The sizes are scaled down to keep
the module within about half a minute on two cores; ``scripts/shard_load.py`` runs the same loads
at full size (200 suites over 8 processes, 100,000 queries over 4 shards).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytestmark = [pytest.mark.service, pytest.mark.slow]

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "shard_load.py"


@pytest.fixture(scope="module")
def load() -> ModuleType:
    """Return scripts/shard_load.py as a module."""
    spec = importlib.util.spec_from_file_location("shard_load", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["shard_load"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def suites_report(load: ModuleType, postgres_url: str) -> dict[str, Any]:
    """8 Larkfield suites run by 4 concurrent processes on one store."""
    report: dict[str, Any] = load.load_suites(postgres_url, 8, 4)
    return report


def test_concurrent_suites_lose_no_run(suites_report: dict[str, Any]) -> None:
    """Every suite's seeded baseline and run are stored."""
    assert (0, 16) == (suites_report["lost_runs"], suites_report["runs_stored"])


def test_concurrent_suites_meet_no_lock_or_store_error(suites_report: dict[str, Any]) -> None:
    """No process finds a suite locked or the store failing."""
    assert (0, {}) == (suites_report["lock_errors"], suites_report["other_errors"])


def test_concurrent_suites_notify_each_alert_once(suites_report: dict[str, Any]) -> None:
    """Each suite's firing alert arrives once: no idempotency key twice."""
    assert (0, 8) == (
        suites_report["duplicate_notifications"],
        suites_report["notifications"],
    )


def test_a_sharded_run_stores_the_per_query_values_of_the_unsharded_one(
    load: ModuleType, postgres_url: str
) -> None:
    """Four shards run as Indexed Job pods store one run identical per query to one pod's."""
    report = load.load_sharded(postgres_url, 1000, 4, warm=False)
    assert (True, 1, [0, 0, 0, 0]) == (
        report["per_query_identical"],
        report["runs_stored"],
        report["sharded"]["exit_codes"],
    ), report


def test_a_killed_shard_makes_one_failed_attempt_and_one_alert(
    load: ModuleType, postgres_url: str
) -> None:
    """A SIGKILLed shard retried past the deadline fails the attempt once, with one alert."""
    report = load.load_killed(postgres_url, 1000, 4, 4.0)
    assert ("failed", 1, 1, 3) == (
        report["attempt_status"],
        report["failed_runs"],
        report["monitor_failure_notifications"],
        report["retried_exit_code"],
    )
