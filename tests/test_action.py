"""The GitHub Action (action.yml) and the CI examples in jobs/ci/: they parse, use every input
they declare, and call `retrieval-monitor gate` with options the gate takes."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from monitor.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
ACTION = ROOT / "action.yml"
WORKFLOW = ROOT / "jobs" / "ci" / "github-workflow.yml"
GITLAB = ROOT / "jobs" / "ci" / "gitlab-ci.yml"


def _gate_options() -> dict[str, bool]:
    """Return each option of the real `gate` sub-command and whether it takes a value."""
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    gate = commands.choices["gate"]
    return {
        flag: action.nargs != 0
        for action in gate._actions
        for flag in action.option_strings
        if flag.startswith("--") and flag != "--help"
    }


#: The options of `retrieval-monitor gate`, read from the command line's own parser.
GATE_OPTIONS = _gate_options()
GATE_FLAGS = tuple(GATE_OPTIONS)
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def load(path: Path) -> dict[str, Any]:
    """Return the YAML mapping in ``path``."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), f"{path.name} is not a YAML mapping"
    return data


def gate_parser() -> argparse.ArgumentParser:
    """Return a parser of `gate` and the options of :data:`GATE_FLAGS`."""
    # No abbreviations: a file must spell each option in full.
    parser = argparse.ArgumentParser(prog="retrieval-monitor", add_help=False, allow_abbrev=False)
    parser.add_argument("command", choices=["gate"])
    for flag, takes_value in GATE_OPTIONS.items():
        if takes_value:
            parser.add_argument(flag)
        else:
            parser.add_argument(flag, action="store_true")
    return parser


def parse_gate(argv: list[str]) -> dict[str, Any]:
    """Return the options ``argv`` gives `retrieval-monitor`; an unknown one fails the test."""
    known, unknown = gate_parser().parse_known_args(argv)
    assert [] == unknown, f"options the gate does not take: {unknown}"
    return {key: value for key, value in vars(known).items() if value not in (None, False)}


def action_steps() -> list[dict[str, Any]]:
    """Return the steps of the composite action."""
    runs = load(ACTION)["runs"]
    assert "composite" == runs["using"]
    steps: list[dict[str, Any]] = runs["steps"]
    return steps


def gate_step() -> dict[str, Any]:
    """Return the action's step that runs the gate."""
    (step,) = [step for step in action_steps() if "retrieval-monitor" in step.get("run", "")]
    return step


# -- action.yml -----------------------------------------------------------------------------


def test_action_declares_the_inputs_the_gate_needs() -> None:
    """The action takes the config, the suite, a candidate or a run, a baseline file, the
    Python version and extra options; only the config and the suite are required."""
    inputs = load(ACTION)["inputs"]
    assert {
        "config",
        "suite",
        "candidate",
        "run",
        "baseline-file",
        "python-version",
        "junit",
        "markdown",
        "extra-args",
    } == set(inputs)
    assert {"config", "suite"} == {name for name, spec in inputs.items() if spec.get("required")}
    assert all(spec.get("description") for spec in inputs.values())


def test_action_uses_every_input_it_declares_and_no_other() -> None:
    """Each declared input is read somewhere, and nothing reads an undeclared one."""
    text = ACTION.read_text(encoding="utf-8")
    used = {
        match[len("inputs.") :] for match in EXPRESSION.findall(text) if match.startswith("inputs.")
    }
    assert set(load(ACTION)["inputs"]) == used


def test_action_outputs_are_the_report_paths() -> None:
    """The outputs give the JUnit and markdown paths the gate writes to."""
    outputs = load(ACTION)["outputs"]
    assert {"junit": "${{ inputs.junit }}", "markdown": "${{ inputs.markdown }}"} == {
        name: spec["value"] for name, spec in outputs.items()
    }


def test_action_sets_up_the_python_asked_for_first() -> None:
    """The first step is actions/setup-python with the python-version input."""
    first = action_steps()[0]
    assert "actions/setup-python" == first["uses"].split("@")[0]
    assert {"python-version": "${{ inputs.python-version }}"} == first["with"]


