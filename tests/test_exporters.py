"""The exporters: gauge names, units and labels, snapshot checks, render, push, textfile, HTTP."""

from __future__ import annotations

import io
import math
import os
import re
import socket
import stat
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from urllib.error import HTTPError

import httpx
import pytest
from prometheus_client import REGISTRY, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from monitor.cli import main
from monitor.errors import ExportError, LabelError, UsageError
from monitor.exporters import (
    GAUGES,
    K_ALL,
    MAX_SEGMENT_VALUES,
    RESERVED_LABELS,
    RuleState,
    SuiteSnapshot,
    build_registry,
    families,
    push_snapshot,
    render,
    start_http_exporter,
    validate_labels,
    write_textfile,
)
from monitor.exporters import snapshot as snapshot_module
from monitor.exporters.gauges import GAUGES_BY_NAME
from monitor.metrics.spec import MEASURES, UNBOUNDED, Metric, parse_metric

STARTED = datetime(2026, 11, 1, 12, 0, tzinfo=timezone.utc)
FINISHED = STARTED + timedelta(seconds=42.5)
EARLIER = STARTED - timedelta(hours=1)

#: Gauges of the attempt side: what a failed run pushes.
ATTEMPT = {
    "retrieval_error_ratio",
    "retrieval_queries_sent",
    "retrieval_queries_failed",
    "retrieval_run_duration_seconds",
    "retrieval_last_run_timestamp_seconds",
    "retrieval_run_success",
}
#: The gauges only an online suite's window exports, and those only a run of queries does.
ONLINE_ONLY = {"retrieval_online_no_data"}
RUN_ONLY = {
    "retrieval_queries_sent",
    "retrieval_queries_evaluated",
    "retrieval_queries_failed",
    "retrieval_run_duration_seconds",
}

#: Gauges without a unit suffix, and what they count or flag.
UNITLESS = {
    "retrieval_regression_detected",  # 0/1
    "retrieval_run_success",  # 0/1
    "retrieval_top1_score",  # the search's own score scale
    "retrieval_queries_sent",  # a count
    "retrieval_queries_evaluated",  # a count
    "retrieval_queries_failed",  # a count
    "retrieval_index_size",  # a count of documents
    "retrieval_labels_needed",  # 0/1
    "retrieval_judge_agreement",  # kappa and alpha run from -1 to 1: no ratio
    "retrieval_judge_agreement_pairs",  # a count of (query, doc) pairs
    "retrieval_query_drift",  # statistics of several scales (MMD^2, AUC, distances)
    "retrieval_online_metric",  # a rate, a position or milliseconds: the metric label says
    "retrieval_online_searches",  # a count
    "retrieval_online_no_data",  # 0/1
}


def make_snapshot(**changes: Any) -> SuiteSnapshot:
    """Return a successful snapshot that sets every field, with ``changes`` applied."""
    fields: dict[str, Any] = {
        "suite": "nightly",
        "pipeline": "hybrid",
        "labels": {"team": "search", "env": "prod"},
        "success": True,
        "started_at": STARTED,
        "finished_at": FINISHED,
        "means": {
            "recall@5": 0.8,
            "recall@10": 0.9,
            "ndcg@10": 0.7,
            "mrr": 0.65,
            "map@10": 0.6,
            "r_precision": 0.5,
            "hit_rate@1": 0.55,
            "precision@5": 0.3,
            "f1@5": 0.4,
            "ndcg_burges@10": 0.68,
            "bpref": 0.45,
            "infap": 0.42,
            "judged@10": 0.9,
            "set_precision": 0.2,
            "set_recall": 0.7,
            "set_f1": 0.3,
            "err@10": 0.35,
            **dict.fromkeys(("rbp", "rbp_50", "rbp_80", "rbp_95", "rbp_99"), 0.4),
        },
        "baseline": {"recall@5": 0.82, "ndcg@10": 0.71, "mrr": 0.6},
        "baseline_ci": {"recall@5": (-0.05, 0.01), "ndcg@10": (-0.03, 0.02)},
        "rules": {
            "recall@5 max_drop": RuleState(False, "critical"),
            "latency_p95_seconds_max": RuleState(True, "warning"),
        },
        "latency": {"p50": 0.01, "p95": 0.05, "p99": 0.09, "mean": 0.02, "max": 0.2},
        "error_rate": 0.01,
        "zero_result_rate": 0.02,
        "mean_top1_score": 12.5,
        "queries_sent": 100,
        "queries_failed": 1,
        "queries_evaluated": 95,
        "evalset_fingerprint": "sha256:0123abcd",
        "baseline_run_id": 7,
        "index_size": 12345,
        "ann_recall_k": 10,
        "ann_recall": 0.97,
        "corpus_fingerprint": "3f2a9c0e1b7d4a55",
        "segments": {"language": {"de": {"recall@5": 0.7}, "en": {"recall@5": 0.85}}},
        "overlap_k": 10,
        "rbo": 0.72,
        "jaccard": 0.6,
        "labels_needed": False,
        "judge": "judge:llm:tiny:0123456789ab",
        "judge_agreement": {"exact": 0.8, "kappa": 0.7, "kappa_linear": 0.65, "alpha": 0.69},
        "judge_pairs": 40,
        "drift": {
            "query_drift": {"auc": 0.52, "mmd_p_value": 0.4, "centroid_cosine_distance": 0.01}
        },
        "last_success_at": None,
        "online": {("ctr", "all", "all"): 0.4, ("ctr", "web", "all"): 0.45},
        "online_searches": {("all", "all"): 120, ("web", "all"): 80},
    }
    fields.update(changes)
    return SuiteSnapshot(**fields)


