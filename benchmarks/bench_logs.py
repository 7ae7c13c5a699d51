"""Measure log import at scale: UBI logs to online metrics and COEC judgments, against pandas.

Run from the repository root::

    python benchmarks/bench_logs.py                               # 1,000,000 searches
    python benchmarks/bench_logs.py --searches 100000 --repeat 3  # a quicker look
    python benchmarks/bench_logs.py --formats parquet --repeat 3
    python benchmarks/bench_logs.py --formats parquet --engine spark  # Spark local[2]

A fixed seed (``--seed``, default 0) writes, with numpy and pyarrow (no Python loop over
rows), one query log and one event log per format into a scratch folder:

- ``--searches`` searches over 7 days, of ``searches / 20`` query keys with log-normal
  popularity, each key's raw text in three spellings (as typed, upper case, with extra
  spaces: one key, three texts); 200,000 clients, searching in sessions of one client
  and one application (``web`` or ``app``) a few seconds apart;
- each key has 15 documents with grades 0 to 3; a search shows 10 of them ranked by grade
  plus noise, or (5% of searches) none;
- a click on the document at rank r with probability ``attractiveness[grade] / r``: the
  position bias COEC corrects for; each click 1 to 10 s after its search.

Queries carry ``query_response_hit_ids`` as a list (a JSON array, a Parquet list of
strings); events are nested as UBI writes them (``object.object_id``,
``event_attributes.position.ordinal``). Parquet timestamps are timestamps (UTC); NDJSON
timestamps are ISO 8601 text with a ``Z``.

**What is counted**: the *events* of the target are the hit lists' entries (every
impression logged) plus the click events; both counts are printed.

**What is timed**, each in a fresh process (its wall time from start to the figures,
and its own peak RSS, ``ru_maxrss`` from ``os.wait4`` as ``bench_job.py`` measures it):

- ours: ``import_logs`` of both files into a new DuckDB file, then ``online_metrics`` of
  every stored search and ``click_grades`` (COEC, the defaults: ranks 1 to 10, at least 10
  impressions, prior 1);
- pandas: the same files read with ``pandas.read_parquet`` / ``pandas.read_json``, the same
  checks that matter to the figures (the distinct-client floor, a document listed twice
  kept at its first place), the same online metrics and COEC, written again with pandas
  from the definitions in ``monitor.traffic.online`` and ``monitor.traffic.clicks``.

With ``--engine spark`` (the ``spark`` extra and Java), the second is Spark instead of
pandas: the same import into DuckDB, then the same ``online_metrics`` and ``click_grades``
run on a SparkSession (``--spark-master``, default ``local[2]``, Spark's other settings at
their defaults) over the tables exported to Parquet (``--engine spark`` of the CLI). Its
phases are printed: the import, Spark's start, the export, the aggregation. There is no
target for Spark: on one machine it is the slower engine, and its use is logs that outgrow
one.

Each is run ``--repeat`` times (default 1): best and median are printed. The two results
must agree (every metric, every pair's impressions, clicks and score, to 1e-9); the script
exits 1 when they do not, and with ``--check`` also when a target is missed: at most 10 s
from Parquet and 60 s from NDJSON, at most 2 GB peak RSS (targets for 1,000,000 searches).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

#: Targets for 1,000,000 searches: seconds by format, and peak RSS in MB.
TARGET_SECONDS = {"parquet": 10.0, "ndjson": 60.0}
TARGET_MB = 2048.0
FORMATS = ("parquet", "ndjson")

DOCS_PER_KEY = 15
SHOWN = 10
CLIENTS = 200_000
ATTRACTIVENESS = (0.05, 0.2, 0.45, 0.8)
START = 1_793_491_200  # 2026-11-01T00:00:00Z
SPAN_S = 7 * 86_400


def _strings(prefix: str, numbers: Any) -> pa.Array:
    """Return ``prefix`` followed by each of the whole ``numbers`` as a string array."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.binary_join_element_wise(prefix, pc.cast(pa.array(numbers), pa.string()), "")


