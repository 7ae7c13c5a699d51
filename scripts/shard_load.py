"""Load one PostgreSQL store the way many scheduled and sharded runs do, and count what broke.

Run from the repository root against a server (``scripts/start-postgres.sh`` starts one)::

    python scripts/shard_load.py suites --url URL                   # 200 suites, 8 processes
    python scripts/shard_load.py sharded --url URL --queries 100000  # 4 shards vs unsharded
    python scripts/shard_load.py sharded --url URL --queries 10000 --shards 2 --search-ms 5
    python scripts/shard_load.py killed --url URL --queries 100000   # one of 4 shards killed

Each command works in a fresh schema of the database at ``URL``, dropped afterwards, and
prints one JSON object:

- ``suites``: ``--suites`` copies of the bundled Larkfield suite (67 queries, seed baseline,
  a webhook notifier to a receiver in this process) split over ``--processes`` concurrent
  processes, each running its suites one after the other through ``monitor.job.run_suite``.
  Counts: runs stored against runs expected (2 per suite: the seeded baseline and the run),
  lock and store errors, duplicate notifications (the same idempotency key twice), and the
  p50/p95/max latency of every write to the store (the Store methods that write, timed in
  the worker processes).
- ``sharded``: a generated suite of ``--queries`` queries (``benchmarks/bench_job.py``'s)
  run unsharded and as ``--shards`` concurrent ``retrieval-monitor run`` processes given
  ``JOB_COMPLETION_INDEX``, ``MONITOR_SHARD_COUNT`` and ``MONITOR_SHARD_ATTEMPT`` as a
  Kubernetes Indexed Job gives them, each way twice: the second is timed, a scheduled run of
  an unchanged frozen set. Reports whether every per-query value of the timed runs is
  identical, the runs the timed attempt stored (1), the wall time of each way and the CPU
  seconds (user and system) of each process. With ``--search-ms`` the search answers as a
  remote backend would (``examples/remote_replay.py``: that many milliseconds a query, 8
  queries at a time), the case sharding is for.
- ``killed``: the same shards, one SIGKILLed while it runs; after the attempt's deadline the
  index is started again, as ``backoffLimitPerIndex`` does. Reports the attempt's status, the
  failed runs and the monitor-failure notifications (1 and 1 expected).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
#: The Store methods that write: each is one write transaction.
WRITES = frozenset(
    {"save_run", "set_baseline", "put_state", "delete_state", "enqueue", "mark_delivered"}
    | {"abandon", "attempt_failed"}
)


@contextmanager
def fresh_schema(url: str) -> Iterator[str]:
    """Yield a URL whose connections use a new schema of ``url``'s database; drop it after."""
    import psycopg

    name = f"load_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {name}")
        parts = urlsplit(url)
        options = urlencode({"options": f"-c search_path={name}"}, quote_via=quote)
        query = f"{parts.query}&{options}" if parts.query else options
        try:
            yield urlunsplit(parts._replace(query=query))
        finally:
            admin.execute(f"DROP SCHEMA {name} CASCADE")