def make_failure(**changes: Any) -> SuiteSnapshot:
    """Return a failed run's snapshot: no figures, the last success from the store."""
    fields: dict[str, Any] = {
        "suite": "nightly",
        "pipeline": "hybrid",
        "labels": {"team": "search", "env": "prod"},
        "success": False,
        "started_at": STARTED,
        "finished_at": FINISHED,
        "error_rate": 0.6,
        "queries_sent": 100,
        "queries_failed": 60,
        "last_success_at": EARLIER,
    }
    fields.update(changes)
    return SuiteSnapshot(**fields)


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Return ``{(sample name, labels): value}`` parsed from an exposition."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(text: str, name: str, **labels: str) -> float | None:
    """Return the value of the one sample ``name`` whose labels include ``labels``."""
    found = [
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name and labels.items() <= s.labels.items()
    ]
    if len(found) > 1:
        raise AssertionError(f"{len(found)} samples of {name} match {labels}")
    return found[0] if found else None


def names(text: str) -> set[str]:
    """Return the sample names of an exposition."""
    return {name for name, _ in samples(text)}


# -- names, units and labels ------------------------------------------------------------------


@pytest.mark.parametrize("measure", sorted(set(MEASURES) - UNBOUNDED))
def test_each_measure_has_a_gauge_of_its_own(measure: str) -> None:
    """Each quality measure is exported under one name, retrieval_<measure>_ratio, by k."""
    gauge = GAUGES_BY_NAME[f"retrieval_{measure}_ratio"]
    assert ("k",) == gauge.labels


def test_every_sample_name_follows_the_naming_rules() -> None:
    """Every exported name has the retrieval_ prefix and a unit suffix that fits its values."""
    for (name, _), number in samples(render(make_snapshot())).items():
        assert re.fullmatch(r"retrieval_[a-z0-9_]+", name), name
        if name.endswith("_ratio"):
            assert 0.0 <= number <= 1.0, name
        elif name.endswith("_timestamp_seconds"):
            assert FINISHED.timestamp() == number, name
        elif name.endswith("_seconds"):
            assert number >= 0, name
        elif name.endswith("_info"):
            assert 1.0 == number, name
        else:
            assert name in UNITLESS, name
        assert not name.endswith("_total"), name


def test_every_gauge_is_exported_by_a_full_snapshot() -> None:
    """A snapshot that sets every field yields every declared gauge but an online window's
    no-data flag; as an online window's, every gauge but the counts of a run of queries."""
    everything = {gauge.name for gauge in GAUGES}
    assert (everything - ONLINE_ONLY, everything - RUN_ONLY) == (
        names(render(make_snapshot())),
        names(render(make_snapshot(online_no_data=False))),
    )


def test_gauge_names_are_declared_once() -> None:
    """No two gauges of the table share a name."""
    assert len(GAUGES) == len(GAUGES_BY_NAME)


def test_gauges_use_only_reserved_label_names() -> None:
    """Every label the table uses is reserved, so no static label can collide with it."""
    used = {label for gauge in GAUGES for label in gauge.labels} | {"suite", "pipeline"}
    assert set() == used - RESERVED_LABELS


def test_every_series_carries_suite_pipeline_and_static_labels() -> None:
    """Each sample has suite, pipeline and the config's static labels."""
    for _, labels in samples(render(make_snapshot())):
        assert {("suite", "nightly"), ("pipeline", "hybrid"), ("team", "search")} <= labels
        assert ("env", "prod") in labels


