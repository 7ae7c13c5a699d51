"""The deployment files in jobs/: they parse, carry the settings they promise, and agree with
the command line (its options and its exit codes) and with each other."""

from __future__ import annotations

import configparser
import json
import re
import shlex
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml

from monitor.cli import build_parser, main
from monitor.cli.exits import GATE_ONLY, ExitCode, exit_code
from monitor.config import ScheduleConfig, load_config_text
from monitor.daemon.schedule import build_trigger, shortest_gap
from monitor.errors import ConfigError, SearchBackendError

ROOT = Path(__file__).resolve().parents[1]
JOBS = ROOT / "jobs"
K8S = JOBS / "kubernetes"
SYSTEMD = JOBS / "systemd"
#: Every Kubernetes manifest under jobs/ (every YAML file there but the CI jobs of jobs/ci/,
#: which tests/test_action.py checks).
MANIFESTS = sorted(
    p for p in JOBS.rglob("*") if p.suffix in (".yaml", ".yml") and JOBS / "ci" not in p.parents
)
#: The Kubernetes minor versions the manifests support; jobs/README.md names the range. 1.29
#: is the first whose Job API takes a podFailurePolicy rule without ``onPodConditions``.
KUBERNETES_VERSIONS = [f"1.{minor}" for minor in range(29, 38)]

#: The exit codes of `run` (monitor/cli/run.py), each with the words every file in jobs/ that
#: lists them must use for it.
RUN_EXIT_CODES: dict[int, tuple[str, ...]] = {
    0: ("completed", "skipped", "another process"),
    2: ("config", "eval set", "changed"),
    3: ("search backend", "error budget"),
    4: ("quality gate", "--fail-on-regression"),
    1: ("unexpected", "export"),
}
DOCUMENTED_CODES = set(RUN_EXIT_CODES)
CONFIG_ERROR = exit_code(ConfigError("monitor.yaml", "store", "a store"))
BACKEND_FAILED = exit_code(SearchBackendError("down"))


def documents(name: str) -> list[dict[str, Any]]:
    """Return the YAML documents of ``jobs/kubernetes/<name>``."""
    return manifest_documents(K8S / name)


def manifest_documents(path: Path) -> list[dict[str, Any]]:
    """Return the YAML documents of the manifest at ``path``, empty ones left out."""
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def one(name: str, kind: str) -> dict[str, Any]:
    """Return the only document of ``kind`` in ``jobs/kubernetes/<name>``."""
    found = [doc for doc in documents(name) if doc["kind"] == kind]
    assert 1 == len(found), f"{name} should hold one {kind}"
    return found[0]


def dig(node: Any, path: str) -> Any:
    """Return the value at a dotted path: ``spec.template.spec``, ``containers.0`` indexes a
    list, ``prometheus\\.io/port`` is one key with a dot."""
    for part in re.split(r"(?<!\\)\.", path):
        key = part.replace("\\.", ".")
        node = node[int(key)] if isinstance(node, list) else node[key]
    return node


def cronjob() -> dict[str, Any]:
    return one("cronjob.yaml", "CronJob")


def deployment() -> dict[str, Any]:
    return one("deployment.yaml", "Deployment")


def pod_spec(workload: dict[str, Any]) -> dict[str, Any]:
    """Return the pod spec of a CronJob or a Deployment."""
    if workload["kind"] == "CronJob":
        return dig(workload, "spec.jobTemplate.spec.template.spec")  # type: ignore[no-any-return]
    return dig(workload, "spec.template.spec")  # type: ignore[no-any-return]


def container(workload: dict[str, Any]) -> dict[str, Any]:
    containers = pod_spec(workload)["containers"]
    assert 1 == len(containers)
    return containers[0]  # type: ignore[no-any-return]


def parse_cli(argv: list[str]) -> Any:
    """Parse ``argv`` with the real command line; an unknown option fails the test."""
    try:
        return build_parser().parse_args(argv)
    except SystemExit:
        pytest.fail(f"the command line rejects {argv}")


def monitor_args(command: str) -> list[str]:
    """Return the arguments given to ``retrieval-monitor`` in a shell command line."""
    words = shlex.split(command)
    start = next(i for i, word in enumerate(words) if word.endswith("retrieval-monitor"))
    args: list[str] = []
    for word in words[start + 1 :]:
        if word in ("|", "||", "&&", ";") or word.startswith((">", "2>")):
            break
        args.append(word)
    return args