class TimedStore:
    """A store whose write methods record how long each took (seconds)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.latencies: list[float] = []

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._store, name)
        if name not in WRITES:
            return attribute

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return attribute(*args, **kwargs)
            finally:
                self.latencies.append(time.perf_counter() - start)

        return timed


def suites_config(folder: Path, count: int, hook: str) -> Path:
    """Write a config of ``count`` Larkfield suites notifying ``hook``; return its path."""
    lines = ["version: 1", "suites:"]
    for i in range(count):
        lines += [
            f"  s{i:03d}:",
            "    evalset: {bundled: larkfield}",
            "    search: {kind: replay, bundled: larkfield/keyword}",
            "    baseline: {bundled_run: larkfield/rerank}",
            "    metrics: [recall@5, mrr@10, ndcg@10]",
            "    rules: [{metric: mrr@10, max_drop: 0.05}]",
            "    segments: [kind]",
            f"    notifiers: [{{kind: webhook, url: '{hook}'}}]",
        ]
    path = folder / "suites.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def worker(config: Path, store_url: str, names: list[str], out: Path) -> int:
    """Run the named suites one after the other; write counts and write latencies to out."""
    from monitor.config import config_hash, load_config
    from monitor.errors import MonitorError, StoreError, StoreLockedError
    from monitor.job import run_suite
    from monitor.store import open_store

    loaded = load_config(config)
    errors: Counter[str] = Counter()
    with open_store(store_url) as opened:
        store = TimedStore(opened)
        for name in names:
            suite = loaded.suite(name)
            try:
                run_suite(suite, store, config_hash=config_hash(suite), progress=False)  # type: ignore[arg-type]
            except StoreLockedError:
                errors["lock"] += 1
            except StoreError:
                errors["store"] += 1
            except MonitorError as error:
                errors[type(error).__name__] += 1
    out.write_text(json.dumps({"errors": errors, "latencies": store.latencies}))
    return 0


def load_suites(url: str, count: int, processes: int) -> dict[str, Any]:
    """Run ``count`` suites over ``processes`` processes on one store; return the counts."""
    from monitor.alerts.testing import RecordingReceiver
    from monitor.store import open_store

    with (
        fresh_schema(url) as store_url,
        tempfile.TemporaryDirectory() as tmp,
        RecordingReceiver() as receiver,
    ):
        folder = Path(tmp)
        config = suites_config(folder, count, f"{receiver.url}/hook")
        names = [f"s{i:03d}" for i in range(count)]
        start = time.perf_counter()
        children = []
        for p in range(processes):
            out = folder / f"worker{p}.json"
            cmd = [sys.executable, __file__, "worker", str(config), store_url, str(out)]
            children.append((out, subprocess.Popen([*cmd, *names[p::processes]])))
        codes = [child.wait() for _, child in children]
        seconds = time.perf_counter() - start
        errors: Counter[str] = Counter()
        latencies: list[float] = []
        for out, _ in children:
            done = json.loads(out.read_text())
            errors.update(done["errors"])
            latencies += done["latencies"]
        with open_store(store_url) as store:
            runs = store.list_runs(limit=10 * count + 10)
        keys = Counter(request.json()["idempotencyKey"] for request in receiver.accepted)
    quantiles = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [0.0] * 99
    return {
        "suites": count,
        "processes": processes,
        "exit_codes": sorted(set(codes)),
        "seconds": round(seconds, 2),
        "runs_expected": 2 * count,
        "runs_stored": sum(1 for run in runs if run.status == "ok"),
        "lost_runs": 2 * count - sum(1 for run in runs if run.status == "ok"),
        "lock_errors": errors.get("lock", 0),
        "other_errors": {k: v for k, v in errors.items() if k != "lock"},
        "notifications": len(receiver.accepted),
        "duplicate_notifications": sum(n - 1 for n in keys.values() if n > 1),
        "writes": len(latencies),
        "write_latency_ms": {
            "p50": round(1000 * quantiles[49], 2),
            "p95": round(1000 * quantiles[94], 2),
            "max": round(1000 * max(latencies, default=0.0), 2),
        },
    }


def generated_suite(
    folder: Path, queries: int, hook: str, store_url: str, search_ms: float | None = None
) -> Path:
    """Write bench_job.py's generated suite (current run), with a webhook; return its config.

    With ``search_ms`` the run is answered as a remote backend would answer it
    (``examples/remote_replay.py``: that many milliseconds a query, 8 queries at a time).
    """
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_job

    bench_job.write_suite(folder, queries, 0)
    config = folder / "current.yaml"
    text = config.read_text().replace(
        "    notifiers: []", f"    notifiers: [{{kind: webhook, url: '{hook}'}}]"
    )
    if search_ms is not None:
        run = folder / "current.run"
        remote = (
            "    search:\n      kind: python\n      target: examples.remote_replay:make_search\n"
            f"      factory: true\n      path: '{ROOT}'\n"
            f"      kwargs: {{path: '{run}', milliseconds: {search_ms}}}\n"
        )
        replay = f"    search:\n      kind: replay\n      path: {run}\n      format: trec\n"
        if replay not in text:
            raise SystemExit(f"{config}: the generated suite's search is not the replay expected")
        text = text.replace(replay, remote).replace("concurrency: 1", "concurrency: 8")
    text = text.replace(f"  path: {folder / 'monitor.db'}", f"  url: '{store_url}'")
    config.write_text(text)
    return config


def prepare(store_url: str) -> None:
    """Create the store's schema first, as a deployed store has it before its shards start.

    Several processes creating the very first tables of an empty PostgreSQL schema at once
    may collide in the server's catalog (CREATE TABLE IF NOT EXISTS is not atomic there).
    """
    from monitor.store import open_store

    open_store(store_url).close()


def shard_env(index: int, count: int, attempt: str, deadline: float) -> dict[str, str]:
    """Return the environment a Kubernetes Indexed Job gives shard ``index``."""
    return {
        **os.environ,
        "JOB_COMPLETION_INDEX": str(index),
        "MONITOR_SHARD_COUNT": str(count),
        "MONITOR_SHARD_ATTEMPT": attempt,
        "MONITOR_SHARD_DEADLINE": str(deadline),
    }


def monitor_run(config: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Start ``python -m monitor run`` of ``config``; its stderr goes to a file beside it."""
    cmd = [sys.executable, "-m", "monitor", "run", "--config", str(config), "--no-progress"]
    name = "whole" if env is None else f"shard{env['JOB_COMPLETION_INDEX']}"
    log = (config.parent / f"{name}.stderr").open("ab")
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=log, cwd=ROOT)


