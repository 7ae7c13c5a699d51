"""Score a run against judgments: ``evaluate(qrels, run, metrics)``."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

import numpy as np

from monitor.errors import InputError
from monitor.evalset.model import EvalSet
from monitor.metrics.engine import compute, needs_judgments
from monitor.metrics.names import NameStyle, display_name
from monitor.metrics.ranked import RankedColumns, RankedMapping, RankedRun, resolve
from monitor.metrics.ranks import FloatArray, Judgments, Qrels, RelevantRanks, Run
from monitor.metrics.spec import (
    AVERAGES,
    COUNTS,
    Average,
    Metric,
    default_metrics,
    parse_metrics,
)
from monitor.search.trec_arrow import read_columns
from monitor.search.trec_columns import TrecColumns

if TYPE_CHECKING:
    import pandas as pd

    from monitor.evalset.corpus import Corpus


class _HasQrels(Protocol):
    def qrels(self) -> Qrels: ...


@runtime_checkable
class _HasRun(Protocol):
    def as_run(self) -> Run: ...


class _Outcome(Protocol):
    @property
    def query_id(self) -> str: ...


@runtime_checkable
class _HasFailures(Protocol):
    @property
    def failures(self) -> tuple[_Outcome, ...]: ...


@runtime_checkable
class _HasColumns(Protocol):
    def ranking_columns(self, *, answered_only: bool = False) -> TrecColumns: ...


QrelsLike: TypeAlias = "Qrels | _HasQrels | str | Path"
RunLike: TypeAlias = "Run | _HasRun | TrecColumns | RankedRun | str | Path"


@dataclass(frozen=True, slots=True)
class QueryCounts:
    """How many queries were evaluated and how many were left aside, and why."""

    evaluated: int
    skipped_no_relevant: int
    missing_from_run: int
    not_judged: int

    def to_dict(self) -> dict[str, int]:
        """Return the counts under their JSON names."""
        return {
            "evaluated": self.evaluated,
            "skipped_no_relevant": self.skipped_no_relevant,
            "missing_from_run": self.missing_from_run,
            "not_judged": self.not_judged,
        }


@dataclass(frozen=True, slots=True, eq=False)
class EvaluationResult:
    """Per-query values and means of a set of metrics over one run."""

    metrics: tuple[Metric, ...]
    query_ids: tuple[str, ...]
    values: Mapping[Metric, FloatArray]
    counts: QueryCounts
    duplicates: int
    queries_with_duplicates: int

    @property
    def means(self) -> dict[str, float]:
        """Return the mean of each metric over the evaluated queries (NaN if there are none)."""
        return {
            str(m): float(np.mean(self.values[m])) if self.query_ids else math.nan
            for m in self.metrics
        }

    @property
    def summary(self) -> dict[str, float]:
        """Return trec_eval's summary of each metric: the sum for counts, else the mean.

        Summed as trec_eval sums: one double added after another, queries in its order (by
        id, byte order), then divided by their number. ``np.mean`` sums pairwise, which can
        give another last bit, and another fourth decimal on a rounding boundary.
        """
        n = len(self.query_ids)
        order = np.array(sorted(range(n), key=self.query_ids.__getitem__), dtype=np.int64)
        out: dict[str, float] = {}
        for m in self.metrics:
            # cumsum adds in sequence (np.sum and np.mean add pairwise).
            total = float(np.cumsum(self.values[m][order])[-1]) if n else 0.0
            out[str(m)] = total if m.measure in COUNTS else (total / n if n else math.nan)
        return out

    @property
    def per_query(self) -> pd.DataFrame:
        """Return one row per evaluated query (index ``query_id``), one column per metric."""
        import pandas as pd

        frame = pd.DataFrame(
            {str(m): self.values[m] for m in self.metrics},
            index=pd.Index(self.query_ids, name="query_id"),
        )
        return frame

    @classmethod
    def joined(cls, parts: Sequence[EvaluationResult], order: Sequence[str]) -> EvaluationResult:
        """Return one evaluation of the queries of ``parts``, in their order in ``order``.

        The parts are evaluations of disjoint slices of one eval set (a sharded run's), each
        scored with the same metrics and options. Every metric is a per-query value, so the
        joined evaluation is the one the whole set would have had: its values, put in the
        set's order (``order``, the eval set's ids), and its counts added up.
        """
        if not parts:
            raise InputError("<evaluations>", "at least one evaluation to join")
        metrics = parts[0].metrics
        if any(part.metrics != metrics for part in parts):
            raise InputError("<evaluations>", "evaluations of the same metrics to join")
        ids = [query_id for part in parts for query_id in part.query_ids]
        position = {query_id: i for i, query_id in enumerate(order)}
        at = np.fromiter(map(position.get, ids, repeat(-1)), np.int64, len(ids))
        if (at < 0).any() or np.bincount(at[at >= 0], minlength=1).max(initial=0) > 1:
            raise InputError("<evaluations>", "queries of one eval set, each in one part")
        rows = np.argsort(at)
        counts = [part.counts.to_dict() for part in parts]
        return cls(
            metrics=metrics,
            query_ids=tuple(ids[row] for row in rows.tolist()),
            values={m: np.concatenate([part.values[m] for part in parts])[rows] for m in metrics},
            counts=QueryCounts(**{name: sum(each[name] for each in counts) for name in counts[0]}),
            duplicates=sum(part.duplicates for part in parts),
            queries_with_duplicates=sum(part.queries_with_duplicates for part in parts),
        )

    def value(self, metric: str | Metric, query_id: str) -> float:
        """Return one query's value of one metric."""
        (spec,) = parse_metrics([metric])
        return float(self.values[spec][self.query_ids.index(query_id)])

    def to_dict(self, *, per_query: bool = False, names: NameStyle = "canonical") -> dict[str, Any]:
        """Return ``{"metrics", "queries"[, "per_query"]}`` as the CLI prints it in JSON.

        ``names`` spells the metric keys as that tool does (``P_5`` for trec_eval).
        """
        labels = self._labels(names)
        means = self.means
        out: dict[str, Any] = {
            "metrics": {
                label: means[str(m)] for m, label in zip(self.metrics, labels, strict=True)
            },
            "queries": self.counts.to_dict(),
        }
        if per_query:
            columns = [
                (label, self.values[m].tolist())
                for m, label in zip(self.metrics, labels, strict=True)
            ]
            out["per_query"] = {
                qid: {name: values[i] for name, values in columns}
                for i, qid in enumerate(self.query_ids)
            }
        return out

    def to_trec_eval(self, *, per_query: bool = False, names: NameStyle = "trec_eval") -> str:
        """Return trec_eval's output: ``measure<TAB>query<TAB>value`` lines, ``all`` last.

        As trec_eval prints them: the name padded to 22 characters, four decimals (counts as
        integers), the queries in trec_eval's order (by id) with ``per_query``, then the
        summary: ``num_q``, then each measure (counts summed, others averaged). trec_eval's
        ``runid`` line is not printed: a run read as JSON has no run tag.
        """
        labels = self._labels(names)
        lines: list[str] = []
        if per_query:
            order = sorted(range(len(self.query_ids)), key=self.query_ids.__getitem__)
            for i in order:
                qid = self.query_ids[i]
                for metric, label in zip(self.metrics, labels, strict=True):
                    value = float(self.values[metric][i])
                    lines.append(_trec_line(label, qid, value, metric.measure in COUNTS))
        summary = self.summary
        lines.append(_trec_line("num_q", "all", float(len(self.query_ids)), True))
        for metric, label in zip(self.metrics, labels, strict=True):
            lines.append(_trec_line(label, "all", summary[str(metric)], metric.measure in COUNTS))
        return "".join(line + "\n" for line in lines)

    def format_table(self, names: NameStyle = "canonical") -> str:
        """Return the means as an aligned table, then the query counts and duplicates."""
        labels = self._labels(names)
        width = max((len(label) for label in labels), default=6)
        lines = [f"{'metric':<{width}}  mean", f"{'-' * width}  ------"]
        means = self.means
        lines += [
            f"{label:<{width}}  {means[str(m)]:.4f}"
            for m, label in zip(self.metrics, labels, strict=True)
        ]
        c = self.counts
        lines.append(
            f"queries: {c.evaluated} evaluated, {c.skipped_no_relevant} skipped (no relevant),"
            f" {c.missing_from_run} missing from run, {c.not_judged} not judged"
        )
        if self.duplicates:
            lines.append(
                f"duplicates: {self.duplicates} repeated ids dropped in "
                f"{self.queries_with_duplicates} queries (each counted once, at its best position)"
            )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format_table()

    def _labels(self, names: NameStyle) -> list[str]:
        return [display_name(str(m), names) for m in self.metrics]