def test_no_label_beyond_the_declared_ones_appears() -> None:
    """The exposition uses only the exporter's label names and the static ones."""
    used = {name for _, labels in samples(render(make_snapshot())) for name, _ in labels}
    assert set() == used - RESERVED_LABELS - {"team", "env"}


def test_no_query_id_appears_in_any_label() -> None:
    """Label values come from config and metric names, never from the queries' ids."""
    query_ids = {f"q{i}" for i in range(100)}
    values = {v for _, labels in samples(render(make_snapshot())) for _, v in labels}
    assert set() == values & query_ids


def test_a_segment_with_too_many_values_is_refused() -> None:
    """A segment key with a value per query (like an id) is refused, naming the key."""
    by_query = {f"q{i}": {"recall@5": 0.5} for i in range(MAX_SEGMENT_VALUES + 1)}
    with pytest.raises(UsageError, match="segment 'query_id' has 65 values"):
        make_snapshot(segments={"query_id": by_query})


@pytest.mark.parametrize(
    ("metric", "k"), [("recall@5", "5"), ("mrr", K_ALL), ("map@10", "10"), ("r_precision", "all")]
)
def test_the_k_label_is_the_cutoff_or_all(metric: str, k: str) -> None:
    """k is the metric's cutoff, or "all" for a measure over the whole ranking."""
    measure = metric.partition("@")[0]
    text = render(make_snapshot(means={metric: 0.5}, baseline=None, baseline_ci={}))
    assert 0.5 == value(text, f"retrieval_{measure}_ratio", k=k)


def test_latency_percentiles_are_a_gauge_with_a_percentile_label() -> None:
    """p50, p95 and p99 are one gauge with percentile 50, 95 and 99."""
    text = render(make_snapshot())
    got = {
        p: value(text, "retrieval_search_latency_seconds", percentile=p) for p in ("50", "95", "99")
    }
    assert {"50": 0.01, "95": 0.05, "99": 0.09} == got
    assert "# TYPE retrieval_search_latency_seconds gauge" in text


def test_baseline_is_one_gauge_labelled_by_measure_and_k() -> None:
    """The baseline value of each metric is retrieval_baseline_ratio{measure, k}."""
    text = render(make_snapshot())
    assert 0.82 == value(text, "retrieval_baseline_ratio", measure="recall", k="5")
    assert 0.6 == value(text, "retrieval_baseline_ratio", measure="mrr", k="all")


def test_confidence_band_is_the_baseline_plus_the_delta_interval() -> None:
    """The band's bounds are baseline + the delta's CI bounds."""
    text = render(make_snapshot())
    lower = value(text, "retrieval_confidence_lower_ratio", measure="recall", k="5")
    upper = value(text, "retrieval_confidence_upper_ratio", measure="recall", k="5")
    assert (0.77, 0.83) == pytest.approx((lower, upper))


def test_confidence_band_is_clipped_to_ratios() -> None:
    """A delta interval reaching past 0 or 1 is clipped, so the bounds stay ratios."""
    text = render(make_snapshot(baseline={"mrr": 0.05}, baseline_ci={"mrr": (-0.2, 0.99)}))
    lower = value(text, "retrieval_confidence_lower_ratio", measure="mrr")
    upper = value(text, "retrieval_confidence_upper_ratio", measure="mrr")
    assert (0.0, 1.0) == (lower, upper)


def test_regression_flags_are_zero_or_one_by_rule() -> None:
    """Each rule is a 0/1 series labelled with the rule's name."""
    text = render(make_snapshot())
    assert 0.0 == value(text, "retrieval_regression_detected", rule="recall@5 max_drop")
    assert 1.0 == value(text, "retrieval_regression_detected", rule="latency_p95_seconds_max")


@pytest.mark.parametrize("severity", ["info", "warning", "critical"])
def test_a_regression_flag_carries_its_rules_severity(severity: str) -> None:
    """The flag's severity label is the rule's, so the alert raised from it keeps it."""
    text = render(make_snapshot(rules={"recall@5 max_drop": RuleState(True, severity)}))
    assert 1.0 == value(
        text, "retrieval_regression_detected", rule="recall@5 max_drop", severity=severity
    )


def test_a_rule_state_defaults_to_warning() -> None:
    """A rule state without a severity is a warning, as a rule without one in the config."""
    assert "warning" == RuleState(True).severity