def waited(child: subprocess.Popen[bytes]) -> tuple[int, float]:
    """Wait for ``child``; return its exit code and the CPU seconds it used (user and
    system, its own threads included)."""
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    return child.returncode, round(usage.ru_utime + usage.ru_stime, 2)


def failures(folder: Path) -> list[str]:
    """Return the last lines of each run's stderr that holds an error line."""
    found = []
    for path in sorted(folder.rglob("*.stderr")):
        lines = [line for line in path.read_text(errors="replace").splitlines() if line]
        if any("error" in line for line in lines):
            found.append(f"{path.name}: " + " | ".join(lines[-3:]))
    return found


def load_sharded(
    url: str, queries: int, shards: int, *, warm: bool = True, search_ms: float | None = None
) -> dict[str, Any]:
    """Run a generated suite unsharded and as ``shards`` shards; compare per-query values.

    With ``warm`` each way runs once untimed first; without, the timings include the cold
    start, as a check of the values alone needs no timing. ``search_ms`` makes the search a
    remote-like one (:func:`generated_suite`).
    """
    from monitor.alerts.testing import RecordingReceiver
    from monitor.store import open_store

    with (
        fresh_schema(url) as whole_url,
        fresh_schema(url) as shard_url,
        tempfile.TemporaryDirectory() as tmp,
        RecordingReceiver() as receiver,
    ):
        hook = f"{receiver.url}/hook"
        whole = generated_suite(Path(tmp) / "whole", queries, hook, whole_url, search_ms)
        sharded = generated_suite(Path(tmp) / "sharded", queries, hook, shard_url, search_ms)
        # Each way is timed as a scheduled run of an unchanged frozen set: a first run (not
        # timed) leaves the set's digests in the store and its columns in the cache.
        if warm:
            monitor_run(whole).wait()
        start = time.perf_counter()
        unsharded_code, unsharded_cpu = waited(monitor_run(whole))
        unsharded_seconds = time.perf_counter() - start
        prepare(shard_url)
        if warm:
            first = [
                monitor_run(sharded, shard_env(i, shards, "job-0", 600)) for i in range(shards)
            ]
            [child.wait() for child in first]
        with open_store(shard_url) as store:
            before = len(store.list_runs("bench"))
        start = time.perf_counter()
        children = [monitor_run(sharded, shard_env(i, shards, "job-1", 600)) for i in range(shards)]
        codes, cpu = zip(*map(waited, children), strict=True)
        sharded_seconds = time.perf_counter() - start
        with open_store(whole_url) as store:
            expected = store.per_query_frame(store.list_runs("bench")[0].run_id)
        with open_store(shard_url) as store:
            runs = store.list_runs("bench")
            got = store.per_query_frame(runs[0].run_id) if runs else None
        stored = len(runs) - before  # by the timed attempt: 1 expected
        problems = failures(Path(tmp)) if unsharded_code or any(codes) or stored != 1 else []
    same = got is not None and expected.drop(columns="latency_seconds").equals(
        got.drop(columns="latency_seconds")
    )
    return {
        "queries": queries,
        "shards": shards,
        "unsharded": {
            "exit_code": unsharded_code,
            "seconds": round(unsharded_seconds, 2),
            "cpu_seconds": unsharded_cpu,
        },
        "sharded": {
            "exit_codes": list(codes),
            "seconds": round(sharded_seconds, 2),
            "cpu_seconds": list(cpu),
        },
        "runs_stored": stored,
        "per_query_identical": same,
        "problems": problems,
    }


