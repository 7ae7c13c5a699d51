"""What each page shows, read from the store and the config into the records of
:mod:`monitor.web.pages`.

Pages read only what they show: the suites page the newest runs of each suite (SQL
``LIMIT``), a suite page one page of its runs and its figures' history, a run page the run,
its baseline and their comparison, a query page one query of two runs. Comparisons are kept
in a :class:`Cache` owned by the app, so reading a page twice recomputes nothing; what every
run page of a suite shares (its eval set and judgments in force, their digests, its baseline
and trends) is kept apart, keyed by what it was built from (the eval set file's size and
modification time, the suite's judgment layers, its baseline and newest run), so a run page
seen for the first time reads only its own comparison: the one the job stored with the run
when it still holds, else computed (:func:`monitor.report.compose.compose_report`).
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from monitor.errors import MonitorError, UsageError
from monitor.web.pages import (
    CoverageFigure,
    DocRow,
    QueryPage,
    RunRow,
    SuiteCard,
    SuitePage,
)

if TYPE_CHECKING:
    import pandas as pd

    from monitor.alerts.model import Alert
    from monitor.compare.records import Comparison
    from monitor.config.model import MonitorConfig, SuiteConfig
    from monitor.evalset import EvalSet
    from monitor.report.compose import LoadedEvalSet, ReportBasis, SuiteJudgments
    from monitor.report.records import Report, Trend
    from monitor.store import QueryRecord, RunRecord, Store

#: Runs listed per page of a suite's history.
RUNS_PER_PAGE = 25
#: Runs a sparkline of the suites page draws.
SPARK_RUNS = 30
#: Comparisons, histories and eval sets kept in memory.
CACHE_SIZE = 32
#: Whole runs kept in memory for query pages (a 10,000-query run holds some 15 MB).
RUN_CACHE_SIZE = 4
#: What each suite's pages share kept in memory, per suite: its eval set, judgments, report
#: basis and trends, and the same again while a change is taking over.
SUITE_STATE_SIZE = 8

_T = TypeVar("_T")


class Cache:
    """A small thread-safe LRU of computed values, keyed by what they were computed from.

    A value asked for by several threads at once is computed once: the others wait for it
    (a page opened while the start-up warm-up computes it does not compute it again).
    """

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self.size = size
        self._items: OrderedDict[object, object] = OrderedDict()
        self._lock = threading.Lock()
        self._computing: dict[object, threading.RLock] = {}

    def peek(self, key: object) -> Any:
        """Return the value kept under ``key`` (None when absent), computing nothing."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
            return self._items.get(key)

    def get(self, key: object, compute: Callable[[], _T]) -> _T:
        """Return the value kept under ``key``, computing and keeping it when absent."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]  # type: ignore[return-value]
            computing = self._computing.setdefault(key, threading.RLock())
        with computing:
            with self._lock:
                if key in self._items:  # computed by another thread meanwhile
                    self._items.move_to_end(key)
                    return self._items[key]  # type: ignore[return-value]
            try:
                value = compute()
            except BaseException:
                with self._lock:
                    self._computing.pop(key, None)
                raise
            with self._lock:
                self._items[key] = value
                self._computing.pop(key, None)
                while len(self._items) > self.size:
                    self._items.popitem(last=False)
        return value


class Views:
    """Build the pages' records from a config and a store opened per call."""

    def __init__(
        self,
        config: MonitorConfig,
        open_store: Callable[[], Store],
        *,
        next_runs: Callable[[], Mapping[str, datetime | None]] | None = None,
        cache: Cache | None = None,
    ) -> None:
        self.config = config
        self._open = open_store
        self._next_runs = next_runs
        self._cache = cache or Cache()
        self._runs = Cache(RUN_CACHE_SIZE)
        self._frozen = Cache(2 * max(len(config.suites), 1))
        self._state = Cache(SUITE_STATE_SIZE * max(len(config.suites), 1))

    def suite(self, name: str) -> SuiteConfig:
        """Return the suite's config; raise UsageError naming the known suites."""
        return self.config.suite(name)

    def store(self) -> Store:
        """Open the store the pages read (the caller closes it)."""
        return self._open()

    # Pages -------------------------------------------------------------------------------

    def suites(self) -> list[SuiteCard]:
        """Return a card per suite of the config, in config order."""
        from monitor.report.history import chart_metrics

        upcoming = self._next_runs() if self._next_runs is not None else {}
        cards = []
        with self._open() as store:
            for suite in self.config.suites.values():
                recent = store.list_runs(suite.name, limit=SPARK_RUNS)
                latest = recent[0] if recent else None
                watched = chart_metrics(suite.rules, [str(m) for m in suite.metrics])
                ok = [run for run in reversed(recent) if run.status == "ok"]
                sparks = {
                    metric: tuple(run.means.get(metric, math.nan) for run in ok)
                    for metric in watched
                }
                verdict: str | None = None
                if latest is not None and latest.status == "ok":
                    verdict = self._comparison(store, suite, latest.run_id).verdict
                elif latest is not None:
                    verdict = "failed"
                cards.append(
                    SuiteCard(
                        name=suite.name,
                        latest=latest,
                        verdict=verdict,
                        firing=tuple(_firing(store, suite.name)),
                        next_run_at=upcoming.get(suite.name),
                        sparklines=sparks,
                    )
                )
        return cards

    def suite_page(self, name: str, page: int = 1) -> SuitePage:
        """Return page ``page`` (1 = newest) of the suite's runs with its trends.

        One read of the suite's history gives the rows, the trends and the baseline's
        figures: no run's per-query records are loaded (a failed run on the page is read
        for its error, and it has none).
        """
        from monitor.alerts.outbox import OUTBOX_KIND
        from monitor.judgments.agreement import stored_agreement
        from monitor.report.history import build_trends

        suite = self.suite(name)
        if page < 1:
            raise UsageError(f"page: expected 1 or more, got {page}")
        charted = charted_figures(suite)
        with self._open() as store:
            baseline_id = _baseline_id(store, suite.name)
            history, rows = self._suite_history(store, suite)
            start = (page - 1) * RUNS_PER_PAGE
            shown = tuple(
                _with_error(store, row)
                for row in reversed(
                    rows[max(len(rows) - start - RUNS_PER_PAGE, 0) : max(len(rows) - start, 0)]
                )
            )
            baseline = next((row for row in rows if row.run_id == baseline_id), None)
            trends = build_trends(
                history, charted, baseline=_as_record(suite.name, baseline), rules=suite.rules
            )
            trends, coverage = _coverage(trends, rows)
            agreement = tuple(stored_agreement(store, suite.name).values())
            firing = tuple(_firing(store, suite.name))
            outbox = tuple(
                message
                for message in store.pending(OUTBOX_KIND)
                if str(message.payload.get("suite", "")) == suite.name
                or message.key.startswith(f"{suite.name}/")
            )
        return SuitePage(
            suite=suite,
            runs=shown,
            page=page,
            has_next=len(rows) > start + RUNS_PER_PAGE,
            trends=trends,
            baseline=baseline,
            firing=firing,
            outbox=outbox,
            total_runs=len(rows),
            coverage=coverage,
            agreement=agreement,
        )

    def run_page(self, name: str, run_id: int) -> Report:
        """Return the report of run ``run_id`` of the suite against its baseline."""
        suite = self.suite(name)
        with self._open() as store:
            return self._report(store, suite, run_id)

    def query_page(self, name: str, run_id: int, query_id: str) -> QueryPage:
        """Return query ``query_id`` of run ``run_id`` beside the baseline's.

        The grades are those in force (the frozen set with the suite's judgment layers), and
        both runs' values of this query are scored under them with the engine, as the run
        page re-scores whole runs when the judgments changed. A suite judged by a reference
        search shows the judgments stored with the run.
        """
        suite = self.suite(name)
        with self._open() as store:
            current = self._query(store, suite, run_id, query_id)
            if current is None:
                raise UsageError(f"run {run_id} has no query {query_id!r}")
            baseline_id = _baseline_id(store, suite.name)
            before = (
                None if baseline_id is None else self._query(store, suite, baseline_id, query_id)
            )
            judged = self._judgments(store, suite)
        evalset = judged.effective or judged.frozen
        found = None if evalset is None else _find(evalset, query_id)
        judgments: dict[str, int] = dict.fromkeys(current.relevant_ids, 1)
        names = tuple(dict.fromkeys([*current.values, *(before.values if before else {})]))
        if found is not None and suite.evalset.reference is None:
            judgments = dict(found.judgments)
            names = names or tuple(str(m) for m in suite.metrics)
            current = _scored(current, judgments, names)
            before = None if before is None else _scored(before, judgments, names)
        text_of = self._cache.get(("texts", suite.name), lambda: _doc_texts(suite))
        current_rows, baseline_rows, lost = diff_rankings(
            current.retrieved_ids,
            () if before is None else before.retrieved_ids,
            judgments,
            text_of,
        )
        ranked = set(current.retrieved_ids)
        missing = tuple(
            DocRow(doc, grade, None, None, "missing", text_of(doc))
            for doc, grade in sorted(judgments.items(), key=lambda item: -item[1])
            if grade >= 1 and doc not in ranked
        )
        return QueryPage(
            suite=suite.name,
            run_id=run_id,
            baseline_id=baseline_id,
            query_id=query_id,
            text=found.text if found is not None else "",
            metadata=dict(found.metadata) if found is not None else {},
            judgments=judgments,
            current=current,
            before=before,
            current_rows=current_rows,
            baseline_rows=baseline_rows,
            lost=lost,
            metric_names=names,
            missing=missing,
            judged_texts={doc: text for doc in judgments if (text := text_of(doc))},
        )

    def warm(self) -> None:
        """Compute what the first pages will ask for: each suite's eval set and judgments,
        its latest ok run's report (which reads that run and the baseline, kept for their
        query pages) and its page (run at start-up, off the request path). A suite that
        cannot be read is left for its page to report."""
        for suite in self.config.suites.values():
            try:
                with self._open() as store:
                    self._judgments(store, suite)
                    recent = store.list_runs(suite.name, limit=SPARK_RUNS)
                    latest = next((run for run in recent if run.status == "ok"), None)
                    if latest is not None:
                        self._report(store, suite, latest.run_id)
                self.suite_page(suite.name)
            except MonitorError:
                continue

    # Shared reads ------------------------------------------------------------------------

    def evalset(self, suite: SuiteConfig) -> EvalSet | None:
        """Return the suite's frozen eval set, or None when it cannot be loaded."""
        return self._loaded(suite).evalset

    def _loaded(self, suite: SuiteConfig) -> LoadedEvalSet:
        """Return the suite's frozen eval set as loaded, read again when its file changed."""
        from monitor.report.compose import load_frozen

        return self._frozen.get(("evalset", _file_key(suite)), lambda: load_frozen(suite))

    def _judgments(
        self, store: Store, suite: SuiteConfig, key: tuple[object, ...] | None = None
    ) -> SuiteJudgments:
        """Return the suite's judgments in force, built again when its eval set file or its
        layers changed (``key``: :func:`_judgments_key`, when the caller has it)."""
        from monitor.report.compose import suite_judgments

        key = key or _judgments_key(store, suite)
        return self._state.get(key, lambda: suite_judgments(store, suite, self._loaded(suite)))

    def _basis(self, store: Store, suite: SuiteConfig) -> tuple[ReportBasis, tuple[object, ...]]:
        """Return the basis of the suite's reports and the key of what it was built from."""
        from monitor.report.compose import report_basis

        judged_key = _judgments_key(store, suite)
        judged = self._judgments(store, suite, judged_key)
        key = ("basis", *judged_key, _baseline_id(store, suite.name))
        basis = self._state.get(
            key,
            lambda: report_basis(
                store,
                suite,
                judgments=judged,
                read_run=lambda run_id: self._run(store, suite.name, run_id),
            ),
        )
        return basis, key

    def _report(self, store: Store, suite: SuiteConfig, run_id: int) -> Report:
        """Return the report of run ``run_id`` against the baseline, its trends shared with
        the suite's other reports until a run is added; keep the run for its query pages."""
        from monitor.report.compose import SuiteTrends, compose_report, suite_trends

        basis, key = self._basis(store, suite)
        newest = store.list_runs(suite.name, limit=1)
        key = (*key, newest[0].run_id if newest else None)

        def trends_of(charted: tuple[str, ...], baseline: RunRecord | None) -> SuiteTrends:
            return self._state.get(
                ("trends", *key, charted),
                lambda: suite_trends(store, suite, basis.judgments, charted, baseline),
            )

        report = self._cache.get(
            ("report", *key, run_id),
            lambda: compose_report(store, suite, run_id=run_id, basis=basis, trends_of=trends_of),
        )
        # Its query pages need the same rankings: keep the run the report read.
        self._runs.get(("run", run_id), lambda: report.run)
        return report

    def _comparison(self, store: Store, suite: SuiteConfig, run_id: int) -> Comparison:
        return self._report(store, suite, run_id).comparison

    def _run(self, store: Store, suite: str, run_id: int) -> RunRecord:
        from monitor.report.compose import suite_run

        return self._runs.get(("run", run_id), lambda: suite_run(store, suite, run_id))

    def _query(
        self, store: Store, suite: SuiteConfig, run_id: int, query_id: str
    ) -> QueryRecord | None:
        """Return one query of a run of ``suite``: from a run kept for its run page, else
        read alone from the store (no other query's record is built)."""
        from monitor.errors import StoreLookupError

        kept: RunRecord | None = self._runs.peek(("run", run_id))
        if kept is not None:
            if kept.suite != suite.name:
                raise UsageError(f"run {run_id} is not a run of suite {suite.name!r}")
            return kept.query(query_id)
        if run_id not in self._run_ids(store, suite):
            try:
                store.query_record(run_id, query_id)
            except StoreLookupError:
                raise UsageError(f"no run {run_id} in the store") from None
            raise UsageError(f"run {run_id} is not a run of suite {suite.name!r}")
        return self._cache.get(
            ("query", run_id, query_id), lambda: store.query_record(run_id, query_id)
        )

    def _run_ids(self, store: Store, suite: SuiteConfig) -> frozenset[int]:
        """Return the ids of the suite's runs (from its history, read once per new run)."""
        _, rows = self._suite_history(store, suite)
        return self._cache.get(
            ("run_ids", suite.name, rows[-1].run_id if rows else None),
            lambda: frozenset(row.run_id for row in rows),
        )

    def _suite_history(self, store: Store, suite: SuiteConfig) -> tuple[pd.DataFrame, list[RunRow]]:
        """Return the suite's history of its charted figures and its runs as rows."""

        charted = charted_figures(suite)
        newest = store.list_runs(suite.name, limit=1)
        return self._cache.get(
            ("history", suite.name, newest[0].run_id if newest else None, charted),
            lambda: _history(store, suite.name, charted),
        )

    def forget_runs(self) -> None:
        """Drop every kept value but the frozen eval sets (after the judgments changed)."""
        self._cache = Cache(self._cache.size)
        self._runs = Cache(self._runs.size)
        self._state = Cache(self._state.size)


