"""The SQL aggregations agree with a plain-Python reading of the definitions on generated logs.

The reference below restates each definition of :mod:`monitor.traffic.online` and
:mod:`monitor.traffic.clicks` row by row, with no SQL, over logs with several applications,
zero-result searches, clients searching again within the reformulation gap and clicks on
documents outside the hit list.
"""

from __future__ import annotations

import random
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("duckdb")

from monitor.config.windows import EVERYTHING
from monitor.traffic.clicks import ClickSettings, click_grades
from monitor.traffic.engine import connect
from monitor.traffic.importer import import_logs
from monitor.traffic.keys import query_key
from monitor.traffic.online import online_metrics
from tests.traffic_logs import T0, click, search, write_ndjson

pytestmark = pytest.mark.slow


def logs(seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Return seeded searches and clicks of every awkward kind the definitions name."""
    rng = random.Random(seed)
    queries, events = [], []
    moment = T0
    for number in range(400):
        moment += timedelta(seconds=rng.randrange(0, 200))
        docs = [f"d{rng.randrange(12)}" for _ in range(rng.choice([0, 3, 6, 8]))]
        query_id = f"s{number}"
        queries.append(
            search(query_id, f"Query {rng.randrange(6)}", docs, client=f"c{rng.randrange(8)}",
                   at=moment, application=rng.choice(["web", "app"]))
        )  # fmt: skip
        for rank, doc in enumerate(docs, 1):
            if rng.random() < 0.5 / rank:
                events.append(click(query_id, doc, rank, at=moment))
        if rng.random() < 0.05:
            events.append(click(query_id, "elsewhere", rng.randrange(1, 20), at=moment))
    return queries, events


def stamp_of(row: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(row["timestamp"].replace("Z", ""))


def percentiles(latencies: list[float | None]) -> dict[str, float | None]:
    """Return latency_p50 and latency_p95 of the latencies logged, as NumPy's default reads."""
    logged = [value for value in latencies if value is not None]
    return {
        name: float(np.percentile(logged, q)) if logged else None
        for name, q in (("latency_p50", 50), ("latency_p95", 95))
    }


def reference_metrics(queries: list[dict[str, Any]], events: list[dict[str, Any]]) -> dict[
    str | None, dict[str, float | None]
]:  # fmt: skip
    ranks: dict[str, list[int]] = defaultdict(list)
    hits = {row["query_id"]: row["query_response_hit_ids"] for row in queries}
    for event in events:
        shown = hits[event["query_id"]]
        doc = event["object"]["object_id"]
        ordinal = event["event_attributes"]["position"]["ordinal"]
        ranks[event["query_id"]].append(shown.index(doc) + 1 if doc in shown else ordinal)
    following: dict[str, bool] = {}
    by_client: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in queries:
        by_client[(row["client_id"], row["application"])].append(row)
    for rows in by_client.values():
        rows.sort(key=lambda row: (stamp_of(row), row["query_id"]))
        for row, after in zip(rows, [*rows[1:], None], strict=True):
            following[row["query_id"]] = after is not None and (
                query_key(after["user_query"]) != query_key(row["user_query"])
                and (stamp_of(after) - stamp_of(row)).total_seconds() <= 300
            )
    out: dict[str | None, dict[str, float | None]] = {}
    for application in (None, "web", "app"):
        rows = [r for r in queries if application in (None, r["application"])]
        ids = [r["query_id"] for r in rows]
        shown = [i for i in ids if hits[i]]
        clicked = [i for i in ids if ranks[i]]

        def share(ids_: list[str], of: list[str]) -> float | None:
            return len(ids_) / len(of) if of else None

        out[application] = {
            "zero_result_rate": share([i for i in ids if not hits[i]], ids),
            "ctr": share(clicked, ids),
            **{
                f"ctr@{k}": share([i for i in clicked if min(ranks[i]) <= k], ids)
                for k in (1, 3, 5)
            },
            "abandonment": share([i for i in shown if not ranks[i]], shown),
            "mean_first_click_position": (
                sum(min(ranks[i]) for i in clicked) / len(clicked) if clicked else None
            ),
            "reformulation_rate": share([i for i in ids if following[i]], ids),
            "paulscore": sum(sum(0.5 ** (r - 1) for r in set(ranks[i])) for i in ids) / len(ids),
            **percentiles([r.get("query_attributes", {}).get("latency_ms") for r in rows]),
        }
    return out


def reference_coec(
    queries: list[dict[str, Any]], events: list[dict[str, Any]], max_rank: int, prior: float
) -> dict[tuple[str, str], float]:
    clicked = {(e["query_id"], e["object"]["object_id"]) for e in events}
    shown = [
        (row["query_id"], query_key(row["user_query"]), doc, rank)
        for row in queries
        for rank, doc in enumerate(row["query_response_hit_ids"], 1)
        if rank <= max_rank
    ]
    seen: set[tuple[str, str]] = set()
    unique = []
    for item in shown:
        if (item[0], item[2]) not in seen:
            seen.add((item[0], item[2]))
            unique.append(item)
    per_rank: dict[int, list[int]] = defaultdict(list)
    for query_id, _key, doc, rank in unique:
        per_rank[rank].append(int((query_id, doc) in clicked))
    ctr = {rank: sum(v) / len(v) for rank, v in per_rank.items()}
    clicks: dict[tuple[str, str], float] = defaultdict(float)
    expected: dict[tuple[str, str], float] = defaultdict(float)
    for query_id, key, doc, rank in unique:
        clicks[(key, doc)] += int((query_id, doc) in clicked)
        expected[(key, doc)] += ctr[rank]
    return {pair: (clicks[pair] + prior) / (expected[pair] + prior) for pair in clicks}


@pytest.fixture(params=[11, 12])
def generated(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, Any, Any]:
    queries, events = logs(request.param)
    db = tmp_path / "t.duckdb"
    connection = connect(db)
    try:
        import_logs(
            connection,
            [write_ndjson(tmp_path / "q.ndjson", queries)],
            [write_ndjson(tmp_path / "e.ndjson", events)],
            min_distinct_clients=1,
        )
    finally:
        connection.close()
    return db, queries, events


def test_the_online_metrics_match_the_definitions(generated: tuple[Path, Any, Any]) -> None:
    """Every online metric, overall and per application, equals the row-by-row reading."""
    db, queries, events = generated
    connection = connect(db, read_only=True)
    try:
        found = {
            (m.application, name): value
            for m in online_metrics(connection, EVERYTHING)
            for name, value in m.values.items()
        }
    finally:
        connection.close()
    expected = {
        (application, name): value
        for application, values in reference_metrics(queries, events).items()
        for name, value in values.items()
    }
    assert expected == pytest.approx(found)


def test_coec_matches_the_definition(generated: tuple[Path, Any, Any]) -> None:
    """Each pair's COEC equals clicks plus prior over per-impression expected clicks plus prior."""
    db, queries, events = generated
    connection = connect(db, read_only=True)
    try:
        settings = ClickSettings(max_rank=5, min_impressions=1, prior=0.5)
        found = {(g.query_key, g.doc): g.score for g in click_grades(connection, settings)}
    finally:
        connection.close()
    assert reference_coec(queries, events, max_rank=5, prior=0.5) == pytest.approx(found)