def units(name: str) -> configparser.RawConfigParser:
    parser = configparser.RawConfigParser(strict=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys keep their case
    parser.read_string((SYSTEMD / name).read_text())
    return parser


# -- Kubernetes ------------------------------------------------------------------------------


def jobs_id(path: Path) -> str:
    """Return ``path`` relative to jobs/, as a test id and in messages."""
    return path.relative_to(JOBS).as_posix()


def test_manifests_are_found() -> None:
    """The manifests the tests check include the four Kubernetes files the README describes."""
    names = {"cronjob.yaml", "configmap.yaml", "secret.example.yaml", "deployment.yaml"}
    assert {K8S / name for name in names} <= set(MANIFESTS)


@pytest.mark.parametrize("path", MANIFESTS, ids=jobs_id)
def test_kubernetes_file_parses_into_objects_with_kind_and_name(path: Path) -> None:
    """Every Kubernetes file is YAML whose documents each have a kind and a name."""
    docs = manifest_documents(path)
    assert docs
    for doc in docs:
        assert {"apiVersion", "kind", "metadata"} <= set(doc)
        assert doc["metadata"]["name"]


def schema_problems(path: Path, version: str) -> list[str]:
    """Return what the Kubernetes ``version`` API schema (strict: no unknown fields) rejects in
    the manifest at ``path``, one line per object naming the file, the object and the field."""
    import kubernetes_validate
    from kubernetes_validate.utils import VersionNotSupportedError

    problems: list[str] = []
    for doc in manifest_documents(path):
        where = f"{jobs_id(path)}: {doc.get('kind')} {doc.get('metadata', {}).get('name')}"
        try:
            checked = kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            field = ".".join(str(part) for part in error.absolute_path) or "(the object)"
            problems.append(f"{where}: {field}: {error.message}")
        except kubernetes_validate.SchemaNotFoundError as error:
            problems.append(f"{where}: {error.message}")
        except VersionNotSupportedError:
            pytest.fail(
                f"kubernetes-validate {kubernetes_validate.__version__} has no schemas for "
                f"Kubernetes {version}: install the version the test extra asks for"
            )
        else:
            if checked != version:
                problems.append(f"{where}: checked against {checked}'s schema, not {version}'s")
    return problems


@pytest.mark.slow
@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("path", MANIFESTS, ids=jobs_id)
def test_manifest_is_valid_on_each_supported_kubernetes_version(path: Path, version: str) -> None:
    """Every object of every manifest matches the API schema of each supported version."""
    assert [] == schema_problems(path, version)


def test_readme_names_the_supported_kubernetes_versions() -> None:
    """jobs/README.md names the range of Kubernetes versions the manifests are checked against."""
    readme = " ".join((JOBS / "README.md").read_text().split())
    first, last = KUBERNETES_VERSIONS[0], KUBERNETES_VERSIONS[-1]
    assert f"Kubernetes {first} to {last}" in readme


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("apiVersion", "batch/v1"),
        ("spec.concurrencyPolicy", "Forbid"),
        ("spec.jobTemplate.spec.template.spec.restartPolicy", "Never"),
        ("spec.jobTemplate.spec.template.spec.containers.0.args.0", "run"),
    ],
)
def test_cronjob_setting(path: str, expected: object) -> None:
    """The CronJob carries the settings a one-shot monitor needs."""
    assert expected == dig(cronjob(), path)


@pytest.mark.parametrize(
    "path",
    [
        "spec.startingDeadlineSeconds",
        "spec.jobTemplate.spec.activeDeadlineSeconds",
        "spec.jobTemplate.spec.ttlSecondsAfterFinished",
    ],
)
def test_cronjob_time_limit_is_a_positive_number_of_seconds(path: str) -> None:
    """The CronJob's deadlines and time-to-live are set."""
    value = dig(cronjob(), path)
    assert isinstance(value, int)
    assert value > 0


def test_cronjob_retries_once_or_twice() -> None:
    """backoffLimit allows one or two retries for transient failures."""
    assert dig(cronjob(), "spec.jobTemplate.spec.backoffLimit") in (1, 2)


