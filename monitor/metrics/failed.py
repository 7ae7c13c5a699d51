"""The failed-query log: the queries a run missed, one JSON object per line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from monitor.errors import UsageError
from monitor.io import write_text_atomic
from monitor.metrics.spec import parse_metrics
from monitor.runner.result import RunResult

if TYPE_CHECKING:
    from monitor.metrics.evaluation import EvaluationResult

#: How many of a failed query's top ids the log keeps.
TOP_IDS = 5


def failed_queries(
    result: RunResult, evaluation: EvaluationResult, *, recall_floor: float | None = None
) -> list[dict[str, Any]]:
    """Return one record per query the run missed, in query order.

    A query is listed when the search failed for it (``reason`` ``"error"``), when no relevant
    document is in its top k (``"miss"``: hit_rate@k is 0), or when ``recall_floor`` is given
    and its recall@k is below it (``"low_recall"``). Queries with no relevant document are
    listed only when the search failed for them. k is the run's k.

    The values are read from ``evaluation``, the run's own evaluation (the job's
    ``outcome.evaluation``). Only when it did not measure hit_rate@k or recall@k are those
    two measured, from the judgments each outcome carries.
    """
    if recall_floor is not None and not 0 <= recall_floor <= 1:
        raise UsageError(f"recall_floor must be between 0 and 1, not {recall_floor!r}")
    hit_name, recall_name = f"hit_rate@{result.k}", f"recall@{result.k}"
    scores = _with_metrics(evaluation, result, (hit_name, recall_name))
    evaluated = set(scores.query_ids)
    records = []
    for outcome in result.outcomes:
        hit: float | None = None
        recall: float | None = None
        if outcome.query_id in evaluated:
            hit = scores.value(hit_name, outcome.query_id)
            recall = scores.value(recall_name, outcome.query_id)
        if outcome.failed:
            reason = "error"
        elif hit is not None and hit == 0:
            reason = "miss"
        elif recall is not None and recall_floor is not None and recall < recall_floor:
            reason = "low_recall"
        else:
            continue
        records.append(
            {
                "query_id": outcome.query_id,
                "query": outcome.query,
                "reason": reason,
                hit_name: hit,
                recall_name: recall,
                "top_ids": list(outcome.retrieved_ids[:TOP_IDS]),
                "relevant_ids": list(outcome.relevant_ids),
                "error_type": outcome.error_type,
                "error_message": outcome.error_message,
            }
        )
    return records


def write_failed_queries(
    result: RunResult,
    evaluation: EvaluationResult,
    path: str | Path,
    recall_floor: float | None = None,
) -> int:
    """Write :func:`failed_queries` to ``path`` as JSON Lines, atomically; return the count.

    The file is written even when no query failed (then it is empty), so that an old log
    never passes for the latest run's.
    """
    records = failed_queries(result, evaluation, recall_floor=recall_floor)
    text = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
    write_text_atomic(path, text)
    return len(records)


def _with_metrics(
    evaluation: EvaluationResult, result: RunResult, names: tuple[str, ...]
) -> EvaluationResult:
    """Return ``evaluation`` if it measured every metric in ``names``, else a measure of them.

    hit_rate and recall count every document of grade 1 or more as relevant, whatever its
    grade, so the relevant ids each outcome carries judge them exactly.
    """
    if set(parse_metrics(names)) <= set(evaluation.metrics):
        return evaluation
    from monitor.metrics.evaluation import evaluate

    qrels = {o.query_id: dict.fromkeys(o.relevant_ids, 1) for o in result.outcomes}
    return evaluate(qrels, result, metrics=names)
