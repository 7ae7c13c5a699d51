"""The eval set a suite names: a file, or the bundled Larkfield set."""

from __future__ import annotations

from typing import TYPE_CHECKING

from monitor.errors import UsageError
from monitor.evalset.model import EvalSet

if TYPE_CHECKING:
    from monitor.config.model import EvalSetConfig


def load_evalset(config: EvalSetConfig) -> EvalSet:
    """Return the eval set ``config`` names (bundled or a file), with the judgments it holds.

    A ``reference`` search in ``config`` is not consulted here: the judgments it gives come
    from :func:`monitor.runner.reference.judge_by_reference`, when a run is measured.
    """
    from monitor.evalset import bundled

    if config.bundled is not None:
        if config.bundled != "larkfield":
            raise UsageError(f"unknown bundled eval set {config.bundled!r}; known: larkfield")
        return bundled.larkfield_evalset()
    if config.path is not None:
        return EvalSet.load(config.path, config.format, queries=config.queries)
    # the config loader guarantees one of the two
    raise UsageError("an eval set needs a path or a bundled name")
