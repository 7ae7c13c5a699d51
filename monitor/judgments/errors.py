"""Errors of the judgment layers; each builds its message from its fields."""

from __future__ import annotations

from collections.abc import Sequence

from monitor.errors import UsageError
from monitor.judgments.merge import Conflict


class JudgmentConflictError(UsageError):
    """A layer grades a (query, doc) differently from a grade already in force."""

    def __init__(self, suite: str, found: Sequence[Conflict]) -> None:
        self.suite = suite
        self.conflicts = tuple(found)
        shown = "; ".join(conflict.describe() for conflict in self.conflicts[:5])
        more = f" (and {len(self.conflicts) - 5} more)" if len(self.conflicts) > 5 else ""
        super().__init__(
            f"suite {suite!r}: {len(self.conflicts)} conflicting grade(s): {shown}{more}; "
            "add the layer with --override to replace them"
        )


class UnknownQueriesError(UsageError):
    """A layer grades queries that the suite's eval set does not hold."""

    def __init__(self, suite: str, source: str, query_ids: Sequence[str]) -> None:
        self.suite = suite
        self.query_ids = tuple(query_ids)
        shown = ", ".join(repr(qid) for qid in self.query_ids[:5])
        super().__init__(
            f"{source}: expected query ids of the eval set of suite {suite!r}, found "
            f"{len(self.query_ids)} unknown: {shown}; a layer adds grades, never queries"
        )
