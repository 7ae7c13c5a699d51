"""`retrieval-monitor run` stopped by SIGTERM, as a real process: the attempt is recorded as
failed, its lock released, its failure alert sent and its failure gauges written, within the
shutdown grace."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from monitor.alerts.testing import RecordingReceiver
from monitor.cli import main
from monitor.cli.exits import ExitCode
from monitor.cli.run import KILLED_BY_SIGTERM
from monitor.store import open_store

pytestmark = pytest.mark.skipif(os.name != "posix", reason="needs POSIX signals")

#: A search that notes each call in STARTED_FILE, then takes SLOW_SEARCH_SECONDS to answer;
#: closing it takes CLOSE_SECONDS (a connection pool that will not drain).
SLOW_SEARCH = """\
import os, time
class Search:
    def __call__(self, query, k):
        with open(os.environ["STARTED_FILE"], "a") as started:
            started.write(query + "\\n")
        time.sleep(float(os.environ["SLOW_SEARCH_SECONDS"]))
        return ["d0"]
    def close(self):
        time.sleep(float(os.environ["CLOSE_SECONDS"]))
search = Search()
"""

EVALSET = "\n".join(
    json.dumps({"id": f"q{i}", "query": f"question {i}", "relevant": [f"d{i}"]}) for i in range(30)
)

#: Runner settings: one worker thread beside the watcher, or several.
RUNNERS = {
    "one worker": "{concurrency: 1, retries: 0}",
    "three workers": "{concurrency: 3, retries: 0, timeout_seconds: 60}",
}

WAIT_SECONDS = 20.0


class Run:
    """A `retrieval-monitor run` subprocess on a one-suite config with a slow search."""

    def __init__(
        self, workdir: Path, *options: str, slow: float, close_seconds: float = 0.0
    ) -> None:
        self.workdir = workdir
        self.started = workdir / "started.txt"
        self.started.unlink(missing_ok=True)
        self.stderr_path = workdir / "run.log"
        env = {
            **os.environ,
            "SLOW_SEARCH_SECONDS": str(slow),
            "CLOSE_SECONDS": str(close_seconds),
            "STARTED_FILE": str(self.started),
            "PYTHONUNBUFFERED": "1",
        }
        self._stderr = self.stderr_path.open("wb")
        self.process = subprocess.Popen(
            [
                *(sys.executable, "-m", "monitor", "run", "--no-progress"),
                *("--config", str(workdir / "monitor.yaml"), *options),
            ],
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
        )

    def log(self) -> str:
        """Return what the run has written on stderr so far."""
        return self.stderr_path.read_text(errors="replace")

    def calls(self) -> int:
        """Return how many search calls have started."""
        return len(self.started.read_text().splitlines()) if self.started.exists() else 0

    def wait_for_calls(self, count: int) -> None:
        """Wait until ``count`` search calls have started; else fail with the log."""
        deadline = time.monotonic() + WAIT_SECONDS
        while self.calls() < count:
            if self.process.poll() is not None:
                pytest.fail(f"run exited {self.process.returncode} too early\n{self.log()}")
            if time.monotonic() > deadline:
                pytest.fail(f"timed out waiting for {count} search calls\n{self.log()}")
            time.sleep(0.02)

    def wait(self, seconds: float = WAIT_SECONDS) -> int:
        """Return the exit code, waiting at most ``seconds``; else kill it and fail."""
        try:
            return self.process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            pytest.fail(f"run did not exit within {seconds} s\n{self.log()}")
        finally:
            self._stderr.close()


def write_config(
    workdir: Path, receiver: RecordingReceiver, runner: str, suites: tuple[str, ...] = ("nightly",)
) -> None:
    """Write the config of ``suites``: slow search, webhook to ``receiver``, textfile gauges."""
    text = f"store: {{path: {workdir / 'monitor.db'}}}\nsuites:\n"
    for name in suites:
        text += f"""\
  {name}:
    evalset: {{path: evalset.jsonl}}
    search: {{kind: python, target: "slow_search:search", path: {workdir}}}
    metrics: [recall@1]
    runner: {runner}
    rules: []
    exporters: [{{kind: textfile, path: {workdir / (name + ".prom")}}}]
    notifiers: [{{kind: webhook, url: "{receiver.url}/hook"}}]
"""
    (workdir / "monitor.yaml").write_text(text)


@pytest.fixture
def receiver() -> Iterator[RecordingReceiver]:
    with RecordingReceiver() as running:
        yield running


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "evalset.jsonl").write_text(EVALSET + "\n")
    (tmp_path / "slow_search.py").write_text(SLOW_SEARCH)
    return tmp_path


def runs(workdir: Path, suite: str = "nightly") -> list[Any]:
    """Return the suite's stored runs, newest first."""
    with open_store(workdir / "monitor.db") as store:
        return [store.get_run(summary.run_id) for summary in store.list_runs(suite)]


def held_locks(workdir: Path) -> list[tuple[str, int]]:
    """Return the (suite, pid) of every run lock left in the SQLite store."""
    with sqlite3.connect(workdir / "monitor.db") as db:
        return [(str(suite), int(pid)) for suite, pid in db.execute("SELECT suite, pid FROM locks")]


def fired_rules(receiver: RecordingReceiver) -> list[tuple[str, str]]:
    """Return the status and rule of every alert the webhook received."""
    return [
        (body["status"], alert["labels"]["rule"])
        for body in receiver.bodies("/hook")
        for alert in body["alerts"]
    ]