@pytest.mark.parametrize(
    ("breached", "severity", "message"),
    [
        (1, "warning", "a rule's breached flag must be True or False, not 1"),
        (True, "page", "a rule's severity must be one of info, warning, critical, not 'page'"),
    ],
)
def test_a_bad_rule_state_is_refused(breached: Any, severity: Any, message: str) -> None:
    """A rule state refuses a flag that is not a bool and a severity the config lacks."""
    with pytest.raises(UsageError) as caught:
        RuleState(breached, severity)
    assert message == str(caught.value)


def test_a_runs_textfile_carries_each_rules_severity(tmp_path: Path) -> None:
    """A run whose critical rule breaks writes its flag with severity="critical"."""
    config = tmp_path / "monitor.yaml"
    prom = tmp_path / "suite.prom"
    config.write_text(
        f"""
store: {{path: {tmp_path / "m.db"}}}
suites:
  nightly:
    evalset: {{bundled: larkfield}}
    search: {{kind: replay, bundled: larkfield/keyword}}
    baseline: {{bundled_run: larkfield/rerank}}
    metrics: [mrr@10]
    rules: [{{metric: mrr@10, max_drop: 0.05, severity: critical}}]
    significance: {{iterations: 1000}}
    exporters: [{{kind: textfile, path: {prom}}}]
"""
    )
    assert 0 == main(["run", "--config", str(config), "--no-progress"])
    text = prom.read_text()
    assert 1.0 == value(
        text,
        "retrieval_regression_detected",
        rule="mrr@10 max_drop",
        severity="critical",
    )


def test_evalset_info_names_fingerprint_and_baseline_run() -> None:
    """The info gauge is 1 and carries the eval set fingerprint and the baseline run id."""
    text = render(make_snapshot())
    assert 1.0 == value(
        text, "retrieval_evalset_info", fingerprint="sha256:0123abcd", baseline_run_id="7"
    )


def test_evalset_info_without_baseline_says_none() -> None:
    """Without a baseline the info gauge's baseline_run_id is "none", never empty."""
    text = render(make_snapshot(baseline=None, baseline_ci={}, baseline_run_id=None))
    assert 1.0 == value(text, "retrieval_evalset_info", baseline_run_id="none")


def test_segments_are_labelled_by_key_value_measure_and_k() -> None:
    """A segment's mean is retrieval_segment_ratio{segment, segment_value, measure, k}."""
    text = render(make_snapshot())
    got = value(
        text, "retrieval_segment_ratio", segment="language", segment_value="de", measure="recall"
    )
    assert 0.7 == got


def test_segments_are_exported_for_every_measure_they_hold() -> None:
    """Each measure of each segment value has a series of its own, not only the first one."""
    segments = {
        "language": {
            "de": {"recall@5": 0.7, "ndcg@10": 0.6},
            "en": {"recall@5": 0.85, "ndcg@10": 0.75},
        }
    }
    text = render(make_snapshot(segments=segments))
    got = {
        (labels["segment_value"], labels["measure"], labels["k"]): number
        for (name, pairs), number in samples(text).items()
        if name == "retrieval_segment_ratio"
        for labels in [dict(pairs)]
    }
    assert {
        ("de", "recall", "5"): 0.7,
        ("de", "ndcg", "10"): 0.6,
        ("en", "recall", "5"): 0.85,
        ("en", "ndcg", "10"): 0.75,
    } == got


def test_run_timestamps_and_duration_come_from_the_run() -> None:
    """Last run and last success are the run's finish time; duration is finish - start."""
    text = render(make_snapshot())
    assert FINISHED.timestamp() == value(text, "retrieval_last_run_timestamp_seconds")
    assert FINISHED.timestamp() == value(text, "retrieval_last_success_timestamp_seconds")
    assert 42.5 == value(text, "retrieval_run_duration_seconds")
    assert 1.0 == value(text, "retrieval_run_success")


def test_unknown_figures_export_no_series() -> None:
    """A figure that is None or NaN (the store's "not computed") has no series."""
    snapshot = make_snapshot(
        index_size=None,
        mean_top1_score=math.nan,
        latency={"p50": math.nan},
        baseline=None,
        baseline_ci={},
    )
    exported = names(render(snapshot))
    assert set() == exported & {
        "retrieval_index_size",
        "retrieval_top1_score",
        "retrieval_search_latency_seconds",
        "retrieval_baseline_ratio",
    }


def test_a_failed_run_exports_the_attempt_and_the_last_success_only() -> None:
    """A failed run reports itself and the stored last success, and no quality figures."""
    text = render(make_failure())
    assert ATTEMPT | {"retrieval_last_success_timestamp_seconds"} == names(text)
    assert 0.0 == value(text, "retrieval_run_success")
    assert EARLIER.timestamp() == value(text, "retrieval_last_success_timestamp_seconds")


