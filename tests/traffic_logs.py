"""UBI-style query and event logs for the traffic tests: hand-built rows and a seeded
generator with planted grades and a position-bias click model.

The generator shows every query's documents in each search, ranked by grade plus noise (so
good documents sit high, as production ranks them), and clicks a document at rank r with
probability ``examination(r) * attractiveness[grade]``: the cascade-free position-bias
model that COEC corrects for. ``noise`` is the spread of the ranking around the grades: at
the default 2.0 a grade-3 document usually, not always, sits above a grade-0 one; near 0 the
ranking is sorted by grade, and every rank's CTR then mirrors the grades shown there as much
as position bias (the rank CTRs COEC divides by are estimated from the same ranking).
"""

from __future__ import annotations

import csv
import gzip
import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

T0 = datetime(2026, 11, 1, 0, 0, 0)


def stamp(moment: datetime) -> str:
    """Return ``moment`` as the ISO 8601 UTC text UBI logs carry."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def search(
    query_id: str,
    text: str,
    hits: Sequence[str],
    *,
    client: str = "c1",
    at: datetime = T0,
    application: str = "web",
) -> dict[str, Any]:
    """Return one UBI query row."""
    return {
        "query_id": query_id,
        "user_query": text,
        "timestamp": stamp(at),
        "client_id": client,
        "application": application,
        "query_response_hit_ids": list(hits),
    }


def click(
    query_id: str, doc: str, ordinal: int | None = None, *, at: datetime = T0
) -> dict[str, Any]:
    """Return one UBI click event, nested as UBI writes it."""
    event: dict[str, Any] = {
        "action_name": "click",
        "query_id": query_id,
        "object": {"object_id": doc},
        "timestamp": stamp(at),
    }
    if ordinal is not None:
        event["event_attributes"] = {"position": {"ordinal": ordinal}}
    return event


def write_ndjson(path: Path, rows: Sequence[Mapping[str, Any]]) -> Path:
    """Write ``rows`` as NDJSON (gzip-compressed when ``path`` ends in .gz); return ``path``."""
    text = "".join(json.dumps(row) + "\n" for row in rows)
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
    else:
        path.write_text(text, encoding="utf-8")
    return path


def flat(row: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Return ``row`` with nested objects spelled as dotted keys, as flat CSV holds them."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        if isinstance(value, Mapping):
            out.update(flat(value, f"{prefix}{key}."))
        elif isinstance(value, list):
            out[f"{prefix}{key}"] = json.dumps(value)
        else:
            out[f"{prefix}{key}"] = value
    return out


def write_csv(path: Path, rows: Sequence[Mapping[str, Any]]) -> Path:
    """Write ``rows`` as flat CSV, one column per dotted field; return ``path``."""
    flattened = [flat(row) for row in rows]
    names = list(dict.fromkeys(name for row in flattened for name in row))
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=names)
        writer.writeheader()
        writer.writerows(flattened)
    return path


def write_parquet(path: Path, rows: Sequence[Mapping[str, Any]]) -> Path:
    """Write ``rows`` as Parquet, nested fields as structs; return ``path``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist([dict(row) for row in rows]), path)
    return path


def inverse_rank(rank: int) -> float:
    """Return the examination probability 1/rank."""
    return 1.0 / rank


@dataclass
class Planted:
    """Generated logs with the grades planted in them, by query text then doc."""

    grades: dict[str, dict[str, int]] = field(default_factory=dict)
    queries: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)


def generate(
    seed: int,
    *,
    texts: Sequence[str] | None = None,
    n_queries: int = 10,
    docs_per_query: int = 8,
    searches_per_query: int = 200,
    clients: int = 20,
    examination: Callable[[int], float] = inverse_rank,
    attractiveness: Sequence[float] = (0.05, 0.2, 0.45, 0.8),
    noise: float = 2.0,
) -> Planted:
    """Return seeded logs: each query's docs get planted grades, each search shows them all."""
    rng = random.Random(seed)
    planted = Planted()
    names = list(texts) if texts is not None else [f"query {n}" for n in range(n_queries)]
    moment = T0
    for number, text in enumerate(names):
        docs = {f"d{number}-{i}": rng.randrange(len(attractiveness)) for i in range(docs_per_query)}
        planted.grades[text] = docs
        for search_number in range(searches_per_query):
            query_id = f"s{number}-{search_number}"
            ranking = sorted(docs, key=lambda doc: docs[doc] + rng.gauss(0.0, noise), reverse=True)
            moment += timedelta(seconds=rng.randrange(1, 600))
            shown = text.upper() if search_number % 3 == 0 else f"  {text} "
            client = f"client-{rng.randrange(clients)}"
            planted.queries.append(search(query_id, shown, ranking, client=client, at=moment))
            for rank, doc in enumerate(ranking, 1):
                if rng.random() < examination(rank) * attractiveness[docs[doc]]:
                    at = moment + timedelta(seconds=rank)
                    planted.events.append(click(query_id, doc, rank, at=at))
    return planted
