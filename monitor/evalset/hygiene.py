"""Find the ways an eval set misleads, and describe it: ``evalset check`` and ``evalset stats``.

:func:`check_evalset` returns a :class:`CheckReport` of :class:`Finding` records, each with
a severity (``error`` makes ``evalset check`` exit 4):

- ``leakage``: a query that appears in the text of one of its relevant passages, verbatim
  (error) or nearly: at least :data:`LEAK_OVERLAP` of the query's word 3-grams occur in the
  passage (warning). Texts are compared lower-cased, as words of letters and digits.
- ``duplicate``: queries with the same words (error), or whose word sets have a Jaccard
  similarity of at least :data:`NEAR_DUPLICATE` (warning).
- ``missing_from_corpus``: judged passages the corpus does not hold (error).
- ``no_relevant``: queries without any relevant judgment (info, counted once): the means
  leave them out.
- ``nothing_to_measure``: no answerable query at all, none judging a document at the
  relevance level or above (error): every run of the set would measure nothing.
- ``too_few_queries``: fewer than :data:`MIN_ANSWERABLE` answerable queries (warning), and
  ``small_segment``: a value of a segment key the suite breaks results down by with fewer
  than :data:`MIN_SEGMENT` answerable queries (warning).
- ``power``: each drop rule's minimal detectable drop (:mod:`monitor.compare.power`): info,
  or a warning when the rule's threshold is below it.

:func:`evalset_stats` counts queries, judgments, grades and metadata values.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from monitor.evalset.corpus import Corpus
from monitor.evalset.model import EvalSet
from monitor.terminal import counted

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")

#: Share of a query's word 3-grams found in a relevant passage that makes it a near leak.
LEAK_OVERLAP = 0.6
#: Jaccard similarity of two queries' word sets that makes them near duplicates.
NEAR_DUPLICATE = 0.8
#: Fewer answerable queries than this cannot tell a change from noise (the seeds' minimum).
MIN_ANSWERABLE = 30
#: Fewer answerable queries than this in one segment value make its breakdown noise.
MIN_SEGMENT = 10
_WORD = re.compile(r"[^\W_]+")


class PowerFigure(Protocol):
    """A drop rule's minimal detectable drop, as the check reports it
    (:class:`monitor.compare.power.PowerFigure`, computed from stored runs)."""

    @property
    def detectable(self) -> bool:
        """Return whether the rule's allowed drop can be told from noise."""
        ...

    def sentence(self) -> str:
        """Return the figure as one sentence for people."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready form."""
        ...


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem (or fact) found in an eval set."""

    check: str
    severity: Severity
    message: str
    query_id: str | None = None
    doc_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the finding under its JSON names."""
        return {
            "check": self.check,
            "severity": self.severity,
            "message": self.message,
            "query_id": self.query_id,
            "doc_id": self.doc_id,
        }


@dataclass(frozen=True, slots=True)
class CheckReport:
    """Everything :func:`check_evalset` found in one eval set."""

    name: str
    fingerprint: str
    queries: int
    answerable: int
    findings: tuple[Finding, ...] = ()
    power: tuple[PowerFigure, ...] = field(default=())

    @property
    def has_errors(self) -> bool:
        """Return whether some finding has severity ``error``."""
        return any(f.severity == "error" for f in self.findings)

    def counts(self) -> dict[str, int]:
        """Return the number of findings of each severity."""
        found = Counter(f.severity for f in self.findings)
        return {severity: found.get(severity, 0) for severity in SEVERITIES}

    def to_dict(self) -> dict[str, Any]:
        """Return the report as ``evalset check --format json`` prints it."""
        return {
            "evalset": self.name,
            "fingerprint": self.fingerprint,
            "queries": self.queries,
            "answerable": self.answerable,
            "clean": not self.has_errors,
            "counts": self.counts(),
            "findings": [f.to_dict() for f in self.findings],
            "power": [p.to_dict() for p in self.power],
        }

    def __str__(self) -> str:
        lines = [
            f"eval set {self.name or '-'}: {self.queries} queries, {self.answerable} answerable"
        ]
        width = max((len(f.check) for f in self.findings), default=5)
        for finding in self.findings:
            lines.append(f"{finding.severity:<7}  {finding.check:<{width}}  {finding.message}")
        c = self.counts()
        lines.append(
            f"{counted(c['error'], 'error')}, {counted(c['warning'], 'warning')}, "
            f"{counted(c['info'], 'note')}"
        )
        return "\n".join(lines)


