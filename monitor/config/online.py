"""The ``traffic:`` section of a config: the traffic database and the online suites.

An online suite measures a rolling ``window`` of the logs ``logs import`` stored (the
metrics of :mod:`monitor.traffic.online`), overall, per application and per value of one
``segment``, on a ``schedule`` like a suite; compares it with a ``baseline`` window (the one
before it, or one pinned with ``online pin``) by a bootstrap over searches or sessions; and
applies ``rules`` whose checks read as a suite's: ``max_drop``, ``max_relative_drop`` and
``min`` for a metric where higher is better (CTR, PaulScore), and their mirror images
``max_rise``, ``max_relative_rise`` and ``max`` for one where lower is better (zero-result
rate, abandonment, latency). Every error names the file, the key path and the line.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Final, get_args

from monitor.config import outputs, schedules, sections, vocab
from monitor.config.common import Severity
from monitor.config.fields import Fields
from monitor.config.nodes import Node
from monitor.config.traffic import (
    ONLINE_CHECKS,
    OnlineBaseline,
    OnlineRule,
    OnlineSignificance,
    OnlineSuiteConfig,
    OnlineUnit,
    TrafficConfig,
)

#: The checks for a metric where higher is better, and for one where lower is better.
HIGHER_CHECKS: Final = frozenset({"max_drop", "max_relative_drop", "min"})
LOWER_CHECKS: Final = frozenset({"max_rise", "max_relative_rise", "max"})

BASELINES: Final[tuple[OnlineBaseline, ...]] = get_args(OnlineBaseline)
UNITS: Final[tuple[OnlineUnit, ...]] = get_args(OnlineUnit)

#: The most applications a suite may name; the rest of the traffic is ``other``.
MAX_APPLICATIONS: Final = 20
#: The label value of the applications a suite does not name, and of a segment's rarer values.
OTHER: Final = "other"

TRAFFIC_KEYS: Final = ("database", "min_distinct_clients", "click_action", "online", "spark")
SPARK_KEYS: Final = ("master", "conf")
ONLINE_KEYS: Final = (
    "name",
    "schedule",
    "window",
    "applications",
    "segment",
    "max_segment_values",
    "metrics",
    "rules",
    "baseline",
    "significance",
    "exporters",
    "notifiers",
    "labels",
    "links",
)
ONLINE_RULE_KEYS: Final = ("metric", "severity", *ONLINE_CHECKS)
ONLINE_SIGNIFICANCE_KEYS: Final = ("over", "resamples", "seed", "alpha")


def traffic(f: Fields, node: Node) -> TrafficConfig:
    """Read ``traffic``: ``database`` (required), defaults and the ``online`` suites."""
    entries = f.mapping(node, TRAFFIC_KEYS, "database, min_distinct_clients, click_action, online")
    database = f.path(f.require(node, entries, "database"), "the traffic database (DuckDB)")
    clients = 5
    if "min_distinct_clients" in entries:
        clients = f.integer(entries["min_distinct_clients"], minimum=1)
    click = vocab.CLICK_ACTION
    if "click_action" in entries:
        click = f.string(
            entries["click_action"], "an action_name such as click", pattern=vocab.TEXT
        )
    suites: dict[str, OnlineSuiteConfig] = {}
    if "online" in entries and entries["online"].value is not None:
        for item in f.sequence(entries["online"], "online suites, each with a name and a window"):
            suite = _online(f, item)
            if suite.name in suites:
                raise f.error(item, "each online suite name once", found=suite.name)
            suites[suite.name] = suite
    master, conf = _spark(f, entries.get("spark"))
    return TrafficConfig(
        database=database,
        min_distinct_clients=clients,
        click_action=click,
        online=suites,
        spark_master=master,
        spark_conf=conf,
    )


def _spark(f: Fields, node: Node | None) -> tuple[str | None, dict[str, str]]:
    """Read ``spark``: its ``master`` (checked when Spark starts) and ``conf`` settings."""
    if node is None or node.value is None:
        return None, {}
    entries = f.mapping(node, SPARK_KEYS, "master, conf")
    master = None
    if "master" in entries:
        master = f.string(entries["master"], "a Spark master such as local[2] or spark://HOST:PORT")
    conf: dict[str, str] = {}
    if "conf" in entries and entries["conf"].value is not None:
        settings = entries["conf"]
        if not isinstance(settings.value, Mapping):
            raise f.error(settings, "a mapping of Spark settings, key: value", show=True)
        for key, child in settings.value.items():
            value = child.value
            if isinstance(value, bool) or not isinstance(value, str | int | float):
                raise f.error(child, "a setting's value: a string or a number", show=True)
            conf[key] = str(value)
    return master, conf


def _online(f: Fields, node: Node) -> OnlineSuiteConfig:
    e = f.mapping(node, ONLINE_KEYS, "an online suite: name, window, schedule, metrics, rules")
    name = f.string(
        f.require(node, e, "name"),
        "a suite name of lowercase letters, digits, _ and - ([a-z0-9][a-z0-9_-]*)",
        pattern=vocab.SUITE_NAME,
    )
    window_node = f.require(node, e, "window")
    expected = "a window length such as 30m, 24h, 7d or 2w"
    match = vocab.WINDOW_LENGTH.fullmatch(f.string(window_node, expected).strip())
    if match is None:
        raise f.error(window_node, expected, show=True)
    window = timedelta(**{vocab.WINDOW_UNITS[match[2]]: int(match[1])})
    metrics = _metrics(f, e.get("metrics"))
    segment = None
    if "segment" in e:
        what = "a query-log field `logs import --keep-attribute` kept, e.g. query_attributes.device"
        segment = f.string(e["segment"], what, pattern=vocab.SEGMENT)
    max_values = 10
    if "max_segment_values" in e:
        max_values = f.integer(e["max_segment_values"], minimum=1, maximum=50)
    baseline: OnlineBaseline = "last_window"
    if "baseline" in e:
        expected = f"a baseline: {' or '.join(BASELINES)}"
        text = f.string(e["baseline"], expected)
        if text not in BASELINES:
            raise f.error(e["baseline"], expected, show=True)
        baseline = "pinned" if text == "pinned" else "last_window"
    return OnlineSuiteConfig(
        name=name,
        window=window,
        schedule=schedules.schedule(f, e.get("schedule")),
        applications=_applications(f, e.get("applications")),
        segment=segment,
        max_segment_values=max_values,
        metrics=metrics,
        rules=_rules(f, e.get("rules"), metrics),
        baseline=baseline,
        significance=_significance(f, e.get("significance")),
        exporters=outputs.exporters(f, e.get("exporters")),
        notifiers=outputs.notifiers(f, e.get("notifiers")),
        labels=outputs.labels(f, e.get("labels")),
        links=outputs.links(f, e.get("links")),
    )


def _metrics(f: Fields, node: Node | None) -> tuple[str, ...]:
    if node is None or node.value is None:
        return vocab.ONLINE_METRICS
    expected = f"an online metric: one of {', '.join(vocab.ONLINE_METRICS)}"
    chosen: list[str] = []
    for item in f.sequence(node, "online metric names such as [ctr, abandonment]"):
        name = f.string(item, expected)
        if name not in vocab.ONLINE_METRICS:
            raise f.error(item, expected, show=True)
        if name in chosen:
            raise f.error(item, "each metric once", show=True)
        chosen.append(name)
    if not chosen:
        raise f.error(node, "at least one metric")
    return tuple(chosen)


def _applications(f: Fields, node: Node | None) -> tuple[str, ...] | None:
    if node is None or node.value is None:
        return None
    items = f.sequence(node, "application names such as [web, app]")
    if len(items) > MAX_APPLICATIONS:
        raise f.error(
            node,
            f"at most {MAX_APPLICATIONS} applications (each is a label value; the rest of "
            f"the traffic is {OTHER!r})",
            found=f"{len(items)} applications",
        )
    names: list[str] = []
    for item in items:
        name = f.string(item, "an application name", pattern=vocab.TEXT)
        if name == OTHER or name in names:
            reason = f"{OTHER!r} is the rest of the traffic" if name == OTHER else "once"
            raise f.error(item, f"each application once ({reason})", show=True)
        names.append(name)
    return tuple(names)


def _rules(f: Fields, node: Node | None, metrics: tuple[str, ...]) -> tuple[OnlineRule, ...]:
    if node is None or node.value is None:
        return ()
    example = "rules such as {metric: ctr, max_relative_drop: 0.1}"
    return sections.each_once(f, node, example, lambda item: _rule(f, item, metrics))


def _rule(f: Fields, node: Node, metrics: tuple[str, ...]) -> OnlineRule:
    entries = f.mapping(node, ONLINE_RULE_KEYS, "a metric and one check with its threshold")
    checks = [key for key in ONLINE_CHECKS if key in entries]
    if len(checks) != 1:
        where = entries[checks[1]] if len(checks) > 1 else node
        raise f.error(where, f"one check per rule: {', '.join(ONLINE_CHECKS)}")
    check = checks[0]
    metric_node = f.require(node, entries, "metric", " (the metric the rule watches)")
    metric = f.string(metric_node, f"one of the suite's metrics ({', '.join(metrics)})")
    if metric not in metrics:
        raise f.error(metric_node, f"one of the suite's metrics ({', '.join(metrics)})", show=True)
    lower = metric in vocab.ONLINE_LOWER_IS_BETTER
    allowed = LOWER_CHECKS if lower else HIGHER_CHECKS
    if check not in allowed:
        better = "lower" if lower else "higher"
        raise f.error(
            entries[check],
            f"a check for a metric where {better} is better: {', '.join(sorted(allowed))}",
            found=check,
        )
    relative = check in ("max_relative_drop", "max_relative_rise")
    bounded = metric in ("ctr", "ctr@1", "ctr@3", "ctr@5", "zero_result_rate", "abandonment")
    top = 1.0 if check == "max_relative_drop" or (bounded and not relative) else None
    threshold = f.number(entries[check], minimum=0.0, maximum=top)
    severity: Severity = "warning"
    if "severity" in entries:
        severity = sections.alert_severity(f, entries["severity"])
    return OnlineRule(metric=metric, check=check, threshold=threshold, severity=severity)


def _significance(f: Fields, node: Node | None) -> OnlineSignificance:
    if node is None or node.value is None:
        return OnlineSignificance()
    entries = f.mapping(node, ONLINE_SIGNIFICANCE_KEYS, "over, resamples, seed, alpha")
    base = OnlineSignificance()
    over: OnlineUnit = base.over
    if "over" in entries:
        expected = f"what the bootstrap draws: {' or '.join(UNITS)}"
        text = f.string(entries["over"], expected)
        if text not in UNITS:
            raise f.error(entries["over"], expected, show=True)
        over = "sessions" if text == "sessions" else "searches"
    resamples = base.resamples
    if "resamples" in entries:
        resamples = f.integer(entries["resamples"], minimum=100, maximum=100_000)
    seed = base.seed if "seed" not in entries else f.integer(entries["seed"], minimum=0)
    alpha = base.alpha
    if "alpha" in entries:
        alpha = f.number(entries["alpha"], positive=True, maximum=0.5)
    return OnlineSignificance(over=over, resamples=resamples, seed=seed, alpha=alpha)