def _trec_line(measure: str, qid: str, value: float, count: bool) -> str:
    number = str(round(value)) if count and math.isfinite(value) else f"{value:.4f}"
    return f"{measure:<22}\t{qid}\t{number}"


def evaluate(
    qrels: QrelsLike,
    run: RunLike,
    metrics: str | Iterable[str | Metric] | None = None,
    *,
    include_no_relevant: bool = False,
    exclude_failed: bool = False,
    corpus: Corpus | None = None,
    grades: str = "exact",
    judged_only: bool = False,
    relevance_level: int = 1,
    max_docs: int | None = None,
    average: Average | None = None,
) -> EvaluationResult:
    """Score ``run`` against ``qrels`` on ``metrics`` (default: hit_rate, recall, precision,
    mrr, ndcg and map at 1, 3, 5 and 10).

    ``qrels`` is ``{qid: {doc: grade}}``, an eval set, or a path (TREC qrels or any eval-set
    format); ``run`` is ``{qid: [doc, ...]}`` best first, ``{qid: {doc: score}}``, a runner
    result, a path (TREC run or JSON) or a TREC run's columns
    (:func:`monitor.search.trec_arrow.read_columns`; metrics without a unit). Queries with
    no relevant judgment are left out of the means unless ``include_no_relevant``; judged
    queries missing from the run score 0.

    A runner result's failed queries (``error_type`` set) rank nothing, so they score 0 like
    any miss; with ``exclude_failed`` they are left out of the values and the means instead,
    as if they were not in the eval set (a monitored run: a failure is not a quality figure,
    the error rate counts it). The answered queries are scored the same either way.

    The other options have trec_eval's meaning. ``relevance_level`` (``-l``): binary measures
    count grades >= N as relevant, ndcg, dcg and err keep the grades as gains.
    ``max_docs`` (``-M``): each ranking is cut to its first N, in trec_eval's order, before
    every measure. ``judged_only`` (``-J``): documents without a judgment of grade >= 0 are
    removed from each ranking before scoring. ``average`` chooses the queries of the means:
    ``"answerable"`` (the default) those with a relevant judgment, ``"trec_eval"`` those in
    both the judgments and the run, no-relevant ones counted as 0 (trec_eval without ``-c``),
    ``"all"`` every judged query, missing ones 0 (``trec_eval -c``, the same as
    ``include_no_relevant``).

    ``grades`` is how a qrels file's decimal grades are read: ``exact`` or ``truncate``
    (:func:`monitor.evalset.formats.read_qrels`). A TREC run file is read into columns
    (:mod:`monitor.search.trec_columns`), with the same ranks as the line reader.

    A metric with a unit (``recall@5[section]``) is scored on judgments and run rewritten
    into that unit by :func:`monitor.metrics.units.to_units`, which needs the passages' ``corpus``.
    """
    specs = default_metrics() if metrics is None else parse_metrics(metrics)
    failed = _failed_ids(run) if exclude_failed else frozenset()
    judgments, ranked = _inputs(qrels, run, grades, failed)
    if average is None:
        average = "all" if include_no_relevant else "answerable"
    elif average not in AVERAGES:
        raise InputError("<average>", f"one of {', '.join(AVERAGES)}", found=average)
    elif include_no_relevant and average == "answerable":
        raise InputError("<average>", "average 'all' with include_no_relevant", found=average)
    options: dict[str, Any] = {
        "include_no_relevant": average != "answerable",
        "only_in_run": average == "trec_eval",
        "relevance_level": relevance_level,
        "judged_only": judged_only,
        "max_docs": max_docs,
    }
    plain = [m for m in specs if m.unit is None]
    resolution = resolve(judgments, ranked, with_judged=needs_judgments(specs), **options)
    ranks = resolution.ranks
    values = compute(plain, resolution)
    if len(plain) < len(specs):
        unit_qrels = judgments if isinstance(judgments, Mapping) else _as_qrels(qrels)
        values.update(_unit_values(specs, unit_qrels, ranked.as_run(), corpus, options, ranks))
    return EvaluationResult(
        metrics=specs,
        query_ids=ranks.query_ids,
        values={m: values[m] for m in specs},
        counts=QueryCounts(
            evaluated=ranks.n,
            skipped_no_relevant=resolution.skipped_no_relevant,
            missing_from_run=int(ranks.missing.sum()) + resolution.not_in_run,
            not_judged=resolution.not_judged,
        ),
        duplicates=int(ranks.duplicates.sum()),
        queries_with_duplicates=int((ranks.duplicates > 0).sum()),
    )


