"""The words a config file may use: keys, kinds, name patterns and default rules.

Shared by the loader and the JSON Schema, so the two cannot drift apart. The plug-in kinds
are not listed here: :mod:`monitor.config.kinds` reads them from the registries' alias
tables, which import no plug-in until one is built.
"""

from __future__ import annotations

import re
from typing import get_args

from monitor.config.model import Check, RuleConfig, TriggerKind
from monitor.metrics.spec import Metric

#: Keys of the top level of a config file.
TOP_KEYS = ("version", "store", "ui", "defaults", "suites", "traffic")
#: Keys of a suite (and of ``defaults``).
SUITE_KEYS = (
    "evalset",
    "search",
    "metrics",
    "k",
    "runner",
    "schedule",
    "trigger",
    "rules",
    "significance",
    "segments",
    "exporters",
    "notifiers",
    "labels",
    "links",
    "pipeline",
    "baseline",
    "invariants",
    "scoring",
    "unit",
    "unit_cut",
    "coverage",
    "judge",
    "alert_labels",
    "store",
    "bands",
    "drift",
)
#: Suite keys whose mappings merge key by key with ``defaults``; every other key replaces.
MERGED_KEYS = ("runner", "significance", "labels", "links", "coverage", "scoring", "bands")
SCORING_KEYS = ("relevance_level", "max_docs", "judged_only", "average")

STORE_KEYS = ("url", "path", "retention")
#: Keys of a suite's own ``store``: where runs go is the file's, how long detail stays its own.
SUITE_STORE_KEYS = ("retention",)
RETENTION_KEYS = ("per_query", "keep")
#: Keys of ``ui``: where the daemon serves the web app.
UI_KEYS = ("address", "port")
EVALSET_KEYS = ("path", "format", "queries", "bundled", "reference", "reference_k", "corpus")
RUNNER_KEYS = (
    "concurrency",
    "timeout_seconds",
    "retries",
    "deadline_seconds",
    "error_budget",
    "min_measured",
    "warmup",
    "max_lock_skips",
)
SCHEDULE_KEYS = ("cron", "interval", "timezone")
#: Keys of ``trigger``, and its kinds (``trigger: on_change`` alone takes the defaults).
TRIGGER_KEYS = ("kind", "poll_interval", "settle", "min_interval")
TRIGGER_KINDS: tuple[TriggerKind, ...] = get_args(TriggerKind)
SIGNIFICANCE_KEYS = ("alpha", "iterations", "seed", "persistence")
PERSISTENCE_KEYS = ("breaches", "runs")
METRICS_GRID_KEYS = ("measures", "k")
LINK_KEYS = ("report", "dashboard", "runbook")
BASELINE_KEYS = ("bundled_run",)
COVERAGE_KEYS = ("max_drop", "severity", "queue_url")
#: Keys of a suite's query drift check.
DRIFT_KEYS = (
    "name",
    "logs",
    "reference",
    "current",
    "alpha",
    "permutations",
    "seed",
    "min_queries",
    "max_rows",
    "max_auc",
    "max_centroid_distance",
    "weighting",
    "embedding",
    "severity",
)
DRIFT_WEIGHTINGS = ("distinct", "searches")
#: Keys of one metric family's entry under ``bands`` (the families: monitor.metrics.bands).
BAND_KEYS = ("high", "low")
#: Keys of an inline ``invariants`` entry, by kind: a must-return pair or a policy.
MUST_INCLUDE_KEYS = ("query", "must_include", "within", "severity")
NO_LOST_HITS_KEYS = ("no_lost_hits", "severity")
NO_LOST_HITS_OPTIONS = ("k",)
#: The key of ``invariants: {path: FILE}``, and the suffixes of the files it may name.
INVARIANT_FILE_KEYS = ("path",)
INVARIANT_FILE_SUFFIXES = (".csv", ".jsonl")
#: The columns of an invariants CSV file (``severity`` and ``within`` may be left out).
INVARIANT_CSV_COLUMNS = ("query", "must_include", "within", "severity")
RULE_KEYS = ("metric", "severity", *(check.value for check in Check))
SEVERITIES = ("info", "warning", "critical")

#: Notifiers that cannot send anywhere without a ``url``.
NOTIFIERS_NEEDING_URL = ("alertmanager", "slack", "webhook")
#: Exporters and the keys each one takes (besides ``kind``).
EXPORTER_KEYS: dict[str, tuple[str, ...]] = {
    "http": ("port", "address"),
    "pushgateway": ("url", "job"),
    "textfile": ("path",),
}
#: Eval set formats and the suffixes of the TREC one (mirrors monitor.evalset.formats,
#: which a test keeps in step; copied so that reading a config imports no eval set code).
EVALSET_FORMATS = ("jsonl", "json", "csv", "yaml", "trec")
TREC_SUFFIXES = (".qrels", ".trec")
#: Options of the built-in search kinds that hold file paths, resolved against the config
#: file's folder (the plug-ins themselves would take them from the current folder). A dotted
#: name is an option inside a mapping option (the model file of a vector kind's embedding).
_EMBEDDING_PATHS = ("embedding.model_file", "embedding.tokenizer")
PATH_OPTIONS: dict[str, tuple[str, ...]] = {
    "http": ("verify",),  # a CA bundle file when it is a string
    "interleave": ("team_log",),
    "pgvector": _EMBEDDING_PATHS,
    "python": ("path",),
    "qdrant": ("path", *_EMBEDDING_PATHS),
    "replay": ("path",),
}
#: Options of the built-in search kinds that are searches themselves, read as a ``search``
#: section is (kind checked, paths resolved), so errors name their line.
SEARCH_OPTIONS: dict[str, tuple[str, ...]] = {"interleave": ("a", "b")}
#: Options of every built-in notifier that hold file paths, resolved the same way.
NOTIFIER_PATH_OPTIONS = ("verify",)  # a CA bundle file when it is a string