def charted_figures(suite: SuiteConfig) -> tuple[str, ...]:
    """Return the figures a suite page charts: the rules' and watched metrics, then the
    judgment coverage (``judged@k``) the job records with every run, which tells whether a
    fall of the others can be trusted."""
    from monitor.job import recorded_metrics
    from monitor.report.history import chart_metrics

    watched = chart_metrics(suite.rules, [str(m) for m in suite.metrics])
    coverage = [str(m) for m in recorded_metrics(suite) if str(m).startswith("judged@")]
    return tuple(dict.fromkeys((*watched, *coverage)))


def _coverage(
    trends: tuple[Trend, ...], rows: Sequence[RunRow]
) -> tuple[tuple[Trend, ...], CoverageFigure | None]:
    """Return the trends without a coverage trend no run measured, and the newest run's
    coverage when one did (a store from before coverage was recorded has none)."""
    kept: list[Trend] = []
    figure: CoverageFigure | None = None
    for trend in trends:
        if not trend.figure.startswith("judged@"):
            kept.append(trend)
            continue
        measured = [row for row in rows if not math.isnan(row.means.get(trend.figure, math.nan))]
        if not measured:
            continue
        kept.append(trend)
        if figure is None:
            newest = measured[-1]
            figure = CoverageFigure(trend.figure, newest.means[trend.figure], newest.run_id, trend)
    return tuple(kept), figure


