"""The simulator: score one hand-edited ranking with the engine ``evaluate`` uses.

A simulation is one query's ranking (doc ids best first, each with a grade: 0 is judged not
relevant, 1-3 relevant), a cutoff ``k`` and the number of relevant documents in the whole
collection (at least those in the ranking: the others are relevant documents the ranking
missed). Every measure the engine offers is computed by :func:`monitor.evaluate` at ``k``;
this module adds no metric arithmetic of its own beyond the worked example it prints beside
each figure, built from the same grades and ranks so that a reader can check it by hand.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from monitor.errors import UsageError
from monitor.metrics.spec import COUNTS, MEASURES, Cutoff, Metric
from monitor.web import definitions

if TYPE_CHECKING:
    from monitor.web.pages import QueryPage

#: The grades a document may take in the simulator (binary mode uses 0 and 1).
GRADES = (0, 1, 2, 3)
#: The most documents one simulation ranks, and the largest cutoff and collection.
MAX_DOCS = 1000
#: Prefix of the ids standing for relevant documents the ranking does not hold.
_MISSED = "\x00missed-"
_QUERY = "simulated"


@dataclass(frozen=True, slots=True)
class Simulation:
    """One ranking to score: ``docs`` best first with their grades, the cutoff ``k`` and
    ``relevant_in_collection`` (R: relevant documents in the collection)."""

    docs: tuple[tuple[str, int], ...]
    k: int
    relevant_in_collection: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "docs", tuple(self.docs))
        if not 1 <= self.k <= MAX_DOCS:
            raise UsageError(f"k: expected an integer from 1 to {MAX_DOCS}, got {self.k!r}")
        seen: set[str] = set()
        for position, (doc, grade) in enumerate(self.docs, 1):
            if not doc or doc.startswith(_MISSED):
                raise UsageError(f"docs[{position}]: expected a non-empty doc id, got {doc!r}")
            if doc in seen:
                raise UsageError(f"docs[{position}]: doc id {doc!r} is listed twice")
            seen.add(doc)
            if grade not in GRADES:
                raise UsageError(
                    f"docs[{position}] ({doc}): grade expected one of 0, 1, 2, 3, got {grade!r}"
                )
        listed = self.listed_relevant
        if not listed <= self.relevant_in_collection <= MAX_DOCS:
            raise UsageError(
                "relevant_in_collection: expected an integer from the "
                f"{listed} relevant documents listed to {MAX_DOCS}, "
                f"got {self.relevant_in_collection!r}"
            )

    @property
    def listed_relevant(self) -> int:
        """Return how many documents of the ranking are relevant (grade >= 1)."""
        return sum(1 for _, grade in self.docs if grade >= 1)

    def qrels(self) -> dict[str, dict[str, int]]:
        """Return the judgments: the ranking's grades and one grade-1 judgment per relevant
        document of the collection the ranking does not hold."""
        judged = dict(self.docs)
        missed = self.relevant_in_collection - self.listed_relevant
        judged.update({f"{_MISSED}{i}": 1 for i in range(missed)})
        return {_QUERY: judged}

    def run(self) -> dict[str, list[str]]:
        """Return the ranking as a run of one query."""
        return {_QUERY: [doc for doc, _ in self.docs]}


def metrics_at(k: int) -> tuple[Metric, ...]:
    """Return every measure the engine offers, at cutoff ``k`` where it takes one."""
    return tuple(
        Metric(measure) if rule is Cutoff.NONE else Metric(measure, k)
        for measure, rule in MEASURES.items()
    )


def seed_of(view: QueryPage | None) -> dict[str, Any]:
    """Return the simulation a query page starts the simulator with (a blank one for None):
    the current ranking with its grades (unjudged as 0), k = 10 or the ranking's length when
    shorter, and R counting every document judged relevant."""
    if view is None:
        return {"docs": [], "k": 10, "relevant_in_collection": 0}
    grades = [max(row.grade or 0, 0) for row in view.current_rows]
    docs = [
        {"id": row.doc_id, "grade": grade}
        for row, grade in zip(view.current_rows, grades, strict=True)
    ]
    listed = sum(1 for grade in grades if grade >= 1)
    relevant = sum(1 for grade in view.judgments.values() if grade >= 1)
    return {
        "docs": docs,
        "k": min(max(len(docs), 1), 10),
        "relevant_in_collection": max(relevant, listed),
    }


def texts_of(view: QueryPage | None) -> dict[str, str]:
    """Return the text of each document the simulator shows, where the suite has one."""
    if view is None:
        return {}
    rows = (*view.current_rows, *view.missing)
    return {row.doc_id: row.text for row in rows if row.text}


def relevant_of(view: QueryPage | None) -> list[dict[str, Any]]:
    """Return the query's documents judged relevant, best grade first, as ``{id, grade}``:
    those the ranking lacks are offered to add to it."""
    if view is None:
        return []
    judged = sorted(view.judgments.items(), key=lambda item: -item[1])
    return [{"id": doc, "grade": grade} for doc, grade in judged if grade >= 1]


def parse_simulation(data: object) -> Simulation:
    """Return the simulation a JSON body describes; raise UsageError naming the bad key.

    Shape: ``{"docs": [{"id": "d1", "grade": 1}, ...], "k": 10, "relevant_in_collection": 3}``
    (``relevant_in_collection`` defaults to the relevant documents listed).
    """
    if not isinstance(data, Mapping):
        raise UsageError(f"the request body: expected a JSON object, got {type(data).__name__}")
    known = {"docs", "k", "relevant_in_collection"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise UsageError(f"unknown key {unknown[0]!r}: expected one of {', '.join(sorted(known))}")
    raw_docs = data.get("docs", [])
    if not isinstance(raw_docs, list) or len(raw_docs) > MAX_DOCS:
        raise UsageError(f"docs: expected a list of at most {MAX_DOCS} {{id, grade}} objects")
    docs = []
    for position, item in enumerate(raw_docs, 1):
        if not isinstance(item, Mapping) or not isinstance(item.get("id"), str):
            raise UsageError(f"docs[{position}]: expected an object with a string 'id'")
        docs.append((item["id"], _integer(item.get("grade", 0), f"docs[{position}].grade")))
    k = _integer(data.get("k", 10), "k")
    listed = sum(1 for _, grade in docs if grade >= 1)
    relevant = _integer(data.get("relevant_in_collection", listed), "relevant_in_collection")
    return Simulation(docs=tuple(docs), k=k, relevant_in_collection=relevant)


def _integer(value: object, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"{key}: expected an integer, got {value!r}")
    return value


def simulate(simulation: Simulation) -> dict[str, Any]:
    """Return every metric of the simulation with its formula and worked arithmetic.

    Shape: ``{"k", "relevant_in_collection", "metrics": {name: value}, "shown": {name:
    text}, "explain": {name: {"formula", "worked", "definition"}}}``; the values are
    :func:`monitor.evaluate`'s, ``shown`` the value as the page prints it (a count as an
    integer) and ``definition`` the link to the measure's definition.
    """
    from monitor.metrics.evaluation import evaluate

    metrics = metrics_at(simulation.k)
    result = evaluate(simulation.qrels(), simulation.run(), metrics, include_no_relevant=True)
    values = {str(metric): result.value(metric, _QUERY) for metric in metrics}
    return {
        "k": simulation.k,
        "relevant_in_collection": simulation.relevant_in_collection,
        "metrics": values,
        "shown": {str(metric): shown(metric, values[str(metric)]) for metric in metrics},
        "explain": {
            str(metric): {
                **explain(metric, simulation, values[str(metric)]),
                "definition": definitions.href(metric.measure),
            }
            for metric in metrics
        },
    }


def shown(metric: Metric, value: float) -> str:
    """Return ``value`` as the simulator prints it: a count as an integer, a score with
    four decimals."""
    if not math.isfinite(value):
        return "-"
    return f"{round(value)}" if metric.measure in COUNTS else f"{value:.4f}"


def explain(metric: Metric, simulation: Simulation, value: float) -> dict[str, str]:
    """Return the formula of ``metric`` and the arithmetic that gives ``value`` here."""
    grades = [grade for _, grade in simulation.docs]
    k = metric.k
    top = grades if k is None else grades[:k]
    relevant_ranks = [rank for rank, grade in enumerate(top, 1) if grade >= 1]
    hits, r = len(relevant_ranks), simulation.relevant_in_collection
    shown = _fmt(value)
    measure = metric.measure
    cut = "k" if k is not None else "the end"
    if measure == "hit_rate":
        return _say(
            "1 if a relevant document is in the top k, else 0", f"{shown}: {hits} in top {k}"
        )
    if measure == "precision":
        return _say("relevant in top k / k", f"{shown} = {hits}/{k}")
    if measure == "recall":
        return _say("relevant in top k / R", f"{shown} = {hits}/{r}")
    if measure == "f1":
        p, rec = hits / (k or 1), (hits / r if r else 0.0)
        return _say("2PR / (P + R)", f"{shown} = 2*{_fmt(p)}*{_fmt(rec)}/({_fmt(p)}+{_fmt(rec)})")
    if measure == "r_precision":
        in_r = sum(1 for grade in grades[:r] if grade >= 1)
        return _say("relevant in top R / R", f"{shown} = {in_r}/{r}")
    if measure == "mrr":
        first = relevant_ranks[0] if relevant_ranks else None
        worked = f"{shown} = 1/{first}" if first else f"{shown}: no relevant document by {cut}"
        return _say(f"1 / rank of the first relevant document by {cut}", worked)
    if measure == "map":
        terms = [_fmt(i / rank) for i, rank in enumerate(relevant_ranks, 1)]
        worked = f"{shown} = ({'+'.join(terms) or '0'})/{r}"
        return _say(f"sum of precision at each relevant rank by {cut} / R", worked)
    if measure in ("ndcg", "ndcg_burges"):
        gain = (lambda g: float(g)) if measure == "ndcg" else (lambda g: 2.0**g - 1)
        ideal_grades = sorted(
            [g for g in simulation.qrels()[_QUERY].values() if g > 0], reverse=True
        )
        dcg = _dcg([gain(g) for g in top])
        idcg = _dcg([gain(g) for g in (ideal_grades if k is None else ideal_grades[:k])])
        label = "grade" if measure == "ndcg" else "2^grade - 1"
        return _say(
            f"DCG / IDCG, gain = {label}, discount log2(rank + 1), IDCG from all judgments",
            f"{shown} = DCG {_fmt(dcg)} / IDCG {_fmt(idcg)}",
        )
    return _say(definitions.summary(measure), shown)


def _dcg(gains: Sequence[float]) -> float:
    return sum(g / math.log2(rank + 1) for rank, g in enumerate(gains, 1))


def _fmt(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".") if math.isfinite(value) else "n/a"


def _say(formula: str, worked: str) -> dict[str, str]:
    return {"formula": formula, "worked": worked}
