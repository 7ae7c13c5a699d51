"""Ground truth from a reference search, for measuring an approximate one against it.

To measure an ANN index's recall, run the queries through exact search once and take its
top k as the relevant documents::

    truth = reference_qrels(queries, exact_search, k=10)
    scores = evaluate(truth, run_queries(queries, ann_search, k=10), metrics=["recall@10"])
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from monitor.errors import SearchBackendError
from monitor.records import Query
from monitor.runner.run import run_queries
from monitor.search.base import Search


def reference_qrels(
    queries: Iterable[Query], reference_search: Search, k: int, **settings: Any
) -> dict[str, dict[str, int]]:
    """Return ``{query id: {doc id: 1}}``: each query's top ``k`` under ``reference_search``.

    ``settings`` are :func:`~monitor.runner.run_queries` keyword arguments (concurrency,
    timeout, ...). Ground truth must be whole, so any failed query raises SearchBackendError.
    """
    result = run_queries(queries, reference_search, k=k, **settings)
    if result.failed:
        first = result.failures[0]
        raise SearchBackendError(
            f"reference search failed for {result.failed} of {result.total} queries "
            f"(first: {first.query_id}: {first.error_type}: {first.error_message})"
        )
    return {
        outcome.query_id: dict.fromkeys(outcome.retrieved_ids, 1) for outcome in result.outcomes
    }
