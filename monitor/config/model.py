"""The parsed configuration: small frozen records, built once by :func:`monitor.config.load_config`.

Nothing here reads YAML or checks values; :mod:`monitor.config.load` does both and only ever
builds valid records. Secrets (notifier URLs, tokens, headers, passwords in store and
exporter URLs) are held in :class:`Secret`, whose ``repr`` and ``str`` show a masked form.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Literal

from monitor.config.common import (
    ExporterConfig,
    LinksConfig,
    NotifierConfig,
    ScheduleConfig,
    Severity,
)
from monitor.config.traffic import TrafficConfig
from monitor.config.values import OptionValue, Origin, Secret, _freeze_map, thaw
from monitor.drift.settings import DriftSettings
from monitor.errors import UsageError
from monitor.metrics.bands import DEFAULT_BANDS, Bands
from monitor.metrics.spec import Average, Metric
from monitor.store.retention import Retention

__all__ = ["OptionValue", "Origin", "Secret", "thaw"]


@dataclass(frozen=True, slots=True)
class StoreConfig:
    """Where runs and baselines are kept: a SQLite file or a PostgreSQL database.

    ``url`` is the full URL (``sqlite:////abs/monitor.db``, ``postgresql://u:p@host/db``);
    ``path`` is the SQLite file (``None`` for ``sqlite:///:memory:`` and for PostgreSQL).
    ``retention`` is how long runs keep their per-query detail (None: for ever).
    """

    kind: Literal["sqlite", "postgresql"]
    url: Secret
    path: Path | None = None
    retention: Retention | None = None


@dataclass(frozen=True, slots=True)
class EvalSetConfig:
    """The frozen eval set: a file (``path``, optional ``format`` and TREC ``queries``) or a
    bundled set (``bundled: larkfield``), read lazily by whoever runs the suite.

    With ``reference`` (a search spec, e.g. exact brute-force kNN) the set's own judgments are
    replaced by that search's top ``reference_k`` for each query: recall then measures how
    much of the exact result the monitored (approximate) index finds, apart from labels.
    """

    path: Path | None = None
    format: str | None = None
    queries: Path | None = None
    bundled: str | None = None
    reference: SearchConfig | None = None
    reference_k: int = 10
    #: The passages beside the set (JSONL, CSV or TSV, gzip accepted); a bundled set brings
    #: its own when this is None.
    corpus: Path | None = None


@dataclass(frozen=True, slots=True)
class SearchConfig:
    """The search plug-in: a ``kind`` alias (or ``entrypoint:<name>``) and its options.

    ``options`` holds every other key, read-only and unchecked here: the search plug-in
    validates them. Values under secret-like keys (``headers``, ``token``, ``api_key``, ...)
    are :class:`Secret`; :meth:`plugin_options` gives the builder a plain copy, secrets
    revealed.
    ``bundled`` names a saved run shipped with the package (``larkfield/keyword``) for
    ``kind: replay``. The path options of the built-in kinds (``path`` of ``replay`` and
    ``python``, a ``verify`` CA bundle of ``http``) are already absolute; a third-party
    plug-in resolves its own relative paths against ``base_dir``, the config file's folder.
    ``origin`` says where the section was written; it takes no part in comparisons.
    """

    kind: str
    options: Mapping[str, OptionValue] = field(default_factory=dict, hash=False)
    bundled: str | None = None
    base_dir: Path = Path()
    origin: Origin | None = field(default=None, compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", _freeze_map(self.options))

    def plugin_options(self) -> dict[str, object]:
        """Return the options to hand to the plug-in's builder, as :func:`thaw` gives them,
        with ``bundled`` put back among them when it is set."""
        options = {key: thaw(value) for key, value in self.options.items()}
        if self.bundled is not None:
            options["bundled"] = self.bundled
        return options


@dataclass(frozen=True, slots=True)
class RunnerConfig:
    """How the runner sends the queries.

    ``error_budget`` is the share of queries (0..1) that may fail before the run itself
    counts as failed; ``min_measured`` is the share of the eval set's answerable queries (0..1)
    a run must answer to have measured anything, one query at least, whatever the error
    budget: below it the run fails with ``not_measured``; ``warmup`` is how many queries are
    sent once, untimed and discarded, before the measured run; ``deadline_seconds`` bounds
    the whole run (``None``: no bound); a suite skipped for its held store lock more than
    ``max_lock_skips`` times in a row raises the ``suite_locked`` monitor-failure alert.
    """

    concurrency: int = 4
    timeout_seconds: float = 10.0
    retries: int = 2
    deadline_seconds: float | None = None
    error_budget: float = 0.05
    min_measured: float = 0.5
    warmup: int = 0
    max_lock_skips: int = 3


#: What starts a run: its schedule, or a change of its search's corpus.
TriggerKind = Literal["schedule", "on_change"]
#: Which labels gate alerts: people's, people's with the judge's filling holes, or the
#: judge's corrected on the queries people verified (prediction-powered inference).
AlertLabels = Literal["human", "all", "calibrated"]


@dataclass(frozen=True, slots=True)
class TriggerConfig:
    """What else starts a run of a suite besides its schedule (``trigger``).

    ``kind`` ``schedule`` (the default): the schedule alone. ``on_change``: the daemon also
    polls the search's ``corpus_fingerprint()`` every ``poll_interval_seconds`` and runs the
    suite once it has changed and then held still for ``settle_seconds``, never two such runs
    closer than ``min_interval_seconds``.
    """

    kind: TriggerKind = "schedule"
    poll_interval_seconds: float = 60.0
    settle_seconds: float = 30.0
    min_interval_seconds: float = 300.0

    @property
    def on_change(self) -> bool:
        """Return whether a change of the corpus starts a run."""
        return self.kind == "on_change"


class Check(str, Enum):
    """What a rule checks; the value is the YAML key that sets its threshold."""

    MAX_DROP = "max_drop"
    MAX_RELATIVE_DROP = "max_relative_drop"
    MIN = "min"
    LATENCY_P95_SECONDS_MAX = "latency_p95_seconds_max"
    LATENCY_P95_MAX_RELATIVE_RISE = "latency_p95_max_relative_rise"
    ERROR_RATE_MAX = "error_rate_max"
    ZERO_RESULT_RATE_MAX = "zero_result_rate_max"
    TOP1_SCORE_MAX_RELATIVE_DROP = "top1_score_max_relative_drop"
    INDEX_SIZE_MAX_RELATIVE_DROP = "index_size_max_relative_drop"
    ANN_RECALL_MIN = "ann_recall_min"
    MIN_OVERLAP = "min_overlap"
    JUDGE_AGREEMENT = "judge_agreement"

    @property
    def needs_metric(self) -> bool:
        """Return whether the check compares one quality metric (and so names it)."""
        return self in METRIC_CHECKS


#: The checks that apply to one quality metric.
METRIC_CHECKS: frozenset[Check] = frozenset({Check.MAX_DROP, Check.MAX_RELATIVE_DROP, Check.MIN})


@dataclass(frozen=True, slots=True)
class RuleConfig:
    """One alert rule: a check, its threshold, and the metric for the metric checks.

    ``max_drop`` is an absolute drop from the baseline (0.05 = five points), the
    ``*_relative_*`` checks a fraction of the baseline value (0.1 = 10 %), ``min`` and the
    ``*_max`` checks absolute bounds on the current run. ``judge_agreement`` is a floor
    (``threshold``) on the suite judge's agreement ``statistic`` with human grades, judged
    ``unverified`` (shown, never alerted) below ``min_overlap`` pairs. ``ann_recall_min`` is
    a floor on the run's ANN recall (``k`` its cutoff, when the rule names it:
    ``{metric: ann_recall@10, min: 0.95}``).
    """

    check: Check
    threshold: float
    metric: Metric | None = None
    severity: Severity = "warning"
    statistic: str = ""
    min_overlap: int = 0
    k: int | None = None

    @property
    def name(self) -> str:
        """Return a stable name such as ``recall@5 max_drop``, ``error_rate_max`` or
        ``judge_agreement kappa``."""
        if self.check is Check.JUDGE_AGREEMENT:
            return f"{self.check.value} {self.statistic}"
        if self.check is Check.ANN_RECALL_MIN and self.k is not None:
            return f"ann_recall@{self.k} min"
        return self.check.value if self.metric is None else f"{self.metric} {self.check.value}"


@dataclass(frozen=True, slots=True)
class MustInclude:
    """A must-return pair: each of ``doc_ids`` is in the current run's top ``within`` for
    ``query``."""

    query: str
    doc_ids: tuple[str, ...]
    within: int
    severity: Severity = "warning"

    def __post_init__(self) -> None:
        object.__setattr__(self, "doc_ids", tuple(self.doc_ids))

    @property
    def kind(self) -> Literal["must_include"]:
        """Return the invariant's kind, its YAML key."""
        return "must_include"

    @property
    def name(self) -> str:
        """Return a stable name such as ``must_include Q34``."""
        return f"must_include {self.query}"


@dataclass(frozen=True, slots=True)
class NoLostHits:
    """A policy over the approved baseline: a query with a relevant hit in the baseline's top
    ``k`` keeps one in the current run's top ``k``."""

    k: int
    severity: Severity = "warning"

    @property
    def kind(self) -> Literal["no_lost_hits"]:
        """Return the invariant's kind, its YAML key."""
        return "no_lost_hits"

    @property
    def name(self) -> str:
        """Return a stable name such as ``no_lost_hits@5``."""
        return f"no_lost_hits@{self.k}"


#: An invariant of a suite: exact, checked on every run, no significance.
InvariantConfig = MustInclude | NoLostHits


@dataclass(frozen=True, slots=True)
class PersistenceConfig:
    """Alert only when at least ``breaches`` of the last ``runs`` runs broke the rule."""

    breaches: int
    runs: int


@dataclass(frozen=True, slots=True)
class SignificanceConfig:
    """The paired test that tells a real drop from noise.

    A one-sided paired randomization test on per-query values (``iterations`` random sign
    flips, exact enumeration up to 20 queries, ``seed`` fixed) gives the p-value compared
    with ``alpha``; a percentile bootstrap with as many resamples gives the confidence
    interval of the mean delta.
    """

    alpha: float = 0.05
    iterations: int = 10000
    seed: int = 0
    persistence: PersistenceConfig | None = None


@dataclass(frozen=True, slots=True)
class ScoringConfig:
    """How the suite's run is scored, with trec_eval's meaning (``evaluate``'s options).

    ``relevance_level``: binary measures count grades >= it as relevant (``-l``);
    ``max_docs``: each ranking cut to its first N (``-M``); ``judged_only``: documents
    without a judgment removed from each ranking (``-J``); ``average``: the queries of the
    means (``answerable``, ``trec_eval`` or ``all``).
    """

    relevance_level: int = 1
    max_docs: int | None = None
    judged_only: bool = False
    average: Average = "answerable"

    def options(self) -> dict[str, Any]:
        """Return the keyword arguments of :func:`monitor.metrics.evaluation.evaluate`."""
        return {
            "relevance_level": self.relevance_level,
            "max_docs": self.max_docs,
            "judged_only": self.judged_only,
            "average": self.average,
        }


@dataclass(frozen=True, slots=True)
class CoverageConfig:
    """When a quality breach is held for lack of judgments, and how that is told.

    A breached quality rule whose k lost more than ``max_drop`` of judgment coverage
    (``judged@k``) against the baseline is held as ``unjudged``; one labels-needed
    notification of ``severity`` is sent instead. ``queue_url`` is a template of the
    labeling queue's address, with ``{suite}`` and ``{run_id}`` filled in.
    """

    max_drop: float = 0.05
    severity: Severity = "warning"
    queue_url: str | None = None


@dataclass(frozen=True, slots=True)
class DriftConfig:
    """A suite's query drift check (``drift:``): the traffic database, its two windows
    (:mod:`monitor.config.windows`), how it decides, and its alert's rule name and severity."""

    logs: Path
    reference: str
    current: str
    settings: DriftSettings = field(default_factory=DriftSettings)
    name: str = "query_drift"
    weighting: Literal["distinct", "searches"] = "distinct"
    embedding: str = "onnx"
    severity: Severity = "warning"


@dataclass(frozen=True, slots=True)
class BaselineConfig:
    """A seed baseline the job may pin when the suite has none stored yet.

    ``bundled_run`` names a saved run shipped with the package (``larkfield/rerank``); its
    metrics become the first baseline, so the demo compares against something from run one.
    """

    bundled_run: str | None = None


#: Under ``alert_labels: calibrated``, the fewest verified queries a quality rule needs by
#: default (the judge's ``min_verified``).
DEFAULT_MIN_VERIFIED = 10


@dataclass(frozen=True, slots=True)
class JudgeConfig:
    """A plug-in that grades unjudged (query, document) pairs after a run.

    ``kind`` is ``python``, ``http`` or ``entrypoint:<name>``; ``options`` go to the plug-in.
    Its grades form a layer keyed by ``judge_id``, ``model`` and a hash of ``prompt``, so a
    changed model or prompt never reuses old grades. At most ``max_per_run`` pairs are graded
    per run, best ranks first; a grade outside 0..``max_grade`` is refused, never stored.
    """

    kind: str
    judge_id: str
    model: str = ""
    prompt: str = ""
    max_per_run: int = 100
    #: The top of the judge's grade scale (0 to it); an answer outside it is refused.
    max_grade: int = 2
    #: Under ``alert_labels: calibrated``, the fewest verified queries a quality rule needs
    #: where the judge graded some (fewer: ``unverified``).
    min_verified: int = DEFAULT_MIN_VERIFIED
    options: Mapping[str, OptionValue] = field(default_factory=dict, hash=False)
    base_dir: Path = Path()
    #: Where the section was written (for errors at build time); not part of comparisons.
    origin: Origin | None = field(default=None, compare=False, hash=False, repr=False)


@dataclass(frozen=True, slots=True)
class SuiteConfig:
    """One suite: an eval set run through one search, measured, compared and reported.

    This is the effective configuration, with ``defaults`` merged in and every default
    filled. ``rules`` of ``None`` in YAML means the default rules; ``()`` means none.
    ``invariants`` are read from YAML or from the CSV or JSONL file it names.
    """

    name: str
    evalset: EvalSetConfig
    search: SearchConfig
    metrics: tuple[Metric, ...]
    k: int
    pipeline: str
    runner: RunnerConfig = RunnerConfig()
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    trigger: TriggerConfig = TriggerConfig()
    rules: tuple[RuleConfig, ...] = ()
    significance: SignificanceConfig = SignificanceConfig()
    segments: tuple[str, ...] = ()
    exporters: tuple[ExporterConfig, ...] = ()
    notifiers: tuple[NotifierConfig, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict, hash=False)
    links: LinksConfig = field(default_factory=LinksConfig)
    baseline: BaselineConfig | None = None
    invariants: tuple[InvariantConfig, ...] = ()
    scoring: ScoringConfig = ScoringConfig()
    #: The evaluation unit the suite's metrics are counted in (None: the passage) and how
    #: they cut (see monitor.metrics.units); already part of each metric in ``metrics`` and
    #: ``rules``.
    unit: str | None = None
    unit_cut: str = "passages"
    coverage: CoverageConfig = CoverageConfig()
    judge: JudgeConfig | None = None
    alert_labels: AlertLabels = "human"
    #: How long the suite's runs keep per-query detail: its own ``store.retention``, else
    #: the file's; None keeps it for ever.
    retention: Retention | None = None
    #: The edges of each metric family's reading bands (a reading aid, never an alert).
    bands: Bands = DEFAULT_BANDS
    #: The suite's query drift check, when it has one.
    drift: DriftConfig | None = None
    #: The config file the suite was read from (absolute), for the commands the monitor
    #: prints; None for the embedded default and configs given as text.
    config_file: Path | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "labels", _freeze_map(self.labels))


def config_option(config_file: Path | None) -> str:
    """Return `` --config PATH`` for a command the monitor prints, the path quoted for a shell
    (a suite's ``config_file``), or nothing for the embedded default."""
    return "" if config_file is None else f" --config {shlex.quote(str(config_file))}"


@dataclass(frozen=True, slots=True)
class UiConfig:
    """Where the daemon serves the web app (``ui: {address, port}``; off when absent)."""

    address: str = "127.0.0.1"
    port: int = 8321


@dataclass(frozen=True, slots=True)
class MonitorConfig:
    """A whole configuration file: where to store results, the suites in file order, and the
    traffic section."""

    source: str
    store: StoreConfig
    suites: Mapping[str, SuiteConfig] = field(hash=False)
    ui: UiConfig | None = None
    #: The ``traffic:`` section: the traffic database and the online suites.
    traffic: TrafficConfig | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "suites", _freeze_map(self.suites))

    def suite(self, name: str) -> SuiteConfig:
        """Return the suite called ``name``; raise UsageError naming the known suites."""
        try:
            return self.suites[name]
        except KeyError:
            known = ", ".join(self.suites)
            raise UsageError(f"no suite {name!r} in {self.source}; suites: {known}") from None
