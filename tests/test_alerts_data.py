"""The alerts/ folder: Prometheus rules and their promtool tests, the Alertmanager example,
the Grafana dashboard and its provisioning, checked offline with the tools that read them.

promtool and amtool come from Debian's prometheus and prometheus-alertmanager packages; the
dashboard is type-checked against Grafana 11.6's schema (@grafana/schema) with TypeScript,
installed by ``npm install --prefix tests/data/exporters/grafana-schema`` (or a folder named
by MONITOR_GRAFANA_SCHEMA_DIR). Where a tool is missing these tests skip, or fail when
MONITOR_REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import unavailable
from test_exporters_golden import GOLDEN as GOLDEN_DIR
from test_exporters_golden import RUNS as GOLDEN_RUNS

from monitor.exporters import GAUGES, SEVERITIES
from monitor.metrics.spec import MEASURES, UNBOUNDED

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "alerts" / "prometheus" / "retrieval-monitor.rules.yml"
RULE_TESTS = ROOT / "alerts" / "prometheus" / "retrieval-monitor.rules.test.yml"
ALERTMANAGER = ROOT / "alerts" / "alertmanager" / "alertmanager.example.yml"
DASHBOARD = ROOT / "alerts" / "grafana" / "retrieval-monitor.dashboard.json"
PROVISIONING = ROOT / "alerts" / "grafana" / "provisioning"
SCHEMA_DIR = Path(
    os.environ.get(
        "MONITOR_GRAFANA_SCHEMA_DIR", ROOT / "tests" / "data" / "exporters" / "grafana-schema"
    )
)

#: Values the dashboard's variables take when its queries are checked.
VARIABLES = {"suite": "nightly", "k": "5"}

EXPORTED = {gauge.name for gauge in GAUGES}


def tool(name: str, package: str) -> str:
    """Return the path of a command-line tool, or skip (fail in CI) when it is missing."""
    path = shutil.which(name)
    if path is None:
        unavailable(f"{name} is not installed (apt-get install {package})")
    assert path is not None
    return path


def run(
    *command: str, stdin: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a tool and return what it did; never longer than a minute."""
    return subprocess.run(
        command, input=stdin, capture_output=True, text=True, timeout=60, cwd=cwd, check=False
    )


def load_yaml(path: Path) -> Any:
    """Return the parsed YAML file."""
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def alerting_rules() -> list[dict[str, Any]]:
    """Return every alerting rule of the rules file."""
    return [rule for group in load_yaml(RULES)["groups"] for rule in group["rules"]]


def dashboard() -> dict[str, Any]:
    """Return the dashboard's JSON model."""
    data: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return data


