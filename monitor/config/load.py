"""Load a config file once into a :class:`~monitor.config.model.MonitorConfig`.

The file is composed with line marks (:mod:`monitor.config.nodes`), ``${VAR}`` references are
expanded, ``defaults`` is merged under each suite, and every value is checked and frozen
(:mod:`monitor.config.sections`, :mod:`monitor.config.outputs`). Any problem raises one
ConfigError naming the file, the key path, the line and what was expected.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Final

import yaml

from monitor.config import judge, online, outputs, schedules, sections, vocab
from monitor.config.bands import bands
from monitor.config.common import HttpExporterConfig
from monitor.config.drift import drift
from monitor.config.fields import Fields, mask_url
from monitor.config.invariants import invariants
from monitor.config.model import (
    Check,
    MonitorConfig,
    RuleConfig,
    SearchConfig,
    Secret,
    StoreConfig,
    SuiteConfig,
    UiConfig,
)
from monitor.config.nodes import Node, compose
from monitor.errors import ConfigError, InputError, UsageError
from monitor.io import read_bytes_limited
from monitor.metrics.spec import Metric
from monitor.store.location import SCHEMES, parse_store_url
from monitor.store.retention import Retention

#: Where the embedded default configuration lives inside the package.
DEFAULT_CONFIG_RESOURCE = "data/default_config.yaml"
#: The largest config file read, in bytes: a config is a few kilobytes.
MAX_CONFIG_BYTES: Final = 1 << 20
#: The most values a config may hold once its aliases are expanded.
MAX_CONFIG_VALUES: Final = 100_000
#: The deepest nesting of mappings and lists in a config.
MAX_CONFIG_DEPTH: Final = 64

# C0 controls but tab and line breaks, DEL, C1 controls but NEL, and the non-characters YAML
# refuses; checked first so that the error names the line, not PyYAML's reader.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ufffe\uffff]")


def load_config(
    path: str | os.PathLike[str], *, env: Mapping[str, str] | None = None
) -> MonitorConfig:
    """Read, check and freeze the config file at ``path``; raise ConfigError if it is invalid.

    ``${VAR}`` references read ``env`` (default: the process environment). Relative paths in
    the file resolve against the file's folder.
    """
    return _load_file(Path(path), env, check_files=False)


def load_checked(
    path: str | os.PathLike[str], *, env: Mapping[str, str] | None = None
) -> MonitorConfig:
    """Load the config file at ``path`` as :func:`load_config` does and check that the files
    it names exist; raise ConfigError for the first problem. (:func:`monitor.cli.validate.
    check_config` also builds its plug-ins.)"""
    return _load_file(Path(path), env, check_files=True)


def load_config_text(
    text: str,
    source: str = "<string>",
    *,
    base_dir: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> MonitorConfig:
    """Check and freeze a config given as YAML text; ``source`` names it in errors.

    Relative paths resolve against ``base_dir`` (default: the current folder).
    """
    folder = Path(base_dir) if base_dir is not None else Path.cwd()
    return _parse(text, source, folder.absolute(), env, check_files=False)


def default_config(*, env: Mapping[str, str] | None = None) -> MonitorConfig:
    """Return the embedded default: the bundled Larkfield suite, replayed hourly.

    It stores results in :func:`default_store_path`, exports nothing and prints alerts.
    """
    data = resources.files("monitor").joinpath(DEFAULT_CONFIG_RESOURCE)
    text = data.read_text(encoding="utf-8")
    return _parse(text, "<default config>", Path(str(data)).parent, env, check_files=False)


def default_store_path(env: Mapping[str, str] | None = None) -> Path:
    """Return the per-user database file: ``$XDG_DATA_HOME/retrieval-monitor/monitor.db``.

    Without an absolute ``XDG_DATA_HOME`` the folder is ``~/.local/share``, as the XDG base
    directory specification says.
    """
    environ = os.environ if env is None else env
    base = environ.get("XDG_DATA_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".local" / "share"
    return root / "retrieval-monitor" / "monitor.db"


def _load_file(path: Path, env: Mapping[str, str] | None, *, check_files: bool) -> MonitorConfig:
    source = str(path)
    try:
        data = read_bytes_limited(path, MAX_CONFIG_BYTES)
    except FileNotFoundError:
        raise ConfigError(source, "(file)", "an existing config file") from None
    except InputError as exc:
        raise ConfigError(source, "(file)", exc.expected, found=exc.found) from None
    except OSError as exc:
        found = exc.strerror or type(exc).__name__
        raise ConfigError(source, "(file)", "a readable config file", found=found) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(source, "(file)", f"UTF-8 text ({exc.reason})", line=line) from None
    config = _parse(text, source, path.absolute().parent, env, check_files=check_files)
    where = path.absolute()
    suites = {name: replace(suite, config_file=where) for name, suite in config.suites.items()}
    traffic = None if config.traffic is None else replace(config.traffic, config_file=where)
    return replace(config, suites=suites, traffic=traffic)


def _guard(text: str, source: str) -> None:
    """Refuse, before anything is built, a config too large, with control characters, too
    deeply nested, or whose aliases expand to more than :data:`MAX_CONFIG_VALUES` values.

    PyYAML's parser reads events without recursion, so this bounds the work of everything
    after it: a 500-byte alias bomb expands to billions of values, and deep nesting overflows
    the recursion of PyYAML's composer.
    """
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_CONFIG_BYTES:
        raise ConfigError(
            source, "(file)", f"a config of at most {MAX_CONFIG_BYTES} bytes", found=f"{size} bytes"
        )
    bad = _CONTROL.search(text) or re.search("[\ud800-\udfff]", text)
    if bad is not None:
        line = text.count("\n", 0, bad.start()) + 1
        raise ConfigError(
            source,
            "(yaml)",
            "printable text (no NUL or control character; write \\t, \\e... in a quoted string)",
            line=line,
            found=bad.group(),
        )
    sizes: dict[str, int] = {}  # anchor -> values its node expands to
    counts: list[int] = []  # values so far inside each open mapping or list
    anchors: list[str | None] = []
    total = 0
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.CollectionStartEvent):
                counts.append(1)
                anchors.append(event.anchor)
                total += 1
                if len(counts) > MAX_CONFIG_DEPTH:
                    raise ConfigError(
                        source,
                        "(yaml)",
                        f"mappings and lists nested at most {MAX_CONFIG_DEPTH} deep",
                        line=_line(event.start_mark),
                    )
                continue
            if isinstance(event, yaml.CollectionEndEvent):
                size, anchor = counts.pop(), anchors.pop()
            elif isinstance(event, yaml.AliasEvent):
                size, anchor = sizes.get(event.anchor or "", 1), None
                total += size
            elif isinstance(event, yaml.ScalarEvent):
                size, anchor = 1, event.anchor
                total += 1
            else:
                continue
            if anchor is not None:
                sizes[anchor] = size
            if counts:
                counts[-1] += size
            if total > MAX_CONFIG_VALUES:
                raise ConfigError(
                    source,
                    "(yaml)",
                    f"at most {MAX_CONFIG_VALUES} values once aliases are expanded "
                    "(aliases that repeat each other grow exponentially)",
                    line=_line(event.start_mark),
                )
    except yaml.YAMLError:
        return  # compose() reports syntax errors with their line


def _line(mark: object) -> int | None:
    """Return the 1-based line of a YAML mark."""
    line = getattr(mark, "line", None)
    return line + 1 if isinstance(line, int) else None


def _parse(
    text: str,
    source: str,
    base_dir: Path,
    env: Mapping[str, str] | None,
    *,
    check_files: bool,
) -> MonitorConfig:
    environ = os.environ if env is None else env
    _guard(text, source)
    root = compose(text, source, environ)
    f = Fields(source, base_dir, check_files=check_files)
    if root.value is None:
        raise f.error(root, "a mapping with the key 'suites' (the file is empty)")
    entries = f.mapping(
        root, vocab.TOP_KEYS, "the config: version, store, ui, defaults, suites, traffic"
    )
    if "version" in entries:
        f.integer(entries["version"], minimum=1, maximum=1)
    store = _store(f, entries.get("store"), environ)
    ui = _ui(f, entries["ui"]) if "ui" in entries else None
    defaults = _defaults(f, entries.get("defaults"))
    traffic = online.traffic(f, entries["traffic"]) if "traffic" in entries else None
    if "suites" not in entries and traffic is not None:
        # A config of the traffic section alone: its online suites are its whole work.
        return MonitorConfig(source=source, store=store, suites={}, ui=ui, traffic=traffic)
    suites_node = f.require(root, entries, "suites", " (or 'traffic' with online suites)")
    if not isinstance(suites_node.value, Mapping):
        raise f.error(suites_node, "a mapping of suite names to suites", show=True)
    if not suites_node.value:
        raise f.error(suites_node, "at least one suite")
    suites: dict[str, SuiteConfig] = {}
    for name, node in suites_node.value.items():
        if not vocab.SUITE_NAME.fullmatch(name):
            raise f.error(
                node,
                "a suite name of lowercase letters, digits, _ and - ([a-z0-9][a-z0-9_-]*)",
                found=name,
            )
        suites[name] = _suite(f, name, node, defaults, store.retention)
        _check_one_metrics_endpoint(f, node, suites)
    if traffic is not None:
        # Alerts, gauges and stored state are keyed by the suite's name alone.
        for name in traffic.online:
            if name in suites:
                raise f.error(
                    entries["traffic"],
                    "online suite names other than the suites' names",
                    found=name,
                )
    return MonitorConfig(source=source, store=store, suites=suites, ui=ui, traffic=traffic)


def _ui(f: Fields, node: Node) -> UiConfig:
    """Read ``ui: {address, port}``: where the daemon serves the web app."""
    if node.value is None:
        return UiConfig()
    entries = f.mapping(node, vocab.UI_KEYS, "address or port")
    default = UiConfig()
    address = (
        f.string(entries["address"], "an address") if "address" in entries else default.address
    )
    port = (
        f.integer(entries["port"], minimum=0, maximum=65535) if "port" in entries else default.port
    )
    return UiConfig(address=address, port=port)


def _check_one_metrics_endpoint(f: Fields, node: Node, suites: Mapping[str, SuiteConfig]) -> None:
    """Refuse http exporters on different addresses: the daemon serves one ``/metrics``."""
    seen: dict[tuple[str, int], str] = {}
    for name, suite in suites.items():
        for exporter in suite.exporters:
            if isinstance(exporter, HttpExporterConfig):
                seen.setdefault((exporter.address, exporter.port), name)
    if len(seen) > 1:
        (first, first_suite), (other, _) = list(seen.items())[:2]
        raise f.error(
            node,
            f"the http exporter of suite {first_suite!r} ({first[0]}:{first[1]}) in every suite: "
            "the daemon serves one /metrics endpoint for all of them",
            found=f"{other[0]}:{other[1]}",
        )


def _store(f: Fields, node: Node | None, env: Mapping[str, str]) -> StoreConfig:
    if node is None or node.value is None:
        return _sqlite(default_store_path(env))
    entries = f.mapping(node, vocab.STORE_KEYS, "url or path, and retention")
    kept = sections.retention(f, entries.get("retention"))
    return dataclasses.replace(_where(f, node, entries, env), retention=kept)


def _where(
    f: Fields, node: Node, entries: Mapping[str, Node], env: Mapping[str, str]
) -> StoreConfig:
    if "url" not in entries and "path" not in entries and "retention" in entries:
        return _sqlite(default_store_path(env))  # only a retention: the default file
    if ("url" in entries) == ("path" in entries):
        where = entries.get("path", node)
        raise f.error(where, "exactly one of 'url' or 'path'")
    if "path" in entries:
        return _sqlite(f.path(entries["path"], "a SQLite database file path"))
    url_node = entries["url"]
    expected = (
        "a store URL: sqlite:///path/monitor.db or postgresql://user@host/db "
        f"(schemes: {', '.join(SCHEMES)})"
    )
    text = f.string(url_node, expected, secret=True)
    try:
        location = parse_store_url(text)
    except UsageError:
        raise f.error(url_node, expected, found=mask_url(text, hide_path=False)) from None
    if location.kind == "postgresql":
        return StoreConfig(kind="postgresql", url=Secret(text, mask_url(text, hide_path=False)))
    if location.path is None:
        return StoreConfig(kind="sqlite", url=Secret("sqlite:///:memory:", "sqlite:///:memory:"))
    # Relative to the config file's folder, as a `path:` is.
    return _sqlite(f.path(Node(str(location.path), url_node.path, url_node.line), expected))


def _sqlite(path: Path) -> StoreConfig:
    url = f"sqlite:///{path}"
    return StoreConfig(kind="sqlite", url=Secret(url, url), path=path)


def _defaults(f: Fields, node: Node | None) -> Mapping[str, Node]:
    if node is None or node.value is None:
        return {}
    entries = f.mapping(node, vocab.SUITE_KEYS, "suite keys shared by every suite")
    for key in vocab.MERGED_KEYS:
        child = entries.get(key)
        if child is not None and child.value is not None and not isinstance(child.value, Mapping):
            raise f.error(child, "a mapping", show=True)
    return entries


def _merge(defaults: Mapping[str, Node], own: Mapping[str, Node]) -> dict[str, Node]:
    """Lay a suite's keys over ``defaults``: some mappings merge by key, the rest replace.

    Merged values keep the path and line where they were written, so an error in a default
    names ``defaults.runner.retries``.
    """
    merged = dict(defaults)
    for key, node in own.items():
        base = defaults.get(key)
        if (
            key in vocab.MERGED_KEYS
            and base is not None
            and isinstance(base.value, Mapping)
            and isinstance(node.value, Mapping)
        ):
            merged[key] = Node({**base.value, **node.value}, node.path, node.line)
        else:
            merged[key] = node
    return merged


def _with_ann_recall_floor(
    f: Fields, e: Mapping[str, Node], search: SearchConfig, rules: tuple[RuleConfig, ...]
) -> tuple[RuleConfig, ...]:
    """Return ``rules`` with the index-health defaults when the search measures index health:
    the ANN recall floor unless a rule names one, and an unexpected drop of the indexed
    vectors unless an ``index_size`` rule is given; refuse an ``ann_recall@K`` rule at
    another cutoff."""
    k = sections.index_health_k(search)
    floors = [rule for rule in rules if rule.check is Check.ANN_RECALL_MIN]
    for rule in floors:
        if rule.k is not None and rule.k != k:
            where = e.get("rules") or e["search"]
            measured = "no ANN recall (search.index_health is off)" if k is None else f"k {k}"
            raise f.error(where, f"ann_recall@{rule.k} to be what the search measures ({measured})")
    if k is None:
        return rules
    defaults = []
    if not floors:
        defaults.append(RuleConfig(Check.ANN_RECALL_MIN, sections.DEFAULT_ANN_RECALL_FLOOR, k=k))
    if not any(rule.check is Check.INDEX_SIZE_MAX_RELATIVE_DROP for rule in rules):
        drop = sections.DEFAULT_INDEX_SIZE_DROP
        defaults.append(RuleConfig(Check.INDEX_SIZE_MAX_RELATIVE_DROP, drop))
    return (*rules, *defaults)


def _suite(
    f: Fields,
    name: str,
    node: Node,
    defaults: Mapping[str, Node],
    store_retention: Retention | None = None,
) -> SuiteConfig:
    own: Mapping[str, Node] = {}
    if node.value is not None:
        own = f.mapping(node, vocab.SUITE_KEYS, "a suite: evalset, search, metrics, rules, ...")
    # A key set to null (`runner:` with nothing under it) counts as not given.
    e = {key: value for key, value in _merge(defaults, own).items() if value.value is not None}
    for key in ("evalset", "search"):
        if key not in e:
            raise f.error(node, f"the key {key!r} (in the suite or in defaults)")
    chosen = sections.metrics(f, e.get("metrics"))
    depth = sections.depth(f, e.get("k"), chosen)
    unit = sections.unit(f, e.get("unit"))
    unit_cut = sections.unit_cut(f, e.get("unit_cut"), unit)
    evalset = sections.evalset(f, e["evalset"])
    rules = sections.rules(f, e.get("rules"), chosen)
    if unit is not None:
        # The suite's unit is part of each metric named without one: recall@5[section].
        chosen = tuple(with_unit(m, unit, unit_cut) for m in chosen)
        rules = tuple(
            replace(r, metric=None if r.metric is None else with_unit(r.metric, unit, unit_cut))
            for r in rules
        )
    if evalset.corpus is None and evalset.bundled is None:
        united = [str(m) for m in chosen if m.unit is not None]
        if united:
            where = e.get("unit") or e.get("metrics") or node
            raise f.error(where, f"an 'evalset.corpus' to count {united[0]} in units")
    search = sections.search(f, e["search"])
    rules = _with_ann_recall_floor(f, e, search, rules)
    return SuiteConfig(
        name=name,
        evalset=evalset,
        search=search,
        metrics=chosen,
        k=depth,
        pipeline=sections.pipeline(f, e.get("pipeline"), name),
        runner=sections.runner(f, e.get("runner")),
        schedule=schedules.schedule(f, e.get("schedule")),
        trigger=schedules.trigger(f, e.get("trigger")),
        rules=rules,
        significance=sections.significance(f, e.get("significance")),
        segments=sections.segments(f, e.get("segments")),
        exporters=outputs.exporters(f, e.get("exporters")),
        notifiers=outputs.notifiers(f, e.get("notifiers")),
        labels=outputs.labels(f, e.get("labels")),
        links=outputs.links(f, e.get("links")),
        baseline=sections.baseline(f, e.get("baseline")),
        invariants=invariants(f, e.get("invariants"), depth),
        scoring=sections.scoring(f, e.get("scoring")),
        unit=unit,
        unit_cut=unit_cut,
        coverage=sections.coverage(f, e.get("coverage")),
        judge=judge.judge(f, e.get("judge")),
        alert_labels=judge.alert_labels(f, e.get("alert_labels")),
        retention=sections.suite_store(f, e.get("store")) or store_retention,
        bands=bands(f, e.get("bands")),
        drift=drift(f, e.get("drift")),
    )


def with_unit(metric: Metric, unit: str, unit_cut: str) -> Metric:
    """Return ``metric`` counted in ``unit`` unless its name already gives a unit."""
    return metric if metric.unit is not None else replace(metric, unit=unit, unit_cut=unit_cut)
