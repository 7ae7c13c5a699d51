"""`retrieval-monitor daemon` as a process: it runs suites on schedule, survives failing
suites, reloads on SIGHUP and stops on SIGTERM within its grace period."""

from __future__ import annotations

import json
import os
import shlex
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from monitor.store import open_store

#: Each test starts a daemon process and waits for its scheduled runs: seconds each.
pytestmark = [
    pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="needs POSIX signals"),
    pytest.mark.slow,
]

#: The bundled suite: the Larkfield eval set replayed through its saved keyword run.
BUNDLED = {
    "evalset": {"bundled": "larkfield"},
    "search": {"kind": "replay", "bundled": "larkfield/keyword"},
    "rules": [],
    "notifiers": [],
}

#: Python search modules for the tests: slow answers, a backend that is down, a broken import,
#: and a factory that builds once (as the daemon checks its config) and then fails.
SEARCHES = {
    "slow.py": (
        "import os, time\n"
        "def search(query, k):\n"
        "    time.sleep(float(os.environ['SLOW_SEARCH_SECONDS']))\n"
        "    return []\n"
    ),
    "down.py": "def search(query, k):\n    raise ConnectionError('backend down')\n",
    "broken.py": "raise ImportError('this module cannot be imported')\n",
    "fragile.py": (
        "from pathlib import Path\n"
        "def make():\n"
        "    built = Path(__file__).with_suffix('.built')\n"
        "    if built.exists():\n"
        "        raise RuntimeError('the index went away')\n"
        "    built.write_text('')\n"
        "    return lambda query, k: []\n"
    ),
}

WAIT_SECONDS = 15.0


def suite(schedule: str = "1s", **changes: Any) -> dict[str, Any]:
    """Return a bundled suite on an interval ``schedule``, with ``changes`` over it."""
    return {**BUNDLED, "schedule": {"interval": schedule}, **changes}


def python_suite(
    target: str, folder: Path, schedule: str = "1s", *, factory: bool = False
) -> dict[str, Any]:
    """Return a suite searching with ``target`` (module:function) from ``folder``."""
    return suite(
        schedule,
        search={"kind": "python", "target": target, "path": str(folder), "factory": factory},
        runner={"concurrency": 1, "retries": 0, "timeout_seconds": 30},
    )


class Daemon:
    """A `retrieval-monitor daemon` subprocess with its stderr in a file."""

    def __init__(
        self,
        workdir: Path,
        config: Path,
        *options: str,
        slow: float = 0.0,
        log_format: str = "logfmt",
    ) -> None:
        self.workdir = workdir
        self.config = config
        self.store = workdir / "monitor.db"
        self.stderr_path = workdir / "daemon.log"
        env = {**os.environ, "SLOW_SEARCH_SECONDS": str(slow), "PYTHONUNBUFFERED": "1"}
        self._stderr = self.stderr_path.open("wb")
        self.process = subprocess.Popen(
            [
                *(sys.executable, "-m", "monitor", "--log-format", log_format, "daemon"),
                *("--config", str(config)),
                *("--store", str(self.store), "--metrics-port", "0", *options),
            ],
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
        )

    def log(self) -> str:
        """Return what the daemon has logged so far."""
        return self.stderr_path.read_text(errors="replace")

    def events(self, event: str, **fields: str) -> list[str]:
        """Return the log lines of ``event`` whose fields include ``fields``."""
        wanted = [f"event={event}", *(f"{key}={value}" for key, value in fields.items())]
        return [line for line in self.log().splitlines() if all(w in line.split() for w in wanted)]

    def event_names(self) -> list[str]:
        """Return the events logged so far, in order."""
        return [
            word.removeprefix("event=")
            for line in self.log().splitlines()
            for word in line.split()
            if word.startswith("event=")
        ]

    def runs(self, name: str) -> list[Any]:
        """Return the stored runs of suite ``name``."""
        if not self.store.exists():
            return []
        with open_store(self.store) as store:
            return store.list_runs(name)

    def wait_for(self, condition: Callable[[], bool], what: str) -> None:
        """Wait until ``condition()`` holds; else fail naming ``what``, with the log."""
        deadline = time.monotonic() + WAIT_SECONDS
        while not condition():
            if self.process.poll() is not None:
                pytest.fail(
                    f"the daemon exited {self.process.returncode} before {what}\n{self.log()}"
                )
            if time.monotonic() > deadline:
                pytest.fail(f"timed out waiting for {what}\n{self.log()}")
            time.sleep(0.05)

    def signal(self, signum: int) -> None:
        """Send ``signum`` to the daemon."""
        self.process.send_signal(signum)

    def stop(self, timeout: float = 10.0) -> tuple[int, float]:
        """Send SIGTERM; return the exit code and the seconds it took to exit."""
        started = time.monotonic()
        self.signal(signal.SIGTERM)
        code = self.process.wait(timeout=timeout)
        return code, time.monotonic() - started

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._stderr.close()


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Callable[..., Daemon]]:
    """Start daemons on a config of the given suites; kill any left running at the end."""
    for name, text in SEARCHES.items():
        (tmp_path / name).write_text(text)
    started: list[Daemon] = []

    def start_daemon(
        suites: dict[str, Any], *options: str, slow: float = 0.0, log_format: str = "logfmt"
    ) -> Daemon:
        config = write_config(tmp_path / "monitor.yaml", suites)
        daemon = Daemon(tmp_path, config, *options, slow=slow, log_format=log_format)
        started.append(daemon)
        return daemon

    yield start_daemon
    for daemon in started:
        daemon.close()