def test_a_failed_run_with_figures_still_exports_no_quality() -> None:
    """Figures on a failed snapshot (partial, untrustworthy) are not exported."""
    text = render(make_snapshot(success=False, last_success_at=None))
    assert ATTEMPT == names(text)


# -- snapshot checks --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "named"),
    [
        ({"1team": "x"}, "1team"),
        ({"team-name": "x"}, "team-name"),
        ({"__meta": "x"}, "__meta"),
        ({"suite": "x"}, "suite"),
        ({"job": "x"}, "job"),
        ({"instance": "x"}, "instance"),
        ({"quantile": "x"}, "quantile"),
        ({"team": ""}, "team"),
        ({"team": 3}, "team"),
        ({"team": "x" * 257}, "team"),
    ],
)
def test_bad_static_labels_fail_naming_the_label(labels: dict[str, object], named: str) -> None:
    """validate_labels refuses a bad name or value with an error that names the label."""
    with pytest.raises(LabelError, match=f"label {named!r}") as caught:
        validate_labels(labels)
    assert named == caught.value.name


def test_valid_static_labels_come_back_sorted_and_read_only() -> None:
    """Good labels are returned sorted by name, in a mapping that cannot be changed."""
    checked = validate_labels({"team": "search", "env": "prod"})
    assert [("env", "prod"), ("team", "search")] == list(checked.items())
    with pytest.raises(TypeError):
        checked["x"] = "y"  # type: ignore[index]


def test_a_snapshot_checks_its_static_labels() -> None:
    """A snapshot with a reserved static label is refused."""
    with pytest.raises(LabelError, match="'k'"):
        make_snapshot(labels={"k": "10"})


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"suite": ""}, "label 'suite'"),
        ({"started_at": datetime(2026, 11, 1)}, "timezone-aware"),
        ({"finished_at": STARTED - timedelta(seconds=1)}, "before started_at"),
        ({"means": {"recall@5": 1.5}}, "between 0 and 1"),
        ({"means": {"recal@5": 0.5}}, "unknown measure"),
        ({"means": {" recall@5": 0.5}}, "not canonical"),
        ({"means": {"recall@5": math.inf}}, "finite"),
        ({"latency": {"p90": 0.1}}, "latency key 'p90'"),
        ({"latency": {"p50": -0.1}}, "negative"),
        ({"queries_failed": 101}, "exceeds"),
        ({"queries_sent": -1, "queries_failed": 0}, "queries_sent"),
        ({"baseline": None}, "no baseline value"),
        ({"baseline_ci": {"recall@5": (0.1, -0.1)}}, "low <= high"),
        ({"rules": {"recall@5 max_drop": True}}, "must be a RuleState(breached, severity)"),
        ({"error_rate": "0.1"}, "a number"),
        ({"index_size": 1.5}, "whole number"),
        ({"segments": {"bad key": {}}}, "segment key 'bad key'"),
        ({"segments": {"language": {"": {}}}}, "label 'segment_value'"),
    ],
)
def test_a_bad_snapshot_field_is_refused(changes: dict[str, Any], message: str) -> None:
    """A snapshot refuses a bad field with a message that says which."""
    with pytest.raises(UsageError, match=re.escape(message)):
        make_snapshot(**changes)


def test_a_non_canonical_metric_key_names_its_field() -> None:
    """A metric key written another way is refused, naming the field and the canonical name."""
    with pytest.raises(UsageError) as caught:
        make_snapshot(segments={"language": {"de": {" recall@5": 0.7}}})
    assert (
        "segments['language']['de']: metric key ' recall@5' is not canonical; "
        "write it as 'recall@5'"
    ) == str(caught.value)


def test_a_snapshot_keeps_the_spec_of_every_metric_key() -> None:
    """Each metric name in means, baseline, intervals and segments maps to its parsed spec."""
    snapshot = make_snapshot(
        means={"recall@5": 0.8},
        baseline={"recall@5": 0.82, "mrr": 0.6},
        baseline_ci={"mrr": (-0.05, 0.01)},
        segments={"language": {"de": {"ndcg@10": 0.7}}},
    )
    assert {
        "recall@5": Metric("recall", 5),
        "mrr": Metric("mrr"),
        "ndcg@10": Metric("ndcg", 10),
    } == dict(snapshot.metrics)


