"""Time every page of the web app, server side, on a large store.

Run from the repository root::

    python benchmarks/bench_web.py            # 1,000 runs of a 10,000-query suite
    python benchmarks/bench_web.py --quick    # 100 runs of a 1,000-query suite, a smoke test

The store (SQLite, in a temporary folder) is filled through the store API (``save_run``)
with ``--runs`` runs of one suite whose eval set has ``--queries`` queries (JSONL, with a
``lang`` segment). The baseline (the first run) and the three newest runs keep every query's
record, as a real run of the suite would; to keep generating the store quick, the runs in
between keep ``--middle-queries`` query records each (default 200) and their means. So the
suite and run pages compare two full 10,000-query runs and the history covers 1,000 runs.

The pages: the suites page, the suite's first, 20th and oldest page of runs, the newest
run's page and a query of it, a query of the run before (read alone), an older run's page
(never shown before: the start-up warm-up composes only the newest run's report) and a query
of it, the baseline's page, a middle run's page and a query of it, the simulator on a query
and blank, and the simulator's endpoint (``POST /api/simulate``).

Each page is requested through the app in process (Starlette's test client) and timed by
the app's own ``Server-Timing`` header: the first request (cold: nothing cached) and the best
of ``--repeat`` more (warm). Target: every page <= 300 ms server time.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from monitor.config import load_config
from monitor.evalset import EvalSet
from monitor.evalset.suite import load_evalset
from monitor.judgments.merge import labels_of
from monitor.store import QueryRecord, RunFigures, RunRecord, open_store
from monitor.web import WebSettings, create_app
from monitor.web.views import RUNS_PER_PAGE

METRICS = ("hit_rate@1", "recall@5", "recall@10", "ndcg@10", "mrr@10", "map@10")
#: What the job records beside the suite's metrics: judgment coverage at the largest k.
RECORDED = (*METRICS, "judged@10")
TARGET_MS = 300.0


def _config(folder: Path, queries: int) -> Path:
    rng = random.Random(1)
    evalset = folder / "evalset.jsonl"
    with evalset.open("w") as out:
        for i in range(queries):
            judged = {f"d{i}-{j}": rng.choice((1, 1, 2, 3)) for j in range(3)}
            row = {
                "id": f"q{i}",
                "query": f"question number {i}",
                "relevant": judged,
                "metadata": {"lang": rng.choice(("en", "en", "fr", "de"))},
            }
            out.write(json.dumps(row) + "\n")
    (folder / "run.json").write_text("{}")
    config = folder / "monitor.yaml"
    config.write_text(
        "version: 1\n"
        f"store: {{path: {folder / 'big.db'}}}\n"
        "suites:\n"
        "  big:\n"
        f"    evalset: {{path: {evalset}}}\n"
        f"    search: {{kind: replay, path: {folder / 'run.json'}}}\n"
        f"    metrics: [{', '.join(METRICS)}]\n"
        "    rules:\n"
        "      - {metric: recall@5, max_drop: 0.05}\n"
        "      - {metric: ndcg@10, max_relative_drop: 0.10}\n"
        "    significance: {iterations: 2000, seed: 0}\n"
        "    segments: [lang]\n"
    )
    return config


def _run(
    evalset: EvalSet, index: int, start: datetime, kept: int, rng: random.Random, quality: float
) -> RunRecord:
    records = []
    for query in list(evalset)[:kept]:
        relevant = [doc for doc, grade in query.judgments.items() if grade >= 1]
        retrieved = [f"x{index}-{j}" for j in range(10)]
        if rng.random() < quality:
            retrieved[rng.randrange(5)] = relevant[0]
        values = {m: (1.0 if relevant[0] in retrieved else 0.0) * rng.random() for m in METRICS}
        values["judged@10"] = sum(doc in query.judgments for doc in retrieved) / 10
        records.append(
            QueryRecord(query.id, values, tuple(retrieved), tuple(relevant), rng.random() / 10)
        )
    means = {m: quality * 0.5 + rng.random() * 0.05 for m in RECORDED}
    if records:
        means = {m: sum(r.values[m] for r in records) / len(records) for m in RECORDED}
    moment = start + timedelta(hours=index)
    return RunRecord(
        suite="big",
        pipeline="p",
        started_at=moment,
        finished_at=moment + timedelta(seconds=30),
        evalset_fingerprint=evalset.fingerprint,
        means=means,
        figures=RunFigures(sent=len(evalset), evaluated=len(evalset)),
        queries=tuple(records),
    )


def fill(config_path: Path, runs: int, queries: int, middle: int) -> tuple[str, float]:
    """Fill the store; return its path and the seconds it took."""
    started = time.perf_counter()
    config = load_config(config_path)
    suite = config.suite("big")
    evalset = load_evalset(suite.evalset)  # the very set the pages read: same fingerprint
    labels = labels_of(evalset)
    rng = random.Random(0)
    start = datetime(2025, 1, 1, tzinfo=timezone.utc)
    target = config.store.url.reveal()
    with open_store(target) as store:
        for index in range(runs):
            full = index == 0 or index >= runs - 3
            quality = 0.9 if index < runs - 1 else 0.8
            run_id = store.save_run(
                _run(evalset, index, start, queries if full else middle, rng, quality)
            )
            store.set_run_labels(run_id, labels)  # as the job records them
            if index == 0:
                store.set_baseline("big", run_id)
    return target, time.perf_counter() - started


def time_pages(
    config_path: Path, target: str, runs: int, repeat: int, *, warm: bool
) -> list[tuple[str, float, float]]:
    """Return (page, first request ms, best later request ms) for every page.

    With ``warm`` the app's start-up warm-up (each suite's latest comparison, run, baseline
    and eval set) is let finish before the first request, as on a server that has been up a
    moment; without it the first request of each page pays for everything.
    """
    from starlette.testclient import TestClient

    config = load_config(config_path)
    app = create_app(WebSettings(config=config, store=lambda: open_store(target), warm=warm))
    middle = runs // 2  # an older run holding --middle-queries records
    oldest_page = -(-runs // RUNS_PER_PAGE)
    pages = [
        "/",
        "/suites/big",
        "/suites/big?page=20",
        f"/suites/big?page={oldest_page}",
        f"/suites/big/runs/{runs}",
        f"/suites/big/runs/{runs}/queries/q7",
        f"/suites/big/runs/{runs - 1}/queries/q7",
        f"/suites/big/runs/{runs - 2}",
        f"/suites/big/runs/{runs - 2}/queries/q7",
        "/suites/big/runs/1",
        f"/suites/big/runs/{middle}",
        f"/suites/big/runs/{middle}/queries/q7",
        f"/simulator?suite=big&run={runs}&query=q7",
        "/simulator",
        "POST /api/simulate",
    ]
    body = {"docs": [{"id": f"d{i}", "grade": i % 3} for i in range(10)], "k": 10}
    out = []
    # The app answers loopback hosts only (TestClient's own is "testserver").
    with TestClient(app, base_url="http://127.0.0.1") as client:
        while any(thread.name == "web-warm" for thread in threading.enumerate()):
            time.sleep(0.05)
        token = client.get("/login").text.split('name="csrf-token" content="')[1]
        headers = {"Origin": "http://127.0.0.1", "X-CSRF-Token": token.split('"')[0]}
        for page in pages:
            timings = []
            for _ in range(1 + repeat):
                if page.startswith("POST "):
                    response = client.post(page[5:], json=body, headers=headers)
                else:
                    response = client.get(page)
                if response.status_code != 200:
                    raise SystemExit(f"{page}: HTTP {response.status_code}: {response.text[-300:]}")
                timings.append(float(response.headers["server-timing"].split("dur=")[1]))
            out.append((page, timings[0], min(timings[1:])))
    return out


def main() -> int:
    """Fill the store, time the pages and print the figures; exit 1 when over the target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--middle-queries", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.queries, args.middle_queries = 100, 1000, 50
    with tempfile.TemporaryDirectory() as folder:
        config = _config(Path(folder), args.queries)
        target, seconds = fill(config, args.runs, args.queries, args.middle_queries)
        print(f"store: {args.runs} runs of a {args.queries}-query suite, filled in {seconds:.1f} s")
        cold = time_pages(config, target, args.runs, args.repeat, warm=False)
        warmed = time_pages(config, target, args.runs, args.repeat, warm=True)
    print("server time per page, ms: first request without the start-up warm-up (cold),")
    print("first request after it (first), best of the next requests (later)")
    print(f"{'page':<44} {'cold':>8} {'first':>8} {'later':>8}")
    worst = 0.0
    for (page, cold_ms, _), (_, first, later) in zip(cold, warmed, strict=True):
        print(f"{page:<44} {cold_ms:8.1f} {first:8.1f} {later:8.1f}")
        worst = max(worst, first, later)
    verdict = "meets" if worst <= TARGET_MS else "MISSES"
    print(f"slowest page once warmed up: {worst:.1f} ms ({verdict} the {TARGET_MS:.0f} ms target)")
    return 0 if worst <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
