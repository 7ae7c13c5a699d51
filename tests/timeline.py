"""An acceptance harness: a scripted timeline of faults against the real command line.

A :class:`Timeline` holds a real search service and a real webhook receiver on 127.0.0.1,
a suite watching them, and a store; each step runs ``python -m monitor run`` as a separate
process, as cron or a CronJob would, with the faults of that moment set first: the backend
``up``, ``down`` (HTTP 503), ``empty`` (no hits) or ``held`` (answering once released); the
receiver up or down; the files the process writes capped in size (a full disk, for the
store); and the process's wall clock stepped (libfaketime, its offset read from
a file on every call, so that a step can come mid-run: :attr:`Backend.on_query` writes it
when the Nth query arrives; only the steps that ask for a clock run under it). The
monotonic clock is left alone, as the kernel leaves it when the wall clock steps. Each step
returns the exit code, what the receiver was told since the step before, and the
gauges of the textfile exporter.
"""

from __future__ import annotations

import glob
import json
import os
import resource
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from monitor.alerts.testing import RecordingReceiver
from tests.test_job_outage import EVALSET, SearchService


def faketime_library() -> str | None:
    """Return the path of libfaketime's multithreaded library, or None when not installed."""
    found = sorted(glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1"))
    return found[0] if found else None


class Backend(SearchService):
    """A search service for the ``http`` search kind: query ``question N`` finds ``dN``.

    ``mode`` is ``up``, ``down`` (503 for every query), ``empty`` (no hits) or ``held``
    (``up`` once :attr:`release` is set: a run that stays under way until then).
    ``on_query`` is called with the number of queries seen so far, before each is answered:
    where a fault is set at a moment of a run.
    """

    def __init__(self) -> None:
        super().__init__(self._answer)
        self.mode = "up"
        self.seen = 0
        self.on_query: Callable[[int], None] = lambda seen: None
        self.release = threading.Event()
        self._lock = threading.Lock()

    def _answer(self, query: str) -> tuple[int, str]:
        with self._lock:
            self.seen += 1
            seen = self.seen
        self.on_query(seen)
        if self.mode == "down":
            return 503, '{"error": "unavailable"}'
        if self.mode == "empty":
            return 200, '{"hits": []}'
        if self.mode == "held":
            self.release.wait(timeout=30)
        number = query.rsplit(" ", 1)[-1]
        return 200, json.dumps({"hits": [{"id": f"d{number}", "score": 1.0}]})


@dataclass(frozen=True)
class Step:
    """What one run of the timeline did."""

    code: int
    err: str
    told: list[tuple[str, str]]
    gauges: str

    @property
    def success(self) -> str | None:
        """Return the value of ``retrieval_run_success`` the step exported, or None."""
        for line in self.gauges.splitlines():
            if line.startswith("retrieval_run_success{"):
                return line.rsplit(" ", 1)[-1]
        return None


class Timeline:
    """A suite watching a :class:`Backend`, alerting a :class:`RecordingReceiver`, run step by
    step by the real command line."""

    def __init__(self, folder: Path, *, budget: float = 1.0) -> None:
        self.folder = folder
        self.backend = Backend()
        self.receiver = RecordingReceiver()
        self.clock_file = folder / "clock"
        self.clock_file.write_text("+0\n")
        self._told = 0
        self._clocks = 0
        #: Whether runs take the timeline's clock (libfaketime): off until a step asks.
        self.faked = False
        self._threads: list[threading.Thread] = []
        self._budget = budget

    def __enter__(self) -> Timeline:
        thread = threading.Thread(target=self.backend.serve_forever, args=(0.02,), daemon=True)
        thread.start()
        self._threads.append(thread)
        self.receiver.start()
        (self.folder / "evalset.jsonl").write_text(EVALSET + "\n")
        self.config.write_text(self._config())
        return self

    def __exit__(self, *exc: object) -> None:
        self.receiver.stop()
        self.backend.shutdown()
        self.backend.server_close()
        for thread in self._threads:
            thread.join(timeout=5)

    @property
    def config(self) -> Path:
        return self.folder / "monitor.yaml"

    @property
    def store(self) -> Path:
        return self.folder / "monitor.db"

    def _config(self) -> str:
        search = (
            f"{{kind: http, url: '{self.backend.url}', params: {{q: '{{query}}'}}, "
            "ids: 'hits[*].id', scores: 'hits[*].score'}"
        )
        return textwrap.dedent(
            f"""\
            store: {{path: {self.store}}}
            suites:
              nightly:
                evalset: {{path: {self.folder / "evalset.jsonl"}}}
                search: {search}
                metrics: [mrr, recall@1]
                runner: {{retries: 0, timeout_seconds: 5, error_budget: {self._budget}}}
                rules:
                  - {{metric: mrr, max_drop: 0.05}}
                  - {{error_rate_max: 0.1}}
                significance: {{iterations: 500}}
                exporters: [{{kind: textfile, path: {self.folder / "suite.prom"}}}]
                notifiers: [{{kind: webhook, url: "{self.receiver.url}/hook"}}]
            """
        )

    # --- faults --------------------------------------------------------------------------

    def step_clock(self, offset: str) -> None:
        """Step the wall clock of every run (those running too) to ``offset`` from the real
        time, in libfaketime's words: ``+5m``, ``-1h``, ``+0``. Runs started after the first
        step, and before it when :attr:`faked` is set, run under libfaketime."""
        self.faked = True
        self.clock_file.write_text(offset + "\n")

    # --- runs ----------------------------------------------------------------------------

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "monitor", *args, "--config", str(self.config)]

    def environment(self, clock: Path | None) -> dict[str, str]:
        env = dict(os.environ)
        library = faketime_library()
        if library is not None and clock is not None:
            env.update(
                LD_PRELOAD=library,
                FAKETIME_TIMESTAMP_FILE=str(clock),
                FAKETIME_NO_CACHE="1",
                FAKETIME_DONT_FAKE_MONOTONIC="1",
            )
        return env

    def start(
        self, *args: str, clock: str | None = None, file_limit: int | None = None
    ) -> subprocess.Popen[str]:
        """Start ``run`` (or the command ``args`` name) in the background; its wall clock is
        the timeline's (:meth:`step_clock`), or its own at offset ``clock``. With
        ``file_limit`` no file the process writes may grow past that many bytes (the
        kernel's RLIMIT_FSIZE: a write past it fails as on a full disk)."""
        own = self.clock_file if self.faked else None
        if clock is not None:
            self._clocks += 1
            own = self.folder / f"clock-{self._clocks}"
            own.write_text(clock + "\n")
        return subprocess.Popen(
            self.command(*(args or ("run", "--no-progress"))),
            env=self.environment(own),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=None if file_limit is None else partial(_limit_files, file_limit),
        )

    def finish(self, process: subprocess.Popen[str]) -> Step:
        """Wait for a started process; return its step."""
        _, err = process.communicate(timeout=120)
        return self._step(process.returncode, err)

    def run(self, *args: str, clock: str | None = None, file_limit: int | None = None) -> Step:
        """Run ``run`` (or the command ``args`` name) to its end; return its step."""
        return self.finish(self.start(*args, clock=clock, file_limit=file_limit))

    def _step(self, code: int, err: str) -> Step:
        bodies = self.receiver.bodies()
        told = [
            (str(body["status"]), str(alert["labels"]["rule"]))
            for body in bodies[self._told :]
            for alert in body["alerts"]
        ]
        self._told = len(bodies)
        gauges = self.folder / "suite.prom"
        return Step(code, err, told, gauges.read_text() if gauges.exists() else "")


def _limit_files(size: int) -> None:
    """Cap the size of every file this process writes (in the child, before exec): a write
    past it fails with EFBIG instead of killing the process (SIGXFSZ ignored)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))


def runs(store: Path) -> Sequence[tuple[int, str]]:
    """Return the id and status of every stored run of the suite, oldest first."""
    from monitor.store import open_store

    with open_store(store) as opened:
        summaries = opened.list_runs("nightly")
    return sorted((summary.run_id, summary.status) for summary in summaries)


def timeline(folder: Path, **options: Any) -> Iterator[Timeline]:
    """Yield a running :class:`Timeline` in ``folder`` and stop it after."""
    with Timeline(folder, **options) as running:
        yield running
