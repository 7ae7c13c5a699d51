"""Loading a config file: defaults, merging, environment references, schedules, rules, secrets."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from monitor.cli.validate import check_config
from monitor.config import (
    Check,
    HttpExporterConfig,
    MonitorConfig,
    PushgatewayExporterConfig,
    RuleConfig,
    RunnerConfig,
    Secret,
    SuiteConfig,
    TextfileExporterConfig,
    config_hash,
    default_config,
    default_store_path,
    load_config,
    load_config_text,
)
from monitor.config.hashing import canonical
from monitor.errors import ConfigError, UsageError
from monitor.metrics.spec import Metric, default_metrics, parse_metrics

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data" / "config"
EXAMPLES = [ROOT / "config" / "monitor.example.yaml", ROOT / "config" / "larkfield.yaml"]
#: What the full example needs from the environment.
EXAMPLE_ENV = {
    "SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/T000/B000/s3cr3t-slack",
    "PAGERDUTY_ROUTING_KEY": "s3cr3t-routing",
    "SEARCH_API_TOKEN": "s3cr3t-token",
}
SUITE = """\
suites:
  nightly:
    evalset: {bundled: larkfield}
    search: {kind: replay, bundled: larkfield/keyword}
"""


def load(
    text: str, env: dict[str, str] | None = None, base_dir: Path | None = None
) -> MonitorConfig:
    """Load dedented YAML text as ``cfg.yaml`` with only ``env`` in the environment."""
    return load_config_text(textwrap.dedent(text), "cfg.yaml", env=env or {}, base_dir=base_dir)


def nightly(extra: str = "", env: dict[str, str] | None = None) -> SuiteConfig:
    """Return suite ``nightly`` with ``extra`` (suite-level YAML lines) added."""
    body = "".join(f"    {line}\n" for line in textwrap.dedent(extra).splitlines())
    return load(SUITE + body, env).suite("nightly")


# -- the embedded default and the examples ----------------------------------------------------


def test_default_config_has_one_larkfield_suite() -> None:
    """The embedded default holds exactly the bundled Larkfield suite."""
    assert ("larkfield",) == tuple(default_config(env={}).suites)


def test_default_config_replays_keyword_against_rerank() -> None:
    """The default suite replays larkfield/keyword and seeds its baseline from larkfield/rerank."""
    suite = default_config(env={}).suite("larkfield")
    assert ("larkfield", "replay", "larkfield/keyword", "larkfield/rerank") == (
        suite.evalset.bundled,
        suite.search.kind,
        suite.search.bundled,
        suite.baseline.bundled_run if suite.baseline else None,
    )


def test_default_config_runs_hourly_prints_alerts_and_exports_nothing() -> None:
    """The default suite runs every hour, exports nothing and notifies on stdout only."""
    suite = default_config(env={}).suite("larkfield")
    assert (3600.0, (), ("stdout",)) == (
        suite.schedule.interval_seconds,
        suite.exporters,
        tuple(n.kind for n in suite.notifiers),
    )


def test_default_config_stores_in_xdg_data_home(tmp_path: Path) -> None:
    """The default store is monitor.db under $XDG_DATA_HOME/retrieval-monitor."""
    store = default_config(env={"XDG_DATA_HOME": str(tmp_path)}).store
    assert ("sqlite", tmp_path / "retrieval-monitor" / "monitor.db") == (store.kind, store.path)


def test_default_config_store_falls_back_to_local_share(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without XDG_DATA_HOME the default store is under ~/.local/share."""
    monkeypatch.setenv("HOME", "/home/ada")
    expected = Path("/home/ada/.local/share/retrieval-monitor/monitor.db")
    assert expected == default_config(env={}).store.path == default_store_path({})


def test_default_store_path_ignores_a_relative_xdg_data_home() -> None:
    """A relative XDG_DATA_HOME is ignored, as the XDG specification says."""
    assert Path.home() / ".local/share/retrieval-monitor/monitor.db" == default_store_path(
        {"XDG_DATA_HOME": "relative/data"}
    )