def generate(searches: int, seed: int) -> tuple[pa.Table, pa.Table]:
    """Return the seeded query and event logs as Arrow tables (events nested as UBI's)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = np.random.default_rng(seed)
    keys = max(1, searches // 20)
    weights = rng.lognormal(0.0, 1.5, keys)
    key = rng.choice(keys, size=searches, p=weights / weights.sum())
    spelling = rng.integers(0, 3, searches)
    texts = _strings("query ", np.arange(keys))
    variants = pa.concat_arrays(
        [
            texts,
            pc.utf8_upper(texts),
            pc.binary_join_element_wise("  ", pc.replace_substring(texts, " ", "   "), " ", ""),
        ]
    )
    user_query = variants.take(pa.array(spelling * keys + key))
    # Sessions: a search starts a new one with probability 0.4, else continues the last.
    starts = rng.random(searches) < 0.4
    starts[0] = True
    session = np.cumsum(starts) - 1
    sessions = int(session[-1]) + 1
    client = _strings("client-", rng.integers(0, CLIENTS, sessions)).take(pa.array(session))
    application = pa.array(np.where(rng.random(sessions) < 0.7, "web", "app")).take(
        pa.array(session)
    )
    seconds = np.sort(rng.random(searches)) * SPAN_S
    moment = (START + seconds) * 1_000_000
    ts = pa.array(moment.astype(np.int64), pa.timestamp("us", tz="UTC"))
    # Each key's documents and grades; a search ranks all of them by grade plus noise.
    grades = rng.integers(0, len(ATTRACTIVENESS), (keys, DOCS_PER_KEY))
    score = grades[key] + rng.normal(0.0, 2.0, (searches, DOCS_PER_KEY))
    order = np.argsort(-score, axis=1)[:, :SHOWN]
    shown = np.where(rng.random(searches) < 0.05, 0, SHOWN)
    keep = np.arange(SHOWN)[None, :] < shown[:, None]
    slot = order[keep]
    row = np.repeat(np.arange(searches), shown)
    doc_number = key[row] * DOCS_PER_KEY + slot
    docs = _strings("d", np.arange(keys * DOCS_PER_KEY))
    hit_docs = docs.take(pa.array(doc_number))
    offsets = np.concatenate([[0], np.cumsum(shown)]).astype(np.int32)
    hits = pa.ListArray.from_arrays(pa.array(offsets), hit_docs)
    query_id = _strings("s", np.arange(searches))
    # Each search logs its latency (milliseconds, rounded to a tenth: NDJSON writes it as is).
    latency = np.round(rng.lognormal(3.0, 0.5, searches), 1)
    queries = pa.table(
        {
            "query_id": query_id,
            "user_query": user_query,
            "timestamp": ts,
            "client_id": client,
            "application": application,
            "query_response_hit_ids": hits,
            "query_attributes": pa.StructArray.from_arrays(
                [pa.array(latency)], names=["latency_ms"]
            ),
        }
    )
    rank = (np.nonzero(keep)[1] + 1).astype(np.int64)
    attract = np.asarray(ATTRACTIVENESS)[grades[key[row], slot]]
    clicked = rng.random(rank.size) < attract / rank
    click_row = row[clicked]
    click_rank = rank[clicked]
    delay = rng.integers(1, 11, click_rank.size) * 1_000_000
    events = pa.table(
        {
            "action_name": pa.array(["click"] * click_rank.size),
            "query_id": query_id.take(pa.array(click_row)),
            "object": pa.StructArray.from_arrays(
                [hit_docs.filter(pa.array(clicked))], names=["object_id"]
            ),
            "event_attributes": pa.StructArray.from_arrays(
                [pa.StructArray.from_arrays([pa.array(click_rank)], names=["ordinal"])],
                names=["position"],
            ),
            "timestamp": pa.array(
                moment.astype(np.int64)[click_row] + delay, pa.timestamp("us", tz="UTC")
            ),
        }
    )
    return queries, events


def _quoted(values: pa.Array) -> pa.Array:
    import pyarrow.compute as pc

    return pc.binary_join_element_wise('"', values, '"', "")


def ndjson_lines(table: pa.Table) -> pa.Array:
    """Return each row of a generated log as one NDJSON line (its texts need no escapes)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    parts: list[Any] = []
    for number, name in enumerate(table.column_names):
        column = table.column(name).combine_chunks()
        head = ("{" if number == 0 else ",") + f'"{name}":'
        if name == "timestamp":
            value = _quoted(pc.strftime(column, format="%Y-%m-%dT%H:%M:%SZ"))
        elif name == "query_response_hit_ids":
            inner = pa.ListArray.from_arrays(column.offsets, _quoted(column.flatten()))
            value = pc.binary_join_element_wise("[", pc.binary_join(inner, ","), "]", "")
        elif name == "object":
            value = pc.binary_join_element_wise(
                '{"object_id":', _quoted(column.field("object_id")), "}", ""
            )
        elif name == "query_attributes":
            latency = pc.cast(column.field("latency_ms"), pa.string())
            value = pc.binary_join_element_wise('{"latency_ms":', latency, "}", "")
        elif name == "event_attributes":
            ordinal = pc.cast(column.field("position").field("ordinal"), pa.string())
            value = pc.binary_join_element_wise('{"position":{"ordinal":', ordinal, "}}", "")
        else:
            value = _quoted(column)
        parts.extend([head, value])
    parts.append("}\n")
    return pc.binary_join_element_wise(*parts, "")


