"""Metric names: one canonical spelling that parses to a spec and prints back the same.

``ndcg@10`` is the config key, the baseline key, the Prometheus label value and the alert
text; :func:`parse_metric` is the only place that reads one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Literal, TypeAlias, get_args

from monitor.errors import MetricError, UnknownMetricError
from monitor.metrics import names


class Cutoff(Enum):
    """Whether a measure takes a cutoff ``@k``."""

    REQUIRED = "required"
    OPTIONAL = "optional"
    NONE = "none"


#: Every measure the engine computes, with whether it takes a cutoff.
MEASURES: dict[str, Cutoff] = {
    "hit_rate": Cutoff.REQUIRED,
    "precision": Cutoff.REQUIRED,
    "recall": Cutoff.REQUIRED,
    "f1": Cutoff.REQUIRED,
    "mrr": Cutoff.OPTIONAL,
    "ndcg": Cutoff.OPTIONAL,
    "ndcg_burges": Cutoff.OPTIONAL,
    "map": Cutoff.OPTIONAL,
    "r_precision": Cutoff.NONE,
    "bpref": Cutoff.NONE,
    "infap": Cutoff.NONE,
    "judged": Cutoff.REQUIRED,
    "num_ret": Cutoff.NONE,
    "num_rel": Cutoff.NONE,
    "num_rel_ret": Cutoff.OPTIONAL,
    "set_precision": Cutoff.NONE,
    "set_recall": Cutoff.NONE,
    "set_f1": Cutoff.NONE,
    "dcg": Cutoff.OPTIONAL,
    "dcg_burges": Cutoff.OPTIONAL,
    "err": Cutoff.OPTIONAL,
    "rbp": Cutoff.OPTIONAL,
    "rbp_50": Cutoff.OPTIONAL,
    "rbp_80": Cutoff.OPTIONAL,
    "rbp_95": Cutoff.OPTIONAL,
    "rbp_99": Cutoff.OPTIONAL,
}

#: Measures whose value is a count or an unnormalised sum, not a share in [0, 1]; trec_eval
#: sums the counts over queries in its summary line where it averages the others.
UNBOUNDED: frozenset[str] = frozenset({"num_ret", "num_rel", "num_rel_ret", "dcg", "dcg_burges"})
COUNTS: frozenset[str] = frozenset({"num_ret", "num_rel", "num_rel_ret"})

#: Which queries a mean is over: those with a relevant judgment, those in both the judgments
#: and the run (trec_eval's default), or every judged query (trec_eval -c).
Average: TypeAlias = Literal["answerable", "trec_eval", "all"]
AVERAGES: tuple[str, ...] = get_args(Average)

#: The measures and cutoffs evaluated when none are asked for.
DEFAULT_MEASURES: tuple[str, ...] = ("hit_rate", "recall", "precision", "mrr", "ndcg", "map")
DEFAULT_CUTOFFS: tuple[int, ...] = (1, 3, 5, 10)

_NAME = re.compile(r"(?P<measure>[a-z_0-9]+?)(?:@(?P<k>[^@\[]*))?(?:\[(?P<unit>[^\]]*)\])?")
#: An evaluation unit: ``passage``, ``section``, ``document`` or corpus fields joined by ``+``
#: (in a metric name optionally followed by ``:units``). The one owner of the unit grammar: the
#: config schema reads it from here.
UNIT_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\+[A-Za-z_][A-Za-z0-9_]*)*")
#: The two ways a unit metric cuts: k returned passages (the default) or k distinct units.
UNIT_CUTS = ("passages", "units")


@dataclass(frozen=True, slots=True, order=True)
class Metric:
    """A measure with an optional cutoff and unit: ``Metric("ndcg", 10)`` is ``ndcg@10``.

    ``unit`` names what is counted (see :mod:`monitor.metrics.units`): None is the passage, today's
    behaviour, and prints no suffix; ``Metric("recall", 5, "section")`` is
    ``recall@5[section]``, and with ``unit_cut="units"`` it is ``recall@5[section:units]``.
    """

    measure: str
    k: int | None = None
    unit: str | None = None
    unit_cut: str = "passages"

    def __post_init__(self) -> None:
        if self.unit == "passage":
            object.__setattr__(self, "unit", None)
        if self.unit is not None and not UNIT_PATTERN.fullmatch(self.unit):
            raise MetricError(str(self), "a unit is a field name or fields joined by +")
        if self.unit_cut not in UNIT_CUTS:
            raise MetricError(self.measure, f"unit_cut is one of {', '.join(UNIT_CUTS)}")
        if self.unit is None:
            object.__setattr__(self, "unit_cut", "passages")
        rule = MEASURES.get(self.measure)
        if rule is None:
            raise UnknownMetricError(self.measure, MEASURES)
        if self.k is None and rule is Cutoff.REQUIRED:
            raise MetricError(self.measure, f"needs a cutoff, e.g. {self.measure}@10")
        if self.k is not None and rule is Cutoff.NONE:
            raise MetricError(str(self), "takes no cutoff")
        if self.k is not None and (isinstance(self.k, bool) or self.k <= 0):
            raise MetricError(str(self), "the cutoff k must be a positive integer")

    @property
    def bounded(self) -> bool:
        """Tell whether the metric's value is a share in [0, 1]; a count or a DCG is not
        (see :data:`UNBOUNDED`)."""
        return self.measure not in UNBOUNDED

    def __str__(self) -> str:
        name = self.measure if self.k is None else f"{self.measure}@{self.k}"
        if self.unit is None:
            return name
        cut = "" if self.unit_cut == "passages" else f":{self.unit_cut}"
        return f"{name}[{self.unit}{cut}]"


def parse_metric(name: str) -> Metric:
    """Parse ``"ndcg@10"`` (or ``"map"``) into a :class:`Metric`; raise MetricError if invalid.

    Another tool's name (``P_5``, ``nDCG@10``, ``hits@5``: see :mod:`monitor.metrics.names`)
    resolves to its canonical metric; an unknown one suggests the closest known name.
    """
    try:
        return _parse_canonical(name)
    except MetricError as error:
        alias = names.canonical_name(name)
        if alias is not None:
            return _parse_canonical(alias)
        hint = names.option_hint(name)
        if hint is not None:
            raise MetricError(name.strip(), hint) from None
        if isinstance(error, UnknownMetricError) or _NAME.fullmatch(name.strip()) is None:
            suggestion = names.suggest(name, MEASURES)
            raise UnknownMetricError(name.strip(), MEASURES, suggestion=suggestion) from None
        raise


def _parse_canonical(name: str) -> Metric:
    text = name.strip()
    match = _NAME.fullmatch(text)
    if match is None:
        raise MetricError(name, "expected MEASURE or MEASURE@K, e.g. recall@10")
    measure, k_text = match.group("measure"), match.group("k")
    if measure not in MEASURES:
        raise UnknownMetricError(measure, MEASURES)
    unit, unit_cut = _parse_unit(text, match.group("unit"))
    if k_text is None:
        return Metric(measure, None, unit, unit_cut)
    if not re.fullmatch(r"[1-9]\d*", k_text):
        # Only the canonical spelling is accepted, so a name always prints back as written.
        raise MetricError(text, "the cutoff k must be a positive integer written plainly, e.g. @10")
    return Metric(measure, int(k_text), unit, unit_cut)


def _parse_unit(text: str, written: str | None) -> tuple[str | None, str]:
    """Return the unit and unit cut of a ``[UNIT]`` or ``[UNIT:units]`` suffix."""
    if written is None:
        return None, "passages"
    unit, _, cut = written.partition(":")
    if not UNIT_PATTERN.fullmatch(unit) or (cut and cut != "units") or unit == "passage":
        # [passage] is refused: the passage unit is written without a suffix, so names round-trip.
        raise MetricError(
            text, "a unit suffix [FIELD] or [FIELD:units], e.g. recall@5[section]; no [passage]"
        )
    return unit, cut or "passages"


def parse_metrics(names: str | Iterable[str | Metric]) -> tuple[Metric, ...]:
    """Parse a comma-separated string or a list of names into unique metrics, order kept."""
    items = [part for part in names.split(",") if part.strip()] if isinstance(names, str) else names
    seen: dict[Metric, None] = {}
    for item in items:
        seen[item if isinstance(item, Metric) else parse_metric(item)] = None
    if not seen:
        raise MetricError(str(names), "no metric named")
    return tuple(seen)


def grid(measures: Sequence[str], cutoffs: Sequence[int]) -> tuple[Metric, ...]:
    """Return every measure at every cutoff, measures without cutoffs once."""
    out: list[Metric] = []
    for measure in measures:
        if MEASURES.get(measure) is Cutoff.NONE:
            out.append(Metric(measure))
        else:
            out.extend(Metric(measure, k) for k in cutoffs)
    return tuple(out)


def default_metrics() -> tuple[Metric, ...]:
    """Return the default metrics: hit_rate, recall, precision, mrr, ndcg, map at 1, 3, 5, 10."""
    return grid(DEFAULT_MEASURES, DEFAULT_CUTOFFS)