def test_rendering_parses_no_metric_name_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Names are parsed once, when the snapshot is built; the gauges read the parsed specs."""
    snapshot = make_snapshot()
    calls: list[str] = []

    def counting(name: str) -> Metric:
        calls.append(name)
        return parse_metric(name)

    monkeypatch.setattr(snapshot_module, "parse_metric", counting)
    render(snapshot)
    assert [] == calls


def test_snapshot_times_are_converted_to_utc() -> None:
    """Timezone-aware times in another zone are kept as the same instant in UTC."""
    plus_two = timezone(timedelta(hours=2))
    snapshot = make_snapshot(
        started_at=STARTED.astimezone(plus_two), finished_at=FINISHED.astimezone(plus_two)
    )
    assert (timezone.utc, FINISHED) == (snapshot.finished_at.tzinfo, snapshot.finished_at)


def test_snapshot_mappings_are_read_only() -> None:
    """The snapshot's mappings cannot be changed after it is built."""
    snapshot = make_snapshot()
    with pytest.raises(TypeError):
        snapshot.means["recall@5"] = 0.1  # type: ignore[index]


# -- registries and render --------------------------------------------------------------------


def test_render_is_the_registry_exposition() -> None:
    """render() is the text format of build_registry()."""
    snapshot = make_snapshot()
    assert generate_latest(build_registry(snapshot)).decode() == render(snapshot)


def test_each_snapshot_gets_a_fresh_registry_and_the_global_one_stays_clean() -> None:
    """Two registries are distinct objects and the default registry gains no gauge."""
    first, second = build_registry(make_snapshot()), build_registry(make_snapshot())
    assert first is not second
    assert set() == {m.name for m in REGISTRY.collect() if m.name.startswith("retrieval_")}


def test_families_follow_the_table_order() -> None:
    """Families come out in the order of the gauge table."""
    order = [gauge.name for gauge in GAUGES]
    got = [family.name for family in families(make_snapshot())]
    assert sorted(got, key=order.index) == got


# -- push -------------------------------------------------------------------------------------


class Recorder:
    """A push handler that records each request instead of sending it."""

    def __init__(self, error: Exception | None = None) -> None:
        self.requests: list[tuple[str, str, bytes]] = []
        self.error = error

    def __call__(
        self,
        url: str,
        method: str,
        timeout: float | None,
        headers: list[tuple[str, str]],
        data: bytes,
    ) -> Any:
        def send() -> None:
            self.requests.append((url, method, data))
            if self.error is not None:
                raise self.error

        return send


def test_a_successful_run_replaces_its_group() -> None:
    """A success is a PUT of every gauge to job=retrieval-monitor, suite=<suite>."""
    recorder = Recorder()
    push_snapshot(make_snapshot(), "http://gateway:9091", handler=recorder)
    [(url, method, data)] = recorder.requests
    assert ("PUT", "http://gateway:9091/metrics/job/retrieval-monitor/suite/nightly") == (
        method,
        url,
    )
    assert {gauge.name for gauge in GAUGES} - ONLINE_ONLY == names(data.decode())


def test_a_failed_run_adds_only_the_attempt_gauges_to_its_group() -> None:
    """A failure is a POST of the attempt gauges: the last success stays in the group."""
    recorder = Recorder()
    push_snapshot(make_failure(), "http://gateway:9091", handler=recorder)
    [(url, method, data)] = recorder.requests
    assert ("POST", "http://gateway:9091/metrics/job/retrieval-monitor/suite/nightly") == (
        method,
        url,
    )
    assert ATTEMPT == names(data.decode())


def test_the_grouping_key_holds_no_run_id_and_the_job_is_configurable() -> None:
    """Two runs of a suite push to the same group; the job comes from the config."""
    recorder = Recorder()
    for snapshot in (make_snapshot(baseline_run_id=1), make_snapshot(baseline_run_id=2)):
        push_snapshot(snapshot, "gateway:9091", job="search-quality", handler=recorder)
    urls = {url for url, _, _ in recorder.requests}
    assert {"http://gateway:9091/metrics/job/search-quality/suite/nightly"} == urls


def test_a_suite_name_with_a_slash_is_encoded_in_the_grouping_key() -> None:
    """A slash in the suite name is base64-encoded, as the Pushgateway requires."""
    recorder = Recorder()
    push_snapshot(make_snapshot(suite="team/nightly"), "http://gateway:9091", handler=recorder)
    assert recorder.requests[0][0].endswith("/suite@base64/dGVhbS9uaWdodGx5")