def write_ndjson(path: Path, table: pa.Table, block: int = 200_000) -> Path:
    """Write ``table`` as NDJSON to ``path``, a block of rows at a time; return ``path``."""
    import numpy as np

    with path.open("wb") as out:
        for start in range(0, table.num_rows, block):
            lines = ndjson_lines(table.slice(start, block))
            _, offsets, data = lines.buffers()
            bounds = np.frombuffer(offsets, np.int32)[lines.offset : lines.offset + len(lines) + 1]
            out.write(memoryview(data)[int(bounds[0]) : int(bounds[-1])])
    return path


def write_logs(folder: Path, searches: int, seed: int, formats: tuple[str, ...]) -> dict[str, Any]:
    """Write the logs of every format into ``folder``; return what they hold."""
    import pyarrow.parquet as pq

    queries, events = generate(searches, seed)
    written: dict[str, Any] = {
        "searches": queries.num_rows,
        "impressions": len(queries.column("query_response_hit_ids").combine_chunks().flatten()),
        "clicks": events.num_rows,
    }
    for kind in formats:
        if kind == "parquet":
            pq.write_table(queries, folder / "queries.parquet")
            pq.write_table(events, folder / "events.parquet")
        else:
            write_ndjson(folder / "queries.ndjson", queries)
            write_ndjson(folder / "events.ndjson", events)
    return written


def ours(queries: Path, events: Path, db: Path) -> dict[str, Any]:
    """Import the logs into a new database at ``db``; return the online metrics and COEC."""
    from monitor.config.windows import EVERYTHING
    from monitor.traffic.clicks import ClickSettings, click_grades
    from monitor.traffic.engine import connect
    from monitor.traffic.importer import import_logs
    from monitor.traffic.online import online_metrics

    connection = connect(db)
    try:
        summary = import_logs(connection, [queries], [events])
        metrics = online_metrics(connection, EVERYTHING)
        grades = click_grades(connection, ClickSettings())
    finally:
        connection.close()
    return _result(summary, metrics, grades)


def _result(summary: Any, metrics: Any, grades: Any) -> dict[str, Any]:
    """Return what an import stored, its online metrics by application and its COEC grades."""
    return {
        "stored": [summary.searches_stored, summary.events_stored],
        "metrics": {
            str(item.application): {"searches": item.searches, **item.values} for item in metrics
        },
        "grades": [
            [g.query_key, g.doc, g.impressions, g.clicks, g.expected, g.score] for g in grades
        ],
    }


def on_spark(queries: Path, events: Path, db: Path, master: str) -> dict[str, Any]:
    """Import as :func:`ours` does, then aggregate on Spark; return the result with the
    seconds of each phase (``import``, ``start``, ``export``, ``aggregate``)."""
    from monitor.config.windows import EVERYTHING
    from monitor.traffic.clicks import ClickSettings, click_grades
    from monitor.traffic.engine import connect
    from monitor.traffic.importer import import_logs
    from monitor.traffic.online import online_metrics
    from monitor.traffic.spark import SparkSettings, spark_session, tables_on_spark

    phases: dict[str, float] = {}
    start = time.perf_counter()
    connection = connect(db)
    try:
        summary = import_logs(connection, [queries], [events])
        phases["import"] = time.perf_counter() - start
        with spark_session(SparkSettings(master)) as spark:
            phases["start"] = time.perf_counter() - start - sum(phases.values())
            with tables_on_spark(spark, connection) as reader:
                phases["export"] = time.perf_counter() - start - sum(phases.values())
                metrics = online_metrics(reader, EVERYTHING)
                grades = click_grades(reader, ClickSettings())
                phases["aggregate"] = time.perf_counter() - start - sum(phases.values())
    finally:
        connection.close()
    return {**_result(summary, metrics, grades), "phases": phases}