def test_store_defaults_to_the_per_user_database(tmp_path: Path) -> None:
    """A file without ``store`` keeps its results in the per-user database."""
    config = load(SUITE, env={"XDG_DATA_HOME": str(tmp_path)})
    assert tmp_path / "retrieval-monitor" / "monitor.db" == config.store.path


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_files_load(path: Path) -> None:
    """Each example file in config/ loads."""
    assert load_config(path, env=EXAMPLE_ENV).suites


def test_full_example_uses_every_rule_check() -> None:
    """The full example shows every rule check at least once."""
    config = load_config(EXAMPLES[0], env=EXAMPLE_ENV)
    assert set(Check) == {rule.check for rule in config.suite("nightly").rules}


def test_minimal_file_fills_every_default() -> None:
    """A suite naming only its eval set and search gets every other setting by default."""
    suite = load_config(DATA / "valid" / "minimal.yaml", env={}).suite("smoke")
    assert (default_metrics(), 10, RunnerConfig(), "smoke", None) == (
        suite.metrics,
        suite.k,
        suite.runner,
        suite.pipeline,
        suite.baseline,
    )


def test_load_config_names_a_missing_file(tmp_path: Path) -> None:
    """A missing config file is a ConfigError naming the file."""
    missing = tmp_path / "nope.yaml"
    with pytest.raises(
        ConfigError, match=re.escape("nope.yaml: (file): expected an existing config file")
    ):
        load_config(missing)


# -- paths ------------------------------------------------------------------------------------


def test_relative_paths_resolve_against_the_config_folder() -> None:
    """Relative paths (eval set, store, replay run, textfile) resolve against the file's folder."""
    folder = DATA / "project"
    config = load_config(folder / "monitor.yaml", env={})
    suite = config.suite("tiny")
    exporter = suite.exporters[0]
    assert isinstance(exporter, TextfileExporterConfig)
    assert (
        folder / "evalsets" / "tiny.jsonl",
        folder / "state" / "monitor.db",
        str(folder / "runs" / "tiny.json"),
        folder / "metrics" / "tiny.prom",
    ) == (suite.evalset.path, config.store.path, suite.search.options["path"], exporter.path)


def test_check_config_passes_when_the_eval_set_exists() -> None:
    """check_config accepts a file whose eval set exists."""
    assert ("tiny",) == tuple(check_config(DATA / "project" / "monitor.yaml").suites)


def test_check_config_names_a_missing_eval_set(tmp_path: Path) -> None:
    """check_config raises at the eval set path when the file is missing."""
    shutil.copy(DATA / "project" / "monitor.yaml", tmp_path / "monitor.yaml")
    with pytest.raises(ConfigError) as info:
        check_config(tmp_path / "monitor.yaml")
    assert ("suites.tiny.evalset.path", 7) == (info.value.key, info.value.line)


def test_load_config_does_not_require_the_eval_set_to_exist(tmp_path: Path) -> None:
    """load_config leaves reading the eval set to the run; only check_config looks for it."""
    shutil.copy(DATA / "project" / "monitor.yaml", tmp_path / "monitor.yaml")
    assert tmp_path / "evalsets" / "tiny.jsonl" == (
        load_config(tmp_path / "monitor.yaml", env={}).suite("tiny").evalset.path
    )


@pytest.mark.parametrize(
    ("store", "kind", "path"),
    [
        ("{path: data/m.db}", "sqlite", "BASE/data/m.db"),
        ("{url: 'sqlite:///data/m.db'}", "sqlite", "BASE/data/m.db"),
        ("{url: 'sqlite:////var/lib/m.db'}", "sqlite", "/var/lib/m.db"),
        ("{url: 'sqlite:///:memory:'}", "sqlite", None),
        ("{url: 'sqlite:///'}", "sqlite", None),
        ("{url: 'postgres://monitor@db/monitor'}", "postgresql", None),
        ("{url: 'postgresql://monitor@db/monitor'}", "postgresql", None),
        ("{url: 'postgresql+psycopg://monitor@db/monitor'}", "postgresql", None),
    ],
)
def test_store_forms(tmp_path: Path, store: str, kind: str, path: str | None) -> None:
    """The store is a SQLite path or URL (relative to the config's folder) or PostgreSQL."""
    config = load(f"store: {store}\n" + SUITE, base_dir=tmp_path)
    expected = None if path is None else Path(path.replace("BASE", str(tmp_path)))
    assert (kind, expected) == (config.store.kind, config.store.path)