def load_killed(url: str, queries: int, shards: int, deadline: float) -> dict[str, Any]:
    """Kill one shard of an attempt; start it again after the deadline; count the outcome."""
    from monitor.alerts.testing import RecordingReceiver
    from monitor.store import open_store
    from monitor.store.shards import ShardStore

    with (
        fresh_schema(url) as store_url,
        tempfile.TemporaryDirectory() as tmp,
        RecordingReceiver() as receiver,
    ):
        config = generated_suite(Path(tmp), queries, f"{receiver.url}/hook", store_url)
        prepare(store_url)
        children = [
            monitor_run(config, shard_env(i, shards, "job-1", deadline)) for i in range(shards)
        ]
        # Killed at once, before it can store its part: a shard that finished first would
        # complete the attempt, and nothing would be missing when the deadline passes.
        children[-1].send_signal(signal.SIGKILL)
        codes = [child.wait() for child in children]
        time.sleep(deadline + 0.5)
        retried = monitor_run(config, shard_env(shards - 1, shards, "job-1", deadline)).wait()
        with open_store(store_url) as store:
            attempt = ShardStore(store).get("bench", "job-1")
            runs = store.list_runs("bench")
        alerts = [
            r.json()
            for r in receiver.accepted
            if r.json()["commonLabels"].get("alertname") == "RetrievalMonitorFailure"
        ]
    return {
        "queries": queries,
        "shards": shards,
        "exit_codes": codes,
        "retried_exit_code": retried,
        "attempt_status": None if attempt is None else attempt.status,
        "failed_runs": sum(1 for run in runs if run.status == "failed"),
        "ok_runs": sum(1 for run in runs if run.status == "ok"),
        "monitor_failure_notifications": len(alerts),
        "notifications": len(receiver.accepted),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    suites = commands.add_parser("suites")
    suites.add_argument("--url", required=True)
    suites.add_argument("--suites", type=int, default=200)
    suites.add_argument("--processes", type=int, default=8)
    for name in ("sharded", "killed"):
        sub = commands.add_parser(name)
        sub.add_argument("--url", required=True)
        sub.add_argument("--queries", type=int, default=100_000)
        sub.add_argument("--shards", type=int, default=4)
        sub.add_argument("--deadline", type=float, default=20.0)
    commands.choices["sharded"].add_argument(
        "--search-ms", type=float, default=None, help="answer as a remote search: ms a query"
    )
    work = commands.add_parser("worker")
    work.add_argument("config", type=Path)
    work.add_argument("store_url")
    work.add_argument("out", type=Path)
    work.add_argument("names", nargs="+")
    args = parser.parse_args(argv)
    if args.command == "worker":
        return worker(args.config, args.store_url, args.names, args.out)
    if args.command == "suites":
        report = load_suites(args.url, args.suites, args.processes)
    elif args.command == "sharded":
        report = load_sharded(args.url, args.queries, args.shards, search_ms=args.search_ms)
    else:
        report = load_killed(args.url, args.queries, args.shards, args.deadline)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