def with_pandas(queries: Path, events: Path, kind: str) -> dict[str, Any]:
    """Return what :func:`ours` returns, read and computed with pandas alone.

    The checks are those that change the figures of these (well-formed) logs: the default
    application, a document listed twice kept at its first place, the distinct-client floor
    and events of stored searches only; the metrics follow ``monitor.traffic.online`` and
    ``monitor.traffic.clicks`` with their defaults (click action ``click``, gap 300 s,
    PaulScore factor 0.5; ranks 1 to 10, at least 10 impressions, prior 1).
    """
    import numpy as np
    import pandas as pd

    from monitor.traffic.importer import MIN_DISTINCT_CLIENTS
    from monitor.traffic.keys import query_key

    if kind == "parquet":
        q = pd.read_parquet(queries)
        e = pd.read_parquet(events)
        e["object_id"] = e["object"].str.get("object_id")
        e["position"] = e["event_attributes"].str.get("position").str.get("ordinal")
    else:
        q = pd.read_json(queries, lines=True, dtype=False)
        e = pd.read_json(events, lines=True, dtype=False)
        e["object_id"] = e["object"].str.get("object_id")
        e["position"] = e["event_attributes"].str.get("position").str.get("ordinal")
    for frame in (q, e):
        frame["ts"] = pd.to_datetime(frame["timestamp"], utc=True).dt.tz_localize(None)
    q["application"] = q["application"].fillna("default") if "application" in q else "default"
    texts = q["user_query"].unique()
    q["query_key"] = q["user_query"].map(dict(zip(texts, map(query_key, texts), strict=True)))
    clients = q.groupby("query_key")["client_id"].nunique()
    q = q[q["query_key"].isin(clients.index[clients >= MIN_DISTINCT_CLIENTS])].copy()
    q["hits"] = q["query_response_hit_ids"].str.len()
    q["latency_ms"] = (
        pd.to_numeric(q["query_attributes"].str.get("latency_ms"), errors="coerce")
        if "query_attributes" in q
        else np.nan
    )
    q["epoch_s"] = q["ts"].astype("datetime64[us]").astype("int64") / 1e6
    shown = q[["query_id", "query_response_hit_ids"]].explode("query_response_hit_ids")
    shown = shown.dropna().rename(columns={"query_response_hit_ids": "doc"})
    shown["rank"] = shown.groupby(level=0).cumcount() + 1
    shown = shown.drop_duplicates(["query_id", "doc"], keep="first")
    e = e[e["query_id"].isin(q["query_id"])]
    clicks = e[e["action_name"] == "click"]

    # Online metrics.
    c = clicks[["query_id", "object_id", "position"]].merge(
        shown.rename(columns={"doc": "object_id"}), on=["query_id", "object_id"], how="left"
    )
    c["rank"] = c["rank"].fillna(c["position"])
    per = c.groupby("query_id").agg(clicks=("query_id", "size"), first_rank=("rank", "min"))
    ranked = c.dropna(subset=["rank"]).drop_duplicates(["query_id", "rank"])
    paul = (0.5 ** (ranked["rank"] - 1)).groupby(ranked["query_id"]).sum()
    s = q[["query_id", "query_key", "client_id", "application", "ts", "epoch_s", "hits"]]
    s = s.assign(latency_ms=q["latency_ms"])
    s = s.sort_values(["client_id", "application", "ts", "query_id"])
    same = (s["client_id"].shift(-1) == s["client_id"]) & (
        s["application"].shift(-1) == s["application"]
    )
    s = s.assign(
        reformulated=(
            same
            & (s["query_key"].shift(-1) != s["query_key"])
            & (s["epoch_s"].shift(-1) - s["epoch_s"] <= 300.0)
        ).astype(float)
    )
    s = s.set_index("query_id").join(per).join(paul.rename("paul"))
    s["clicks"] = s["clicks"].fillna(0)
    s["paul"] = s["paul"].fillna(0.0)
    metrics: dict[str, Any] = {}
    for name, part in [("None", s), *sorted(s.groupby("application"))]:
        first = part["first_rank"]
        with_results = part["hits"] > 0
        metrics[str(name)] = {
            "searches": len(part),
            "zero_result_rate": float((part["hits"] == 0).mean()),
            "ctr": float((part["clicks"] > 0).mean()),
            **{f"ctr@{k}": float((first <= k).mean()) for k in (1, 3, 5)},
            "abandonment": float((part.loc[with_results, "clicks"] == 0).mean())
            if with_results.any()
            else None,
            "mean_first_click_position": float(first.mean()) if first.notna().any() else None,
            "reformulation_rate": float(part["reformulated"].mean()),
            "paulscore": float(part["paul"].mean()),
            **{
                name: float(part["latency_ms"].quantile(q / 100))
                if part["latency_ms"].notna().any()
                else None
                for name, q in (("latency_p50", 50), ("latency_p95", 95))
            },
        }

    # COEC.
    marked = shown[shown["rank"] <= 10].merge(q[["query_id", "query_key"]], on="query_id")
    clicked = clicks.dropna(subset=["object_id"])[["query_id", "object_id"]].drop_duplicates()
    clicked = clicked.rename(columns={"object_id": "doc"}).assign(click=1)
    marked = marked.merge(clicked, on=["query_id", "doc"], how="left")
    marked["click"] = marked["click"].fillna(0).astype(np.int64)
    marked["expected"] = marked["rank"].map(marked.groupby("rank")["click"].mean())
    pairs = marked.groupby(["query_key", "doc"]).agg(
        impressions=("click", "size"), clicks=("click", "sum"), expected=("expected", "sum")
    )
    pairs = pairs[pairs["impressions"] >= 10].reset_index()
    pairs["score"] = (pairs["clicks"] + 1.0) / (pairs["expected"] + 1.0)
    return {
        "stored": [len(q), len(e)],
        "metrics": metrics,
        "grades": pairs[["query_key", "doc", "impressions", "clicks", "expected", "score"]]
        .sort_values(["query_key", "doc"])
        .values.tolist(),
    }


