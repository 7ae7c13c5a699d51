"""Whether a run measured anything: enough of its eval set's answerable queries answered.

The error budget decides whether a run's failures fail it; it never decides that a run
which measured nothing is fine. A run is measured when it answered (without an error) at
least ``runner.min_measured`` of the eval set's answerable queries, and one at least: a
query is answerable when it judges a document at ``scoring.relevance_level`` or above, the
only queries a quality metric's mean reads. Below that, :func:`check_measured` raises
:class:`~monitor.errors.NotMeasured`: the run is stored as ``failed``, raises the
``not_measured`` monitor-failure alert and exits 3, so that it is never pinned as a
baseline, exported or passed by the gate.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from monitor.errors import NotMeasured

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from numpy.typing import NDArray

    from monitor.config.model import SuiteConfig
    from monitor.evalset import EvalSet
    from monitor.runner import RunResult


def measured_anything(means: Mapping[str, float]) -> bool:
    """Return whether a run's ``means`` hold a known value: a run whose every mean is
    unknown (an outage stored as ok before such runs failed) measured nothing."""
    return any(not math.isnan(value) for value in means.values())


def needed(min_measured: float, answerable: int) -> int:
    """Return how many answerable queries a run must answer: ``min_measured`` of them, one
    at least."""
    return max(1, math.ceil(min_measured * answerable - 1e-9))


def check_measured(suite: SuiteConfig, evalset: EvalSet, result: RunResult) -> None:
    """Raise :class:`~monitor.errors.NotMeasured` when ``result`` answered fewer of
    ``evalset``'s answerable queries than ``suite`` needs (``runner.min_measured``)."""
    level = suite.scoring.relevance_level
    answerable = _answerable(evalset, level)
    table = result.outcomes
    answered = _answered(evalset, table.query_ids, table.failed_rows())
    measured = int(np.count_nonzero(answerable & answered))
    total = int(np.count_nonzero(answerable))
    least = needed(suite.runner.min_measured, total)
    if measured >= least:
        return
    raise NotMeasured(
        measured,
        least,
        total,
        sent=len(table),
        failed=table.failed,
        why=_why(total, len(evalset), len(table), table.failed, table.error_counts(), level),
    )


def _answerable(evalset: EvalSet, level: int) -> NDArray[np.bool_]:
    """Return, per query of ``evalset``, whether it judges a document at ``level`` or above."""
    columns = evalset.columns()
    owner = np.repeat(np.arange(len(columns), dtype=np.int64), columns.counts)
    hits = np.bincount(owner[columns.grades >= level], minlength=len(columns))
    return np.asarray(hits > 0)


def _answered(evalset: EvalSet, ids: Sequence[str], failed: NDArray[np.bool_]) -> NDArray[np.bool_]:
    """Return, per query of ``evalset``, whether the run answered it without an error."""
    columns = evalset.columns()
    if columns.same_ids(ids):
        return ~failed
    answered = np.zeros(len(columns), dtype=bool)
    for query_id, bad in zip(ids, failed.tolist(), strict=True):
        at = columns.position(query_id)
        if at is not None and not bad:
            answered[at] = True
    return answered


def _why(
    answerable: int,
    queries: int,
    ran: int,
    failed: int,
    errors: dict[str, int],
    level: int,
) -> str:
    """Return what kept the run from measuring, in the words of its figures."""
    if answerable == 0:
        return (
            f"none of its {queries} queries judges a document at grade {level} or above "
            "(scoring.relevance_level)"
        )
    said = []
    if ran < queries:
        said.append(f"{queries - ran} of {queries} queries were never sent (deadline_seconds)")
    if failed:
        top = sorted(errors.items(), key=lambda item: (-item[1], item[0]))
        kinds = ", ".join(f"{kind} x{count}" for kind, count in top)
        said.append(f"{failed} of {ran} queries failed ({kinds})")
    return "; ".join(said)