def panels(items: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Yield every panel, rows and the panels inside collapsed rows included."""
    for panel in items:
        yield panel
        yield from panels(panel.get("panels", []))


def dashboard_queries() -> list[tuple[str, str]]:
    """Return (where, PromQL) for every query of the dashboard: panels, annotations, variables.

    A variable's ``label_values(SELECTOR, label)`` is Grafana's, not PromQL: its selector is
    what Prometheus receives.
    """
    model = dashboard()
    out = [
        (f"panel {p['title']!r} {t['refId']}", t["expr"])
        for p in panels(model["panels"])
        for t in p.get("targets", [])
    ]
    out += [
        (f"annotation {a['name']!r}", a["target"]["expr"])
        for a in model["annotations"]["list"]
        if a.get("datasource", {}).get("type") == "prometheus"
    ]
    for variable in model["templating"]["list"]:
        if variable["type"] == "query":
            query = variable["query"]["query"]
            match = re.fullmatch(r"label_values\((.*),\s*\w+\)", query)
            assert match, f"variable {variable['name']}: {query}"
            out.append((f"variable {variable['name']!r}", match.group(1)))
    return out


def expand(expr: str) -> list[str]:
    """Return ``expr`` with the dashboard's variables filled in, once per measure if it uses one."""
    for name, value in VARIABLES.items():
        expr = expr.replace(f"${{{name}}}", value).replace(f"${name}", value)
    if "$measure" not in expr and "${measure}" not in expr:
        return [expr]
    measures = sorted(set(MEASURES) - UNBOUNDED)  # counts and DCG have no _ratio gauge
    return [expr.replace("${measure}", m).replace("$measure", m) for m in measures]


def metric_names(expr: str) -> set[str]:
    """Return the retrieval_* metric names an expression reads."""
    return set(re.findall(r"\bretrieval_[a-z0-9_]+", expr))


# -- Prometheus rules -------------------------------------------------------------------------


def test_the_rules_pass_promtool_check() -> None:
    """promtool check rules accepts the rules file."""
    result = run(tool("promtool", "prometheus"), "check", "rules", str(RULES))
    assert 0 == result.returncode, result.stdout + result.stderr


@pytest.mark.slow
def test_the_rules_pass_their_promtool_unit_tests() -> None:
    """promtool test rules passes on the rules' unit tests."""
    result = run(
        tool("promtool", "prometheus"), "test", "rules", RULE_TESTS.name, cwd=RULE_TESTS.parent
    )
    assert 0 == result.returncode, result.stdout + result.stderr


@pytest.mark.parametrize("alert", [rule["alert"] for rule in alerting_rules()])
def test_each_alert_is_tested_firing_and_not_firing(alert: str) -> None:
    """The unit tests expect every alert to fire at one time and stay quiet at another."""
    checks = [
        check
        for test in load_yaml(RULE_TESTS)["tests"]
        for check in test.get("alert_rule_test", [])
        if check["alertname"] == alert
    ]
    assert (True, True) == (
        any(check["exp_alerts"] for check in checks),
        any(not check["exp_alerts"] for check in checks),
    )


#: The severity label of an alert that takes it from its series.
SERIES_SEVERITY = "{{ $labels.severity }}"


@pytest.mark.parametrize("rule", alerting_rules(), ids=lambda rule: rule["alert"])
def test_each_alert_carries_the_routing_labels_and_a_summary(rule: dict[str, Any]) -> None:
    """Every alert has service=retrieval-monitor, a severity (its own or its series'), a summary."""
    labels = rule["labels"]
    assert ("retrieval-monitor", True, True) == (
        labels["service"],
        labels["severity"] in {*SEVERITIES, SERIES_SEVERITY},
        bool(rule["annotations"]["summary"]),
    )


def test_an_alert_takes_its_severity_only_from_a_gauge_that_has_one() -> None:
    """Only alerts on a gauge with a severity label read it: the regression alert, no other."""
    takers = {
        name
        for rule in alerting_rules()
        if rule["labels"]["severity"] == SERIES_SEVERITY
        for name in metric_names(rule["expr"])
    }
    with_severity = {gauge.name for gauge in GAUGES if "severity" in gauge.labels}
    assert {"retrieval_regression_detected"} == takers == with_severity


def test_the_stale_alert_spells_out_two_hourly_intervals() -> None:
    """The stale alert compares the last success's age with 2 x 3600 s, written as such."""
    [rule] = [r for r in alerting_rules() if r["alert"] == "RetrievalMonitorStale"]
    expected = "time() - retrieval_last_success_timestamp_seconds > 2 * 3600"
    assert expected == rule["expr"]


def test_the_absent_alert_uses_absent() -> None:
    """A monitor that reports nothing at all is caught with absent()."""
    [rule] = [r for r in alerting_rules() if r["alert"] == "RetrievalMonitorAbsent"]
    assert rule["expr"].startswith("absent(retrieval_")


def test_the_rules_read_only_exported_gauges() -> None:
    """Every metric an alert reads is one the exporters export."""
    used = set().union(*(metric_names(rule["expr"]) for rule in alerting_rules()))
    assert set() == used - EXPORTED


# -- the exposition ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(GOLDEN_RUNS))
def test_the_golden_exposition_passes_promtool_check_metrics(name: str) -> None:
    """promtool finds nothing at all in a golden exposition (a successful and a failed run)."""
    promtool = tool("promtool", "prometheus")
    text = (GOLDEN_DIR / name).read_text(encoding="utf-8")
    result = run(promtool, "check", "metrics", stdin=text)
    assert (0, "") == (result.returncode, (result.stdout + result.stderr).strip())


# -- Alertmanager -----------------------------------------------------------------------------


def test_the_alertmanager_example_passes_amtool() -> None:
    """amtool check-config accepts the Alertmanager example."""
    result = run(tool("amtool", "prometheus-alertmanager"), "check-config", str(ALERTMANAGER))
    assert 0 == result.returncode, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("labels", "receiver"),
    [
        (
            ("service=retrieval-monitor", "alertname=RetrievalRegressionDetected", "suite=a"),
            "retrieval-monitor-webhook",
        ),
        (
            ("service=retrieval-monitor", "alertname=RetrievalMonitorAbsent"),
            "retrieval-monitor-webhook",
        ),
        (("service=billing", "alertname=HighLoad"), "default"),
    ],
)
def test_the_example_routes_retrieval_alerts_to_the_webhook(
    labels: tuple[str, ...], receiver: str
) -> None:
    """Alerts with service=retrieval-monitor go to the webhook receiver, others do not."""
    amtool = tool("amtool", "prometheus-alertmanager")
    result = run(amtool, "config", "routes", "test", f"--config.file={ALERTMANAGER}", *labels)
    assert receiver == result.stdout.strip(), result.stderr