def disagreement(a: dict[str, Any], b: dict[str, Any]) -> str | None:
    """Return where the two results differ (beyond 1e-9), or None when they agree."""
    if a["stored"] != b["stored"]:
        return f"stored searches and events: {a['stored']} vs {b['stored']}"
    if a["metrics"].keys() != b["metrics"].keys():
        return f"applications: {sorted(a['metrics'])} vs {sorted(b['metrics'])}"
    for application, values in a["metrics"].items():
        for name, value in values.items():
            other = b["metrics"][application][name]
            if (value is None) != (other is None) or (
                value is not None and not math.isclose(value, other, rel_tol=0, abs_tol=1e-9)
            ):
                return f"{name} of application {application}: {value} vs {other}"
    if len(a["grades"]) != len(b["grades"]):
        return f"graded pairs: {len(a['grades'])} vs {len(b['grades'])}"
    for mine, theirs in zip(a["grades"], b["grades"], strict=True):
        if mine[:4] != theirs[:4] or any(
            not math.isclose(x, y, rel_tol=0, abs_tol=1e-9)
            for x, y in zip(mine[4:], theirs[4:], strict=True)
        ):
            return f"pair {mine[:2]}: {mine[2:]} vs {theirs[2:]}"
    return None


def _child(engine: str, kind: str, folder: Path, master: str) -> None:
    """Run one engine on one format; print its seconds and write its result beside."""
    queries, events = folder / f"queries.{kind}", folder / f"events.{kind}"
    db = folder / f"traffic-{kind}.duckdb"
    db.unlink(missing_ok=True)
    start = time.perf_counter()
    if engine == "ours":
        result = ours(queries, events, db)
    elif engine == "spark":
        result = on_spark(queries, events, db, master)
    else:
        result = with_pandas(queries, events, kind)
    seconds = time.perf_counter() - start
    db.unlink(missing_ok=True)
    (folder / f"result-{engine}-{kind}.json").write_text(json.dumps(result), encoding="utf-8")
    print(json.dumps({"seconds": seconds}))