def test_sqlite_store_url_is_absolute(tmp_path: Path) -> None:
    """A relative SQLite URL becomes an absolute one."""
    config = load("store: {path: m.db}\n" + SUITE, base_dir=tmp_path)
    assert f"sqlite:///{tmp_path}/m.db" == config.store.url.reveal()


# -- environment references -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "env", "expected"),
    [
        ("${TEAM}", {"TEAM": "search"}, "search"),
        ("team-${TEAM}-x", {"TEAM": "search"}, "team-search-x"),
        ("${TEAM:-search}", {}, "search"),
        ("${TEAM:-search}", {"TEAM": ""}, "search"),
        ("${TEAM}", {"TEAM": ""}, ""),
        ("${A}${B}", {"A": "x", "B": "y"}, "xy"),
        ("'$${TEAM}'", {}, "${TEAM}"),
        ("${TEAM:-a:b}", {}, "a:b"),
        ("no reference $HOME", {}, "no reference $HOME"),
    ],
)
def test_environment_references_expand(value: str, env: dict[str, str], expected: str) -> None:
    """${VAR} and ${VAR:-default} expand in string values; $${ writes a literal ${."""
    config = load(SUITE + f"    labels:\n      team: {value}\n", env=env)
    assert expected == config.suite("nightly").labels.get("team", "")


def test_unquoted_reference_is_typed_after_expansion() -> None:
    """An unquoted ${PORT} holding digits reads as an integer, as the digits would."""
    suite = nightly("exporters:\n  - kind: http\n    port: ${PORT}", env={"PORT": "9200"})
    assert HttpExporterConfig(port=9200) == suite.exporters[0]


def test_quoted_reference_is_read_as_the_number_it_spells() -> None:
    """A quoted "${PORT}" (needed inside {...}) is read as a number where one is expected."""
    suite = nightly('exporters: [{kind: http, port: "${PORT}"}]', env={"PORT": "9200"})
    assert HttpExporterConfig(port=9200) == suite.exporters[0]


def test_quoted_digits_without_reference_are_not_a_number() -> None:
    """A literal quoted "9200" is text, and an integer field rejects it."""
    with pytest.raises(ConfigError, match=re.escape("exporters[0].port: expected an integer")):
        nightly('exporters: [{kind: http, port: "9200"}]')


def test_env_example_loads_with_fallbacks() -> None:
    """The ${VAR:-default} example loads with an empty environment, numbers typed."""
    suite = load_config(DATA / "valid" / "env-refs.yaml", env={}).suite("api")
    assert (8, 2.5, 1800.0) == (
        suite.runner.concurrency,
        suite.runner.timeout_seconds,
        suite.schedule.interval_seconds,
    )


def test_process_environment_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without ``env`` the references read the process environment."""
    monkeypatch.setenv("MONITOR_TEST_TEAM", "ranking")
    config = load_config_text(SUITE + "    labels: {team: '${MONITOR_TEST_TEAM}'}\n")
    assert "ranking" == config.suite("nightly").labels["team"]


# -- defaults ---------------------------------------------------------------------------------

DEFAULTS = """\
defaults:
  runner: {concurrency: 8, retries: 0}
  labels: {team: search, env: prod}
  rules: [{error_rate_max: 0.01}]
  schedule: {interval: 1h}
  metrics: [recall@5, ndcg@10]
suites:
  nightly:
    evalset: {bundled: larkfield}
    search: {kind: replay, bundled: larkfield/keyword}
    runner: {retries: 3}
    labels: {env: staging}
    schedule: {cron: "0 3 * * *"}
  hourly:
    evalset: {bundled: larkfield}
    search: {kind: replay, bundled: larkfield/vector}
    rules: [{metric: recall@5, max_drop: 0.1}]
