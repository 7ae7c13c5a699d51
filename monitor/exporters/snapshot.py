"""The one record the exporters read: a suite's latest run, as the job composer saw it.

The composer fills a :class:`SuiteSnapshot` from the run, its comparison with the baseline
and the store; the exporters turn it into gauges and never look anywhere else. It is checked
when built, so a bad value fails at the composer with the field's name, not later inside a
Prometheus client or a Pushgateway.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from types import MappingProxyType
from typing import Final, get_args

from monitor.config.common import Severity
from monitor.errors import UsageError
from monitor.exporters.labels import check_value, validate_labels
from monitor.metrics.spec import Metric, parse_metric

#: The latency figures a snapshot may carry, in seconds.
LATENCY_KEYS: Final = ("p50", "p95", "p99", "mean", "max")

#: The most values one segment key may have. Each value is a label value on a series of its
#: own; a key with more values (a query id, a timestamp) would flood Prometheus.
MAX_SEGMENT_VALUES: Final = 64

#: A segment key, as the config accepts one.
_SEGMENT_KEY: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")

#: The severities a rule may have, as the config defines them.
SEVERITIES: Final[tuple[str, ...]] = get_args(Severity)


@dataclass(frozen=True, slots=True)
class RuleState:
    """One rule in one run: whether it fires, and the severity of its alert.

    ``severity`` is the rule's severity from the config (one of :data:`SEVERITIES`); it is
    exported as the ``severity`` label of ``retrieval_regression_detected``, so the alert
    Prometheus raises from that series is as serious as the rule.
    """

    breached: bool
    severity: str = "warning"

    def __post_init__(self) -> None:
        if not isinstance(self.breached, bool):
            raise UsageError(f"a rule's breached flag must be True or False, not {self.breached!r}")
        if self.severity not in SEVERITIES:
            raise UsageError(
                f"a rule's severity must be one of {', '.join(SEVERITIES)}, not {self.severity!r}"
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class SuiteSnapshot:
    """What one run of a suite tells Prometheus.

    - ``labels``: the suite's static labels from the config, added to every series.
    - ``success``: whether the run finished with metrics. A failed run exports only the
      gauges about the attempt (see :mod:`monitor.exporters.gauges`), so the last good
      quality figures and last-success time stay where they are.
    - ``started_at`` / ``finished_at``: when the run started and ended, timezone-aware
      (converted to UTC).
    - ``means``: metric name (``recall@5``, ``map``) -> mean over the evaluated queries.
    - ``baseline``: metric name -> the pinned baseline run's mean; ``None`` without one.
    - ``baseline_ci``: metric name -> ``(low, high)``, the confidence interval of the
      **delta** ``current - baseline`` from the paired comparison (``MetricChange.ci_low``
      and ``ci_high``). The exporters publish ``baseline + low`` and ``baseline + high``:
      the band of current values the comparison cannot tell from the measured one, so a drop
      is significant exactly when the baseline lies above the band.
    - ``rules``: rule name (``recall@5 max_drop``) -> its :class:`RuleState`: whether it
      fires, and its severity.
    - ``latency``: ``p50``, ``p95``, ``p99``, ``mean``, ``max`` in seconds, answered queries.
    - ``error_rate``, ``zero_result_rate``: shares in 0..1; ``mean_top1_score``: the mean
      score of the first hit. ``None`` when unknown.
    - ``queries_sent``: the queries sent in the run; ``queries_failed``: those of them that
      failed; ``queries_evaluated``: the judged queries the means are over (as
      :class:`~monitor.store.records.RunFigures` counts them).
    - ``evalset_fingerprint``, ``baseline_run_id``: which eval set and which baseline the
      figures come from.
    - ``index_size``: documents in the searched index, when the search reports it.
    - ``ann_recall_k``, ``ann_recall``: the mean ANN recall at that cutoff against the exact
      search of the same store (a vector kind's ``index_health``), None when not measured.
    - ``corpus_fingerprint``: the digest of the search's ``corpus_fingerprint()`` the run
      ran against, ``""`` when the search has none.
    - ``segments``: segment key (declared in the config) -> value -> metric name -> mean.
    - ``overlap_k``, ``rbo``, ``jaccard``: the mean rank-biased overlap (p = 0.9) and
      Jaccard of the run's top ``overlap_k`` with the baseline's, None without a baseline.
    - ``labels_needed``: whether a quality breach was held for unjudged documents (verdict
      ``unjudged``); None when coverage was not measured (no baseline or no judgments).
    - ``judge``: the suite judge's layer source (``judge:<id>:<model>:<prompt digest>``),
      ``""`` without one; ``judge_agreement``: statistic (``exact``, ``kappa``,
      ``kappa_linear``, ``alpha``) -> its agreement with human grades, each from -1 to 1;
      ``judge_pairs``: the pairs both graded (None without a judge).
    - ``last_success_at``: when the suite last succeeded, from the store; on a successful
      run it may be left ``None``, the run's own ``finished_at`` is used.
    - ``drift``: drift check name -> statistic (``mmd2``, ``auc``, ...) -> value, of the
      suite's latest query drift check that could measure (:mod:`monitor.drift`).
    - ``online``: an online suite's window: ``(metric, application, segment)`` -> value
      (``all`` for every application or segment value); ``online_searches``:
      ``(application, segment)`` -> searches; ``online_no_data``: whether the window held
      no search (None: not an online suite).

    A NaN figure (the store's "could not be computed") is left out: it exports no series.

    Every metric name is parsed once, when the snapshot is built: ``metrics`` maps each name
    in ``means``, ``baseline``, ``baseline_ci`` and ``segments`` to its
    :class:`~monitor.metrics.spec.Metric`, which the exporters read its labels from.
    """

    suite: str
    pipeline: str
    labels: Mapping[str, str] = field(default_factory=dict, hash=False)
    success: bool
    started_at: datetime
    finished_at: datetime
    means: Mapping[str, float] = field(default_factory=dict, hash=False)
    baseline: Mapping[str, float] | None = field(default=None, hash=False)
    baseline_ci: Mapping[str, tuple[float, float]] = field(default_factory=dict, hash=False)
    rules: Mapping[str, RuleState] = field(default_factory=dict, hash=False)
    latency: Mapping[str, float] = field(default_factory=dict, hash=False)
    error_rate: float | None = None
    zero_result_rate: float | None = None
    mean_top1_score: float | None = None
    queries_sent: int = 0
    queries_failed: int = 0
    queries_evaluated: int = 0
    evalset_fingerprint: str = ""
    baseline_run_id: int | None = None
    index_size: int | None = None
    ann_recall_k: int | None = None
    ann_recall: float | None = None
    corpus_fingerprint: str = ""
    segments: Mapping[str, Mapping[str, Mapping[str, float]]] = field(
        default_factory=dict, hash=False
    )
    overlap_k: int | None = None
    rbo: float | None = None
    jaccard: float | None = None
    labels_needed: bool | None = None
    judge: str = ""
    judge_agreement: Mapping[str, float] = field(default_factory=dict, hash=False)
    judge_pairs: int | None = None
    last_success_at: datetime | None = None
    drift: Mapping[str, Mapping[str, float]] = field(default_factory=dict, hash=False)
    online: Mapping[tuple[str, str, str], float] = field(default_factory=dict, hash=False)
    online_searches: Mapping[tuple[str, str], int] = field(default_factory=dict, hash=False)
    online_no_data: bool | None = None
    metrics: Mapping[str, Metric] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        check_value("suite", self.suite)
        check_value("pipeline", self.pipeline)
        if not isinstance(self.success, bool):
            raise UsageError(f"success must be True or False, not {self.success!r}")
        _set(self, "labels", validate_labels(self.labels))
        _set(self, "started_at", _utc("started_at", self.started_at))
        _set(self, "finished_at", _utc("finished_at", self.finished_at))
        if self.finished_at < self.started_at:
            raise UsageError("finished_at must not be before started_at")
        if self.last_success_at is not None:
            _set(self, "last_success_at", _utc("last_success_at", self.last_success_at))
        metrics: dict[str, Metric] = {}
        _set(self, "means", _ratios("means", self.means, metrics))
        if self.baseline is not None:
            _set(self, "baseline", _ratios("baseline", self.baseline, metrics))
        _set(self, "baseline_ci", _intervals(self.baseline_ci, self.baseline, metrics))
        _set(self, "rules", _rules(self.rules))
        _set(self, "latency", _latency(self.latency))
        _set(self, "error_rate", _ratio("error_rate", self.error_rate))
        _set(self, "zero_result_rate", _ratio("zero_result_rate", self.zero_result_rate))
        _set(self, "mean_top1_score", _finite("mean_top1_score", self.mean_top1_score))
        for name in ("queries_sent", "queries_failed", "queries_evaluated"):
            _count(name, getattr(self, name))
        for name in ("queries_failed", "queries_evaluated"):
            if getattr(self, name) > self.queries_sent:
                raise UsageError(
                    f"{name} ({getattr(self, name)}) exceeds queries_sent ({self.queries_sent})"
                )
        if not isinstance(self.evalset_fingerprint, str):
            raise UsageError("evalset_fingerprint must be a string")
        if self.evalset_fingerprint:
            check_value("fingerprint", self.evalset_fingerprint)
        if self.baseline_run_id is not None:
            _count("baseline_run_id", self.baseline_run_id)
        if self.index_size is not None:
            _count("index_size", self.index_size)
        _set(self, "ann_recall", _ratio("ann_recall", self.ann_recall))
        if self.ann_recall is not None and self.ann_recall_k is None:
            raise UsageError("an ANN recall needs its cutoff ann_recall_k")
        if self.ann_recall_k is not None:
            _count("ann_recall_k", self.ann_recall_k)
        if not isinstance(self.corpus_fingerprint, str):
            raise UsageError("corpus_fingerprint must be a string")
        if self.corpus_fingerprint:
            check_value("fingerprint", self.corpus_fingerprint)
        _set(self, "segments", _segments(self.segments, metrics))
        _set(self, "rbo", _ratio("rbo", self.rbo))
        _set(self, "jaccard", _ratio("jaccard", self.jaccard))
        if (self.rbo is not None or self.jaccard is not None) and self.overlap_k is None:
            raise UsageError("an overlap needs its cutoff overlap_k")
        if self.overlap_k is not None:
            _count("overlap_k", self.overlap_k)
        if self.labels_needed is not None and not isinstance(self.labels_needed, bool):
            raise UsageError(
                f"labels_needed must be True, False or None, not {self.labels_needed!r}"
            )
        _set(self, "judge_agreement", _agreement(self.judge, self.judge_agreement))
        if self.judge_pairs is not None:
            _count("judge_pairs", self.judge_pairs)
        _set(self, "drift", _drift(self.drift))
        _set(self, "online", _online(self.online))
        _set(self, "online_searches", _online_searches(self.online_searches))
        if self.online_no_data is not None and not isinstance(self.online_no_data, bool):
            raise UsageError(
                f"online_no_data must be True, False or None, not {self.online_no_data!r}"
            )
        _set(self, "metrics", MappingProxyType(metrics))

    @property
    def last_success(self) -> datetime | None:
        """Return when the suite last succeeded: this run's end if it succeeded."""
        return self.finished_at if self.success else self.last_success_at

    @property
    def duration_seconds(self) -> float:
        """Return the wall time of the run in seconds."""
        return (self.finished_at - self.started_at).total_seconds()

    @property
    def online_suite(self) -> bool:
        """Return whether this is an online suite's window (``online_no_data`` set), which
        sends no query."""
        return self.online_no_data is not None


def _set(snapshot: SuiteSnapshot, name: str, value: object) -> None:
    object.__setattr__(snapshot, name, value)


def _utc(name: str, moment: object) -> datetime:
    if not isinstance(moment, datetime):
        raise UsageError(f"{name} must be a datetime, not {type(moment).__name__}")
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise UsageError(f"{name} must be timezone-aware (UTC), not naive: {moment.isoformat()}")
    return moment.astimezone(timezone.utc)


def _number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UsageError(f"{name} must be a number, not {value!r}")
    return float(value)


def _finite(name: str, value: object) -> float | None:
    """Return ``value`` as a float, None for None or NaN; raise for infinities and non-numbers."""
    if value is None:
        return None
    number = _number(name, value)
    if math.isnan(number):
        return None
    if math.isinf(number):
        raise UsageError(f"{name} must be finite, not {number}")
    return number


def _ratio(name: str, value: object) -> float | None:
    number = _finite(name, value)
    if number is not None and not 0.0 <= number <= 1.0:
        raise UsageError(f"{name} must be between 0 and 1, not {number}")
    return number


def _parse(field_name: str, key: str, metrics: dict[str, Metric]) -> None:
    """Parse the metric name ``key`` into ``metrics``; raise UsageError unless it is canonical."""
    if key in metrics:
        return
    metric = parse_metric(key)
    if str(metric) != key:
        raise UsageError(
            f"{field_name}: metric key {key!r} is not canonical; write it as {str(metric)!r}"
        )
    metrics[key] = metric


def _ratios(
    name: str, values: Mapping[str, float], metrics: dict[str, Metric]
) -> Mapping[str, float]:
    out: dict[str, float] = {}
    for key, value in values.items():
        _parse(name, key, metrics)
        # A share must lie in [0, 1]; a count or a DCG (the metric spec says which) need not.
        check = _ratio if metrics[key].bounded else _finite
        number = check(f"{name}[{key!r}]", value)
        if number is not None:
            out[key] = number
    return MappingProxyType(out)


def _intervals(
    values: Mapping[str, tuple[float, float]],
    baseline: Mapping[str, float] | None,
    metrics: dict[str, Metric],
) -> Mapping[str, tuple[float, float]]:
    out: dict[str, tuple[float, float]] = {}
    for key, pair in values.items():
        _parse("baseline_ci", key, metrics)
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise UsageError(f"baseline_ci[{key!r}] must be a (low, high) pair, not {pair!r}")
        low = _finite(f"baseline_ci[{key!r}] low", pair[0])
        high = _finite(f"baseline_ci[{key!r}] high", pair[1])
        if low is None or high is None:
            continue
        bounded = metrics[key].bounded  # a count's or a DCG's delta is not within [-1, 1]
        if not low <= high or (bounded and not -1.0 <= low <= high <= 1.0):
            limits = "-1 <= low <= high <= 1" if bounded else "low <= high"
            raise UsageError(
                f"baseline_ci[{key!r}] must be a delta interval with {limits}, not ({low}, {high})"
            )
        if baseline is None or key not in baseline:
            raise UsageError(f"baseline_ci[{key!r}] has no baseline value to be added to")
        out[key] = (low, high)
    return MappingProxyType(out)


def _rules(values: Mapping[str, RuleState]) -> Mapping[str, RuleState]:
    for name, state in values.items():
        check_value("rule", name)
        if not isinstance(state, RuleState):
            raise UsageError(
                f"rules[{name!r}] must be a RuleState(breached, severity), not {state!r}"
            )
    return MappingProxyType(dict(values))


def _latency(values: Mapping[str, float]) -> Mapping[str, float]:
    out: dict[str, float] = {}
    for key, value in values.items():
        if key not in LATENCY_KEYS:
            raise UsageError(f"latency key {key!r} is unknown; known: {', '.join(LATENCY_KEYS)}")
        number = _finite(f"latency[{key!r}]", value)
        if number is not None:
            if number < 0:
                raise UsageError(f"latency[{key!r}] must not be negative, not {number}")
            out[key] = number
    return MappingProxyType(out)


def _agreement(judge: str, values: Mapping[str, float]) -> Mapping[str, float]:
    """Return the finite agreement figures, each checked to lie in -1..1 (NaN left out)."""
    if not isinstance(judge, str):
        raise UsageError("judge must be a string")
    if judge:
        check_value("judge", judge)
    elif values:
        raise UsageError("judge_agreement needs the judge it is of")
    out: dict[str, float] = {}
    for statistic, value in values.items():
        check_value("statistic", statistic)
        number = _finite(f"judge_agreement[{statistic!r}]", value)
        if number is not None:
            if not -1.0 <= number <= 1.0:
                raise UsageError(
                    f"judge_agreement[{statistic!r}] must be from -1 to 1, not {number}"
                )
            out[statistic] = number
    return MappingProxyType(out)


def _count(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"{name} must be a whole number of 0 or more, not {value!r}")


def _segments(
    values: Mapping[str, Mapping[str, Mapping[str, float]]], metrics: dict[str, Metric]
) -> Mapping[str, Mapping[str, Mapping[str, float]]]:
    out: dict[str, Mapping[str, Mapping[str, float]]] = {}
    for key, by_value in values.items():
        check_value("segment", key)
        if not _SEGMENT_KEY.fullmatch(key):
            raise UsageError(f"segment key {key!r} is not a metadata key like 'language'")
        if len(by_value) > MAX_SEGMENT_VALUES:
            raise UsageError(
                f"segment {key!r} has {len(by_value)} values, more than the "
                f"{MAX_SEGMENT_VALUES} a label may take; segment by a key with few values"
            )
        out[key] = MappingProxyType(
            {
                check_value("segment_value", value): _ratios(
                    f"segments[{key!r}][{value!r}]", m, metrics
                )
                for value, m in by_value.items()
            }
        )
    return MappingProxyType(out)


def _drift(values: Mapping[str, Mapping[str, float]]) -> Mapping[str, Mapping[str, float]]:
    out: dict[str, Mapping[str, float]] = {}
    for check, statistics in values.items():
        check_value("check", check)
        figures = {}
        for name, value in statistics.items():
            number = _finite(f"drift[{check!r}][{name!r}]", value)
            if number is not None:
                figures[check_value("statistic", name)] = number
        out[check] = MappingProxyType(figures)
    return MappingProxyType(out)


def _bounded(name: str, values: set[str]) -> None:
    """Refuse more distinct values of a label than :data:`MAX_SEGMENT_VALUES`."""
    if len(values) > MAX_SEGMENT_VALUES:
        raise UsageError(
            f"online {name} has {len(values)} values, more than the {MAX_SEGMENT_VALUES} a "
            "label may take; fold the rest into 'other'"
        )


def _online(values: Mapping[tuple[str, str, str], float]) -> Mapping[tuple[str, str, str], float]:
    out: dict[tuple[str, str, str], float] = {}
    for (metric, application, segment), value in values.items():
        key = (
            check_value("metric", metric),
            check_value("application", application),
            check_value("segment", segment),
        )
        number = _finite(f"online[{key!r}]", value)
        if number is not None:
            out[key] = number
    _bounded("application", {key[1] for key in out})
    _bounded("segment", {key[2] for key in out})
    return MappingProxyType(out)


def _online_searches(values: Mapping[tuple[str, str], int]) -> Mapping[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for (application, segment), count in values.items():
        _count(f"online_searches[{application!r}, {segment!r}]", count)
        out[(check_value("application", application), check_value("segment", segment))] = count
    _bounded("application", {key[0] for key in out})
    _bounded("segment", {key[1] for key in out})
    return MappingProxyType(out)