def words(text: str) -> list[str]:
    """Return the lower-cased words (letters and digits) of ``text``."""
    return _WORD.findall(text.lower())


def _grams(tokens: Sequence[str], n: int = 3) -> set[tuple[str, ...]]:
    if len(tokens) < n:
        return {tuple(tokens)} if tokens else set()
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


def leak_overlap(query: str, passage: str) -> float:
    """Return the share of the query's word 3-grams found in ``passage`` (1.0: verbatim)."""
    q, p = words(query), words(passage)
    if not q:
        return 0.0
    if _contains(p, q):
        return 1.0
    q_grams = _grams(q)
    p_grams = _grams(p, min(3, len(q)))
    return len(q_grams & p_grams) / len(q_grams)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Return the Jaccard similarity of two word sets (0.0 when both are empty)."""
    union = a | b
    return len(a & b) / len(union) if union else 0.0


def _contains(haystack: Sequence[str], needle: Sequence[str]) -> bool:
    n = len(needle)
    return any(list(haystack[i : i + n]) == list(needle) for i in range(len(haystack) - n + 1))


def check_evalset(
    evalset: EvalSet,
    corpus: Corpus | None = None,
    *,
    segments: Iterable[str] = (),
    power: Iterable[PowerFigure] = (),
    power_notes: Iterable[Finding] = (),
    relevance_level: int = 1,
) -> CheckReport:
    """Return the findings of every check on ``evalset`` (and its ``corpus`` when given); a
    query is answerable when it judges a document at ``relevance_level`` or above."""
    findings: list[Finding] = []
    answerable = [
        q for q in evalset if any(grade >= relevance_level for grade in q.judgments.values())
    ]
    if corpus is not None:
        findings += _leaks(evalset, corpus)
        findings += _missing(evalset, corpus)
    findings += _duplicates(evalset)
    unanswerable = len(evalset) - len(answerable)
    if unanswerable:
        findings.append(
            Finding(
                "no_relevant",
                "info",
                f"{unanswerable} queries have no relevant judgment; means leave them out",
            )
        )
    if not answerable:
        findings.append(
            Finding(
                "nothing_to_measure",
                "error",
                f"no query is answerable: none judges a document at grade {relevance_level} "
                "or above, so every run would measure nothing",
            )
        )
    elif len(answerable) < MIN_ANSWERABLE:
        findings.append(
            Finding(
                "too_few_queries",
                "warning",
                f"{len(answerable)} answerable queries: below {MIN_ANSWERABLE}, a change "
                "cannot be told from noise",
            )
        )
    for key in segments:
        counts = Counter(q.metadata.get(key) for q in answerable)
        for value, count in counts.items():
            if count < MIN_SEGMENT:
                shown = "(none)" if value is None else value
                findings.append(
                    Finding(
                        "small_segment",
                        "warning",
                        f"segment {key}={shown}: {count} answerable queries, below {MIN_SEGMENT}",
                    )
                )
    figures = tuple(power)
    findings += list(power_notes)
    for figure in figures:
        severity: Severity = "info" if figure.detectable else "warning"
        findings.append(Finding("power", severity, figure.sentence()))
    return CheckReport(
        name=evalset.name,
        fingerprint=evalset.fingerprint,
        queries=len(evalset),
        answerable=len(answerable),
        findings=tuple(findings),
        power=figures,
    )


def _leaks(evalset: EvalSet, corpus: Corpus) -> list[Finding]:
    out = []
    for query in evalset:
        for doc in query.relevant_ids:
            text = corpus.text(doc)
            if text is None:
                continue
            overlap = leak_overlap(query.text, text)
            if overlap >= 1.0:
                severity: Severity = "error"
                how = "verbatim"
            elif overlap >= LEAK_OVERLAP:
                severity, how = "warning", f"nearly ({overlap:.0%} of its word 3-grams)"
            else:
                continue
            out.append(
                Finding(
                    "leakage",
                    severity,
                    f"query {query.id} appears {how} in relevant passage {doc}: {text!r}",
                    query.id,
                    doc,
                )
            )
    return out


def _missing(evalset: EvalSet, corpus: Corpus) -> list[Finding]:
    return [
        Finding(
            "missing_from_corpus",
            "error",
            f"query {query.id} judges passage {doc}, which {corpus.source} does not hold",
            query.id,
            doc,
        )
        for query in evalset
        for doc in query.judgments
        if doc not in corpus
    ]


def _duplicates(evalset: EvalSet) -> list[Finding]:
    out = []
    first: dict[tuple[str, ...], str] = {}
    sets: list[tuple[str, frozenset[str]]] = []
    for query in evalset:
        tokens = tuple(words(query.text))
        if tokens in first:
            message = f"query {query.id} repeats query {first[tokens]}: {query.text!r}"
            out.append(Finding("duplicate", "error", message, query.id))
            continue
        first[tokens] = query.id
        bag = frozenset(tokens)
        for other, other_bag in sets:
            if jaccard(bag, other_bag) >= NEAR_DUPLICATE:
                message = f"query {query.id} nearly repeats query {other}: {query.text!r}"
                out.append(Finding("duplicate", "warning", message, query.id))
                break
        sets.append((query.id, bag))
    return out


@dataclass(frozen=True, slots=True)
class EvalSetStats:
    """What an eval set holds: ``evalset stats``."""

    name: str
    fingerprint: str
    queries: int
    answerable: int
    judgments_per_query: Mapping[str, float]
    grades: Mapping[int, int]
    metadata: Mapping[str, Mapping[str, int]]

    def to_dict(self) -> dict[str, Any]:
        """Return the statistics as ``evalset stats --format json`` prints them."""
        return {
            "evalset": self.name,
            "fingerprint": self.fingerprint,
            "queries": self.queries,
            "answerable": self.answerable,
            "judgments_per_query": dict(self.judgments_per_query),
            "grades": {str(grade): count for grade, count in self.grades.items()},
            "metadata": {key: dict(values) for key, values in self.metadata.items()},
        }

    def __str__(self) -> str:
        j = self.judgments_per_query
        lines = [
            f"eval set     {self.name or '-'}",
            f"fingerprint  {self.fingerprint}",
            f"queries      {self.queries} ({self.answerable} answerable)",
            f"judgments    {j['min']:g} to {j['max']:g} per query, mean {j['mean']:.2f}",
            "grades       " + ", ".join(f"{g}: {c}" for g, c in self.grades.items()),
        ]
        for key, values in self.metadata.items():
            lines.append(f"{key:<12} " + ", ".join(f"{v}: {c}" for v, c in values.items()))
        return "\n".join(lines)


def evalset_stats(evalset: EvalSet) -> EvalSetStats:
    """Return the counts ``evalset stats`` prints for ``evalset``."""
    per_query = [len(q.judgments) for q in evalset]
    grades = Counter(grade for q in evalset for grade in q.judgments.values())
    metadata: dict[str, Counter[str]] = {}
    for query in evalset:
        for key, value in query.metadata.items():
            metadata.setdefault(key, Counter())[str(value)] += 1
    return EvalSetStats(
        name=evalset.name,
        fingerprint=evalset.fingerprint,
        queries=len(evalset),
        answerable=sum(1 for q in evalset if q.answerable),
        judgments_per_query={
            "min": float(min(per_query, default=0)),
            "max": float(max(per_query, default=0)),
            "mean": sum(per_query) / len(per_query) if per_query else 0.0,
        },
        grades=dict(sorted(grades.items())),
        metadata={key: dict(counts.most_common()) for key, counts in metadata.items()},
    )