"""


def test_defaults_runner_merges_key_by_key() -> None:
    """A suite's runner keys override the defaults' and keep the rest."""
    runner = load(DEFAULTS).suite("nightly").runner
    assert (8, 3) == (runner.concurrency, runner.retries)


def test_defaults_labels_merge_key_by_key() -> None:
    """A suite's labels override the defaults' labels of the same name and keep the others."""
    assert {"team": "search", "env": "staging"} == dict(load(DEFAULTS).suite("nightly").labels)


def test_suite_schedule_replaces_the_default_schedule() -> None:
    """A suite's schedule replaces the default one whole (no cron-and-interval mix)."""
    schedule = load(DEFAULTS).suite("nightly").schedule
    assert ("0 3 * * *", None) == (schedule.cron, schedule.interval_seconds)


def test_suite_rules_replace_the_default_rules() -> None:
    """A suite's rules list replaces the defaults' list."""
    config = load(DEFAULTS)
    assert (
        (RuleConfig(Check.ERROR_RATE_MAX, 0.01),),
        (RuleConfig(Check.MAX_DROP, 0.1, Metric("recall", 5)),),
    ) == (config.suite("nightly").rules, config.suite("hourly").rules)


def test_defaults_apply_to_a_suite_that_does_not_set_the_key() -> None:
    """A key a suite leaves out comes from defaults."""
    suite = load(DEFAULTS).suite("hourly")
    assert (parse_metrics("recall@5,ndcg@10"), 3600.0) == (
        suite.metrics,
        suite.schedule.interval_seconds,
    )


def test_null_in_a_suite_restores_the_builtin_default() -> None:
    """A suite key set to null counts as not given: the built-in default applies."""
    text = DEFAULTS.replace("    runner: {retries: 3}", "    runner:")
    assert RunnerConfig() == load(text).suite("nightly").runner


def test_suite_may_take_evalset_and_search_from_defaults() -> None:
    """A suite with no keys of its own is complete when defaults give evalset and search."""
    text = """\
    defaults:
      evalset: {bundled: larkfield}
      search: {kind: replay, bundled: larkfield/keyword}
    suites:
      a:
      b: {pipeline: bee}
    """
    config = load(text)
    assert ("a", "bee") == (config.suite("a").pipeline, config.suite("b").pipeline)


def test_unknown_suite_lookup_names_the_known_suites() -> None:
    """Asking for a suite that is not there raises UsageError listing the suites."""
    with pytest.raises(UsageError, match="suites: nightly, hourly"):
        load(DEFAULTS).suite("weekly")


def test_yaml_merge_keys_work() -> None:
    """YAML anchors and merge keys (<<) can share settings between suites."""
    text = """\
    suites:
      a: &base
        evalset: {bundled: larkfield}
        search: {kind: replay, bundled: larkfield/keyword}
        k: 20
      b:
        <<: *base
        k: 30
    """
    config = load(text)
    assert (20, 30) == (config.suite("a").k, config.suite("b").k)


def test_keys_are_read_as_written() -> None:
    """A YAML 1.1 boolean word as a key (on, yes) stays that text."""
    assert {"on": "call", "yes": "1"} == dict(nightly("labels: {on: call, yes: '1'}").labels)


# -- metrics, depth, schedule, rules ----------------------------------------------------------


def test_metrics_default_to_the_engine_defaults() -> None:
    """Without ``metrics`` a suite measures the engine's default metrics."""
    assert default_metrics() == nightly().metrics


def test_metric_grid_expands_measures_by_cutoffs() -> None:
    """{measures, k} expands to every measure at every cutoff; r_precision once."""
    suite = nightly("metrics: {measures: [recall, r_precision, ndcg], k: [5, 10]}")
    assert parse_metrics("recall@5,recall@10,r_precision,ndcg@5,ndcg@10") == suite.metrics


