"""Every gauge the monitor exports, declared once in :data:`GAUGES`, and what is built from it.

Naming follows Prometheus' conventions: the prefix ``retrieval_``; shares in 0..1 end in
``_ratio``; durations in ``_seconds``; Unix times in ``_timestamp_seconds``; metadata is an
``_info`` gauge of value 1. Each quality measure has one gauge name of its own
(``retrieval_recall_ratio{k="5"}``), ``k="all"`` for a measure over the whole ranking
(``mrr``, ``map``, ``r_precision``). Every series carries ``suite``, ``pipeline``, its own
labels and the suite's static labels; no label ever holds a query id.

The baseline and its confidence band are one gauge each with a ``measure`` label
(``retrieval_baseline_ratio{measure="recall",k="5"}``) rather than one name per measure: the
dashboard's "measure against its baseline" panel then takes its ``measure`` and ``k``
variables from ``label_values(retrieval_baseline_ratio, measure)``, and one query draws the
band for whichever measure the panel repeats over.

Latency percentiles are a gauge with a ``percentile`` label (``50``, ``95``, ``99``), not a
summary: they are exact percentiles of one run's queries, computed once by the runner, with
no ``_sum``/``_count`` over a sliding window for ``rate()`` to use; a summary would promise
both. The label is not ``quantile``, which Prometheus reserves for summaries (promtool's lint
flags it on any other type).

Each gauge belongs to a *side*:

- ``attempt``: describes the latest attempt, successful or not (``run_success``,
  ``last_run_timestamp``, ``error_ratio``, counts, duration); every snapshot sets them.
- ``success``: quality, latency and comparison figures; only a successful run sets them, so
  a failed run leaves the last good figures in place.
- ``last_success``: ``retrieval_last_success_timestamp_seconds``, set by a successful run
  and, on a failed one, from the store's record of the last success when known.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from monitor.exporters.labels import IDENTITY_LABELS, k_label
from monitor.exporters.snapshot import SuiteSnapshot
from monitor.metrics.spec import MEASURES, UNBOUNDED

Side = Literal["attempt", "success", "last_success"]

#: A series of one gauge: its own label values (after ``suite`` and ``pipeline``), and value.
Series = tuple[tuple[str, ...], float]

Reader = Callable[[SuiteSnapshot], Iterable[Series]]

#: The sides a successful run exports, and those a failed run exports.
SUCCESS_SIDES: Final[frozenset[Side]] = frozenset({"attempt", "success", "last_success"})
FAILURE_SIDES: Final[frozenset[Side]] = frozenset({"attempt", "last_success"})
#: What a failed run pushes to a Pushgateway group that already holds the last success.
ATTEMPT_SIDE: Final[frozenset[Side]] = frozenset({"attempt"})

#: The ``percentile`` label of each latency percentile the snapshot carries.
LATENCY_PERCENTILES: Final = (("50", "p50"), ("95", "p95"), ("99", "p99"))


@dataclass(frozen=True, slots=True)
class Gauge:
    """One exported gauge: its name, help text, own labels, side, and how to read it."""

    name: str
    help: str
    labels: tuple[str, ...]
    side: Side
    read: Reader


def _measure(measure: str) -> Reader:
    def read(snapshot: SuiteSnapshot) -> Iterator[Series]:
        for name, value in snapshot.means.items():
            metric = snapshot.metrics[name]
            if metric.measure == measure:
                yield (k_label(metric),), value

    return read


def _baseline(snapshot: SuiteSnapshot) -> Iterator[Series]:
    for name, value in (snapshot.baseline or {}).items():
        metric = snapshot.metrics[name]
        if metric.bounded:  # a ratio gauge: a count or a DCG is no ratio
            yield (metric.measure, k_label(metric)), value


def _band(bound: int) -> Reader:
    def read(snapshot: SuiteSnapshot) -> Iterator[Series]:
        baseline = snapshot.baseline or {}
        for name, interval in snapshot.baseline_ci.items():
            metric = snapshot.metrics[name]
            if not metric.bounded:
                continue
            # Clipped: a bootstrap bound of the delta can reach past what a ratio can be.
            value = min(1.0, max(0.0, baseline[name] + interval[bound]))
            yield (metric.measure, k_label(metric)), value

    return read


def _rules(snapshot: SuiteSnapshot) -> Iterator[Series]:
    for rule, state in snapshot.rules.items():
        yield (rule, state.severity), 1.0 if state.breached else 0.0


def _percentiles(snapshot: SuiteSnapshot) -> Iterator[Series]:
    for percentile, key in LATENCY_PERCENTILES:
        if key in snapshot.latency:
            yield (percentile,), snapshot.latency[key]


def _latency(key: str) -> Reader:
    def read(snapshot: SuiteSnapshot) -> Iterator[Series]:
        if key in snapshot.latency:
            yield (), snapshot.latency[key]

    return read


def _scalar(get: Callable[[SuiteSnapshot], float | int | bool | None]) -> Reader:
    def read(snapshot: SuiteSnapshot) -> Iterator[Series]:
        value = get(snapshot)
        if value is not None:
            yield (), float(value)

    return read


def _run_scalar(get: Callable[[SuiteSnapshot], float | int | None]) -> Reader:
    """Return :func:`_scalar` of a figure of a run of queries: no series for an online suite's
    window, which sends no query (a 0 would read as a run that sent none)."""
    return _scalar(lambda s: None if s.online_suite else get(s))


def _drift(snapshot: SuiteSnapshot) -> Iterator[Series]:
    for check, statistics in snapshot.drift.items():
        for statistic, value in statistics.items():
            yield (check, statistic), value


def _last_success(snapshot: SuiteSnapshot) -> Iterator[Series]:
    moment = snapshot.last_success
    if moment is not None:
        yield (), moment.timestamp()


def _evalset(snapshot: SuiteSnapshot) -> Iterator[Series]:
    if snapshot.evalset_fingerprint:
        run_id = "none" if snapshot.baseline_run_id is None else str(snapshot.baseline_run_id)
        yield (snapshot.evalset_fingerprint, run_id), 1.0


def _corpus(snapshot: SuiteSnapshot) -> Iterator[Series]:
    if snapshot.corpus_fingerprint:
        yield (snapshot.corpus_fingerprint,), 1.0


def _segments(snapshot: SuiteSnapshot) -> Iterator[Series]:
    for key, by_value in snapshot.segments.items():
        for value, means in by_value.items():
            for name, mean in means.items():
                metric = snapshot.metrics[name]
                if metric.bounded:
                    yield (key, value, metric.measure, k_label(metric)), mean


def _agreement(snapshot: SuiteSnapshot) -> Iterator[Series]:
    for statistic, value in snapshot.judge_agreement.items():
        yield (snapshot.judge, statistic), value


def _judge_pairs(snapshot: SuiteSnapshot) -> Iterator[Series]:
    if snapshot.judge and snapshot.judge_pairs is not None:
        yield (snapshot.judge,), float(snapshot.judge_pairs)


def _overlap(get: Callable[[SuiteSnapshot], float | None]) -> Reader:
    def read(snapshot: SuiteSnapshot) -> Iterator[Series]:
        value = get(snapshot)
        if value is not None and snapshot.overlap_k is not None:
            yield (str(snapshot.overlap_k),), value

    return read


def _ann_recall(snapshot: SuiteSnapshot) -> Iterator[Series]:
    if snapshot.ann_recall is not None and snapshot.ann_recall_k is not None:
        yield (str(snapshot.ann_recall_k),), snapshot.ann_recall


def _online(snapshot: SuiteSnapshot) -> Iterator[Series]:
    yield from snapshot.online.items()


def _online_searches(snapshot: SuiteSnapshot) -> Iterator[Series]:
    for (application, segment), count in snapshot.online_searches.items():
        yield (application, segment), float(count)


_BAND_HELP = (
    "bound of the confidence interval of the current mean from the paired comparison with "
    "the baseline (baseline + the delta's interval), clipped to 0..1; a drop is significant "
    "when the baseline lies above the upper bound"
)

#: Every gauge the monitor exports, in exposition order.
GAUGES: Final[tuple[Gauge, ...]] = (
    *(
        Gauge(
            f"retrieval_{measure}_ratio",
            f"Mean {measure} over the evaluated queries of the latest successful run, "
            'by cutoff k (k="all": the whole ranking).',
            ("k",),
            "success",
            _measure(measure),
        )
        # A count or an unnormalised sum is no ratio: those measures get no _ratio gauge.
        for measure in MEASURES
        if measure not in UNBOUNDED
    ),
    Gauge(
        "retrieval_baseline_ratio",
        "Mean of each measure in the pinned baseline run, by measure and cutoff k.",
        ("measure", "k"),
        "success",
        _baseline,
    ),
    Gauge(
        "retrieval_confidence_lower_ratio",
        f"Lower {_BAND_HELP}.",
        ("measure", "k"),
        "success",
        _band(0),
    ),
    Gauge(
        "retrieval_confidence_upper_ratio",
        f"Upper {_BAND_HELP}.",
        ("measure", "k"),
        "success",
        _band(1),
    ),
    Gauge(
        "retrieval_regression_detected",
        "1 when the rule detected a regression in the latest successful run, else 0; "
        "severity is the rule's, for its alert to carry.",
        ("rule", "severity"),
        "success",
        _rules,
    ),
    Gauge(
        "retrieval_search_latency_seconds",
        "Search latency percentile over the answered queries of the latest successful run "
        "(exact, computed once per run; not a sliding-window summary).",
        ("percentile",),
        "success",
        _percentiles,
    ),
    Gauge(
        "retrieval_search_latency_mean_seconds",
        "Mean search latency over the answered queries of the latest successful run.",
        (),
        "success",
        _latency("mean"),
    ),
    Gauge(
        "retrieval_search_latency_max_seconds",
        "Longest search latency among the answered queries of the latest successful run.",
        (),
        "success",
        _latency("max"),
    ),
    Gauge(
        "retrieval_error_ratio",
        "Share of the latest run's queries whose search failed.",
        (),
        "attempt",
        _scalar(lambda s: s.error_rate),
    ),
    Gauge(
        "retrieval_zero_result_ratio",
        "Share of the answered queries of the latest successful run that returned no hits.",
        (),
        "success",
        _scalar(lambda s: s.zero_result_rate),
    ),
    Gauge(
        "retrieval_top1_score",
        "Mean score of the first hit in the latest successful run (the search's own scale).",
        (),
        "success",
        _scalar(lambda s: s.mean_top1_score),
    ),
    Gauge(
        "retrieval_queries_sent",
        "Queries sent in the latest run, answered or failed.",
        (),
        "attempt",
        _run_scalar(lambda s: s.queries_sent),
    ),
    Gauge(
        "retrieval_queries_evaluated",
        "Judged queries the latest successful run's metric means are over.",
        (),
        "success",
        _run_scalar(lambda s: s.queries_evaluated),
    ),
    Gauge(
        "retrieval_queries_failed",
        "Queries of the latest run whose search failed.",
        (),
        "attempt",
        _run_scalar(lambda s: s.queries_failed),
    ),
    Gauge(
        "retrieval_run_duration_seconds",
        "Wall time of the latest run, from start to finish.",
        (),
        "attempt",
        _run_scalar(lambda s: s.duration_seconds),
    ),
    Gauge(
        "retrieval_last_run_timestamp_seconds",
        "Unix time at which the latest run finished, successful or not.",
        (),
        "attempt",
        _scalar(lambda s: s.finished_at.timestamp()),
    ),
    Gauge(
        "retrieval_last_success_timestamp_seconds",
        "Unix time at which the latest successful run finished.",
        (),
        "last_success",
        _last_success,
    ),
    Gauge(
        "retrieval_run_success",
        "1 when the latest run finished with metrics, 0 when it failed.",
        (),
        "attempt",
        _scalar(lambda s: s.success),
    ),
    Gauge(
        "retrieval_evalset_info",
        "The eval set (fingerprint) and baseline run behind the latest successful run; always 1.",
        ("fingerprint", "baseline_run_id"),
        "success",
        _evalset,
    ),
    Gauge(
        "retrieval_corpus_fingerprint_info",
        "The search's corpus (the digest of its corpus_fingerprint()) the latest successful "
        "run ran against; always 1. A new value annotates a change of the corpus, not of "
        "quality.",
        ("fingerprint",),
        "success",
        _corpus,
    ),
    Gauge(
        "retrieval_index_size",
        "Documents in the searched index, as the search reported it in the latest successful run.",
        (),
        "success",
        _scalar(lambda s: s.index_size),
    ),
    Gauge(
        "retrieval_ann_recall_ratio",
        "Mean ANN recall@k of the latest successful run: the share of the exact search's top "
        "k (the same store, without its index) that the indexed search returned; needs no "
        "judgments (a vector kind's index_health).",
        ("k",),
        "success",
        _ann_recall,
    ),
    Gauge(
        "retrieval_segment_ratio",
        "Mean of a measure over the queries of one segment (a metadata key declared in the "
        "config, and one of its values) in the latest successful run.",
        ("segment", "segment_value", "measure", "k"),
        "success",
        _segments,
    ),
    Gauge(
        "retrieval_rank_biased_overlap_ratio",
        "Mean rank-biased overlap (extrapolated, persistence p = 0.9) of the latest "
        "successful run's top k with the baseline's, over the queries answered in both; "
        "needs no judgments.",
        ("k",),
        "success",
        _overlap(lambda s: s.rbo),
    ),
    Gauge(
        "retrieval_jaccard_ratio",
        "Mean Jaccard similarity of the latest successful run's top-k set with the "
        "baseline's, over the queries answered in both; needs no judgments.",
        ("k",),
        "success",
        _overlap(lambda s: s.jaccard),
    ),
    Gauge(
        "retrieval_judge_agreement",
        "Agreement of the suite's judge (its layer source) with human grades on the pairs "
        "both graded: exact (share alike), kappa (Cohen's, quadratic weights), kappa_linear, "
        "alpha (Krippendorff's, ordinal); -1 to 1.",
        ("judge", "statistic"),
        "success",
        _agreement,
    ),
    Gauge(
        "retrieval_judge_agreement_pairs",
        "The (query, doc) pairs that both people and the suite's judge graded: the overlap "
        "the agreement figures are over.",
        ("judge",),
        "success",
        _judge_pairs,
    ),
    Gauge(
        "retrieval_labels_needed",
        "1 when the latest successful run held a quality breach because its top k holds "
        "documents nobody judged (verdict unjudged), else 0.",
        (),
        "success",
        _scalar(lambda s: s.labels_needed),
    ),
    Gauge(
        "retrieval_query_drift",
        "A statistic of the suite's latest query drift check that could measure: mmd2, "
        "mmd_p_value, auc, auc_p_value, centroid_cosine_distance, centroid_euclidean_distance.",
        ("check", "statistic"),
        "success",
        _drift,
    ),
    Gauge(
        "retrieval_online_metric",
        "An online metric of the latest window of traffic that held searches, overall "
        '(application="all", segment="all"), per application (the rest: "other") or per '
        "value of the suite's segment; a metric with no data exports no series.",
        ("metric", "application", "segment"),
        "success",
        _online,
    ),
    Gauge(
        "retrieval_online_searches",
        "Searches in the latest window of traffic that held any, by application and segment.",
        ("application", "segment"),
        "success",
        _online_searches,
    ),
    Gauge(
        "retrieval_online_no_data",
        "1 when the online suite's latest window held no search (no data, never a rate of 0), "
        "else 0.",
        (),
        "attempt",
        _scalar(lambda s: s.online_no_data),
    ),
)

#: The gauges by name.
GAUGES_BY_NAME: Final = {gauge.name: gauge for gauge in GAUGES}


def sides_of(snapshot: SuiteSnapshot) -> frozenset[Side]:
    """Return the sides a snapshot exports: all on success, attempt and last success if not."""
    return SUCCESS_SIDES if snapshot.success else FAILURE_SIDES


def families(snapshot: SuiteSnapshot, sides: Iterable[Side] | None = None) -> list[Metric]:
    """Return the metric families of ``snapshot``, in :data:`GAUGES` order.

    ``sides`` defaults to :func:`sides_of`; a gauge with no series is left out.
    """
    chosen = sides_of(snapshot) if sides is None else frozenset(sides)
    static_names = tuple(snapshot.labels)
    static_values = tuple(snapshot.labels.values())
    identity = (snapshot.suite, snapshot.pipeline)
    out: list[Metric] = []
    for gauge in GAUGES:
        if gauge.side not in chosen:
            continue
        family = GaugeMetricFamily(
            gauge.name, gauge.help, labels=[*IDENTITY_LABELS, *gauge.labels, *static_names]
        )
        for values, value in gauge.read(snapshot):
            family.add_metric([*identity, *values, *static_values], value)
        if family.samples:
            out.append(family)
    return out


def merge(previous: Iterable[Metric], snapshot: SuiteSnapshot) -> list[Metric]:
    """Return ``previous`` families updated with ``snapshot``, as a later run replaces one.

    The snapshot's suite loses its series of every gauge the snapshot's sides cover (all of
    them after a success; the attempt gauges after a failure, and the last-success time when
    the snapshot knows it) and gets the snapshot's series instead. Other suites' series and
    families not in :data:`GAUGES` are kept as they were.
    """
    fresh = families(snapshot)
    replaced = {gauge.name for gauge in GAUGES if gauge.side in sides_of(snapshot)}
    if snapshot.last_success is None:
        replaced.discard("retrieval_last_success_timestamp_seconds")
    merged: dict[str, Metric] = {}
    for family in previous:
        drop = family.name in replaced
        kept = [s for s in family.samples if not (drop and s.labels.get("suite") == snapshot.suite)]
        if kept:
            copy = Metric(family.name, family.documentation, family.type, family.unit)
            copy.samples = kept
            merged[family.name] = copy
    for family in fresh:
        known = merged.get(family.name)
        if known is None:
            merged[family.name] = family
        else:
            family.samples = [*known.samples, *family.samples]
            merged[family.name] = family
    order = {gauge.name: index for index, gauge in enumerate(GAUGES)}
    return sorted(merged.values(), key=lambda f: (order.get(f.name, len(order)), f.name))


class FamiliesCollector(Collector):
    """A collector that yields fixed metric families (the one collector of a registry)."""

    def __init__(self, metrics: Sequence[Metric]) -> None:
        self._metrics = tuple(metrics)

    def collect(self) -> Iterator[Metric]:
        """Yield the families."""
        return iter(self._metrics)


def registry_of(metrics: Sequence[Metric]) -> CollectorRegistry:
    """Return a fresh registry holding ``metrics`` and nothing else."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FamiliesCollector(metrics))
    return registry


def build_registry(snapshot: SuiteSnapshot) -> CollectorRegistry:
    """Return a fresh registry with the gauges of ``snapshot`` (never the global one)."""
    return registry_of(families(snapshot))


def render(snapshot: SuiteSnapshot) -> str:
    """Return the Prometheus text exposition (format 0.0.4) of ``snapshot``'s gauges."""
    return render_families(families(snapshot))


def render_families(metrics: Sequence[Metric]) -> str:
    """Return the Prometheus text exposition of ``metrics``."""
    return generate_latest(registry_of(metrics)).decode("utf-8")
