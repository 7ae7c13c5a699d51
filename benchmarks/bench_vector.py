"""Measure the vector search kinds: embedding the bundled corpus, and what a pgvector suite
costs beyond the store's own query time.

Run from the repository root, with PostgreSQL and pgvector at ``MONITOR_PGVECTOR_URL``
(``PG_EMBEDDED=1 PGPORT=55433 scripts/start-postgres.sh`` starts one)::

    python benchmarks/bench_vector.py                     # 10,000 queries over 20,000 rows
    python benchmarks/bench_vector.py --queries 2000 --docs 5000 --check

1. **Embedding.** The packaged int8 all-MiniLM-L6-v2 (:mod:`monitor.embedding.onnx`, 2
   threads) is loaded (timed on its own), then embeds the 174 bundled Larkfield passages;
   the best of ``--repeat`` runs is reported, wall time and the process's CPU time.
2. **A pgvector suite with cached embeddings.** A fixed seed (``--seed``) fills a table of
   ``--docs`` random 384-dimensional unit vectors with an HNSW index (m 16, ef_construction
   64; not timed), and the query-embedding cache with a random vector per query text, under
   the packaged model's id, as a scheduled run finds it after its first run (not timed).
   Then, alternately ``--repeat`` times, (a) the store's own time: the search's SQL, one
   prepared execution per query vector on one connection, in a bare loop; (b) the monitor:
   ``run_queries`` over the same queries through the ``pgvector`` kind (concurrency 1, as
   the kind serves its calls on one connection), its ``prepare`` reading every vector from
   the cache. The overhead is (b) / (a) - 1, each the best of its repeats; the run must
   have embedded no query.
3. **Index health.** The same run with ``index_health: {k: 10}`` (``--health-sample N``
   adds ``sample: N``), alternating with (b): its ANN recall asks the exact search (a
   sequential scan) for the queries' vectors. The cost ratio is the run with index health
   over the run without, each the best of its repeats.

``--check`` exits 1 when embedding takes 1 s or more, the overhead is 5% or more, or index
health more than doubles the run's cost.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from monitor.search.health import DEFAULT_SAMPLE

DIMENSION = 384
TABLE = "bench_vector"


def bench_embedding(repeat: int) -> dict[str, float]:
    """Return the model's load time and the best embedding time of the bundled passages."""
    from monitor.embedding import open_embedder
    from monitor.evalset import bundled

    texts = [passage["text"] for passage in bundled.larkfield_passages()]
    started = time.perf_counter()
    embedder = open_embedder({"kind": "onnx", "threads": 2})
    load = time.perf_counter() - started
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        embedder.embed(texts)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    embedder.close()
    return {"passages": len(texts), "load_s": load, "embed_s": min(walls), "cpu_s": min(cpus)}