@pytest.mark.parametrize(
    ("extra", "k"),
    [("metrics: [recall@5]", 10), ("metrics: [recall@50, map]", 50), ("k: 100", 100)],
)
def test_search_depth_defaults_to_the_largest_cutoff_and_at_least_10(extra: str, k: int) -> None:
    """k defaults to the largest metric cutoff, and to 10 when that is smaller."""
    assert k == nightly(extra).k


@pytest.mark.parametrize(
    ("interval", "seconds"),
    [
        ("90", 90.0),
        ("2.5", 2.5),
        ("90s", 90.0),
        ("30m", 1800.0),
        ("1h", 3600.0),
        ("1d", 86400.0),
        ("1h30m", 5400.0),
        ("2.5h", 9000.0),
        ("'45'", 45.0),
    ],
)
def test_interval_forms(interval: str, seconds: float) -> None:
    """An interval is seconds or a duration such as 90s, 30m, 1h, 1d or 1h30m."""
    assert seconds == nightly(f"schedule: {{interval: {interval}}}").schedule.interval_seconds


@pytest.mark.slow
@given(
    st.tuples(*(st.integers(min_value=0, max_value=99) for _ in range(4))).filter(any),
)
def test_interval_parts_add_up(parts: tuple[int, int, int, int]) -> None:
    """Any combination of days, hours, minutes and seconds adds up to its seconds."""
    days, hours, minutes, seconds = parts
    text = "".join(f"{n}{u}" for n, u in zip(parts, "dhms", strict=True) if n)
    expected = days * 86400 + hours * 3600 + minutes * 60 + seconds
    assert expected == nightly(f"schedule: {{interval: {text}}}").schedule.interval_seconds


def test_cron_schedule_is_normalised() -> None:
    """A cron expression keeps its five fields, single-spaced, and has no interval."""
    schedule = nightly("schedule: {cron: '*/15   *  * * 1-5', timezone: Europe/Berlin}").schedule
    assert ("*/15 * * * 1-5", None, "Europe/Berlin") == (
        schedule.cron,
        schedule.interval_seconds,
        schedule.timezone,
    )


def test_schedule_defaults_to_hourly() -> None:
    """Without ``schedule`` a suite runs every hour."""
    assert (None, 3600.0) == (nightly().schedule.cron, nightly().schedule.interval_seconds)


def test_default_rules_follow_common_practice() -> None:
    """Without ``rules``: recall@5 drop 0.05, p95 0.2 s, zero results 5 %, top-1 score 10 %."""
    assert (
        RuleConfig(Check.MAX_DROP, 0.05, Metric("recall", 5)),
        RuleConfig(Check.LATENCY_P95_SECONDS_MAX, 0.2),
        RuleConfig(Check.ZERO_RESULT_RATE_MAX, 0.05),
        RuleConfig(Check.TOP1_SCORE_MAX_RELATIVE_DROP, 0.10),
    ) == nightly().rules


def test_default_rules_skip_recall_when_it_is_not_measured() -> None:
    """The default recall@5 rule is left out of a suite that does not measure recall@5."""
    assert Check.MAX_DROP not in {rule.check for rule in nightly("metrics: [ndcg@10]").rules}


def test_empty_rules_means_no_rules() -> None:
    """``rules: []`` turns every rule off."""
    assert () == nightly("rules: []").rules


def test_rules_read_every_field() -> None:
    """A rule keeps its check, threshold, metric and severity."""
    rule = nightly("rules: [{metric: ndcg@10, max_relative_drop: 0.1, severity: critical}]").rules
    assert (RuleConfig(Check.MAX_RELATIVE_DROP, 0.1, Metric("ndcg", 10), "critical"),) == rule


def test_rule_names_are_stable() -> None:
    """A rule's name is its metric and check, or the check alone."""
    rules = nightly("rules: [{metric: recall@5, min: 0.5}, {error_rate_max: 0.1}]").rules
    assert ["recall@5 min", "error_rate_max"] == [rule.name for rule in rules]


def test_exponent_numbers_are_read() -> None:
    """A threshold written 1e-3 (text to YAML 1.1) reads as a number."""
    assert 0.001 == nightly("rules: [{error_rate_max: 1e-3}]").rules[0].threshold


