"""ANN recall against exact search: faiss HNSW vs brute force, sweeping efSearch.

With no labels at all, exact search is the ground truth: :func:`monitor.runner.reference_qrels`
takes each query's exact top 10 as its relevant set, and recall@10 of the HNSW run against it
is the index's recall. The vectors are random (a mixture of Gaussian clusters, so that the
graph has work to do), made here with numpy. Install the extra and run from the repository
root (about 10 s)::

    pip install -e '.[examples]'
    python -m examples.ann_recall                  # defaults: 20,000 vectors, 64 dims
    python -m examples.ann_recall --ef 10 20 40 80 160 --queries 500

Both searches declare ``takes_query``: they look the query vector up by the query's id.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass

import faiss
import numpy as np
import numpy.typing as npt

from monitor import evaluate
from monitor.records import MetaValue, Query
from monitor.runner import reference_qrels, run_queries

Matrix = npt.NDArray[np.float32]


def make_vectors(count: int, dim: int, *, clusters: int, rng: np.random.Generator) -> Matrix:
    """Return ``count`` vectors drawn around ``clusters`` random centres."""
    centres = rng.normal(size=(clusters, dim)).astype(np.float32)
    members = rng.integers(0, clusters, size=count)
    noise = rng.normal(scale=0.6, size=(count, dim)).astype(np.float32)
    return np.ascontiguousarray(centres[members] + noise, dtype=np.float32)


class ExactSearch:
    """Brute-force L2 search in numpy: the ground truth."""

    takes_query = True

    def __init__(self, vectors: Matrix, queries: dict[str, npt.NDArray[np.float32]]) -> None:
        self.vectors = vectors
        self.norms = np.einsum("ij,ij->i", vectors, vectors)
        self.queries = queries

    def __call__(self, query: Query, k: int) -> list[dict[str, object]]:
        """Return the ``k`` nearest vectors' ids, nearest first."""
        vector = self.queries[query.id]
        distances = self.norms - 2.0 * (self.vectors @ vector)  # |x|^2 - 2x.q (+ |q|^2)
        top = np.argpartition(distances, k)[:k]
        top = top[np.argsort(distances[top], kind="stable")]
        return [{"id": f"v{i}", "score": -float(distances[i])} for i in top.tolist()]


class HnswSearch:
    """faiss HNSW search; ``ef_search`` trades recall for speed."""

    takes_query = True

    def __init__(
        self, vectors: Matrix, queries: dict[str, npt.NDArray[np.float32]], *, m: int = 32
    ) -> None:
        self.index = faiss.IndexHNSWFlat(vectors.shape[1], m)
        self.index.hnsw.efConstruction = 80
        self.index.add(vectors)
        self.queries = queries

    @property
    def ef_search(self) -> int:
        """Return the size of the search's candidate list."""
        return int(self.index.hnsw.efSearch)

    @ef_search.setter
    def ef_search(self, value: int) -> None:
        self.index.hnsw.efSearch = value

    def __call__(self, query: Query, k: int) -> list[dict[str, object]]:
        """Return the ``k`` approximate nearest ids, nearest first."""
        distances, ids = self.index.search(self.queries[query.id][None, :], k)
        return [
            {"id": f"v{i}", "score": -float(d)}
            for i, d in zip(ids[0].tolist(), distances[0].tolist(), strict=True)
            if i >= 0
        ]

    def stats(self) -> dict[str, MetaValue]:
        """Report the index size and its search setting."""
        return {"index_size": int(self.index.ntotal), "index_version": f"hnsw ef={self.ef_search}"}


@dataclass(frozen=True, slots=True)
class SweepRow:
    """One efSearch setting's recall and latency."""

    ef_search: int
    recall: float
    p50_ms: float
    p95_ms: float


def sweep(
    *,
    count: int = 20_000,
    dim: int = 64,
    queries: int = 500,
    ef_values: tuple[int, ...] = (10, 20, 40, 80, 160),
    k: int = 10,
    seed: int = 0,
) -> list[SweepRow]:
    """Build the data and both indexes, then measure recall@k for each efSearch."""
    faiss.omp_set_num_threads(1)  # one query per call: threads would only add overhead
    rng = np.random.default_rng(seed)
    clusters = max(1, count // 200)
    vectors = make_vectors(count, dim, clusters=clusters, rng=rng)
    query_vectors = make_vectors(queries, dim, clusters=clusters, rng=rng)
    by_id = {f"q{i}": query_vectors[i] for i in range(queries)}
    query_set = [Query(qid, qid) for qid in by_id]

    truth = reference_qrels(query_set, ExactSearch(vectors, by_id), k=k, progress=False)
    hnsw = HnswSearch(vectors, by_id)
    rows = []
    for ef in ef_values:
        hnsw.ef_search = max(ef, k)  # faiss needs at least k candidates
        result = run_queries(query_set, hnsw, k=k, progress=False, label=f"hnsw-ef{ef}")
        recall = evaluate(truth, result, metrics=[f"recall@{k}"]).means[f"recall@{k}"]
        latency = result.latency
        rows.append(
            SweepRow(
                hnsw.ef_search, recall, 1000 * (latency.p50 or 0.0), 1000 * (latency.p95 or 0.0)
            )
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    """Parse the sizes, run the sweep and print recall@10 per efSearch."""
    parser = argparse.ArgumentParser(description="HNSW recall@10 against exact search.")
    parser.add_argument("--vectors", type=int, default=20_000, help="indexed vectors")
    parser.add_argument("--dim", type=int, default=64, help="dimensions")
    parser.add_argument("--queries", type=int, default=500, help="query vectors")
    parser.add_argument("--ef", type=int, nargs="+", default=[10, 20, 40, 80, 160])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows = sweep(
        count=args.vectors,
        dim=args.dim,
        queries=args.queries,
        ef_values=tuple(args.ef),
        seed=args.seed,
    )
    print(f"{args.vectors:,} vectors x {args.dim} dims, {args.queries} queries, k=10")
    print(f"{'efSearch':>8} {'recall@10':>10} {'p50 ms':>8} {'p95 ms':>8}")
    for row in rows:
        print(f"{row.ef_search:>8} {row.recall:>10.4f} {row.p50_ms:>8.3f} {row.p95_ms:>8.3f}")
    print(f"({time.perf_counter() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