@pytest.mark.slow
@pytest.mark.parametrize("runner", RUNNERS.values(), ids=RUNNERS.keys())
def test_sigterm_records_a_terminated_run_and_exits_3(
    workdir: Path, receiver: RecordingReceiver, runner: str
) -> None:
    """SIGTERM mid-run: exit 3, a failed run saying "terminated", and no query after it."""
    write_config(workdir, receiver, runner)
    run = Run(workdir, slow=0.3)
    run.wait_for_calls(2)
    run.process.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    assert ExitCode.BACKEND == run.wait(), run.log()
    assert time.monotonic() - sent < 10.0
    (stored,) = runs(workdir)
    assert ("failed", True) == (stored.status, "terminated" in (stored.error or ""))
    assert run.calls() < 30
    assert "terminated" in run.log()


@pytest.mark.slow
def test_sigterm_releases_the_lock_so_the_next_run_starts_at_once(
    workdir: Path, receiver: RecordingReceiver
) -> None:
    """After a terminated run no lock is left, and the next run measures the suite at once."""
    write_config(workdir, receiver, RUNNERS["one worker"])
    run = Run(workdir, slow=0.3)
    run.wait_for_calls(1)
    run.process.send_signal(signal.SIGTERM)
    assert ExitCode.BACKEND == run.wait(), run.log()
    assert [] == held_locks(workdir)
    again = Run(workdir, slow=0.0)
    assert ExitCode.OK == again.wait(), again.log()
    assert ["ok", "failed"] == [stored.status for stored in runs(workdir)]


@pytest.mark.slow
def test_sigterm_sends_the_failure_alert_and_writes_the_failure_gauges(
    workdir: Path, receiver: RecordingReceiver
) -> None:
    """A terminated run fires run_terminated at the webhook and writes run_success 0."""
    write_config(workdir, receiver, RUNNERS["three workers"])
    run = Run(workdir, slow=0.3)
    run.wait_for_calls(1)
    run.process.send_signal(signal.SIGTERM)
    assert ExitCode.BACKEND == run.wait(), run.log()
    assert [("firing", "run_terminated")] == fired_rules(receiver)
    gauges = (workdir / "nightly.prom").read_text()
    success = re.findall(r"^retrieval_run_success\{[^}]*\} (\S+)$", gauges, re.MULTILINE)
    assert [0.0] == [float(value) for value in success]


@pytest.mark.slow
def test_suites_not_yet_started_fail_as_terminated_without_a_query(
    workdir: Path, receiver: RecordingReceiver
) -> None:
    """The suites after the one SIGTERM stopped each store a terminated run and alert."""
    write_config(workdir, receiver, RUNNERS["one worker"], suites=("first", "second"))
    run = Run(workdir, slow=0.3)
    run.wait_for_calls(1)
    run.process.send_signal(signal.SIGTERM)
    assert ExitCode.BACKEND == run.wait(), run.log()
    (second,) = runs(workdir, "second")
    assert ("failed", "RunTerminated: terminated: asked to stop after 0 of 30 queries") == (
        second.status,
        second.error,
    )
    assert ["run_terminated", "run_terminated"] == [rule for _, rule in fired_rules(receiver)]


@pytest.mark.slow
def test_a_completed_run_resolves_the_terminated_alert(
    workdir: Path, receiver: RecordingReceiver
) -> None:
    """The next run that completes resolves the run_terminated alert."""
    write_config(workdir, receiver, RUNNERS["one worker"])
    run = Run(workdir, slow=0.3)
    run.wait_for_calls(1)
    run.process.send_signal(signal.SIGTERM)
    run.wait()
    assert ExitCode.OK == Run(workdir, slow=0.0).wait()
    assert [("firing", "run_terminated"), ("resolved", "run_terminated")] == fired_rules(receiver)


@pytest.mark.slow
def test_a_second_sigterm_ends_the_run_at_once(workdir: Path, receiver: RecordingReceiver) -> None:
    """A search that hangs as it closes holds the first SIGTERM; the second ends it with 143."""
    write_config(workdir, receiver, RUNNERS["one worker"])
    run = Run(workdir, slow=0.3, close_seconds=3600)
    run.wait_for_calls(1)
    run.process.send_signal(signal.SIGTERM)
    time.sleep(1.0)
    assert run.process.poll() is None
    run.process.send_signal(signal.SIGTERM)
    assert KILLED_BY_SIGTERM == run.wait(5.0)
    assert "a second SIGTERM came" in run.log()


@pytest.mark.slow
def test_the_run_ends_at_once_when_the_shutdown_grace_runs_out(
    workdir: Path, receiver: RecordingReceiver
) -> None:
    """A search hanging as it closes past --shutdown-grace: the process ends with 143 then."""
    write_config(workdir, receiver, RUNNERS["one worker"])
    run = Run(workdir, "--shutdown-grace", "0.5", slow=0.3, close_seconds=3600)
    run.wait_for_calls(1)
    run.process.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    assert KILLED_BY_SIGTERM == run.wait(5.0)
    assert time.monotonic() - sent < 3.0
    assert "the shutdown grace of 0.5 s ran out" in run.log()


@pytest.mark.parametrize("grace", ["-1", "nan", "inf"])
def test_a_shutdown_grace_that_is_not_a_duration_is_a_usage_error(
    workdir: Path, receiver: RecordingReceiver, grace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """--shutdown-grace takes a finite number of seconds >= 0: anything else exits 2."""
    write_config(workdir, receiver, RUNNERS["one worker"])
    config = str(workdir / "monitor.yaml")
    # In-process: the option is refused before any signal handler or run is set up.
    code = main(["run", "--no-progress", "--config", config, "--shutdown-grace", grace])
    assert ExitCode.USAGE == code
    assert "--shutdown-grace must be a number of seconds >= 0" in capsys.readouterr().err