def test_significance_reads_persistence() -> None:
    """significance keeps alpha, iterations, seed and persistence."""
    significance = nightly(
        "significance: {alpha: 0.01, iterations: 2000, seed: 7,"
        " persistence: {breaches: 2, runs: 3}}"
    ).significance
    assert (0.01, 2000, 7, 2, 3) == (
        significance.alpha,
        significance.iterations,
        significance.seed,
        significance.persistence.breaches if significance.persistence else None,
        significance.persistence.runs if significance.persistence else None,
    )


def test_third_party_kinds_are_entry_points() -> None:
    """entrypoint:<name> is accepted as a search or notifier kind."""
    suite = nightly("notifiers: [{kind: 'entrypoint:teams', url: 'https://teams.example.com/x'}]")
    assert "entrypoint:teams" == suite.notifiers[0].kind


# -- secrets ----------------------------------------------------------------------------------

SECRETS = {
    "SLACK": "https://hooks.slack.com/services/T0/B0/s3cr3t-slack",
    "TOKEN": "s3cr3t-token",
    "KEY": "s3cr3t-routing",
    "PGPASS": "s3cr3t-pg",
}
SECRET_FILE = """\
store: {url: "postgresql://monitor:${PGPASS}@db:5432/monitor"}
suites:
  nightly:
    evalset: {bundled: larkfield}
    search:
      kind: http
      url: http://search/api?q={query}
      ids: "[*].id"
      headers: {Authorization: "Bearer ${TOKEN}"}
      api_key: ${TOKEN}
    notifiers:
      - {kind: slack, url: "${SLACK}"}
      - {kind: pagerduty, routing_key: "${KEY}", severity: critical}
    exporters:
      - {kind: pushgateway, url: "http://push:${PGPASS}@gateway:9091"}
"""


def test_repr_of_config_shows_no_secret() -> None:
    """No secret value appears in the repr of the loaded config."""
    shown = repr(load(SECRET_FILE, env=SECRETS))
    assert [] == [name for name, value in SECRETS.items() if value in shown]


def test_secret_urls_keep_a_safe_outline() -> None:
    """Masked URLs still tell which endpoint is meant."""
    config = load(SECRET_FILE, env=SECRETS)
    suite = config.suite("nightly")
    exporter = suite.exporters[0]
    assert isinstance(exporter, PushgatewayExporterConfig)
    assert (
        "postgresql://monitor:***@db:5432/monitor",
        "https://hooks.slack.com/***",
        "http://push:***@gateway:9091",
    ) == (str(config.store.url), str(suite.notifiers[0].url), str(exporter.url))


def test_secret_options_are_wrapped_and_revealed_for_the_plugin() -> None:
    """Secret-like options are Secrets in the config and plain values for the plug-in."""
    search = load(SECRET_FILE, env=SECRETS).suite("nightly").search
    assert (Secret, {"Authorization": "Bearer s3cr3t-token"}, "s3cr3t-token") == (
        type(search.options["api_key"]),
        search.plugin_options()["headers"],
        search.plugin_options()["api_key"],
    )


def test_bundled_run_goes_back_among_the_plugin_options() -> None:
    """A bundled replay hands ``bundled`` to the replay plug-in with its other options."""
    assert {"bundled": "larkfield/keyword"} == dict(nightly().search.plugin_options())


def test_plugin_options_are_plain_copies() -> None:
    """Plug-ins get plain lists and dicts, so changing them leaves the config as it was."""
    text = SUITE.replace(
        "{kind: replay, bundled: larkfield/keyword}",
        "{kind: python, target: 'm:f', path: [/a, /b], kwargs: {x: [1]}}",
    )
    search = load(text).suite("nightly").search
    options = search.plugin_options()
    options["kwargs"]["x"].append(2)  # type: ignore[index]
    assert (["/a", "/b"], {"x": [1]}) == (
        search.plugin_options()["path"],
        search.plugin_options()["kwargs"],
    )