def test_cronjob_active_deadline_is_below_the_schedule_interval() -> None:
    """A hung run is stopped before the next run is due."""
    job = cronjob()
    schedule = ScheduleConfig(cron=job["spec"]["schedule"], interval_seconds=None, timezone="UTC")
    gap = shortest_gap(build_trigger(schedule), datetime(2026, 1, 1, tzinfo=timezone.utc))
    assert gap is not None
    assert dig(job, "spec.jobTemplate.spec.activeDeadlineSeconds") < gap.total_seconds()


def test_cronjob_fails_the_job_at_once_on_the_deterministic_exit_codes() -> None:
    """Exit 2 (config, eval set) and 4 (quality gate) fail the Job; 3 and 1 are retried."""
    rules = dig(cronjob(), "spec.jobTemplate.spec.podFailurePolicy.rules")
    fail = [rule for rule in rules if rule["action"] == "FailJob" and "onExitCodes" in rule]
    assert 1 == len(fail)
    codes = fail[0]["onExitCodes"]
    assert ("In", "retrieval-monitor") == (codes["operator"], codes["containerName"])
    assert {CONFIG_ERROR, ExitCode.USAGE, ExitCode.QUALITY_GATE} == set(codes["values"])
    assert set(codes["values"]) <= DOCUMENTED_CODES
    assert BACKEND_FAILED not in codes["values"]


def test_cronjob_does_not_count_evictions_as_failures() -> None:
    """A pod evicted or preempted is retried without using up the backoff limit."""
    rules = dig(cronjob(), "spec.jobTemplate.spec.podFailurePolicy.rules")
    ignored = [rule for rule in rules if rule["action"] == "Ignore"]
    conditions = [c for r in ignored for c in r["onPodConditions"]]
    assert [{"type": "DisruptionTarget", "status": "True"}] == conditions


def test_cronjob_schedule_is_the_configs_schedule() -> None:
    """The CronJob runs at the time the config gives its suites (for the daemon)."""
    text = one("configmap.yaml", "ConfigMap")["data"]["monitor.yaml"]
    config = load_config_text(text, "configmap.yaml", env=pod_env(cronjob()))
    assert {cronjob()["spec"]["schedule"]} == {s.schedule.cron for s in config.suites.values()}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("apiVersion", "apps/v1"),
        ("spec.replicas", 1),
        ("spec.strategy.type", "Recreate"),
        ("spec.template.metadata.annotations.prometheus\\.io/scrape", "true"),
        ("spec.template.metadata.annotations.prometheus\\.io/path", "/metrics"),
        ("spec.template.spec.containers.0.args.0", "daemon"),
        ("spec.template.spec.containers.0.readinessProbe.httpGet.path", "/metrics"),
        ("spec.template.spec.containers.0.livenessProbe.httpGet.path", "/metrics"),
    ],
)
def test_deployment_setting(path: str, expected: object) -> None:
    """The Deployment runs one daemon, replaced (not rolled), probed and scraped on /metrics."""
    assert expected == dig(deployment(), path)


def test_deployment_serves_metrics_on_the_port_it_announces() -> None:
    """--metrics-port, the container port, the probes, the annotation and the Service agree."""
    workload = deployment()
    box = container(workload)
    args = parse_cli(box["args"])
    ports = {port["name"]: port["containerPort"] for port in box["ports"]}
    annotations = workload["spec"]["template"]["metadata"]["annotations"]
    service = one("deployment.yaml", "Service")
    assert "0.0.0.0" == args.metrics_address
    assert args.metrics_port == ports["metrics"]
    assert str(args.metrics_port) == annotations["prometheus.io/port"]
    assert "metrics" == box["readinessProbe"]["httpGet"]["port"]
    assert "metrics" == box["livenessProbe"]["httpGet"]["port"]
    assert [("metrics", "metrics")] == [
        (port["name"], port["targetPort"]) for port in service["spec"]["ports"]
    ]


def test_deployment_stop_timeout_leaves_room_for_the_shutdown_grace() -> None:
    """The kubelet waits longer than the daemon's grace before it kills the pod."""
    workload = deployment()
    args = parse_cli(container(workload)["args"])
    assert pod_spec(workload)["terminationGracePeriodSeconds"] > args.shutdown_grace


