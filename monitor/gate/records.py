"""What the gate found for one suite: the comparison, and the gate's own verdict."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from monitor.compare.records import Comparison
from monitor.config.common import LinksConfig

#: The gate's verdict of one suite: ``pass`` (no rule breached), ``regression`` (a rule
#: breached with significant evidence), ``insufficient_evidence`` (a rule's threshold was
#: passed but the change is not significant, or a breach was held as ``unjudged``: the top k
#: holds documents nobody judged, so the gate cannot tell until they are labelled),
#: ``error`` (the candidate could not be measured: ``error`` says why).
GateVerdict = Literal["pass", "regression", "insufficient_evidence", "error"]


@dataclass(frozen=True, slots=True)
class GateResult:
    """One suite gated: the candidate compared with the approved baseline.

    ``candidate`` names what was measured (``replay:run.trec``, a search spec's kind);
    ``baseline`` where the baseline came from (``baseline.json``, ``store run 12``).
    ``comparison`` is None only when ``verdict`` is ``error``.
    """

    suite: str
    verdict: GateVerdict
    candidate: str
    baseline: str
    comparison: Comparison | None = None
    error: str | None = None
    links: LinksConfig = field(default_factory=LinksConfig)
    #: The suite's config file, for the commands the summary prints (None: the default).
    config_file: Path | None = None

    @property
    def passed(self) -> bool:
        """Return whether the suite passes the gate (insufficient evidence passes by default)."""
        return self.verdict in ("pass", "insufficient_evidence")


def gate_verdict(comparison: Comparison) -> GateVerdict:
    """Return the gate's verdict of a comparison with the approved baseline."""
    if comparison.regression:
        return "regression"
    if comparison.verdict in ("insufficient_evidence", "unjudged"):
        return "insufficient_evidence"
    return "pass"