def diff_rankings(
    current: tuple[str, ...],
    baseline: tuple[str, ...],
    judgments: Mapping[str, int],
    text_of: Callable[[str], str | None] = lambda doc: None,
) -> tuple[tuple[DocRow, ...], tuple[DocRow, ...], tuple[DocRow, ...]]:
    """Return the current and baseline rankings as rows, and the documents the current one
    lost: ``moved`` (in both at other ranks), ``new`` (only now), ``lost`` (only before)."""
    now = {doc: rank for rank, doc in enumerate(current, 1)}
    then = {doc: rank for rank, doc in enumerate(baseline, 1)}

    def row(doc: str) -> DocRow:
        a, b = then.get(doc), now.get(doc)
        change = "new" if a is None else "lost" if b is None else "moved" if a != b else "same"
        return DocRow(doc, judgments.get(doc), a, b, change, text_of(doc))

    current_rows = tuple(row(doc) for doc in current)
    baseline_rows = tuple(row(doc) for doc in baseline)
    lost = tuple(r for r in baseline_rows if r.change == "lost")
    return current_rows, baseline_rows, lost


def _file_key(suite: SuiteConfig) -> tuple[object, ...]:
    """Return what tells whether the suite's eval set files changed: each one's path, size
    and modification time (None for a file that cannot be read, a bundled set's name)."""
    config = suite.evalset
    if config.bundled is not None:
        return ("bundled", config.bundled)
    out: list[object] = []
    for path in (config.path, config.queries):
        if path is None:
            continue
        try:
            stat = path.stat()
        except OSError:
            out.append((str(path), None))
        else:
            out.append((str(path), stat.st_size, stat.st_mtime_ns))
    return tuple(out)


