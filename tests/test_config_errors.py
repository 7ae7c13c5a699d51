"""Every malformed value gets its own precise error: file, key path, line and what was expected."""

from __future__ import annotations

import textwrap

import pytest

from monitor.config import load_config_text
from monitor.errors import ConfigError

SOURCE = "cfg.yaml"
EVALSET = "evalset: {bundled: larkfield}"
SEARCH = "search: {kind: replay, bundled: larkfield/keyword}"


def suite_file(body: str) -> str:
    """Return a config with one suite ``nightly`` whose body starts on line 3.

    ``evalset`` and ``search`` are added after the body unless the body sets them.
    """
    lines = textwrap.dedent(body).strip("\n").splitlines()
    keys = {line.split(":", 1)[0] for line in lines if line and not line.startswith(" ")}
    if "evalset" not in keys:
        lines.append(EVALSET)
    if "search" not in keys:
        lines.append(SEARCH)
    return "suites:\n  nightly:\n" + "".join(f"    {line}\n" for line in lines)


def config_error(text: str) -> ConfigError:
    """Load ``text`` and return the ConfigError it raises."""
    with pytest.raises(ConfigError) as info:
        load_config_text(text, SOURCE, env={})
    return info.value


# (body of suite `nightly`, key path under `suites.nightly.`, line, part of "expected")
SUITE_CASES = [
    # evalset
    ("evalset: {path: a.jsonl, bundled: larkfield}", "evalset.path", 3, "beside 'bundled'"),
    ("evalset: {path: a.jsonl, format: parquet}", "evalset.format", 3, "one of jsonl, json"),
    ("evalset: {path: a.jsonl, queries: q.tsv}", "evalset.queries", 3, "only with TREC"),
    ("evalset: {}", "evalset", 3, "the key 'path'"),
    ("evalset: [a.jsonl]", "evalset", 3, "a mapping"),
    ("evalset: {bundled: Lark Field}", "evalset.bundled", 3, "bundled eval set name"),
    # search
    ("search: {kind: solr}", "search.kind", 3, "one of http, interleave, python, replay"),
    ("search: {kind: http, bundled: larkfield/keyword}", "search.bundled", 3, "kind: replay"),
    ("search: {url: 'http://x'}", "search", 3, "the key 'kind'"),
    ("search: {kind: replay, bundled: keyword}", "search.bundled", 3, "larkfield/keyword"),
    ("search: {kind: 'entrypoint:'}", "search.kind", 3, "entrypoint:<name>"),
    ("search: {kind: replay, bundled: a/b, path: r.json}", "search.path", 3, "beside 'bundled'"),
    # metrics and k
    ("metrics: [ndcg@10, hit_rate]", "metrics[1]", 3, "needs a cutoff"),
    ("metrics: [ndcg@10, ndcg@10]", "metrics[1]", 3, "each metric once"),
    ("metrics: [ndcg@10, recal@5]", "metrics[1]", 3, "did you mean 'recall'?"),
    ("metrics: {measures: [ndcg, recal]}", "metrics.measures[1]", 3, "a measure: one of"),
    ("metrics: {measures: [ndcg], k: [0]}", "metrics.k[0]", 3, "an integer of at least 1"),
    ("metrics: {measures: [ndcg], cutoffs: [5]}", "metrics.cutoffs", 3, "a known key"),
    ("metrics: []", "metrics", 3, "at least one metric"),
    ("metrics: [recall@20]\nk: 10", "k", 4, "an integer from 20"),
    # runner
    ("runner:\n  concurrency: 0", "runner.concurrency", 4, "an integer from 1 to 1024"),
    ("runner:\n  error_budget: 1.5", "runner.error_budget", 4, "a number from 0 to 1"),
    ("runner:\n  timeout_seconds: fast", "runner.timeout_seconds", 4, "a number above 0"),
    ("runner:\n  retries: true", "runner.retries", 4, "an integer"),
    ("runner:\n  deadline_seconds: -5", "runner.deadline_seconds", 4, "above 0"),
    ("runner:\n  warmup: 2.5", "runner.warmup", 4, "an integer of at least 0"),
    ("runner:\n  retrys: 3", "runner.retrys", 4, "did you mean 'retries'?"),
    # schedule
    ("schedule: {cron: '* * *'}", "schedule.cron", 3, "a 5-field crontab expression"),
    ("schedule: {cron: '61 * * * *'}", "schedule.cron", 3, "higher than the maximum"),
    ("schedule: {interval: 10 minutes}", "schedule.interval", 3, "90s, 30m, 1h, 1d"),
    ("schedule: {interval: 0}", "schedule.interval", 3, "above 0"),
    ("schedule:\n  cron: '* * * * *'\n  interval: 1h", "schedule.interval", 5, "exactly one"),
    ("schedule: {}", "schedule", 3, "exactly one of 'cron' or 'interval'"),
    ("schedule: {interval: 1h, timezone: UTC}", "schedule.timezone", 3, "only with 'cron'"),
    ("schedule: {cron: '0 * * * *', timezone: Mars/Base}", "schedule.timezone", 3, "IANA"),
    # rules
    (
        "rules:\n  - {metric: recall@5, max_drop: 0.05}\n  - {metric: recall@5, max_drop: -0.1}",
        "rules[1].max_drop",
        5,
        "a number from 0 to 1",
    ),
    ("rules:\n  - {max_drop: 0.05}", "rules[0]", 4, "the key 'metric'"),
    ("rules:\n  - {metric: recall@5, max_drop: 0.05, min: 0.5}", "rules[0].min", 4, "one check"),
    ("rules:\n  - {metric: recall@7, min: 0.5}", "rules[0].metric", 4, "the suite's metrics"),
    ("rules:\n  - {error_rate_max: 0.1, metric: recall@5}", "rules[0].metric", 4, "no 'metric'"),
    ("rules:\n  - {metric: recall@5, max_dorp: 0.05}", "rules[0].max_dorp", 4, "'max_drop'?"),
    ("rules:\n  - {latency_p95_seconds_max: 0}", "rules[0].latency_p95_seconds_max", 4, "above 0"),
    ("rules:\n  - {metric: recall@5, min: 0.5, severity: page}", "rules[0].severity", 4, "info"),
    ("rules:\n  - {metric: recall@5}", "rules[0]", 4, "one check: max_drop"),
    (
        "rules:\n  - {error_rate_max: 0.1}\n  - {error_rate_max: 0.1}",
        "rules[1]",
        5,
        "each rule once",
    ),
    ("rules: {metric: recall@5}", "rules", 3, "a list"),
    # significance
    ("significance: {alpha: 0}", "significance.alpha", 3, "a number above 0"),
    ("significance: {iterations: 10}", "significance.iterations", 3, "from 100 to"),
    ("significance: {seed: -1}", "significance.seed", 3, "at least 0"),
    (
        "significance:\n  persistence: {breaches: 3, runs: 2}",
        "significance.persistence.breaches",
        4,
        "at most runs (2)",
    ),
    ("significance: {persistence: {breaches: 2}}", "significance.persistence", 3, "'runs'"),
    # segments
    ("segments: language", "segments", 3, "a list"),
    ("segments: [kind, kind]", "segments[1]", 3, "each segment key once"),
    ("segments: ['a b']", "segments[0]", 3, "a metadata key"),
    # exporters
    ("exporters: [{kind: graphite}]", "exporters[0].kind", 3, "one of http, pushgateway"),
    ("exporters: [{kind: textfile, path: out.txt}]", "exporters[0].path", 3, "ending in .prom"),
    ("exporters: [{kind: http, port: 70000}]", "exporters[0].port", 3, "from 1 to 65535"),
    ("exporters: [{kind: pushgateway}]", "exporters[0]", 3, "the key 'url'"),
    ("exporters: [{kind: pushgateway, url: 'ftp://x'}]", "exporters[0].url", 3, "Pushgateway"),
    ("exporters: [{kind: http, path: x.prom}]", "exporters[0].path", 3, "port"),
    ("exporters:\n  - kind: http\n  - kind: http", "exporters[1]", 5, "each exporter once"),
    # notifiers
    ("notifiers: [{kind: email}]", "notifiers[0].kind", 3, "or entrypoint:<name>"),
    ("notifiers: [{kind: slak, url: 'http://x'}]", "notifiers[0].kind", 3, "mean 'slack'?"),
    ("notifiers: [{kind: slack}]", "notifiers[0]", 3, "the key 'url'"),
    ("notifiers: [{kind: webhook, url: not-a-url}]", "notifiers[0].url", 3, "an http(s) URL"),
    ("notifiers: [{kind: stdout, url: 'http://x'}]", "notifiers[0].url", 3, "no 'url'"),
    (
        "notifiers: [{kind: webhook, url: 'http://x', secret_env: 'my secret'}]",
        "notifiers[0].secret_env",
        3,
        "environment variable",
    ),
    ("notifiers: {kind: stdout}", "notifiers", 3, "a list"),
    # labels, links, pipeline, baseline
    ("labels: {__team: x}", "labels.__team", 3, "not starting with __"),
    ("labels:\n  team-name: x", "labels.team-name", 4, "a Prometheus label name"),
    ("labels: {team: [a]}", "labels.team", 3, "a label value"),
    ('labels: {team: "a\\ud800b"}', "labels.team", 3, "text of valid Unicode (no lone"),
    ('labels: {"\\udc00": x}', "labels", 3, "text of valid Unicode (no lone surrogate)"),
    ('pipeline: "a\\0b"', "pipeline", 3, "text without a NUL character"),
    ("links: {runbook: wiki/page}", "links.runbook", 3, "an http(s) URL"),
    ("links: {runbok: 'https://x'}", "links.runbok", 3, "did you mean 'runbook'?"),
    ("pipeline: ''", "pipeline", 3, "a pipeline name"),
    ("baseline: {bundled_run: rerank}", "baseline.bundled_run", 3, "larkfield/rerank"),
    ("baseline: {run: x}", "baseline.run", 3, "known keys: bundled_run"),
    # the suite itself
    ("evalsett: {bundled: larkfield}", "evalsett", 3, "did you mean 'evalset'?"),
]


