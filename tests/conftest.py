"""Shared test configuration.

Tests that need a real service carry ``@pytest.mark.service``. They skip when the service
is not reachable, except where ``MONITOR_REQUIRE_SERVICES=1`` (as in ``.ci/run``, which
starts every service): there an unreachable service fails the test instead of hiding it.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

# Property tests check values, not speed: on a loaded 2-core machine an example can take
# longer than hypothesis's default 200 ms deadline without anything being wrong.
settings.register_profile("monitor", deadline=None)
settings.load_profile("monitor")


def services_required() -> bool:
    """Return whether an unreachable service must fail the test rather than skip it."""
    return os.environ.get("MONITOR_REQUIRE_SERVICES") == "1"


def unavailable(reason: str) -> None:
    """Skip the current test, or fail it when services are required."""
    if services_required():
        pytest.fail(f"required service unavailable: {reason}")
    pytest.skip(reason)