def test_service_selects_the_daemon_pods() -> None:
    """The Service's selector matches the Deployment's pod labels."""
    selector = one("deployment.yaml", "Service")["spec"]["selector"]
    labels = deployment()["spec"]["template"]["metadata"]["labels"]
    assert selector.items() <= labels.items()
    assert selector == deployment()["spec"]["selector"]["matchLabels"]


WORKLOADS = [pytest.param(cronjob, id="cronjob"), pytest.param(deployment, id="deployment")]


@pytest.mark.parametrize("workload", WORKLOADS)
def test_workload_runs_as_a_non_root_user(workload: Any) -> None:
    """Pods run as a numeric non-root user with no privilege escalation and no capabilities."""
    spec = pod_spec(workload())
    box = container(workload())
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["runAsUser"] > 0
    assert "RuntimeDefault" == spec["securityContext"]["seccompProfile"]["type"]
    assert box["securityContext"]["allowPrivilegeEscalation"] is False
    assert box["securityContext"]["readOnlyRootFilesystem"] is True
    assert ["ALL"] == box["securityContext"]["capabilities"]["drop"]


@pytest.mark.parametrize("workload", WORKLOADS)
def test_workload_requests_and_limits_cpu_and_memory(workload: Any) -> None:
    """The container states its resource requests and limits."""
    resources = container(workload())["resources"]
    for side in ("requests", "limits"):
        assert {"cpu", "memory"} <= set(resources[side])


@pytest.mark.parametrize("workload", WORKLOADS)
def test_workload_arguments_are_accepted_by_the_command_line(workload: Any) -> None:
    """The container's arguments parse with the real command line and name the mounted config."""
    box = container(workload())
    args = parse_cli(box["args"])
    mounts = {mount["name"]: mount["mountPath"] for mount in box["volumeMounts"]}
    assert Path(mounts["config"]) / "monitor.yaml" == args.config


@pytest.mark.parametrize("workload", WORKLOADS)
def test_workload_mounts_the_configmap_and_reads_secrets_from_the_secret(workload: Any) -> None:
    """Config comes from the ConfigMap; every secret variable from a key the Secret has."""
    spec = pod_spec(workload())
    configmap = one("configmap.yaml", "ConfigMap")
    secret = one("secret.example.yaml", "Secret")
    volumes = {volume["name"]: volume for volume in spec["volumes"]}
    assert configmap["metadata"]["name"] == volumes["config"]["configMap"]["name"]
    refs = [
        env["valueFrom"]["secretKeyRef"]
        for env in container(workload())["env"]
        if "secretKeyRef" in env.get("valueFrom", {})
    ]
    assert refs
    for ref in refs:
        assert secret["metadata"]["name"] == ref["name"]
        assert ref["key"] in secret["stringData"]


def pod_env(workload: dict[str, Any]) -> dict[str, str]:
    """Return the environment a pod of ``workload`` gets, secrets from the example Secret."""
    secret = one("secret.example.yaml", "Secret")["stringData"]
    env: dict[str, str] = {}
    for item in container(workload)["env"]:
        if "value" in item:
            env[item["name"]] = str(item["value"])
        else:
            env[item["name"]] = secret[item["valueFrom"]["secretKeyRef"]["key"]]
    return env


@pytest.mark.parametrize("workload", WORKLOADS)
def test_configmap_config_loads_in_the_pods_environment(workload: Any) -> None:
    """The mounted config is valid, with every ${VAR} it needs set by the pod."""
    text = one("configmap.yaml", "ConfigMap")["data"]["monitor.yaml"]
    config = load_config_text(text, "configmap.yaml", env=pod_env(workload()))
    assert "postgresql" == config.store.kind
    assert config.suites


def test_configmap_check_command_validates_its_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The `config validate` command in configmap.yaml's comment passes on its own config."""
    comments = [line.lstrip("# ") for line in (K8S / "configmap.yaml").read_text().splitlines()]
    (command,) = [line for line in comments if "retrieval-monitor config validate" in line]
    words = shlex.split(command)
    program = next(i for i, word in enumerate(words) if word.endswith("retrieval-monitor"))
    text = one("configmap.yaml", "ConfigMap")["data"]["monitor.yaml"]
    for name in re.findall(r"\$\{(\w+)", text):  # only what the command line itself sets
        monkeypatch.delenv(name, raising=False)
    for assignment in words[:program]:
        name, _, value = assignment.partition("=")
        monkeypatch.setenv(name, value)
    (tmp_path / "monitor.yaml").write_text(text)
    monkeypatch.chdir(tmp_path)
    code = main(words[program + 1 :])
    assert 0 == code, capsys.readouterr().err