def test_a_push_that_fails_raises_an_export_error_without_the_password() -> None:
    """A handler's OSError becomes an ExportError naming the gateway, never its password."""
    recorder = Recorder(OSError("connection refused"))
    with pytest.raises(ExportError) as caught:
        push_snapshot(make_snapshot(), "https://user:s3cret@gateway:9091/", handler=recorder)
    assert "export to pushgateway https://gateway:9091: OSError: connection refused" == str(
        caught.value
    )
    assert "s3cret" not in str(caught.value)


def test_a_refused_push_reports_the_gateways_reason() -> None:
    """An HTTP error from the Pushgateway carries its status and explanation."""
    body = io.BytesIO(b"pushed metrics are invalid or inconsistent with existing metrics")
    error = HTTPError("http://gateway:9091", 400, "Bad Request", {}, body)  # type: ignore[arg-type]
    with pytest.raises(ExportError, match="HTTP 400 Bad Request: pushed metrics are invalid"):
        push_snapshot(make_snapshot(), "http://gateway:9091", handler=Recorder(error))


def test_a_pushgateway_that_is_down_raises_an_export_error() -> None:
    """Nothing listening on the gateway's port is an ExportError, not a crash."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ExportError, match=f"pushgateway http://127.0.0.1:{port}"):
        push_snapshot(make_snapshot(), f"http://127.0.0.1:{port}", timeout=2)


def test_an_empty_job_is_a_usage_error() -> None:
    """The grouping key's job must be a non-empty string."""
    with pytest.raises(UsageError, match="job"):
        push_snapshot(make_snapshot(), "http://gateway:9091", job="", handler=Recorder())


# -- textfile ---------------------------------------------------------------------------------


def test_the_textfile_holds_the_rendered_snapshot(tmp_path: Path) -> None:
    """A first write puts exactly the snapshot's exposition in the file."""
    path = tmp_path / "retrieval.prom"
    write_textfile(make_snapshot(), path)
    assert render(make_snapshot()) == path.read_text()


def test_the_textfile_is_readable_by_node_exporter(tmp_path: Path) -> None:
    """The file is world-readable (0644), not private like a fresh temporary file."""
    path = tmp_path / "retrieval.prom"
    write_textfile(make_snapshot(), path)
    assert 0o644 == stat.S_IMODE(path.stat().st_mode)


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the rename fails the old file is intact and no temporary file is left behind."""
    path = tmp_path / "retrieval.prom"
    write_textfile(make_snapshot(), path)
    before = path.read_text()

    def refuse(source: str, target: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(ExportError, match=r"textfile .*disk full"):
        write_textfile(make_snapshot(means={"recall@5": 0.1}), path)
    assert before == path.read_text()
    assert ["retrieval.prom"] == sorted(p.name for p in tmp_path.iterdir() if p.suffix != ".lock")


@pytest.mark.slow
def test_a_reader_never_sees_a_partial_textfile(tmp_path: Path) -> None:
    """While runs rewrite the file, every read parses whole and holds every gauge."""
    path = tmp_path / "retrieval.prom"
    write_textfile(make_snapshot(), path)
    done = threading.Event()
    seen: list[int] = []

    def rewrite() -> None:
        for i in range(30):
            write_textfile(make_snapshot(queries_sent=100 + i), path)
        done.set()

    writer = threading.Thread(target=rewrite)
    writer.start()
    while not done.is_set():
        text = path.read_text()
        assert text.endswith("\n")
        seen.append(len(names(text)))
    writer.join()
    assert {len(GAUGES) - len(ONLINE_ONLY)} == set(seen)


def test_suites_sharing_a_textfile_keep_each_others_series(tmp_path: Path) -> None:
    """Writing one suite leaves another suite's series in the same file."""
    path = tmp_path / "retrieval.prom"
    write_textfile(make_snapshot(suite="nightly"), path)
    write_textfile(make_snapshot(suite="hourly", means={"recall@5": 0.3}), path)
    text = path.read_text()
    assert 0.8 == value(text, "retrieval_recall_ratio", suite="nightly", k="5")
    assert 0.3 == value(text, "retrieval_recall_ratio", suite="hourly", k="5")
    assert 1 == text.count("# TYPE retrieval_recall_ratio gauge")


def test_a_failed_run_keeps_the_last_good_figures_in_the_textfile(tmp_path: Path) -> None:
    """After a failure the file shows run_success 0 and still the last success's figures."""
    path = tmp_path / "retrieval.prom"
    write_textfile(make_snapshot(), path)
    later = FINISHED + timedelta(hours=1)
    write_textfile(make_failure(started_at=later, finished_at=later, last_success_at=None), path)
    text = path.read_text()
    assert 0.0 == value(text, "retrieval_run_success")
    assert FINISHED.timestamp() == value(text, "retrieval_last_success_timestamp_seconds")
    assert later.timestamp() == value(text, "retrieval_last_run_timestamp_seconds")
    assert 0.8 == value(text, "retrieval_recall_ratio", k="5")