def test_action_installs_the_package_from_its_own_checkout() -> None:
    """pip installs the action's own directory, the copy the workflow's `uses:` names."""
    (step,) = [step for step in action_steps() if "pip install" in step.get("run", "")]
    assert {"ACTION_PATH": "${{ github.action_path }}"} == step["env"]
    assert "$ACTION_PATH" == shlex.split(step["run"])[-1].replace('"', "")


def test_action_scripts_read_inputs_only_from_the_environment() -> None:
    """No `run:` script splices an expression in, so no input value can run as a command."""
    scripts = [step["run"] for step in action_steps() if "run" in step]
    assert scripts
    assert [] == [script for script in scripts if "${{" in script]
    assert all(step["shell"] == "bash" for step in action_steps() if "run" in step)


def test_action_gate_step_passes_only_options_the_gate_takes() -> None:
    """Every option the gate step's script names, given or not, is one of the gate's."""
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", gate_step()["run"]))
    assert {"--config", "--suite", "--candidate", "--run", "--baseline-file"} <= named
    assert set() == named - set(GATE_FLAGS)


def run_gate_step(tmp_path: Path, **given: str) -> tuple[subprocess.CompletedProcess[str], Any]:
    """Run the gate step's script as the runner would, with the inputs ``given`` (the others
    at their defaults) and a `retrieval-monitor` that records its arguments; return the
    finished process and the arguments (None when it was not called)."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    inputs = load(ACTION)["inputs"]
    values = {name: str(spec.get("default", "")) for name, spec in inputs.items()}
    values.update({name.replace("_", "-"): value for name, value in given.items()})
    step = gate_step()
    env = {
        name: EXPRESSION.sub(lambda m: values[m[1].removeprefix("inputs.")], expression)
        for name, expression in step["env"].items()
    }
    recorded = tmp_path / "argv"
    fake = tmp_path / "bin" / "retrieval-monitor"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\nprintf '%s\\0' \"$@\" > '{recorded}'\n", encoding="utf-8")
    fake.chmod(0o755)
    path = f"{fake.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    process = subprocess.run(
        [bash, "-c", step["run"]],
        env={**env, "PATH": path},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    argv = recorded.read_text(encoding="utf-8").split("\0")[:-1] if recorded.exists() else None
    return process, argv


def test_action_gates_a_candidate_against_a_baseline_file(tmp_path: Path) -> None:
    """With a candidate and a baseline file, the gate gets both and the report paths."""
    process, argv = run_gate_step(
        tmp_path,
        config="monitor.yaml",
        suite="docs",
        candidate="replay:runs/candidate.trec",
        baseline_file="quality/baseline.json",
    )
    assert 0 == process.returncode, process.stderr
    assert {
        "command": "gate",
        "config": "monitor.yaml",
        "suite": "docs",
        "candidate": "replay:runs/candidate.trec",
        "baseline_file": "quality/baseline.json",
        "junit": "retrieval-monitor-gate.xml",
        "markdown": "retrieval-monitor-gate.md",
    } == parse_gate(argv)


def test_action_gates_a_saved_run_against_the_stores_baseline(tmp_path: Path) -> None:
    """With a run and no baseline file, neither --candidate nor --baseline-file is passed."""
    process, argv = run_gate_step(tmp_path, config="c.yaml", suite="s", run="build/run.json")
    assert 0 == process.returncode, process.stderr
    options = parse_gate(argv)
    assert "build/run.json" == options["run"]
    assert set() == {"candidate", "baseline_file"} & set(options)


def test_action_passes_extra_args_as_separate_options(tmp_path: Path) -> None:
    """extra-args is split on spaces into options of their own."""
    _, argv = run_gate_step(
        tmp_path,
        config="c.yaml",
        suite="s",
        run="r.json",
        extra_args="--on-insufficient-evidence fail --record --format json",
    )
    options = parse_gate(argv)
    assert ("fail", True, "json") == (
        options["on_insufficient_evidence"],
        options["record"],
        options["format"],
    )


def test_action_passes_input_values_verbatim(tmp_path: Path) -> None:
    """A value with quotes, `$(...)` and `;` reaches the gate as one argument, unrun."""
    hostile = "{kind: python, target: 'a:b'}; $(touch pwned) `touch pwned` \"x\""
    process, argv = run_gate_step(tmp_path, config="c.yaml", suite="s", candidate=hostile)
    assert 0 == process.returncode, process.stderr
    assert hostile == parse_gate(argv)["candidate"]
    assert not (tmp_path / "pwned").exists()


def test_action_refuses_a_candidate_and_a_run_together(tmp_path: Path) -> None:
    """Both a candidate and a run is a usage error (exit 2) named in an annotation, and the
    gate is not run."""
    process, argv = run_gate_step(tmp_path, config="c", suite="s", candidate="x", run="y")
    assert (2, None) == (process.returncode, argv)
    assert "::error title=retrieval-monitor gate::" in process.stdout
    assert "candidate or run, not both" in process.stdout


# -- jobs/ci/github-workflow.yml ------------------------------------------------------------


def workflow_gate_step() -> dict[str, Any]:
    """Return the example workflow's step that uses the action."""
    steps = load(WORKFLOW)["jobs"]["gate"]["steps"]
    (step,) = [s for s in steps if s.get("uses", "").split("@")[0].endswith("/retrieval-monitor")]
    return step  # type: ignore[no-any-return]