SUITE_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")
LABEL_NAME = re.compile(r"(?!__)[a-zA-Z_][a-zA-Z0-9_]*")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
BUNDLED_SET = re.compile(r"[a-z0-9][a-z0-9_-]*")
BUNDLED_RUN = re.compile(r"[a-z0-9][a-z0-9_-]*/[a-z0-9][a-z0-9_.-]*")
FORMAT = re.compile(r"[a-z0-9][a-z0-9_.-]*")
SEGMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
ADDRESS = re.compile(r"[A-Za-z0-9_.:\[\]-]+")
TEXT = re.compile(r"[^\x00-\x1f\x7f]{1,200}")
#: ``90s``, ``30m``, ``1h``, ``1d``, ``1h30m``, ``2.5h`` or plain seconds ``90``.
INTERVAL = re.compile(r"(?:\d+(?:\.\d+)?[smhd])+|\d+(?:\.\d+)?", re.ASCII)
INTERVAL_PART = re.compile(r"(\d+(?:\.\d+)?)([smhd])", re.ASCII)
UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


#: The metrics an online suite may watch, in the order they are reported
#: (:mod:`monitor.traffic.online` defines each), the latency percentiles among them by
#: their percentile, and those for which a lower value is better (their rules watch a rise).
ONLINE_METRICS = (
    "zero_result_rate",
    "ctr",
    "ctr@1",
    "ctr@3",
    "ctr@5",
    "abandonment",
    "mean_first_click_position",
    "reformulation_rate",
    "paulscore",
    "latency_p50",
    "latency_p95",
)
ONLINE_PERCENTILES = {"latency_p50": 50.0, "latency_p95": 95.0}
ONLINE_LOWER_IS_BETTER = frozenset(
    {
        "zero_result_rate",
        "abandonment",
        "mean_first_click_position",
        "reformulation_rate",
        *ONLINE_PERCENTILES,
    }
)
#: The ``action_name`` of a click unless the config or a command says otherwise.
CLICK_ACTION = "click"
#: The length of a window of traffic: ``30m``, ``24h``, ``7d``, ``2w``.
WINDOW_LENGTH = re.compile(r"([1-9][0-9]*)([mhdw])")
WINDOW_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


#: The longest interval a schedule or a notifier option may give: a year. Longer ones
#: overflow the scheduler's timers and are a typo anyway.
MAX_INTERVAL_SECONDS = 366 * 86400.0


def interval_to_seconds(value: object) -> float | None:
    """Return seconds from a number or an interval such as ``90s``, ``1h30m``; else None."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if not (isinstance(value, str) and INTERVAL.fullmatch(value.strip())):
        return None
    text = value.strip()
    parts = INTERVAL_PART.findall(text)
    return sum(float(n) * UNIT_SECONDS[unit] for n, unit in parts) if parts else float(text)


#: The bounds of each check's threshold: (minimum, maximum or None, above zero).
THRESHOLDS: dict[Check, tuple[float, float | None, bool]] = {
    Check.MAX_DROP: (0.0, 1.0, False),
    Check.MAX_RELATIVE_DROP: (0.0, 1.0, False),
    Check.MIN: (0.0, 1.0, False),
    Check.LATENCY_P95_SECONDS_MAX: (0.0, None, True),
    Check.LATENCY_P95_MAX_RELATIVE_RISE: (0.0, None, False),
    Check.ERROR_RATE_MAX: (0.0, 1.0, False),
    Check.ZERO_RESULT_RATE_MAX: (0.0, 1.0, False),
    Check.TOP1_SCORE_MAX_RELATIVE_DROP: (0.0, 1.0, False),
    Check.INDEX_SIZE_MAX_RELATIVE_DROP: (0.0, 1.0, False),
    Check.ANN_RECALL_MIN: (0.0, 1.0, False),
    Check.MIN_OVERLAP: (0.0, 1.0, False),
    # Kappa and alpha run from -1 (systematic disagreement) to 1.
    Check.JUDGE_AGREEMENT: (-1.0, 1.0, False),
}

#: The agreement statistics of a judge with human grades (monitor.judgments.agreement);
#: ``kappa`` is Cohen's kappa with quadratic weights.
AGREEMENT_STATISTICS = ("exact", "kappa", "kappa_linear", "alpha")
#: The keys of a ``judge_agreement`` rule, and its defaults.
AGREEMENT_KEYS = ("min", "statistic", "min_overlap")
DEFAULT_AGREEMENT_STATISTIC = "kappa"
DEFAULT_MIN_OVERLAP = 30

#: The metric the default quality rule watches (kept only when the suite measures it).
DEFAULT_RULE_METRIC = Metric("recall", 5)


def default_rules(metrics: tuple[Metric, ...]) -> tuple[RuleConfig, ...]:
    """Return the rules a suite gets when it names none.

    recall@5 may drop by at most 0.05 (when the suite measures recall@5), latency p95 stays
    under 0.2 s, at most 5 % of queries return nothing, and the mean top-1 score drops by at
    most 10 %.
    """
    rules = [
        RuleConfig(Check.LATENCY_P95_SECONDS_MAX, 0.2),
        RuleConfig(Check.ZERO_RESULT_RATE_MAX, 0.05),
        RuleConfig(Check.TOP1_SCORE_MAX_RELATIVE_DROP, 0.10),
    ]
    if DEFAULT_RULE_METRIC in metrics:
        rules.insert(0, RuleConfig(Check.MAX_DROP, 0.05, DEFAULT_RULE_METRIC))
    return tuple(rules)