def fill(url: str, docs: int, queries: int, seed: int, cache: Path) -> tuple[list[str], Any]:
    """Load the table and the query cache; return the query texts and their vectors."""
    from monitor.embedding.cache import CachedEmbedder
    from monitor.embedding.onnx import PACKAGED_NAME, file_digest, packaged_model
    from monitor.search.pgvector import load_table

    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((docs, DIMENSION)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = [f"d{index}" for index in range(docs)]
    load_table(url, TABLE, ids, ids, vectors)
    texts = [f"benchmark query {index}" for index in range(queries)]
    query_vectors = rng.standard_normal((queries, DIMENSION)).astype(np.float32)
    query_vectors /= np.linalg.norm(query_vectors, axis=1, keepdims=True)

    class Prefilled:
        """Answers the cache's one call with the generated vectors, under the model's id."""

        model_id = f"onnx:{PACKAGED_NAME}@{file_digest(packaged_model())[:12]}"
        dimension = DIMENSION

        def embed(self, batch: list[str]) -> Any:
            return query_vectors[[rows[text] for text in batch]]

        def close(self) -> None:
            """Hold nothing."""

    rows = {text: row for row, text in enumerate(texts)}
    CachedEmbedder(Prefilled(), cache).embed(texts)  # written to the cache file
    return texts, query_vectors


def bare(url: str, query_vectors: Any, k: int) -> tuple[float, float]:
    """Return the seconds (wall, this process's CPU) the search's SQL takes for every
    vector, in a bare loop."""
    import psycopg

    from monitor.search.pgvector import _dumper

    with psycopg.connect(url, autocommit=True) as connection:
        info = psycopg.types.TypeInfo.fetch(connection, "vector")
        connection.adapters.register_dumper(np.ndarray, _dumper(psycopg, info.oid))
        sql = (
            f"SELECT id::text, embedding <=> %(vector)b FROM {TABLE}"
            " ORDER BY embedding <=> %(vector)b LIMIT %(k)s"
        )
        connection.execute("SELECT set_config('hnsw.ef_search', '40', false)")
        started, cpu = time.perf_counter(), time.process_time()
        with connection.cursor() as cursor:
            for vector in query_vectors:
                cursor.execute(sql, {"vector": vector, "k": k}, prepare=True)
                cursor.fetchall()
        return time.perf_counter() - started, time.process_time() - cpu


def monitored(
    texts: list[str], k: int, health: dict[str, int] | None = None
) -> tuple[float, float, dict[str, Any]]:
    """Return the seconds (wall, this process's CPU) ``run_queries`` takes through the
    pgvector kind (with ``index_health`` when given), and its stats."""
    from monitor.records import Query
    from monitor.runner.run import run_queries
    from monitor.search import build_search, close_search

    queries = [Query(f"q{index}", text, {"d0": 1}) for index, text in enumerate(texts)]
    options: dict[str, Any] = {
        "url_env": "MONITOR_PGVECTOR_URL",
        "table": TABLE,
        "settings": {"hnsw.ef_search": 40},
    }
    if health is not None:
        options["index_health"] = health
    search = build_search("pgvector", options)
    try:
        search("warm the connection and the session", k)
        started, cpu = time.perf_counter(), time.process_time()
        result = run_queries(queries, search, k=k, concurrency=1, progress=False)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        close_search(search)
    return seconds, cpu, dict(result.search_stats)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its figures as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--health-sample", type=int, default=None, help="index_health's sample (default: all)"
    )
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    url = os.environ.get("MONITOR_PGVECTOR_URL")
    if not url:
        parser.error("set MONITOR_PGVECTOR_URL to a PostgreSQL database with pgvector")
    figures: dict[str, Any] = {"embedding": bench_embedding(args.repeat)}
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["MONITOR_CACHE_DIR"] = scratch
        texts, vectors = fill(url, args.docs, args.queries, args.seed, Path(scratch) / "embeddings")
        stores, monitors, healthy, stats, health_stats = [], [], [], {}, {}
        health = (
            {"k": 10} if args.health_sample is None else {"k": 10, "sample": args.health_sample}
        )
        for _ in range(args.repeat):
            stores.append(bare(url, vectors, 10))
            seconds, cpu, stats = monitored(texts, 10)
            monitors.append((seconds, cpu))
            seconds, cpu, health_stats = monitored(texts, 10, health)
            healthy.append((seconds, cpu))
    store, store_cpu = min(stores)
    monitor, monitor_cpu = min(monitors)
    figures["pgvector"] = {
        "queries": args.queries,
        "docs": args.docs,
        "store_s": store,
        "monitor_s": monitor,
        "overhead": monitor / store - 1,
        "own_cpu_overhead": (monitor_cpu - store_cpu) / store,
        "embedded_queries": stats.get("embedded_queries"),
        "cached_queries": stats.get("cached_queries"),
    }
    with_health = min(healthy)[0]
    figures["index_health"] = {
        "queries": args.queries,
        "sample": args.health_sample or DEFAULT_SAMPLE,
        "run_s": monitor,
        "run_with_index_health_s": with_health,
        "cost_ratio": with_health / monitor,
        "ann_recall@10": health_stats.get("ann_recall@10"),
        "ann_recall_queries": health_stats.get("ann_recall_queries"),
    }
    print(json.dumps(figures, indent=2))
    if not args.check:
        return 0
    missed = figures["embedding"]["embed_s"] >= 1.0 or figures["pgvector"]["overhead"] >= 0.05
    missed = missed or figures["index_health"]["cost_ratio"] > 2.0
    return 1 if missed or stats.get("embedded_queries") != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