def write_config(path: Path, suites: dict[str, Any]) -> Path:
    """Write a config of ``suites`` (the store comes from --store) to ``path``."""
    path.write_text(yaml.safe_dump({"version": 1, "suites": suites}, sort_keys=False))
    return path


def test_daemon_runs_an_interval_suite_repeatedly_and_exits_0_on_sigterm(
    start: Callable[..., Daemon],
) -> None:
    """A suite on a 1 s interval is stored at least twice; SIGTERM then exits 0 promptly."""
    daemon = start({"demo": suite("1s")})
    daemon.wait_for(lambda: len(daemon.runs("demo")) >= 2, "two stored runs")
    code, seconds = daemon.stop()
    assert 0 == code
    assert seconds < 5.0
    assert daemon.events("shutdown_finished")
    assert {"ok"} == {run.status for run in daemon.runs("demo")}


def test_daemon_runs_each_suite_at_start_up(start: Callable[..., Daemon]) -> None:
    """A suite on an hourly schedule still runs once right after the daemon starts."""
    daemon = start({"hourly": suite("1h")})
    daemon.wait_for(lambda: len(daemon.runs("hourly")) == 1, "the start-up run")
    assert 0 == daemon.stop()[0]


def test_sighup_with_a_new_suite_schedules_it(start: Callable[..., Daemon]) -> None:
    """After SIGHUP a suite added to the config is scheduled and runs; the old one stays."""
    daemon = start({"first": suite("1h")})
    daemon.wait_for(lambda: bool(daemon.events("run_finished", suite="first")), "first's run")
    write_config(daemon.config, {"first": suite("1h"), "second": suite("1h")})
    daemon.signal(signal.SIGHUP)
    daemon.wait_for(lambda: len(daemon.runs("second")) == 1, "the added suite's run")
    assert daemon.events("config_reloaded", added="second")
    assert 0 == daemon.stop()[0]


def test_sighup_with_a_changed_schedule_reschedules_the_suite(
    start: Callable[..., Daemon],
) -> None:
    """After SIGHUP a suite whose interval went from 1 h to 1 s runs every second."""
    daemon = start({"demo": suite("1h")})
    daemon.wait_for(lambda: len(daemon.runs("demo")) == 1, "the start-up run")
    write_config(daemon.config, {"demo": suite("1s")})
    daemon.signal(signal.SIGHUP)
    daemon.wait_for(lambda: len(daemon.runs("demo")) >= 3, "runs on the new interval")
    assert daemon.events("config_reloaded", rescheduled="demo")
    assert 0 == daemon.stop()[0]