def test_a_success_drops_series_the_suite_no_longer_has(tmp_path: Path) -> None:
    """A successful run replaces all of its suite's series: a dropped metric disappears."""
    path = tmp_path / "retrieval.prom"
    write_textfile(make_snapshot(), path)
    write_textfile(make_snapshot(means={"recall@5": 0.8}), path)
    assert None is value(path.read_text(), "retrieval_recall_ratio", k="10")


def test_a_textfile_name_must_end_in_prom(tmp_path: Path) -> None:
    """node_exporter reads only *.prom, so another name is a usage error."""
    with pytest.raises(UsageError, match=r"\.prom"):
        write_textfile(make_snapshot(), tmp_path / "retrieval.txt")


def test_a_textfile_that_is_not_an_exposition_is_left_alone(tmp_path: Path) -> None:
    """An existing file that does not parse is not overwritten."""
    path = tmp_path / "retrieval.prom"
    path.write_text("this is { not metrics\n")
    with pytest.raises(ExportError, match="not Prometheus text exposition"):
        write_textfile(make_snapshot(), path)
    assert "this is { not metrics\n" == path.read_text()


def test_an_unwritable_textfile_is_an_export_error(tmp_path: Path) -> None:
    """A folder that cannot exist (its parent is a file) is an ExportError."""
    (tmp_path / "file").write_text("")
    with pytest.raises(ExportError, match="export to textfile"):
        write_textfile(make_snapshot(), tmp_path / "file" / "retrieval.prom")


# -- HTTP endpoint ----------------------------------------------------------------------------


@pytest.fixture
def exporter() -> Iterator[Any]:
    """Start an HTTP exporter on a free port of 127.0.0.1 for one test."""
    with start_http_exporter("127.0.0.1", 0) as running:
        yield running


def scrape(url: str) -> str:
    """Return the body of a scrape of ``url``."""
    response = httpx.get(url, timeout=5)
    response.raise_for_status()
    return response.text


def test_the_endpoint_serves_nothing_before_the_first_run(exporter: Any) -> None:
    """Before any update the endpoint answers with an empty exposition."""
    assert "" == scrape(exporter.url)


def test_the_endpoint_serves_the_latest_snapshot_of_every_suite(exporter: Any) -> None:
    """Two suites on one endpoint are both served, each with its latest run."""
    exporter.update(make_snapshot(suite="nightly", means={"recall@5": 0.1}))
    exporter.update(make_snapshot(suite="nightly"))
    exporter.update(make_snapshot(suite="hourly", means={"recall@5": 0.3}))
    text = scrape(exporter.url)
    assert 0.8 == value(text, "retrieval_recall_ratio", suite="nightly", k="5")
    assert 0.3 == value(text, "retrieval_recall_ratio", suite="hourly", k="5")


def test_the_endpoint_keeps_the_last_success_after_a_failure(exporter: Any) -> None:
    """A failed run updates the attempt gauges and keeps the last good figures."""
    exporter.update(make_snapshot())
    exporter.update(make_failure(last_success_at=None))
    text = scrape(exporter.url)
    assert (0.0, FINISHED.timestamp(), 0.8) == (
        value(text, "retrieval_run_success"),
        value(text, "retrieval_last_success_timestamp_seconds"),
        value(text, "retrieval_recall_ratio", k="5"),
    )


def test_a_forgotten_suite_is_no_longer_served(exporter: Any) -> None:
    """forget() removes every series of a suite and keeps the others."""
    exporter.update(make_snapshot(suite="nightly"))
    exporter.update(make_snapshot(suite="hourly"))
    exporter.forget("nightly")
    assert {"hourly"} == {dict(labels)["suite"] for _, labels in samples(scrape(exporter.url))}


def test_a_port_in_use_is_an_export_error(exporter: Any) -> None:
    """Starting a second exporter on a taken port names the address."""
    with pytest.raises(ExportError, match=f"http 127.0.0.1:{exporter.port}: cannot listen"):
        start_http_exporter("127.0.0.1", exporter.port)


@pytest.mark.slow
def test_close_frees_the_port_and_may_be_called_twice() -> None:
    """After close() the port can be listened on again."""
    running = start_http_exporter("127.0.0.1", 0)
    port = running.port
    running.close()
    running.close()
    with start_http_exporter("127.0.0.1", port) as again:
        assert port == again.port