def test_configmap_reload_command_runs_a_program_the_image_has() -> None:
    """The `kubectl exec` that sends SIGHUP runs python (the base image's), not a tool it lacks."""
    comments = [line.lstrip("# ") for line in (K8S / "configmap.yaml").read_text().splitlines()]
    (command,) = [line for line in comments if line.startswith("kubectl exec")]
    words = shlex.split(command)
    program = words[words.index("--") + 1 :]
    # python:*-slim has no procps, so no kill(1); the daemon is PID 1 (exec-form ENTRYPOINT).
    assert ["python", "-c"] == program[:2]
    assert "os.kill(1, signal.SIGHUP)" in program[2]
    compile(program[2], "configmap.yaml", "exec")


# -- cron ------------------------------------------------------------------------------------


def crontab_jobs() -> list[str]:
    """Return the crontab's job lines (not comments, blank lines or VAR=value lines)."""
    lines = (JOBS / "cron" / "retrieval-monitor.crontab").read_text().splitlines()
    return [
        line
        for line in lines
        if line.strip()
        and not line.lstrip().startswith("#")
        and not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", line)
    ]


def test_crontab_has_one_job_with_a_five_field_schedule() -> None:
    """One line: five schedule fields that make a valid cron expression, then the command."""
    (line,) = crontab_jobs()
    fields = line.split(None, 5)
    build_trigger(ScheduleConfig(cron=" ".join(fields[:5]), interval_seconds=None))
    assert not fields[5][0].isdigit()


def test_crontab_job_runs_retrieval_monitor_run_under_flock() -> None:
    """The command is `retrieval-monitor run` with valid options, behind a non-blocking flock."""
    (line,) = crontab_jobs()
    command = line.split(None, 5)[5]
    args = parse_cli(monitor_args(command))
    assert "run" == args.command
    assert ["flock", "-n"] == shlex.split(command)[:2]
    assert "%" not in command  # cron turns % into newlines


# -- systemd ---------------------------------------------------------------------------------

HARDENING = {
    "NoNewPrivileges": "yes",
    "ProtectSystem": "strict",
    "ProtectHome": "yes",
    "PrivateTmp": "yes",
    "DynamicUser": "yes",
    "CapabilityBoundingSet": "",
}


@pytest.mark.parametrize("name", ["retrieval-monitor.service", "retrieval-monitor-daemon.service"])
@pytest.mark.parametrize(("key", "expected"), HARDENING.items())
def test_service_is_hardened(name: str, key: str, expected: str) -> None:
    """Both services run as an unprivileged dynamic user in a read-only system."""
    assert expected == units(name)["Service"][key]


@pytest.mark.parametrize(
    ("name", "command"),
    [("retrieval-monitor.service", "run"), ("retrieval-monitor-daemon.service", "daemon")],
)
def test_service_command_is_accepted_by_the_command_line(name: str, command: str) -> None:
    """ExecStart calls retrieval-monitor with options the command line accepts."""
    exec_start = units(name)["Service"]["ExecStart"]
    assert shlex.split(exec_start)[0].endswith("/retrieval-monitor")
    assert command == parse_cli(monitor_args(exec_start)).command


@pytest.mark.parametrize(
    ("name", "section", "key", "expected"),
    [
        ("retrieval-monitor.service", "Service", "Type", "oneshot"),
        ("retrieval-monitor.timer", "Timer", "Persistent", "true"),
        ("retrieval-monitor.timer", "Timer", "Unit", "retrieval-monitor.service"),
        ("retrieval-monitor.timer", "Install", "WantedBy", "timers.target"),
        ("retrieval-monitor-daemon.service", "Service", "Restart", "on-failure"),
        ("retrieval-monitor-daemon.service", "Service", "KillSignal", "SIGTERM"),
        ("retrieval-monitor-daemon.service", "Service", "ExecReload", "/bin/kill -HUP $MAINPID"),
        ("retrieval-monitor-daemon.service", "Install", "WantedBy", "multi-user.target"),
    ],
)
def test_unit_setting(name: str, section: str, key: str, expected: str) -> None:
    """Each unit carries the setting its job needs."""
    assert expected == units(name)[section][key]