def ranked_run(run: RunLike, *, answered_only: bool = False) -> RankedRun:
    """Return ``run``, in any form :func:`evaluate` takes, as the resolver reads it: the
    library's one conversion, at its edge. With ``answered_only`` a runner result's failed
    queries are left out.

    A path is read once (a TREC run into columns when the column readers read it, else by
    the line reader or as JSON); a runner result and a run's columns are ranked as columns;
    a ``{qid: ranking}`` mapping as it is.
    """
    if isinstance(run, str | Path):
        columns = read_columns(run)
        if columns is None:
            from monitor.search.saved import load_run

            return RankedMapping(load_run(run))
        return RankedColumns(columns)
    if isinstance(run, RankedRun):
        return run
    if isinstance(run, TrecColumns):
        return RankedColumns(run)
    if isinstance(run, _HasColumns):
        return RankedColumns(run.ranking_columns(answered_only=answered_only))
    if isinstance(run, Mapping):
        return RankedMapping(run)
    if isinstance(run, _HasRun):
        return RankedMapping(run.as_run())
    raise InputError(
        "<run>", "a {qid: [doc, ...]} mapping, a run result or a path", found=type(run).__name__
    )


def _inputs(
    qrels: QrelsLike, run: RunLike, grades: str, failed: frozenset[str]
) -> tuple[Qrels | Judgments, RankedRun]:
    """Return the judgments and the run of :func:`evaluate`, each read once, the ``failed``
    queries of a runner result left out of both. Two files are read at once: the judgments
    in a thread while the run is read, the judgments' error, if any, raised first as when
    read first. An eval set's judgments are its columns (no dict per query); a mapping's
    and a file's stay a mapping, which metrics with a unit rewrite."""
    if not isinstance(qrels, str | Path) or not isinstance(run, str | Path):
        judgments: Qrels | Judgments = (
            qrels.columns() if isinstance(qrels, EvalSet) else _as_qrels(qrels, grades)
        )
        ranked = ranked_run(run, answered_only=bool(failed))
        return (_without(judgments, failed) if failed else judgments), ranked
    with ThreadPoolExecutor(max_workers=1) as pool:
        judged = pool.submit(_as_qrels, qrels, grades)
        try:
            ranked = ranked_run(run)
        except BaseException:
            judged.result()  # the judgments' fault first
            raise
        return judged.result(), ranked


