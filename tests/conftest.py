"""Shared test configuration.

Tests that need a real service carry ``@pytest.mark.service``. They skip when the service
is not reachable, except where ``MONITOR_REQUIRE_SERVICES=1`` (as in ``.ci/run``, which
starts every service): there an unreachable service fails the test instead of hiding it.
"""

from __future__ import annotations

import os

import pytest


def services_required() -> bool:
    """Return whether an unreachable service must fail the test rather than skip it."""
    return os.environ.get("MONITOR_REQUIRE_SERVICES") == "1"


def unavailable(reason: str) -> None:
    """Skip the current test, or fail it when services are required."""
    if services_required():
        pytest.fail(f"required service unavailable: {reason}")
    pytest.skip(reason)