def _judgments_key(store: Store, suite: SuiteConfig) -> tuple[object, ...]:
    """Return what a suite's judgments in force are built from: its eval set files (see
    :func:`_file_key`) and the ids of its judgment layers (a new one changes the grades)."""
    layers = tuple(layer.layer_id for layer in store.layers(suite.name))
    return ("judgments", suite.name, _file_key(suite), layers)


def _firing(store: Store, suite: str) -> list[Alert]:
    from monitor.alerts.lifecycle import AlertLifecycle
    from monitor.alerts.model import KINDS

    lifecycle = AlertLifecycle(store, {})
    return [alert for kind in KINDS for alert in lifecycle.active(suite, kind)]


def _baseline_id(store: Store, suite: str) -> int | None:
    """Return the id of the suite's baseline without loading the run."""
    return next((b.run_id for b in store.list_baselines() if b.suite == suite), None)


def _history(store: Store, suite: str, metrics: Sequence[str]) -> tuple[pd.DataFrame, list[RunRow]]:
    """Return the suite's history of ``metrics`` and its runs as rows, oldest first."""
    history = store.history(suite, metrics)
    return history, _rows(history, metrics)


def _rows(history: pd.DataFrame, metrics: Sequence[str]) -> list[RunRow]:
    """Return the history's runs as rows, oldest first."""
    rows = []
    for record in history.to_dict("records"):
        p95 = record.get("latency_p95")
        sent = record.get("queries")
        rows.append(
            RunRow(
                run_id=int(record["run_id"]),
                status=str(record["status"]),
                started_at=record["started_at"].to_pydatetime(),
                queries=0 if sent is None or math.isnan(sent) else int(sent),
                means={m: float(record.get(m, math.nan)) for m in metrics},
                latency_p95=None if p95 is None or math.isnan(p95) else float(p95),
            )
        )
    return rows


