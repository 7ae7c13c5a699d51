"""The wall clock stepping during a run (NTP, a resumed VM) never fails the run or its lock.

A run's length is measured on the monotonic clock; its end is its start plus that length.
A lock's lease looks expired to a process whose clock stepped ahead, so a lease is taken
over only once its holder has failed to renew it for a renewal period; and a holder whose
lock was taken over anyway never stores its run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from monitor.cli import main
from monitor.errors import LockLostError, StoreLockedError
from monitor.runner import run as runner_module
from monitor.runner import run_queries
from monitor.search import build_search
from monitor.store import open_store
from tests.test_store import make_run


class SteppingBack:
    """A stand-in for :class:`datetime.datetime` whose ``now`` steps an hour back after the
    first call."""

    calls = 0

    @classmethod
    def now(cls, tz: timezone | None = None) -> datetime:
        cls.calls += 1
        moment = datetime(2030, 1, 1, 12, 0, tzinfo=timezone.utc)
        return moment if cls.calls == 1 else moment - timedelta(hours=1)


@pytest.fixture
def stepping_back(monkeypatch: pytest.MonkeyPatch) -> None:
    SteppingBack.calls = 0
    monkeypatch.setattr(runner_module, "datetime", SteppingBack)


def test_a_run_whose_clock_steps_back_ends_after_it_started(stepping_back: None) -> None:
    """The wall clock stepping an hour back mid-run: the run still ends after it started."""
    from monitor.evalset.bundled import larkfield_evalset

    search = build_search("replay", {"bundled": "larkfield/rerank"})
    result = run_queries(larkfield_evalset(), search, k=10, progress=False)
    assert timedelta(0) <= result.finished_at - result.started_at < timedelta(minutes=1)


def test_a_run_whose_clock_steps_back_exits_0_and_exports_its_gauges(
    tmp_path: Path, stepping_back: None
) -> None:
    """``run`` with the clock stepping back mid-run stores the run and exports its gauges."""
    config = tmp_path / "monitor.yaml"
    config.write_text(
        textwrap.dedent(
            f"""\
            store: {{path: {tmp_path / "m.db"}}}
            suites:
              lark:
                evalset: {{bundled: larkfield}}
                search: {{kind: replay, bundled: larkfield/rerank}}
                exporters: [{{kind: textfile, path: {tmp_path / "suite.prom"}}}]
            """
        )
    )
    code = main(["run", "--config", str(config), "--no-progress"])
    gauges = (tmp_path / "suite.prom").read_text()
    assert (0, True) == (code, 'retrieval_run_success{pipeline="lark",suite="lark"} 1.0' in gauges)


# Locks ---------------------------------------------------------------------------------------

_HOLD = (
    "import sys, time\n"
    "from monitor.store import locks, open_store\n"
    "if len(sys.argv) > 3: locks.process_token = lambda: sys.argv[3]\n"
    "s = open_store(sys.argv[1])\n"
    "held = s.lock('nightly', ttl_seconds=float(sys.argv[2]), renew_seconds=3600)\n"
    "held.__enter__()\n"
    "print('held', flush=True)\n"
    "time.sleep(60)\n"
)


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Start processes of this host that take the 'nightly' lock and hold it; kill them after."""
    started: list[subprocess.Popen[str]] = []

    def start(ttl: float, token: str | None = None) -> subprocess.Popen[str]:
        extra = [] if token is None else [token]
        process = subprocess.Popen(
            [sys.executable, "-c", _HOLD, str(tmp_path / "m.db"), str(ttl), *extra],
            stdout=subprocess.PIPE,
            text=True,
        )
        started.append(process)
        assert process.stdout is not None
        assert "held" == process.stdout.readline().strip()
        return process

    yield start
    for process in started:
        process.kill()
        process.wait()


@pytest.mark.slow
def test_a_running_holder_on_this_host_is_not_taken_over_when_its_lease_looks_expired(
    tmp_path: Path, holder: Callable[..., subprocess.Popen[str]]
) -> None:
    """A live process of this host whose lease has run out by this process's clock (as
    after a step ahead) keeps its lock."""
    holder(0.05)
    time.sleep(0.2)
    with (
        open_store(tmp_path / "m.db") as store,
        pytest.raises(StoreLockedError),
        store.lock("nightly"),
    ):
        pass


@pytest.mark.slow
def test_a_holder_whose_pid_another_process_reuses_is_taken_over_at_once(
    tmp_path: Path, holder: Callable[..., subprocess.Popen[str]]
) -> None:
    """A lock whose token names a start time that its pid's process does not have belongs
    to an ended holder (its pid reused): it is taken over at once, lease or not."""
    holder(3600, token="1-aaaa")  # no process of this host started one tick after boot
    with open_store(tmp_path / "m.db") as store, store.lock("nightly") as successor:
        assert os.getpid() == successor.pid


def test_a_holder_whose_lock_was_taken_over_never_stores_its_run(tmp_path: Path) -> None:
    """Of two holders that each believed they held the lock, the one it was taken from
    fails to store its run with LockLostError; the other stores its own."""
    with ExitStack() as stack:
        first = stack.enter_context(open_store(tmp_path / "m.db"))
        second = stack.enter_context(open_store(tmp_path / "m.db"))
        stack.enter_context(first.lock("nightly", ttl_seconds=0.05, renew_seconds=3600))
        time.sleep(0.1)
        stack.enter_context(second.lock("nightly"))
        with pytest.raises(LockLostError, match="taken over"):
            first.save_run(make_run())
        second.save_run(make_run())
        assert 1 == len(second.list_runs("nightly"))