@pytest.mark.parametrize(
    ("body", "key", "line", "expected"),
    SUITE_CASES,
    ids=[f"{case[1]}-{i}" for i, case in enumerate(SUITE_CASES)],
)
def test_suite_value_error(body: str, key: str, line: int, expected: str) -> None:
    """A malformed suite value raises a ConfigError naming file, key path, line and expectation."""
    error = config_error(suite_file(body))
    assert (SOURCE, f"suites.nightly.{key}", line) == (error.source, error.key, error.line)
    assert expected in error.expected
    assert str(error).startswith(f"{SOURCE}:{line}: suites.nightly.{key}: expected ")


BODY = f"suites:\n  nightly:\n    {EVALSET}\n    {SEARCH}\n"

# (whole file, key path, line, part of "expected")
FILE_CASES = [
    ("store: {url: 'mysql://h/db'}\n" + BODY, "store.url", 1, "sqlite:///"),
    ("store: {url: 'postgresql+asyncpg://h/db'}\n" + BODY, "store.url", 1, "postgresql+psycopg"),
    ("store: {url: 'sqlite://m.db'}\n" + BODY, "store.url", 1, "sqlite:///path/monitor.db"),
    ("store: {url: sqlite:///a.db, path: b.db}\n" + BODY, "store.path", 1, "exactly one"),
    ("store: {}\n" + BODY, "store", 1, "exactly one of 'url' or 'path'"),
    ("version: 2\n" + BODY, "version", 1, "an integer from 1 to 1"),
    ("suite:\n  nightly: {}\n", "suite", 1, "did you mean 'suites'?"),
    ("suites: {}\n", "suites", 1, "at least one suite"),
    ("suites: [nightly]\n", "suites", 1, "a mapping of suite names"),
    ("store: {path: a.db}\n", "(document)", 1, "the key 'suites'"),
    (f"suites:\n  Nightly:\n    {EVALSET}\n    {SEARCH}\n", "suites.Nightly", 2, "lowercase"),
    ("defaults:\n  runner: {retries: -1}\n" + BODY, "defaults.runner.retries", 2, "from 0 to 100"),
    ("defaults:\n  runer: {}\n" + BODY, "defaults.runer", 2, "did you mean 'runner'?"),
    ("defaults:\n  runner: 3\n" + BODY, "defaults.runner", 2, "a mapping"),
    (f"suites:\n  nightly:\n    {SEARCH}\n", "suites.nightly", 2, "the key 'evalset'"),
    ("suites:\n  nightly:\n", "suites.nightly", 2, "the key 'evalset'"),
    (BODY + "    k: 5\n    k: 6\n", "suites.nightly.k", 6, "each key once"),
    ("suites: {nightly: {evalset: [}\n", "(yaml)", 1, "well-formed YAML"),
    ("---\nsuites: {}\n---\nsuites: {}\n", "(yaml)", 3, "well-formed YAML"),
    (BODY + "    k: !!binary aGk=\n", "suites.nightly.k", 5, "without a tag"),
    (BODY + "    pipeline: ${A\n", "suites.nightly.pipeline", 5, "${NAME:-default}"),
    (BODY + "    pipeline: ${1A}\n", "suites.nightly.pipeline", 5, "${NAME}"),
    ("a: &a [*a]\n" + BODY, "a[0]", 1, "no recursive"),
    ("", "(document)", 1, "the key 'suites'"),
]


