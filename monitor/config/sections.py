"""Read each section of a suite (``evalset``, ``search``, ``rules``, ...) into its record.

The sections saying where a suite's results go (``exporters``, ``notifiers``, ``labels``,
``links``) are read by :mod:`monitor.config.outputs`.
"""

from __future__ import annotations

import difflib
import string
from collections.abc import Callable, Mapping
from datetime import timedelta
from types import MappingProxyType
from typing import TypeVar, cast

from monitor.config import vocab
from monitor.config.common import Severity
from monitor.config.fields import Fields, is_secret_key
from monitor.config.judge import agreement_rule
from monitor.config.kinds import path_option, plugin_kind, search_kinds
from monitor.config.model import (
    BaselineConfig,
    Check,
    CoverageConfig,
    EvalSetConfig,
    OptionValue,
    PersistenceConfig,
    RuleConfig,
    RunnerConfig,
    ScoringConfig,
    SearchConfig,
    SignificanceConfig,
)
from monitor.config.nodes import Node
from monitor.errors import MetricError
from monitor.metrics.spec import (
    AVERAGES,
    DEFAULT_CUTOFFS,
    MEASURES,
    UNIT_CUTS,
    Average,
    Cutoff,
    Metric,
    default_metrics,
    grid,
    parse_metric,
)
from monitor.store.retention import KEEP_REASONS, KeepReason, Retention

#: The cutoff of ``index_health: true`` (as :mod:`monitor.search.health` has it).
DEFAULT_INDEX_HEALTH_K = 10
#: The ANN recall floor a suite with index health gets when no rule names one.
DEFAULT_ANN_RECALL_FLOOR = 0.95
#: The default "unexpected drop" of a vector search's indexed vectors, with index health.
DEFAULT_INDEX_SIZE_DROP = 0.1


#: An item of a list the config reads.
T = TypeVar("T")


