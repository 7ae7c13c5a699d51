"""Ground truth from a reference search, for measuring an approximate one against it.

To measure an ANN index's recall, run the queries through exact search once and take its
top k as the relevant documents::

    truth = reference_qrels(queries, exact_search, k=10)
    scores = evaluate(truth, run_queries(queries, ann_search, k=10), metrics=["recall@10"])

A suite whose eval set names a ``reference`` search is judged with
:func:`judge_by_reference` before each run; the judgments are stored with the run, so a
later report reads them from the store instead of asking the reference again.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from monitor.errors import SearchBackendError
from monitor.records import Query
from monitor.runner.run import run_queries
from monitor.search.base import Search

if TYPE_CHECKING:
    from monitor.config.model import SearchConfig
    from monitor.evalset import EvalSet


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


def judge_by_reference(evalset: EvalSet, reference: SearchConfig, k: int) -> EvalSet:
    """Return ``evalset`` with each query's judgments replaced by the reference's top ``k``.

    The reference search is built from ``reference``, asked once per query, and closed.
    """
    from monitor.evalset import EvalSet
    from monitor.search import build_search, close_search

    search = build_search(reference.kind, reference.plugin_options())
    try:
        truth = reference_qrels(evalset, search, k)
    finally:
        close_search(search)
    return EvalSet(
        name=evalset.name,
        queries=[Query(q.id, q.text, truth.get(q.id, {}), q.metadata) for q in evalset],
    )
