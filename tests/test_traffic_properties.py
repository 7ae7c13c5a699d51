"""Invariants of the traffic stage: the query key and the online metrics' ranges."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from monitor.traffic import query_key


@given(st.text())
def test_the_query_key_is_idempotent(text: str) -> None:
    """Normalising a key again changes nothing."""
    assert query_key(text) == query_key(query_key(text))


@given(st.text(alphabet=st.characters(codec="ascii")), st.sampled_from([" ", "  ", "\t", "\n"]))
def test_the_query_key_ignores_case_and_runs_of_white_space(text: str, space: str) -> None:
    """Upper case and any run of white space between words give the same key."""
    spaced = space.join(text.split())
    assert query_key(text.lower()) == query_key(f"{space}{spaced.upper()}{space}")


@pytest.mark.slow
@pytest.mark.parametrize("seed", [4, 5])
def test_every_rate_is_in_0_1_and_the_first_click_at_least_1(tmp_path: Path, seed: int) -> None:
    """Rates lie in [0, 1], PaulScore below 1 / (1 - F), the mean first-click rank at least 1."""
    pytest.importorskip("duckdb")
    from monitor.config.windows import EVERYTHING
    from monitor.traffic.engine import connect
    from monitor.traffic.importer import import_logs
    from monitor.traffic.online import online_metrics
    from tests.traffic_logs import generate, write_ndjson

    planted = generate(seed=seed, n_queries=4, searches_per_query=30)
    connection = connect(tmp_path / "t.duckdb")
    try:
        import_logs(
            connection,
            [write_ndjson(tmp_path / "q.ndjson", planted.queries)],
            [write_ndjson(tmp_path / "e.ndjson", planted.events)],
        )
        (overall,) = online_metrics(connection, EVERYTHING)[:1]
    finally:
        connection.close()
    values = dict(overall.values)
    first = values.pop("mean_first_click_position")
    paul = values.pop("paulscore")
    p50, p95 = values.pop("latency_p50"), values.pop("latency_p95")
    assert (True, True, True, True) == (
        all(value is not None and 0.0 <= value <= 1.0 for value in values.values()),
        first is not None and math.isfinite(first) and first >= 1.0,
        paul is not None and 0.0 <= paul < 1 / (1 - 0.5),
        (p50, p95) == (None, None) or (p50 is not None and p95 is not None and 0 <= p50 <= p95),
    )