def test_sighup_with_a_broken_config_keeps_the_running_config(
    start: Callable[..., Daemon],
) -> None:
    """A config that fails to load is logged on SIGHUP and the suites go on running."""
    daemon = start({"demo": suite("1s")})
    daemon.wait_for(lambda: len(daemon.runs("demo")) >= 1, "a first run")
    daemon.config.write_text("suites:\n  demo:\n    metrics: [no_such_measure@5]\n")
    daemon.signal(signal.SIGHUP)
    daemon.wait_for(lambda: bool(daemon.events("reload_failed")), "the reload to fail")
    before = len(daemon.runs("demo"))
    daemon.wait_for(lambda: len(daemon.runs("demo")) > before, "a run after the failed reload")
    assert "error_type=ConfigError" in daemon.events("reload_failed")[0]
    assert 0 == daemon.stop()[0]


def test_sighup_with_a_notifier_that_would_not_build_keeps_the_running_config(
    start: Callable[..., Daemon],
) -> None:
    """A reloaded config whose notifier option the notifier refuses is not taken: the old
    config keeps running and the failure names the option's key."""
    daemon = start({"demo": suite("1s")})
    daemon.wait_for(lambda: len(daemon.runs("demo")) >= 1, "a first run")
    write_config(
        daemon.config, {"demo": suite("1s", notifiers=[{"kind": "stdout", "colour": "blue"}])}
    )
    daemon.signal(signal.SIGHUP)
    daemon.wait_for(lambda: bool(daemon.events("reload_failed")), "the reload to fail")
    assert "suites.demo.notifiers[0].colour" in daemon.events("reload_failed")[0]
    assert 0 == daemon.stop()[0]


def test_failing_suites_are_logged_and_the_daemon_keeps_running(
    start: Callable[..., Daemon], tmp_path: Path
) -> None:
    """A search that no longer builds and one over its error budget fail run after run,
    each logged with its error, while the daemon and the healthy suite carry on."""
    daemon = start(
        {
            "broken": python_suite("fragile:make", tmp_path, factory=True),
            "down": python_suite("down:search", tmp_path),
            "healthy": suite("1s"),
        }
    )
    daemon.wait_for(
        lambda: (
            len(daemon.events("run_failed", suite="broken")) >= 2
            and len(daemon.events("run_failed", suite="down")) >= 2
            and len(daemon.runs("healthy")) >= 2
        ),
        "two failures of each failing suite and two healthy runs",
    )
    assert "error_type=SearchSetupError" in daemon.events("run_failed", suite="broken")[0]
    assert "error_type=ErrorBudgetExceeded" in daemon.events("run_failed", suite="down")[0]
    assert "failed" == daemon.runs("down")[0].status  # the composer stores the failed run
    assert 0 == daemon.stop()[0]


def test_the_daemon_refuses_to_start_with_a_search_that_does_not_build(
    start: Callable[..., Daemon],
) -> None:
    """A suite whose search cannot be imported stops the start-up with exit 2 and the error's
    file, key path and line, instead of failing at every scheduled run."""
    daemon = start({"healthy": suite("1s"), "broken": python_suite("broken:search", Path("."))})
    assert 2 == daemon.process.wait(timeout=WAIT_SECONDS)
    lines = daemon.config.read_text().splitlines()
    line = lines.index("  broken:") + 1 + lines[lines.index("  broken:") :].index("    search:")
    assert f"monitor.yaml:{line}: suites.broken.search: expected a search that builds" in (
        daemon.log()
    )


def test_sigterm_lets_the_running_suite_finish_within_the_grace(
    start: Callable[..., Daemon], tmp_path: Path
) -> None:
    """SIGTERM during a run waits for it: the run is stored, then the daemon exits 0."""
    daemon = start({"slow": python_suite("slow:search", tmp_path, "1h")}, slow=0.015)
    daemon.wait_for(lambda: bool(daemon.events("run_started", suite="slow")), "the run to start")
    code, _ = daemon.stop()
    assert 0 == code
    assert 1 == len(daemon.runs("slow"))
    assert ["shutdown_started", "run_finished", "shutdown_finished"] == [
        event for event in daemon.event_names() if event.startswith(("shutdown", "run_finished"))
    ]