def _with_error(store: Store, row: RunRow) -> RunRow:
    """Return ``row`` with its error when the run failed (a failed run has no query records)."""
    if row.status == "ok":
        return row
    return replace(row, error=store.get_run(row.run_id).error)


def _as_record(suite: str, row: RunRow | None) -> RunRecord | None:
    """Return the baseline's figures as the record the trends read (without its queries)."""
    from monitor.records import LatencySummary
    from monitor.store import RunFigures, RunRecord

    if row is None:
        return None
    return RunRecord(
        suite=suite,
        pipeline="",
        started_at=row.started_at,
        finished_at=row.started_at,
        means=row.means,
        figures=RunFigures(latency=LatencySummary(p95=row.latency_p95)),
        run_id=row.run_id,
    )


def _scored(query: QueryRecord, judgments: Mapping[str, int], names: Sequence[str]) -> QueryRecord:
    """Return ``query`` with its values scored under ``judgments`` by the engine: none when
    it failed or has no relevant grade, as a run re-scored under new judgments has."""
    from monitor.metrics.evaluation import evaluate

    if query.error_type is not None or not any(g >= 1 for g in judgments.values()) or not names:
        return replace(query, values={})
    result = evaluate(
        {query.query_id: dict(judgments)}, {query.query_id: list(query.retrieved_ids)}, names
    )
    relevant = tuple(doc for doc, grade in judgments.items() if grade >= 1)
    return replace(query, values=result.means, relevant_ids=relevant)


def _doc_texts(suite: SuiteConfig) -> Callable[[str], str | None]:
    """Return the documents' texts where the suite has them (the bundled passages, a corpus)."""
    from monitor.judgments.suite import doc_texts

    return doc_texts(suite)


def _find(evalset: EvalSet, query_id: str) -> Any:
    try:
        return evalset[query_id]
    except (KeyError, IndexError, MonitorError):
        return None