def test_workflow_runs_on_pull_requests() -> None:
    """The example workflow is triggered by pull requests (PyYAML reads the key `on` as True)."""
    workflow = load(WORKFLOW)
    trigger = workflow.get("on", workflow.get(True))
    assert "pull_request" in trigger


def test_workflow_gives_the_action_only_inputs_it_declares() -> None:
    """The `with:` of the action step names declared inputs, the required ones included."""
    inputs = load(ACTION)["inputs"]
    given = set(workflow_gate_step()["with"])
    assert set() == given - set(inputs)
    assert {name for name, spec in inputs.items() if spec.get("required")} <= given


def test_workflow_extra_args_are_gate_options() -> None:
    """The extra options the example passes are options the gate takes."""
    extra = shlex.split(workflow_gate_step()["with"].get("extra-args", ""))
    parse_gate(["gate", *extra])


def test_workflow_keeps_and_comments_the_reports_even_when_the_gate_fails() -> None:
    """The steps after the gate run `if: always()` and read the action's outputs."""
    steps = load(WORKFLOW)["jobs"]["gate"]["steps"]
    after = steps[steps.index(workflow_gate_step()) + 1 :]
    assert after
    assert all(step["if"].startswith("always()") for step in after)
    outputs = set(load(ACTION)["outputs"])
    read = {
        expression.split(".")[-1]
        for step in after
        for expression in EXPRESSION.findall(yaml.safe_dump(step))
        if expression.startswith("steps.gate.outputs.")
    }
    assert outputs == read


# -- jobs/ci/gitlab-ci.yml ------------------------------------------------------------------


def gitlab_job() -> dict[str, Any]:
    """Return the GitLab CI job of the example."""
    (job,) = load(GITLAB).values()
    return job  # type: ignore[no-any-return]


def gitlab_gate_options() -> dict[str, Any]:
    """Return the options the GitLab job gives `retrieval-monitor gate`."""
    (line,) = [line for line in gitlab_job()["script"] if line.startswith("retrieval-monitor ")]
    return parse_gate(shlex.split(line)[1:])


def test_gitlab_job_calls_the_gate_with_options_it_takes() -> None:
    """The job's gate command has the config, the suite, a candidate and both reports."""
    options = gitlab_gate_options()
    assert {"command", "config", "suite", "candidate", "junit", "markdown"} <= set(options)


def test_gitlab_job_reports_the_gates_junit_file_even_when_the_gate_fails() -> None:
    """The JUnit report artifact is the file the gate writes, kept when the job fails."""
    artifacts = gitlab_job()["artifacts"]
    options = gitlab_gate_options()
    assert ("always", options["junit"]) == (artifacts["when"], artifacts["reports"]["junit"])
    assert {options["junit"], options["markdown"]} <= set(artifacts["paths"])


def test_gitlab_job_installs_the_package_before_gating() -> None:
    """The first script line pip-installs retrieval-monitor (the variable names it)."""
    job = gitlab_job()
    assert "retrieval-monitor" == job["variables"]["RETRIEVAL_MONITOR"]
    assert "pip install" in job["script"][0]
    assert job["script"][0].endswith('"$RETRIEVAL_MONITOR"')