def test_sigterm_abandons_a_run_that_outlasts_the_grace(
    start: Callable[..., Daemon], tmp_path: Path
) -> None:
    """A run longer than --shutdown-grace is abandoned: exit 0 soon after, nothing stored."""
    daemon = start(
        {"slow": python_suite("slow:search", tmp_path, "1h")}, "--shutdown-grace", "0.5", slow=0.2
    )
    daemon.wait_for(lambda: bool(daemon.events("run_started", suite="slow")), "the run to start")
    code, seconds = daemon.stop()
    assert 0 == code
    assert seconds < 4.0
    assert daemon.events("shutdown_abandoned", suites="slow")
    assert [] == daemon.runs("slow")


def test_daemon_exits_2_on_a_bad_config_at_start_up(start: Callable[..., Daemon]) -> None:
    """A config that does not load stops the daemon before it schedules anything."""
    daemon = start({"demo": suite("1s", metrics=["no_such_measure@5"])})
    assert 2 == daemon.process.wait(timeout=WAIT_SECONDS)
    assert "no_such_measure" in daemon.log()


def _lock_holders(store: Path | str) -> list[tuple[int]]:
    """Return the pids holding the suite ``slow``'s lock in a SQLite store (none before it
    has its tables)."""
    try:
        with sqlite3.connect(store) as db:
            return db.execute("SELECT pid FROM locks WHERE suite = 'slow'").fetchall()
    except sqlite3.OperationalError:
        return []


def test_an_abandoned_runs_lock_is_taken_over_at_once_on_this_host(
    start: Callable[..., Daemon], tmp_path: Path
) -> None:
    """After SIGTERM abandons a run, its lock names the ended daemon, and a run on this host
    takes it over at once, as the daemon's log says."""
    daemon = start(
        {"slow": python_suite("slow:search", tmp_path, "1h")}, "--shutdown-grace", "0.2", slow=0.2
    )
    # The run logs run_started before it takes its lock: wait for the lock itself.
    daemon.wait_for(lambda: bool(_lock_holders(daemon.store)), "the run to hold its lock")
    assert 0 == daemon.stop()[0]
    assert [(daemon.process.pid,)] == _lock_holders(daemon.store)
    with open_store(daemon.store) as store, store.lock("slow", ttl_seconds=60) as holder:
        assert os.getpid() == holder.pid
    (line,) = daemon.events("shutdown_abandoned", suites="slow")
    fields = dict(word.split("=", 1) for word in shlex.split(line))
    assert "the grace period of 0.2 s ran out" == fields["reason"]
    assert fields["lock"].startswith("taken over at once by the suite's next run on this host")


def test_a_second_sigterm_abandons_the_run_naming_the_second_signal(
    start: Callable[..., Daemon], tmp_path: Path
) -> None:
    """A second SIGTERM during the grace ends the daemon at once; the log names that reason."""
    daemon = start({"slow": python_suite("slow:search", tmp_path, "1h")}, slow=0.2)
    daemon.wait_for(lambda: bool(daemon.events("run_started", suite="slow")), "the run to start")
    daemon.signal(signal.SIGTERM)
    daemon.wait_for(lambda: bool(daemon.events("shutdown_started")), "the shutdown to start")
    code, seconds = daemon.stop()
    assert (0, True) == (code, seconds < 5.0)
    (line,) = daemon.events("shutdown_abandoned", suites="slow")
    assert (
        "a second stop request came"
        == dict(word.split("=", 1) for word in shlex.split(line))["reason"]
    )


def test_daemon_logs_json_lines_with_log_format_json(start: Callable[..., Daemon]) -> None:
    """With ``--log-format json`` before the command every line of the daemon is a JSON event."""
    daemon = start({"demo": suite("1h")}, log_format="json")

    def events() -> list[dict[str, Any]]:
        return [json.loads(line) for line in daemon.log().splitlines()]

    daemon.wait_for(
        lambda: any(e["event"] == "run_finished" for e in events()), "the run to finish"
    )
    assert 0 == daemon.stop()[0]
    (finished,) = [e for e in events() if e["event"] == "run_finished"]
    assert ("monitor.daemon", "demo") == (finished["logger"], finished["suite"])
    assert isinstance(finished["run_id"], int)
    assert "shutdown_finished" == events()[-1]["event"]