def test_timer_has_a_calendar_schedule() -> None:
    """The timer fires on a calendar time."""
    assert units("retrieval-monitor.timer")["Timer"]["OnCalendar"]


def test_daemon_service_does_not_restart_on_a_config_error() -> None:
    """Exit 2 (a bad config) is not restarted: a restart cannot fix it."""
    service = units("retrieval-monitor-daemon.service")["Service"]
    assert str(CONFIG_ERROR) == service["RestartPreventExitStatus"]


def test_daemon_service_stop_timeout_leaves_room_for_the_shutdown_grace() -> None:
    """systemd waits longer than the daemon's grace before it kills it."""
    service = units("retrieval-monitor-daemon.service")["Service"]
    args = parse_cli(monitor_args(service["ExecStart"]))
    assert int(service["TimeoutStopSec"]) > args.shutdown_grace


# -- Docker ----------------------------------------------------------------------------------


def dockerfile() -> list[tuple[str, str]]:
    """Return the Dockerfile's instructions as (INSTRUCTION, arguments), continuations joined."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for raw in (JOBS / "docker" / "Dockerfile").read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):  # a comment inside a continued instruction
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        text = pending + line
        pending = ""
        word, _, rest = text.partition(" ")
        instructions.append((word.upper(), rest.strip()))
    assert not pending, "the Dockerfile ends inside a continued line"
    return instructions


def final_stage() -> list[tuple[str, str]]:
    instructions = dockerfile()
    last = max(i for i, (word, _) in enumerate(instructions) if word == "FROM")
    return instructions[last:]


def test_dockerfile_uses_only_known_instructions() -> None:
    """Every line is a Dockerfile instruction."""
    known = {"FROM", "ENV", "WORKDIR", "COPY", "RUN", "USER", "EXPOSE", "ENTRYPOINT", "CMD", "ARG"}
    assert {word for word, _ in dockerfile()} <= known


def test_dockerfile_builds_on_a_slim_python_image() -> None:
    """Every stage starts from a python slim image."""
    bases = [args.split()[0] for word, args in dockerfile() if word == "FROM"]
    assert bases
    for base in bases:
        assert re.fullmatch(r"python:3\.\d+-slim(-\w+)?", base), base


def test_dockerfile_copies_the_project_and_installs_it_with_pip() -> None:
    """The build copies pyproject.toml and the monitor package (which exist) and pip-installs."""
    copied = [word for kind, args in dockerfile() if kind == "COPY" for word in args.split()[:-1]]
    assert {"pyproject.toml", "monitor"} <= set(copied)
    for source in copied:
        if not source.startswith("--"):
            assert (ROOT / source).exists(), source
    final_runs = [args for word, args in final_stage() if word == "RUN"]
    assert any(re.search(r"\bpip install\b.*retrieval-monitor", run) for run in final_runs)


def test_dockerfile_runs_as_a_numeric_non_root_user() -> None:
    """The final stage switches to a numeric non-root user after its last RUN."""
    stage = final_stage()
    users = [i for i, (word, _) in enumerate(stage) if word == "USER"]
    runs = [i for i, (word, _) in enumerate(stage) if word == "RUN"]
    assert users
    assert max(users) > max(runs)
    user = stage[max(users)][1].split(":")[0]
    assert user.isdigit()
    assert int(user) > 0


def test_dockerfile_entrypoint_is_retrieval_monitor_in_exec_form() -> None:
    """ENTRYPOINT is the exec form of retrieval-monitor, so it gets the signals as PID 1."""
    (entrypoint,) = [args for word, args in final_stage() if word == "ENTRYPOINT"]
    assert ["retrieval-monitor"] == json.loads(entrypoint)


def test_dockerfile_default_command_is_accepted_by_the_command_line() -> None:
    """CMD is a daemon invocation the command line accepts."""
    (cmd,) = [args for word, args in final_stage() if word == "CMD"]
    assert "daemon" == parse_cli(json.loads(cmd)).command


# -- the exit codes in the docs --------------------------------------------------------------

#: The files in jobs/ that list the exit codes of `run`.
EXIT_CODE_DOCS = [
    JOBS / "README.md",
    K8S / "cronjob.yaml",
    JOBS / "cron" / "retrieval-monitor.crontab",
    SYSTEMD / "retrieval-monitor.service",
]
LISTING_START = "Exit codes of `run`"


def listed_exit_codes(path: Path) -> dict[int, str]:
    """Return the exit codes of `run` that ``path`` lists, each with its text.

    Markdown lists them as table rows ``| code | meaning | ...``; the other files in a comment
    that starts with "Exit codes of `run`", one code a line (``#   2  meaning``), a meaning
    carried on over the lines indented under it.
    """
    listed: dict[int, str] = {}
    lines = path.read_text().splitlines()
    if path.suffix == ".md":
        entries = [re.match(r"\|\s*(\d+)\s*\|\s*([^|]*?)\s*\|", line) for line in lines]
        rows = [(int(m[1]), m[2]) for m in entries if m]
    else:
        start = next((i for i, line in enumerate(lines) if LISTING_START in line), None)
        assert start is not None, f"{jobs_id(path)} has no comment '{LISTING_START} ...'"
        rows = []
        for line in lines[start + 1 :]:
            text = line.removeprefix("#")
            if not line.startswith("#") or not text.strip():
                break
            entry = re.match(r"\s+(\d+)\s{2,}(\S.*)", text)
            if entry:
                rows.append((int(entry[1]), entry[2]))
            elif rows and re.match(r"\s{4,}\S", text):
                rows[-1] = (rows[-1][0], f"{rows[-1][1]} {text.strip()}")
    for code, meaning in rows:
        assert code not in listed, f"{jobs_id(path)} lists exit code {code} twice"
        listed[code] = meaning
    return listed


def test_run_exit_codes_in_the_docs_are_those_the_command_line_returns() -> None:
    """The codes the docs are held to are those of the exit-code table."""
    assert {code.value for code in ExitCode if code not in GATE_ONLY} == DOCUMENTED_CODES


@pytest.mark.parametrize("path", EXIT_CODE_DOCS, ids=jobs_id)
def test_doc_lists_every_exit_code_of_run_with_its_meaning(path: Path) -> None:
    """Each listing names every code of `run` and, for each, what the contract says of it."""
    listed = listed_exit_codes(path)
    assert DOCUMENTED_CODES == set(listed)
    missing = [
        f"{code}: {word!r}"
        for code, words in RUN_EXIT_CODES.items()
        for word in words
        if word.lower() not in listed[code].lower()
    ]
    assert [] == missing


@pytest.mark.parametrize("path", EXIT_CODE_DOCS, ids=jobs_id)
def test_doc_lists_a_locked_suite_under_exit_code_zero_only(path: Path) -> None:
    """No code but 0 is listed for a suite another process holds the lock of (it is skipped)."""
    listed = listed_exit_codes(path)
    held = re.compile(r"\block(?:s|ed)?\b|another process", re.IGNORECASE)
    assert [] == [code for code, meaning in listed.items() if code != 0 and held.search(meaning)]


def prose(path: Path) -> list[str]:
    """Return the sentences of the comments of ``path`` (the text of a Markdown file), those of
    one comment block or paragraph joined across its lines."""
    blocks: list[list[str]] = [[]]
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if path.suffix == ".md":
            text = "" if stripped.startswith("|") else stripped
        else:
            text = stripped.removeprefix("#").strip() if stripped.startswith("#") else ""
        if text:
            blocks[-1].append(text)
        else:
            blocks.append([])
    return [
        sentence
        for block in blocks
        if block
        for sentence in re.split(r"(?<=[.!?])\s+", " ".join(block))
    ]


LOCK = re.compile(r"\block(?:s|ed)?\b", re.IGNORECASE)
EXIT_WITH = re.compile(r"\bexit(?:s|ed)?(?: code| status)?(?: with)? (\d+)", re.IGNORECASE)
#: Every text file under jobs/ (the pictures are not read).
JOB_FILES = sorted(path for path in JOBS.rglob("*") if path.is_file() and path.suffix != ".png")


@pytest.mark.parametrize("path", JOB_FILES, ids=jobs_id)
def test_no_sentence_says_a_locked_suite_exits_non_zero(path: Path) -> None:
    """No comment or paragraph in jobs/ gives a suite's lock any exit code but 0."""
    wrong = [
        sentence
        for sentence in prose(path)
        if LOCK.search(sentence) and set(EXIT_WITH.findall(sentence)) - {"0"}
    ]
    assert [] == wrong
