"""A search that answers every query at once: :class:`BulkSearch`.

A search that holds its rankings in arrays (a replay of a saved run) can answer a whole eval
set in one call instead of a call per query (:func:`answers_in_bulk`). Its answer is an
:class:`~monitor.run.answers.Answers`, every query's hits as columns, cut to k and free of
repeated ids as the runner keeps a call per query's, so a bulk run and a run query by query
record the same rankings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from monitor.evalset.columns import EvalColumns
    from monitor.run.answers import Answers


class BulkSearch(Protocol):
    """A search that answers every query in one call (see the module's docstring)."""

    def answer_all(self, queries: EvalColumns, k: int) -> Answers | None:
        """Return the rankings of ``queries`` (an eval set's columns: ``queries.ids`` their
        ids, ``queries[i]`` a query's record) cut to ``k``, or None to be asked one by one."""
        ...


def answers_in_bulk(search: object) -> BulkSearch | None:
    """Return ``search`` when it answers from memory and in bulk (``answer_all``), else None."""
    from monitor.search.base import answers_in_memory

    if answers_in_memory(search) and callable(getattr(search, "answer_all", None)):
        return search  # type: ignore[return-value]  # it has answer_all
    return None