def _measure(
    engine: str, kind: str, folder: Path, master: str
) -> tuple[float, float, dict[str, Any]]:
    """Run one engine on one format in a fresh process; return (seconds, peak MB, result).

    The seconds are the child's own (import, metrics and COEC, or pandas doing the same:
    not the interpreter's start or the result written after); the peak RSS is the child's
    ``ru_maxrss``, whole process (for Spark, the largest of it and its JVM).
    """
    with tempfile.TemporaryFile() as out:
        child = subprocess.Popen(
            [sys.executable, __file__, "--child", engine, kind, str(folder), master], stdout=out
        )
        _, status, usage = os.wait4(child.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{engine} on {kind} exited {os.waitstatus_to_exitcode(status)}")
        out.seek(0)
        seconds = float(json.loads(out.read().decode("utf-8").splitlines()[-1])["seconds"])
    result = json.loads((folder / f"result-{engine}-{kind}.json").read_text(encoding="utf-8"))
    return seconds, usage.ru_maxrss / 1024, result


def _spark_version(engine: str) -> str:
    if engine != "spark":
        return ""
    from monitor.traffic.spark import java, pyspark_sql

    version = subprocess.run([java(), "-version"], capture_output=True, text=True).stderr
    pyspark_sql()  # one line naming the extra when pyspark is missing
    return f", pyspark {_pyspark_version()}, {version.splitlines()[0]}"


def _pyspark_version() -> str:
    import pyspark

    return str(pyspark.__version__)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--searches", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=1, help="runs per engine and format")
    parser.add_argument("--formats", nargs="+", choices=FORMATS, default=list(FORMATS))
    parser.add_argument("--no-pandas", action="store_true", help="time ours alone")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument(
        "--engine",
        choices=("duckdb", "spark"),
        default="duckdb",
        help="spark: time the aggregation on Spark beside ours, instead of pandas",
    )
    parser.add_argument("--spark-master", default="local[2]", help="with --engine spark")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child[0], args.child[1], Path(args.child[2]), args.child[3])
        return 0
    import duckdb
    import pandas as pd
    import pyarrow as pa

    print(
        f"Python {sys.version.split()[0]}, DuckDB {duckdb.__version__}, pandas {pd.__version__}, "
        f"pyarrow {pa.__version__}, {os.cpu_count()} CPUs" + _spark_version(args.engine),
        flush=True,
    )
    failed = False
    with tempfile.TemporaryDirectory(prefix="bench-logs-") as tmp:
        folder = Path(tmp)
        start = time.perf_counter()
        held = write_logs(folder, args.searches, args.seed, tuple(args.formats))
        sizes = ", ".join(
            f"{path.name} {path.stat().st_size / 1e6:.0f} MB" for path in sorted(folder.iterdir())
        )
        print(
            f"{held['searches']:,} searches, {held['impressions']:,} hit-list entries + "
            f"{held['clicks']:,} clicks = {held['impressions'] + held['clicks']:,} events; "
            f"generated in {time.perf_counter() - start:.1f} s ({sizes})",
            flush=True,
        )
        second = "spark" if args.engine == "spark" else "pandas"
        engines = ["ours"] if args.no_pandas and second == "pandas" else ["ours", second]
        scale = args.searches == 1_000_000
        for kind in args.formats:
            rows: dict[str, tuple[list[float], list[float], dict[str, Any]]] = {}
            for _ in range(max(1, args.repeat)):
                for engine in engines:  # in turn, so both meet the same load
                    seconds, peak, result = _measure(engine, kind, folder, args.spark_master)
                    times, peaks, _ = rows.get(engine, ([], [], {}))
                    rows[engine] = ([*times, seconds], [*peaks, peak], result)
            for engine, (times, peaks, _) in rows.items():
                verdict = ""
                if engine == "ours":
                    missed = min(times) > TARGET_SECONDS[kind] or max(peaks) > TARGET_MB
                    target = f"target <= {TARGET_SECONDS[kind]:g} s, <= {TARGET_MB:g} MB"
                    if scale:
                        verdict = f"  {target}: {'MISSED' if missed else 'met'}"
                        failed |= missed and args.check
                    else:
                        verdict = f"  ({target} at 1,000,000 searches)"
                elif engine == "spark":
                    phases = rows[engine][2]["phases"]
                    verdict = f"  {args.spark_master}: " + ", ".join(
                        f"{name} {seconds:.1f} s" for name, seconds in phases.items()
                    )
                print(
                    f"{kind:8} {engine:7} best {min(times):7.2f} s  median "
                    f"{statistics.median(times):7.2f} s  peak RSS {max(peaks):6.0f} MB{verdict}",
                    flush=True,
                )
            if second in rows:
                differs = disagreement(rows["ours"][2], rows[second][2])
                found = rows["ours"][2]
                print(
                    f"{kind:8} agreement with {second}: "
                    + (
                        f"DIFFER: {differs}"
                        if differs
                        else f"{len(found['grades']):,} COEC pairs and "
                        f"{len(found['metrics'])} metric rows agree to 1e-9"
                    ),
                    flush=True,
                )
                failed |= differs is not None
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