@pytest.mark.parametrize(
    ("text", "key", "line", "expected"),
    FILE_CASES,
    ids=[f"{case[1]}-{i}" for i, case in enumerate(FILE_CASES)],
)
def test_file_error(text: str, key: str, line: int, expected: str) -> None:
    """A malformed file raises a ConfigError naming file, key path, line and expectation."""
    error = config_error(text)
    assert (SOURCE, key, line) == (error.source, error.key, error.line)
    assert expected in error.expected


@pytest.mark.parametrize(
    ("body", "value", "key", "expected"),
    [
        ("k: ${V}", "\u0661\u0665", "k", "an integer"),
        ("runner:\n  timeout_seconds: ${V}", "\uff15", "runner.timeout_seconds", "a number"),
        ("schedule: {interval: '${V}'}", "\u0661\u0660m", "schedule.interval", "90s"),
    ],
    ids=["Arabic-Indic k", "full-width timeout", "Arabic-Indic interval"],
)
def test_a_number_from_the_environment_is_read_in_ascii_digits_only(
    body: str, value: str, key: str, expected: str
) -> None:
    """int() and float() read other scripts' digits; the config refuses them."""
    with pytest.raises(ConfigError) as info:
        load_config_text(suite_file(body), SOURCE, env={"V": value})
    assert (f"suites.nightly.{key}", True) == (info.value.key, expected in info.value.expected)