def _metric(f: Fields, node: Node, example: str) -> Metric:
    """Parse a metric name; a MetricError becomes a ConfigError at ``node``."""
    name = f.string(node, f"a metric name such as {example}")
    try:
        return parse_metric(name)
    except MetricError as exc:
        measure = name.partition("@")[0].strip()
        close = difflib.get_close_matches(measure, sorted(MEASURES), n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close and measure not in MEASURES else ""
        expected = f"a metric name such as {example} ({exc.reason}{hint})"
        raise f.error(node, expected, show=True) from None


def evalset(f: Fields, node: Node) -> EvalSetConfig:
    """Read ``evalset``: ``{path, format?, queries?}`` or ``{bundled: larkfield}``, each with
    an optional ``reference`` search (and ``reference_k``) whose results are the judgments."""
    entries = f.mapping(node, vocab.EVALSET_KEYS, "the eval set: path or bundled")
    reference = search(f, entries["reference"]) if "reference" in entries else None
    corpus = None
    if "corpus" in entries:
        corpus = f.path(entries["corpus"], "a corpus file (.jsonl, .csv, .tsv)", must_exist=True)
    reference_k = 10
    if "reference_k" in entries:
        if reference is None:
            raise f.error(entries["reference_k"], "'reference_k' only beside 'reference'")
        reference_k = f.integer(entries["reference_k"], minimum=1)
    if "bundled" in entries:
        for key in ("path", "format", "queries"):
            if key in entries:
                raise f.error(
                    entries[key], f"no {key!r} beside 'bundled' (a bundled set is complete)"
                )
        name = f.string(
            entries["bundled"],
            "a bundled eval set name such as larkfield",
            pattern=vocab.BUNDLED_SET,
        )
        return EvalSetConfig(
            bundled=name, reference=reference, reference_k=reference_k, corpus=corpus
        )
    path = f.path(
        f.require(node, entries, "path", " (or 'bundled')"), "an eval set file", must_exist=True
    )
    fmt = None
    if "format" in entries:
        expected = f"an eval set format: one of {', '.join(vocab.EVALSET_FORMATS)}"
        fmt = f.string(entries["format"], expected)
        if fmt not in vocab.EVALSET_FORMATS:
            raise f.error(entries["format"], expected, show=True)
    queries = None
    if "queries" in entries:
        is_trec = fmt == "trec" or (fmt is None and path.suffix.lower() in vocab.TREC_SUFFIXES)
        if not is_trec:
            raise f.error(entries["queries"], "'queries' only with TREC qrels (format: trec)")
        queries = f.path(entries["queries"], "a queries TSV file", must_exist=True)
    return EvalSetConfig(
        path=path,
        format=fmt,
        queries=queries,
        reference=reference,
        reference_k=reference_k,
        corpus=corpus,
    )


def search(f: Fields, node: Node) -> SearchConfig:
    """Read ``search``: a ``kind`` and options the plug-in validates itself."""
    if not isinstance(node.value, Mapping):
        raise f.error(node, "a mapping (the search plug-in: kind and its options)", show=True)
    entries = node.value
    kind = plugin_kind(f, f.require(node, entries, "kind"), search_kinds(), "search")
    bundled = None
    if "bundled" in entries:
        if kind != "replay":
            raise f.error(entries["bundled"], "'bundled' only with kind: replay")
        bundled = f.string(
            entries["bundled"],
            "a bundled run such as larkfield/keyword",
            pattern=vocab.BUNDLED_RUN,
        )
        if "path" in entries:
            raise f.error(entries["path"], "no 'path' beside 'bundled' (a bundled run is a file)")
    paths = vocab.PATH_OPTIONS.get(kind, ())
    options: dict[str, OptionValue] = {}
    for key, child in entries.items():
        if key in ("kind", "bundled"):
            continue
        if key in vocab.SEARCH_OPTIONS.get(kind, ()):
            # Kept frozen, secrets still masked: plugin_options() thaws the whole tree.
            inner = search(f, child)
            named = {} if inner.bundled is None else {"bundled": inner.bundled}
            options[key] = MappingProxyType({"kind": inner.kind, **inner.options, **named})
        else:
            options[key] = _plugin_option(f, key, child, paths)
    return SearchConfig(
        kind=kind, options=options, bundled=bundled, base_dir=f.base_dir, origin=f.origin(node)
    )


def _plugin_option(f: Fields, key: str, node: Node, paths: tuple[str, ...]) -> OptionValue:
    """Return option ``key``: a path when ``paths`` names it, a mapping whose ``paths``
    (``key.name``) are resolved in turn, else the value as written."""
    if key in paths:
        return path_option(f, node)
    inner = tuple(name.removeprefix(f"{key}.") for name in paths if name.startswith(f"{key}."))
    if inner and isinstance(node.value, Mapping):
        return MappingProxyType(
            {name: _plugin_option(f, name, child, inner) for name, child in node.value.items()}
        )
    return f.options(node, is_secret_key(key))


def metrics(f: Fields, node: Node | None) -> tuple[Metric, ...]:
    """Read ``metrics``: a list of names, or ``{measures, k}`` expanded to their grid."""
    if node is None or node.value is None:
        return default_metrics()
    if isinstance(node.value, Mapping):
        return _metric_grid(f, node)
    items = f.sequence(node, "metric names such as recall@10, or a mapping of measures and k")
    if not items:
        raise f.error(node, "at least one metric name")
    seen: dict[Metric, None] = {}
    for item in items:
        metric = _metric(f, item, "recall@10")
        if metric in seen:
            raise f.error(item, "each metric once", show=True)
        seen[metric] = None
    return tuple(seen)


def _metric_grid(f: Fields, node: Node) -> tuple[Metric, ...]:
    entries = f.mapping(node, vocab.METRICS_GRID_KEYS, "measures and their cutoffs k")
    measures_node = f.require(node, entries, "measures")
    measures: list[str] = []
    for item in f.sequence(measures_node, "measure names such as ndcg, recall"):
        known = ", ".join(sorted(MEASURES))
        name = f.string(item, f"a measure: one of {known}")
        if name not in MEASURES:
            raise f.error(item, f"a measure: one of {known}", show=True)
        if name in measures:
            raise f.error(item, "each measure once", show=True)
        measures.append(name)
    if not measures:
        raise f.error(measures_node, "at least one measure")
    cutoffs: list[int] = list(DEFAULT_CUTOFFS)
    if "k" in entries:
        cutoffs = []
        for item in f.sequence(entries["k"], "cutoffs such as [1, 5, 10]"):
            k = f.integer(item, minimum=1)
            if k in cutoffs:
                raise f.error(item, "each cutoff once", show=True)
            cutoffs.append(k)
        needs_k = [m for m in measures if MEASURES[m] is Cutoff.REQUIRED]
        if not cutoffs and needs_k:
            raise f.error(entries["k"], f"at least one cutoff ({needs_k[0]} needs one)")
    return grid(measures, cutoffs)


def depth(f: Fields, node: Node | None, chosen: tuple[Metric, ...]) -> int:
    """Read ``k``, the search depth: at least the largest cutoff; default that, and at least 10."""
    largest = max((m.k for m in chosen if m.k is not None), default=0)
    if node is None:
        return max(largest, 10)
    k = f.integer(node, minimum=max(largest, 1), maximum=100_000)
    return k


def runner(f: Fields, node: Node | None) -> RunnerConfig:
    """Read ``runner``: concurrency, timeouts, retries, deadline, error budget, warm-up."""
    if node is None:
        return RunnerConfig()
    entries = f.mapping(node, vocab.RUNNER_KEYS, "runner options")
    base = RunnerConfig()
    deadline = base.deadline_seconds
    if "deadline_seconds" in entries and entries["deadline_seconds"].value is not None:
        deadline = f.seconds(entries["deadline_seconds"])
    return RunnerConfig(
        concurrency=_int(f, entries, "concurrency", base.concurrency, 1, 1024),
        timeout_seconds=_positive(f, entries, "timeout_seconds", base.timeout_seconds),
        retries=_int(f, entries, "retries", base.retries, 0, 100),
        deadline_seconds=deadline,
        error_budget=_fraction(f, entries, "error_budget", base.error_budget),
        min_measured=_fraction(f, entries, "min_measured", base.min_measured),
        warmup=_int(f, entries, "warmup", base.warmup, 0, None),
        max_lock_skips=_int(f, entries, "max_lock_skips", base.max_lock_skips, 0, None),
    )


def _int(
    f: Fields, entries: Mapping[str, Node], key: str, default: int, lo: int, hi: int | None
) -> int:
    return default if key not in entries else f.integer(entries[key], minimum=lo, maximum=hi)


def _positive(f: Fields, entries: Mapping[str, Node], key: str, default: float) -> float:
    if key not in entries:
        return default
    return f.seconds(entries[key])


def _fraction(f: Fields, entries: Mapping[str, Node], key: str, default: float) -> float:
    if key not in entries:
        return default
    return f.number(entries[key], minimum=0.0, maximum=1.0)


def retention(f: Fields, node: Node | None) -> Retention | None:
    """Read ``retention``: ``per_query`` (a number of runs, or an age such as ``30d``) and
    ``keep`` (runs kept whatever their age: ``baselines``, ``failed``; default baselines)."""
    if node is None or node.value is None:
        return None
    entries = f.mapping(node, vocab.RETENTION_KEYS, "per_query and keep")
    expected = "a number of runs (30) or an age such as 30d, 12h, 90m (at most a year)"
    per_query = f.require(node, entries, "per_query")
    value = per_query.value
    runs: int | None = None
    age: timedelta | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        runs = f.integer(per_query, minimum=0)
    else:
        seconds = vocab.interval_to_seconds(value) if isinstance(value, str) else None
        if (
            seconds is None
            or not isinstance(value, str)
            or not value.strip()[-1:].isalpha()
            or not 0 < seconds <= vocab.MAX_INTERVAL_SECONDS
        ):
            raise f.error(per_query, expected, show=True)
        age = timedelta(seconds=seconds)
    keep: tuple[KeepReason, ...] = ("baselines",)
    if "keep" in entries:
        chosen: list[KeepReason] = []
        for item in f.sequence(entries["keep"], ", ".join(KEEP_REASONS)):
            reason = next((known for known in KEEP_REASONS if known == item.value), None)
            if reason is None:
                raise f.error(item, f"one of {', '.join(KEEP_REASONS)}", show=True)
            chosen.append(reason)
        keep = tuple(dict.fromkeys(chosen))
    return Retention(runs=runs, age=age, keep=keep)


def suite_store(f: Fields, node: Node | None) -> Retention | None:
    """Read a suite's ``store``: only its ``retention`` (the file's store says where)."""
    if node is None or node.value is None:
        return None
    entries = f.mapping(node, vocab.SUITE_STORE_KEYS, "retention (url and path are the file's)")
    return retention(f, entries.get("retention"))


def rules(f: Fields, node: Node | None, chosen: tuple[Metric, ...]) -> tuple[RuleConfig, ...]:
    """Read ``rules``; absent means :func:`~monitor.config.vocab.default_rules`, ``[]`` none."""
    if node is None or node.value is None:
        return vocab.default_rules(chosen)
    example = "alert rules such as {metric: recall@5, max_drop: 0.05}"
    return each_once(f, node, example, lambda item: _rule(f, item, chosen))


def each_once(f: Fields, node: Node, what: str, read: Callable[[Node], T]) -> tuple[T, ...]:
    """Read the list ``node`` (``what`` it should be) item by item with ``read``, refusing an
    item equal to one before it (a rule given twice)."""
    out: list[T] = []
    for item in f.sequence(node, what):
        rule = read(item)
        if rule in out:
            raise f.error(item, "each rule once (same check, metric and severity given before)")
        out.append(rule)
    return tuple(out)


def _rule(f: Fields, node: Node, chosen: tuple[Metric, ...]) -> RuleConfig:
    entries = f.mapping(node, vocab.RULE_KEYS, "one check with its threshold")
    checks = [Check(key) for key in entries if key not in ("metric", "severity")]
    if not checks:
        names = ", ".join(check.value for check in Check)
        raise f.error(node, f"one check: {names}")
    if len(checks) > 1:
        first = entries[checks[0].value]
        raise f.error(
            entries[checks[1].value],
            f"one check per rule ({checks[0].value} on line {first.line}); write another rule",
        )
    check = checks[0]
    if "metric" in entries and _names_ann_recall(entries["metric"]):
        return _ann_recall_rule(f, entries, check)
    metric = None
    if check.needs_metric:
        metric_node = f.require(
            node, entries, "metric", f" (the metric that {check.value} watches)"
        )
        metric = _rule_metric(f, metric_node, chosen)
    elif "metric" in entries:
        raise f.error(entries["metric"], f"no 'metric' with {check.value} (it watches the run)")
    severity: Severity = "warning"
    if "severity" in entries:
        severity = alert_severity(f, entries["severity"])
    if check is Check.JUDGE_AGREEMENT:
        return agreement_rule(f, entries[check.value], severity)
    lo, hi, positive = vocab.THRESHOLDS[check]
    threshold = f.number(
        entries[check.value], minimum=None if positive else lo, maximum=hi, positive=positive
    )
    return RuleConfig(check=check, threshold=threshold, metric=metric, severity=severity)


def _names_ann_recall(node: Node) -> bool:
    return isinstance(node.value, str) and node.value.strip().startswith("ann_recall@")


def _ann_recall_rule(f: Fields, entries: Mapping[str, Node], check: Check) -> RuleConfig:
    """Read ``{metric: ann_recall@K, min: X}``: the ``ann_recall_min`` floor at cutoff K."""
    metric = entries["metric"]
    text = str(metric.value).strip()
    k_text = text.removeprefix("ann_recall@")
    if not (k_text.isdigit() and k_text[0] != "0"):
        raise f.error(
            metric, "ann_recall@K with K a positive integer, e.g. ann_recall@10", show=True
        )
    if check is not Check.MIN:
        raise f.error(entries[check.value], "only 'min' with ann_recall@K (a floor)")
    severity = alert_severity(f, entries["severity"]) if "severity" in entries else "warning"
    threshold = f.number(entries["min"], minimum=0.0, maximum=1.0)
    return RuleConfig(Check.ANN_RECALL_MIN, threshold, severity=severity, k=int(k_text))


def index_health_k(search: SearchConfig) -> int | None:
    """Return the cutoff of a search's ``index_health`` option, None when off (the plug-in
    refuses a malformed one when it is built)."""
    value = search.options.get("index_health")
    if value is True:
        return DEFAULT_INDEX_HEALTH_K
    if isinstance(value, Mapping):
        k = value.get("k", DEFAULT_INDEX_HEALTH_K)
        return k if isinstance(k, int) and not isinstance(k, bool) and k > 0 else None
    return None


def alert_severity(f: Fields, node: Node) -> Severity:
    """Read a rule's or an invariant's ``severity``: info, warning or critical."""
    expected = f"a severity: one of {', '.join(vocab.SEVERITIES)}"
    text = f.string(node, expected)
    if text == "info":
        return "info"
    if text == "critical":
        return "critical"
    if text != "warning":
        raise f.error(node, expected, show=True)
    return "warning"


def _rule_metric(f: Fields, node: Node, chosen: tuple[Metric, ...]) -> Metric:
    metric = _metric(f, node, "recall@5")
    if metric not in chosen:
        listed = ", ".join(str(m) for m in chosen)
        raise f.error(node, f"one of the suite's metrics ({listed})", show=True)
    return metric


def significance(f: Fields, node: Node | None) -> SignificanceConfig:
    """Read ``significance``: alpha, iterations, seed, optional persistence."""
    if node is None:
        return SignificanceConfig()
    entries = f.mapping(node, vocab.SIGNIFICANCE_KEYS, "alpha, iterations, seed, persistence")
    base = SignificanceConfig()
    alpha = base.alpha
    if "alpha" in entries:
        alpha = f.number(entries["alpha"], positive=True, maximum=0.5)
    persistence = None
    if "persistence" in entries and entries["persistence"].value is not None:
        persistence = _persistence(f, entries["persistence"])
    return SignificanceConfig(
        alpha=alpha,
        iterations=_int(f, entries, "iterations", base.iterations, 100, 10_000_000),
        seed=_int(f, entries, "seed", base.seed, 0, None),
        persistence=persistence,
    )


def scoring(f: Fields, node: Node | None) -> ScoringConfig:
    """Read ``scoring``: relevance_level, max_docs, judged_only, average (trec_eval's)."""
    if node is None:
        return ScoringConfig()
    entries = f.mapping(node, vocab.SCORING_KEYS, "relevance_level, max_docs, judged_only, average")
    base = ScoringConfig()
    max_docs = None
    if "max_docs" in entries and entries["max_docs"].value is not None:
        max_docs = f.integer(entries["max_docs"], minimum=1)
    average: Average = base.average
    if "average" in entries:
        text = entries["average"].value
        if text not in AVERAGES:
            raise f.error(entries["average"], f"one of {', '.join(AVERAGES)}", show=True)
        average = cast("Average", text)
    judged_only = base.judged_only
    if "judged_only" in entries:
        flag = entries["judged_only"].value
        if not isinstance(flag, bool):
            raise f.error(entries["judged_only"], "true or false", show=True)
        judged_only = flag
    return ScoringConfig(
        relevance_level=_int(f, entries, "relevance_level", base.relevance_level, 1, None),
        max_docs=max_docs,
        judged_only=judged_only,
        average=average,
    )


def _persistence(f: Fields, node: Node) -> PersistenceConfig:
    entries = f.mapping(node, vocab.PERSISTENCE_KEYS, "breaches within runs")
    breaches = f.integer(f.require(node, entries, "breaches"), minimum=1)
    runs = f.integer(f.require(node, entries, "runs"), minimum=1, maximum=1000)
    if breaches > runs:
        raise f.error(entries["breaches"], f"at most runs ({runs}) breaches", show=True)
    return PersistenceConfig(breaches=breaches, runs=runs)


def segments(f: Fields, node: Node | None) -> tuple[str, ...]:
    """Read ``segments``: the query metadata keys results are broken down by."""
    if node is None or node.value is None:
        return ()
    out: list[str] = []
    for item in f.sequence(node, "query metadata keys such as [kind, language]"):
        key = f.string(item, "a metadata key such as language", pattern=vocab.SEGMENT)
        if key in out:
            raise f.error(item, "each segment key once", show=True)
        out.append(key)
    return tuple(out)


def pipeline(f: Fields, node: Node | None, suite: str) -> str:
    """Read ``pipeline``, the name of the retrieval pipeline measured; default the suite name."""
    if node is None:
        return suite
    return f.string(node, "a pipeline name (one line, at most 200 characters)", pattern=vocab.TEXT)


def baseline(f: Fields, node: Node | None) -> BaselineConfig | None:
    """Read ``baseline``: an optional seed baseline, ``{bundled_run: larkfield/rerank}``."""
    if node is None or node.value is None:
        return None
    entries = f.mapping(node, vocab.BASELINE_KEYS, "a seed baseline: bundled_run")
    run = f.string(
        f.require(node, entries, "bundled_run"),
        "a bundled run such as larkfield/rerank",
        pattern=vocab.BUNDLED_RUN,
    )
    return BaselineConfig(bundled_run=run)


def unit(f: Fields, node: Node | None) -> str | None:
    """Read ``unit``: ``passage`` (the default), ``section``, ``document``, a corpus field or
    fields joined by ``+``."""
    if node is None:
        return None
    name = f.string(node, "a unit: passage, section, document or corpus fields joined by +")
    try:
        return Metric("recall", 1, name).unit
    except MetricError:
        expected = "a unit: passage, section, document or fields joined by +"
        raise f.error(node, expected, show=True) from None


def unit_cut(f: Fields, node: Node | None, chosen_unit: str | None) -> str:
    """Read ``unit_cut``: ``passages`` (cut at k returned passages) or ``units``."""
    if node is None:
        return "passages"
    expected = "a unit cut: " + " or ".join(UNIT_CUTS)
    cut = f.string(node, expected)
    if cut not in UNIT_CUTS:
        raise f.error(node, expected, show=True)
    if chosen_unit is None and cut != "passages":
        raise f.error(node, "'unit_cut: units' only beside a 'unit' other than passage")
    return cut


def coverage(f: Fields, node: Node | None) -> CoverageConfig:
    """Read ``coverage``: ``max_drop`` (a share, default 0.05), ``severity`` of the
    labels-needed notification (default warning) and ``queue_url`` (a URL template)."""
    if node is None or node.value is None:
        return CoverageConfig()
    entries = f.mapping(node, vocab.COVERAGE_KEYS, "max_drop, severity, queue_url")
    base = CoverageConfig()
    max_drop = base.max_drop
    if "max_drop" in entries:
        max_drop = f.number(entries["max_drop"], minimum=0.0, maximum=1.0)
    severity = base.severity
    if "severity" in entries:
        severity = alert_severity(f, entries["severity"])
    queue_url = None
    if "queue_url" in entries:
        what = "an http(s) URL, {suite} and {run_id} filled in"
        queue_url = f.url(entries["queue_url"], what)
        fields = {name for _, name, _, _ in string.Formatter().parse(queue_url) if name is not None}
        if not fields <= {"suite", "run_id"}:
            raise f.error(entries["queue_url"], what + " (no other {...} field)", show=True)
    return CoverageConfig(max_drop=max_drop, severity=severity, queue_url=queue_url)