def _unit_values(
    specs: Iterable[Metric],
    judged: Qrels,
    ranked: Run,
    corpus: Corpus | None,
    options: Mapping[str, Any],
    ranks: RelevantRanks,
) -> dict[Metric, FloatArray]:
    """Return the values of the metrics with a unit, one engine pass per unit and cut."""
    groups: dict[tuple[str, str], list[Metric]] = {}
    for metric in specs:
        if metric.unit is not None:
            groups.setdefault((metric.unit, metric.unit_cut), []).append(metric)
    if not groups:
        return {}
    if corpus is None:
        names = ", ".join(str(m) for group in groups.values() for m in group)
        raise InputError("<corpus>", f"a corpus of passages to score {names}")
    from monitor.metrics.units import to_units

    out: dict[Metric, FloatArray] = {}
    for (unit, cut), metrics in groups.items():
        unit_qrels, unit_run = to_units(judged, ranked, corpus, unit, cut)
        resolution = resolve(
            unit_qrels, RankedMapping(unit_run), with_judged=needs_judgments(metrics), **options
        )
        # pragma: no cover - a unit keeps every query
        if resolution.ranks.query_ids != ranks.query_ids:  # pragma: no cover
            raise InputError(corpus.source, "the same queries per unit as per passage")
        out.update(compute(metrics, resolution))
    return out


def _without(judgments: Qrels | Judgments, failed: frozenset[str]) -> Qrels | Judgments:
    """Return the judgments of the queries not in ``failed``, in the form given."""
    if isinstance(judgments, Mapping):
        return {qid: grades for qid, grades in judgments.items() if qid not in failed}
    return judgments.take([i for i, qid in enumerate(judgments.ids) if qid not in failed])


def _as_qrels(qrels: QrelsLike, grades: str = "exact") -> Qrels:
    if isinstance(qrels, str | Path):
        return load_qrels(qrels, grades=grades)
    if isinstance(qrels, Mapping):
        return qrels
    if hasattr(qrels, "qrels"):
        return qrels.qrels()
    raise InputError(
        "<qrels>",
        "a {qid: {doc: grade}} mapping, an eval set or a path",
        found=type(qrels).__name__,
    )


def _failed_ids(run: RunLike) -> frozenset[str]:
    """Return the ids of the queries ``run`` failed, when it knows (a runner result)."""
    if not isinstance(run, _HasFailures):
        return frozenset()
    return frozenset(outcome.query_id for outcome in run.failures)


def load_qrels(path: str | Path, *, grades: str = "exact") -> Qrels:
    """Load judgments from a TREC qrels file, a ``{qid: {doc: grade}}`` JSON file or any
    eval-set file, by suffix (see :func:`monitor.evalset.formats.read_qrels`)."""
    from monitor.evalset.formats import read_qrels

    return read_qrels(path, grades=grades)