def test_missing_environment_variable_names_variable_key_and_line() -> None:
    """A ${VAR} that is not set is an error naming the variable, the key path and the line."""
    error = config_error(suite_file("notifiers:\n  - kind: slack\n    url: ${SLACK_URL}"))
    assert ("suites.nightly.notifiers[0].url", 5) == (error.key, error.line)
    assert "the environment variable SLACK_URL to be set" in error.expected


def test_unknown_key_lists_the_known_keys() -> None:
    """An unknown key's error lists every key allowed at that place."""
    error = config_error(suite_file("significance: {alfa: 0.1}"))
    assert (
        "a known key (did you mean 'alpha'?); known keys: alpha, iterations, persistence, seed"
        == error.expected
    )


def test_unknown_key_without_close_match_has_no_suggestion() -> None:
    """An unknown key unlike every known one gets the list without a guess."""
    error = config_error(suite_file("runner: {zzz: 1}"))
    assert "did you mean" not in error.expected


def test_http_exporters_of_suites_must_share_one_endpoint() -> None:
    """Two suites with http exporters on different ports is an error naming the second."""
    from monitor.config import load_config_text

    text = """
suites:
  one:
    evalset: {bundled: larkfield}
    search: {kind: replay, bundled: larkfield/keyword}
    exporters: [{kind: http, port: 9108}]
  two:
    evalset: {bundled: larkfield}
    search: {kind: replay, bundled: larkfield/vector}
    exporters: [{kind: http, port: 9109}]
"""
    expected = r"suites\.two: expected the http exporter of suite 'one'"
    with pytest.raises(ConfigError, match=expected):
        load_config_text(text)


def test_an_unknown_notifier_kind_lists_the_installed_plugins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An unknown kind names the built-ins and the installed entry points, as the config
    writes them."""
    from dataclasses import replace
    from importlib.metadata import EntryPoint

    from monitor.alerts import registry

    teams = EntryPoint("teams", "teams_plugin:build", registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry, "KINDS", replace(registry.KINDS, discover=lambda g: [teams]))
    error = config_error(suite_file("notifiers: [{kind: team}]"))
    assert (
        "a notifier kind: one of alertmanager, pagerduty, slack, stdout, webhook, or "
        "entrypoint:<name> for a plug-in (installed: entrypoint:teams) "
        "(did you mean 'entrypoint:teams'?)"
    ) == error.expected
