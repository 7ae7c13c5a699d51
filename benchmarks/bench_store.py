"""Measure what a run costs the store: bytes on disk and the time to read it back.

Run from the repository root::

    python benchmarks/bench_store.py                       # 100,000 queries, SQLite
    python benchmarks/bench_store.py --queries 1000000     # a million
    MONITOR_POSTGRES_URL=postgresql://... python benchmarks/bench_store.py   # and PostgreSQL

The run is built as the job builds one: ``--queries`` queries, each with 1 to 3 graded
relevant documents and the top 10 of a corpus of 10 documents per query (12-hex-digit ids,
as content hashes are; the relevant one in the top 10 three times in four), 0.5% of them
failed, a lognormal latency each, and the default 24 measures (hit_rate, recall, precision,
mrr, ndcg, map at 1, 3, 5, 10) computed by ``monitor.evaluate``. It is saved ``--runs``
times (default 3) into a fresh store; the figures are the mean growth per run and the best
read time:

- bytes per run: growth of the SQLite file (page count x page size, after a checkpoint), or
  of PostgreSQL's ``run_blobs`` and ``runs`` relations with their TOAST and indexes;
- per-query values read back: ``Store.per_query_values(baseline)``, the arrays a
  comparison needs (target <= 0.5 s at 100,000 queries);
- full read: ``Store.get_run(baseline)``, the run with its columns (rankings as arrays) and
  queries built lazily; and with every QueryRecord built (``tuple(run.queries)``);
- save: ``Store.save_run``.

Targets at 100,000 queries: <= 8 MB per run and <= 0.5 s to read the baseline's values.

``--year`` instead simulates a year of hourly runs (8,760) of ``--year-queries`` queries
(default 200) into a SQLite store whose retention keeps the detail of the last 720 runs
(30 days) and the baseline, pruning after each run as the job does, and prints the file
size with and without that retention, and the time a prune takes.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from monitor.metrics.evaluation import evaluate
from monitor.store import QueryRecord, RunRecord, SqlStore, open_store

T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)


def make_run(count: int, seed: int) -> RunRecord:
    """Return a run of ``count`` queries with real metric values (see the module text)."""
    rng = np.random.default_rng(seed)
    corpus = 10 * count
    doc_ids = [f"{x:012x}" for x in rng.integers(0, 16**12, corpus, dtype=np.int64)]
    qrels: dict[str, dict[str, int]] = {}
    ranked: dict[str, list[str]] = {}
    relevant_of: dict[str, tuple[str, ...]] = {}
    tops = rng.integers(0, corpus, (count, 10))
    for i in range(count):
        qid = f"q{i:07d}"
        picks = rng.integers(0, corpus, rng.integers(1, 4))
        grades = {doc_ids[p]: int(rng.integers(1, 4)) for p in picks}
        top = [doc_ids[d] for d in tops[i]]
        if rng.random() < 0.75:
            top[int(rng.integers(0, 10))] = doc_ids[picks[0]]
        qrels[qid], ranked[qid], relevant_of[qid] = grades, top, tuple(grades)
    failed = set(np.flatnonzero(rng.random(count) < 0.005).tolist())
    answered = {qid: r for i, (qid, r) in enumerate(ranked.items()) if i not in failed}
    result = evaluate({q: g for i, (q, g) in enumerate(qrels.items()) if i not in failed}, answered)
    values = result.per_query.to_dict(orient="index")
    latency = rng.lognormal(-3.0, 0.5, count).tolist()
    queries = tuple(
        QueryRecord(
            query_id=qid,
            values={str(k): float(v) for k, v in values.get(qid, {}).items()},
            retrieved_ids=() if i in failed else tuple(ranked[qid]),
            relevant_ids=relevant_of[qid],
            latency_seconds=latency[i],
            error_type="TimeoutError" if i in failed else None,
            error_message="no answer in 5 s" if i in failed else None,
        )
        for i, qid in enumerate(ranked)
    )
    return RunRecord(
        suite="bench",
        pipeline="bench",
        started_at=T0 + timedelta(hours=seed),
        finished_at=T0 + timedelta(hours=seed, minutes=5),
        means=dict(result.means),
        queries=queries,
    )


def _best(call: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def _sqlite_bytes(path: Path) -> int:
    with sqlite3.connect(path) as raw:
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages = raw.execute("PRAGMA page_count").fetchone()[0]
        size = raw.execute("PRAGMA page_size").fetchone()[0]
    return int(pages) * int(size)


def _postgres_bytes(store: SqlStore) -> int:
    with store._db.transaction(write=False) as tx:
        return int(
            tx.scalar(
                "SELECT pg_total_relation_size('run_blobs') + pg_total_relation_size('runs')"
                " + pg_total_relation_size('run_figures')"
            )
        )


def bench(
    store: SqlStore, size_of: Callable[[], int], run: RunRecord, runs: int
) -> dict[str, float]:
    """Save ``run`` ``runs`` times; return bytes per run and the timings in seconds."""
    before = size_of()
    saves = []
    ids = []
    for _ in range(runs):
        start = time.perf_counter()
        ids.append(store.save_run(run))
        saves.append(time.perf_counter() - start)
    per_run = (size_of() - before) / runs
    store.set_baseline(run.suite, ids[0])
    baseline = ids[0]
    values = _best(lambda: store.per_query_values(baseline), 3)
    full = _best(lambda: store.get_run(baseline), 2)
    records = _best(lambda: tuple(store.get_run(baseline).queries), 2)
    arrays = store.per_query_values(baseline)
    if len(arrays.query_ids) != len(run.queries):
        raise SystemExit("the values read back do not match the run saved")
    return {
        "bytes": per_run,
        "values": values,
        "full": full,
        "records": records,
        "save": min(saves),
    }


def _report(where: str, count: int, figures: dict[str, float]) -> None:
    mb = figures["bytes"] / 1e6
    print(f"{where}, {count:,} queries:")
    print(f"  bytes per run              {mb:8.2f} MB   ({figures['bytes'] / count:.1f} B/query)")
    print(f"  per_query_values(baseline) {figures['values']:8.3f} s")
    print(f"  get_run(baseline)          {figures['full']:8.3f} s   (columns, lazy records)")
    print(f"  ... and every record       {figures['records']:8.3f} s   (tuple(run.queries))")
    print(f"  save_run                   {figures['save']:8.3f} s")
    if count == 100_000:
        ok = figures["bytes"] <= 8e6 and figures["values"] <= 0.5
        print(f"  targets (<= 8 MB, <= 0.5 s): {'met' if ok else 'MISSED'}")


def simulate_year(count: int) -> None:
    """Save 8,760 hourly runs, pruning after each; print the file sizes and prune times."""
    from monitor.store.prune import apply_retention
    from monitor.store.retention import Retention

    policy = Retention(runs=720)
    base = make_run(count, seed=1)
    with tempfile.TemporaryDirectory() as folder:
        sizes = {}
        for label, retention in (("without retention", None), ("per_query: 720", policy)):
            path = Path(folder) / f"{label[:4]}.db"
            prunes: list[float] = []
            with open_store(path) as store:
                assert isinstance(store, SqlStore)
                for hour in range(8760):
                    started = T0 + timedelta(hours=hour)
                    run = RunRecord(
                        suite="bench",
                        pipeline="bench",
                        started_at=started,
                        finished_at=started + timedelta(minutes=1),
                        means=base.means,
                        queries=base.queries,
                    )
                    run_id = store.save_run(run)
                    if hour == 0:
                        store.set_baseline("bench", run_id)
                    start = time.perf_counter()
                    apply_retention(store, "bench", retention)
                    prunes.append(time.perf_counter() - start)
                detailed = sum(1 for r in store.list_runs("bench", 10_000) if r.pruned_at is None)
                trend = len(store.history("bench"))
            sizes[label] = _sqlite_bytes(path)
            print(
                f"{label}: {sizes[label] / 1e6:8.1f} MB after 8,760 runs of {count:,} queries;"
                f" {detailed:,} runs with per-query detail, {trend:,} in the trend;"
                f" prune after a run: median {sorted(prunes)[len(prunes) // 2] * 1e3:.1f} ms,"
                f" max {max(prunes) * 1e3:.0f} ms"
            )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--year", action="store_true", help="simulate a year of hourly runs")
    parser.add_argument("--year-queries", type=int, default=200)
    args = parser.parse_args(argv)
    if args.year:
        simulate_year(args.year_queries)
        return 0
    start = time.perf_counter()
    run = make_run(args.queries, seed=1)
    print(f"built a run of {args.queries:,} queries in {time.perf_counter() - start:.1f} s")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.db"
        with open_store(path) as store:
            assert isinstance(store, SqlStore)
            _report(
                "SQLite", args.queries, bench(store, lambda: _sqlite_bytes(path), run, args.runs)
            )
    url = os.environ.get("MONITOR_POSTGRES_URL")
    if url:
        import psycopg

        name = f"bench_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"CREATE SCHEMA {name}")
            try:
                sep = "&" if "?" in url else "?"
                scoped = f"{url}{sep}options=-csearch_path%3D{name}"
                with open_store(scoped) as store:
                    assert isinstance(store, SqlStore)
                    figures = bench(store, lambda: _postgres_bytes(store), run, args.runs)
                _report("PostgreSQL", args.queries, figures)
            finally:
                admin.execute(f"DROP SCHEMA {name} CASCADE")
    return 0


if __name__ == "__main__":
    sys.exit(main())