def test_the_webhook_receiver_is_the_projects_webhook() -> None:
    """The retrieval receiver posts to the project's webhook on 127.0.0.1:8089/alerts."""
    receivers = {r["name"]: r for r in load_yaml(ALERTMANAGER)["receivers"]}
    [hook] = receivers["retrieval-monitor-webhook"]["webhook_configs"]
    assert "http://127.0.0.1:8089/alerts" == hook["url"]


# -- Grafana ----------------------------------------------------------------------------------


def test_the_dashboard_has_its_fixed_uid_and_variables() -> None:
    """uid retrieval-monitor; a prometheus datasource variable; suite from label_values."""
    model = dashboard()
    variables = {v["name"]: v for v in model["templating"]["list"]}
    assert ("retrieval-monitor", "datasource", "prometheus") == (
        model["uid"],
        variables["datasource"]["type"],
        variables["datasource"]["query"],
    )
    assert variables["suite"]["query"]["query"].startswith("label_values(")


def test_every_panel_queries_the_datasource_variable() -> None:
    """Each panel and each of its queries use ${datasource}, never a fixed data source."""
    for panel in panels(dashboard()["panels"]):
        if panel["type"] == "row":
            continue
        refs = [panel["datasource"], *(t["datasource"] for t in panel["targets"])]
        assert [{"type": "prometheus", "uid": "${datasource}"}] * len(refs) == refs, panel["title"]


def test_the_dashboard_has_the_promised_panels() -> None:
    """Measure against baseline with its band, latency, error ratios, last success, flags."""
    exprs = " ".join(expr for _, expr in dashboard_queries())
    for name in (
        "retrieval_${measure}_ratio",
        "retrieval_baseline_ratio",
        "retrieval_confidence_lower_ratio",
        "retrieval_confidence_upper_ratio",
        "retrieval_search_latency_seconds",
        "retrieval_error_ratio",
        "retrieval_zero_result_ratio",
        "time() - retrieval_last_success_timestamp_seconds",
        "retrieval_regression_detected",
    ):
        assert name in exprs, name


def test_the_band_is_filled_between_its_bounds() -> None:
    """The baseline panel fills from the upper bound down to the lower bound."""
    [panel] = [p for p in panels(dashboard()["panels"]) if p.get("repeat") == "k"]
    [upper] = [o for o in panel["fieldConfig"]["overrides"] if o["matcher"]["options"] == "upper"]
    assert {"id": "custom.fillBelowTo", "value": "lower"} in upper["properties"]


def test_eval_set_changes_are_annotations_on_the_info_series() -> None:
    """An annotation marks where the info series' fingerprint changed."""
    [annotation] = [
        a for a in dashboard()["annotations"]["list"] if a["name"] == "Eval set changed"
    ]
    assert "retrieval_evalset_info" in annotation["target"]["expr"]
    assert "fingerprint" in annotation["target"]["expr"]


def test_the_dashboard_reads_only_exported_gauges() -> None:
    """Every metric a dashboard query reads, for every measure, is an exported gauge."""
    used = {
        name for _, expr in dashboard_queries() for e in expand(expr) for name in metric_names(e)
    }
    assert set() == used - EXPORTED