def test_notifier_secret_options_are_masked() -> None:
    """A notifier's routing_key is a Secret; its ordinary options stay plain."""
    notifier = load(SECRET_FILE, env=SECRETS).suite("nightly").notifiers[1]
    assert ("Secret('***')", "critical", "s3cr3t-routing") == (
        repr(notifier.options["routing_key"]),
        notifier.options["severity"],
        notifier.plugin_options()["routing_key"],
    )


@pytest.mark.parametrize(
    "body",
    [
        "notifiers: [{kind: webhook, url: '${SLACK}x y'}]",
        "store: {url: 'mysql://root:${PGPASS}@db/monitor'}",
    ],
)
def test_errors_never_show_a_secret(body: str) -> None:
    """An invalid secret value is reported without its value."""
    text = body + "\n" + SUITE if body.startswith("store") else SUITE + "    " + body + "\n"
    with pytest.raises(ConfigError) as info:
        load(text, env=SECRETS)
    assert [] == [value for value in SECRETS.values() if value in str(info.value)]


def test_secret_equality_and_hash_use_the_value() -> None:
    """Two Secrets with the same value are equal; reveal gives the value back."""
    assert (Secret("a", "x"), "a") == (Secret("a", "x"), Secret("a", "x").reveal())


# -- frozen records and fingerprint -----------------------------------------------------------


def test_records_are_frozen() -> None:
    """Config records cannot be changed after loading."""
    with pytest.raises(dataclasses.FrozenInstanceError):
        nightly().runner.retries = 5  # type: ignore[misc]


def test_option_mappings_are_read_only() -> None:
    """Plug-in options and labels are read-only mappings."""
    suite = nightly("labels: {team: search}")
    with pytest.raises(TypeError):
        suite.labels["team"] = "other"  # type: ignore[index]


def test_config_hash_is_stable_across_loads() -> None:
    """The same file gives the same fingerprint every time."""
    assert config_hash(nightly()) == config_hash(nightly())


def test_config_hash_changes_with_a_threshold() -> None:
    """Changing a rule's threshold changes the fingerprint."""
    assert config_hash(nightly("rules: [{error_rate_max: 0.1}]")) != config_hash(
        nightly("rules: [{error_rate_max: 0.2}]")
    )


def test_config_hash_holds_secrets_only_as_hashes() -> None:
    """The canonical form holds each secret's SHA-256, never the secret."""
    suite = load(SECRET_FILE, env=SECRETS).suite("nightly")
    text = json.dumps(canonical(suite))
    assert ([], True) == (
        [value for value in SECRETS.values() if value in text],
        Secret(SECRETS["TOKEN"]).sha256() in text,
    )


def test_config_hash_changes_with_a_secret() -> None:
    """Rotating a secret changes the fingerprint."""
    first = load(SECRET_FILE, env=SECRETS).suite("nightly")
    second = load(SECRET_FILE, env={**SECRETS, "TOKEN": "rotated"}).suite("nightly")
    assert config_hash(first) != config_hash(second)


def test_config_hash_does_not_depend_on_where_the_checkout_is(tmp_path: Path) -> None:
    """Moving the config folder keeps paths under it, and so the fingerprint, the same."""
    for name in ("one", "two"):
        shutil.copytree(DATA / "project", tmp_path / name)
    one, two = (
        load_config(tmp_path / n / "monitor.yaml", env={}).suite("tiny") for n in ("one", "two")
    )
    assert config_hash(one) == config_hash(two)


def test_config_hash_is_a_sha256_hex_digest() -> None:
    """The fingerprint is 64 lowercase hex digits."""
    digest = config_hash(nightly())
    assert (64, True) == (len(digest), all(c in "0123456789abcdef" for c in digest))


@pytest.mark.slow
@given(st.text(alphabet=st.characters(categories=("L", "N", "P", "S", "Zs")), max_size=40))
def test_plain_strings_pass_through_unchanged(value: str) -> None:
    """A label value without ${ reaches the config exactly as written."""
    text = value.replace("${", "$")
    suite = nightly(f"labels: {{team: {json.dumps(text, ensure_ascii=False)}}}")
    assert text == suite.labels["team"]