def test_every_dashboard_query_parses_as_promql(tmp_path: Path) -> None:
    """promtool parses every dashboard query (variables filled in) as a recording rule."""
    promtool = tool("promtool", "prometheus")
    exprs = [e for _, expr in dashboard_queries() for e in expand(expr)]
    rules = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [
                    {"record": f"dashboard_query_{i}", "expr": e} for i, e in enumerate(exprs)
                ],
            }
        ]
    }
    path = tmp_path / "dashboard.rules.yml"
    path.write_text(yaml.safe_dump(rules), encoding="utf-8")
    result = run(promtool, "check", "rules", str(path))
    assert 0 == result.returncode, result.stdout + result.stderr


@pytest.mark.slow
def test_the_dashboard_matches_grafanas_schema(tmp_path: Path) -> None:
    """TypeScript finds no unknown key, wrong type or bad value against @grafana/schema 11.6."""
    node = tool("node", "nodejs")
    tsc = SCHEMA_DIR / "node_modules" / "typescript" / "bin" / "tsc"
    if not (tsc.is_file() and (SCHEMA_DIR / "node_modules" / "@grafana" / "schema").is_dir()):
        unavailable(f"Grafana's schema is not installed: npm install --prefix {SCHEMA_DIR}")
    (tmp_path / "check.ts").write_text(schema_check(dashboard()), encoding="utf-8")
    config = {
        "compilerOptions": {
            "strict": True,
            "noEmit": True,
            "module": "esnext",
            "moduleResolution": "bundler",
            "target": "es2022",
            "skipLibCheck": True,
            "types": [],
        },
        "files": ["check.ts"],
    }
    (tmp_path / "tsconfig.json").write_text(json.dumps(config), encoding="utf-8")
    result = run(node, str(tsc), "-p", str(tmp_path / "tsconfig.json"))
    assert 0 == result.returncode, result.stdout + result.stderr


#: The schema types of each panel kind the dashboard uses (dashboard-types.ts).
PANEL_KINDS = {"timeseries": "TimeSeries", "stat": "Stat", "state-timeline": "StateTimeline"}


def schema_check(model: dict[str, Any]) -> str:
    """Return TypeScript that types the dashboard, each annotation and each panel's parts.

    TypeScript reports one problem per object literal, so panel options, field defaults and
    queries get literals of their own, each against its panel kind's schema.
    """
    types = json.dumps(str(SCHEMA_DIR / "dashboard-types"))
    lines = [
        "import type { BuiltInAnnotation, DashboardJson, Defaults, PromAnnotation, "
        f"StateTimeline, Stat, Targets, TimeSeries }} from {types};",
        f"export const dashboard: DashboardJson = {json.dumps(model)};",
    ]
    for i, annotation in enumerate(model["annotations"]["list"]):
        shape = "BuiltInAnnotation" if annotation.get("builtIn") == 1 else "PromAnnotation"
        lines.append(f"export const annotation{i}: {shape} = {json.dumps(annotation)};")
    for panel in panels(model["panels"]):
        if panel["type"] == "row":
            continue
        kind = PANEL_KINDS.get(panel["type"])
        assert kind is not None, f"no schema for panel type {panel['type']!r}: add it"
        n, defaults = panel["id"], panel["fieldConfig"]["defaults"]
        lines.append(f"export const targets{n}: Targets = {json.dumps(panel['targets'])};")
        lines.append(
            f"export const options{n}: {kind}['options'] = {json.dumps(panel['options'])};"
        )
        lines.append(f"export const defaults{n}: Defaults = {json.dumps(defaults)};")
        if "custom" in defaults:
            lines.append(
                f"export const custom{n}: {kind}['custom'] = {json.dumps(defaults['custom'])};"
            )
    return "\n".join(lines) + "\n"


def test_the_provisioning_loads_the_dashboard_folder_and_a_prometheus() -> None:
    """dashboards.yml provides dashboards from files; the data source example is Prometheus."""
    [provider] = load_yaml(PROVISIONING / "dashboards.yml")["providers"]
    [source] = load_yaml(PROVISIONING / "datasources.example.yml")["datasources"]
    assert ("file", "prometheus") == (provider["type"], source["type"])
