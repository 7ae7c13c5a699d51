"""Index health without labels: ann_recall@k of a vector kind against its own exact search,
its rule and default floor, its gauge, and the parameter sweep.

Stores are Qdrant's local mode (a temporary folder, exact) and the pgvector database at
``MONITOR_PGVECTOR_URL`` (default 127.0.0.1:55433, ``service`` tests); queries are embedded
by :class:`monitor.testing.HashEmbedder`, so exact answers are computed here with numpy.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pytest
from conftest import unavailable

from monitor.cli import main
from monitor.compare.rules import apply_rule
from monitor.config import Check, RuleConfig, load_config_text
from monitor.config.model import SignificanceConfig
from monitor.errors import ConfigError, SearchSetupError, UsageError
from monitor.evalset import bundled
from monitor.exporters import GAUGES, SuiteSnapshot
from monitor.job.sweep import parse_param
from monitor.records import Hit, Query
from monitor.runner.run import run_queries
from monitor.search import build_search
from monitor.search.health import ann_recall, measure, sample_rows
from monitor.search.pgvector import load_table
from monitor.search.qdrant import load_collection
from monitor.store.records import RunFigures, RunRecord, stats_figures
from monitor.testing import HashEmbedder

os.environ["HF_HUB_OFFLINE"] = "1"

DEFAULT_PGVECTOR_URL = "postgresql://postgres@127.0.0.1:55433/monitor_test"
DIMENSION = 16
DOCS = 400
TABLE = f"index_health_test_{os.getpid()}"
IDS = [f"d{index:03d}" for index in range(DOCS)]
VECTORS = np.random.default_rng(11).standard_normal((DOCS, DIMENSION)).astype(np.float32)
VECTORS /= np.linalg.norm(VECTORS, axis=1, keepdims=True)
QUERIES = [Query(f"q{index}", f"query {index}") for index in range(40)]


@pytest.fixture(autouse=True)
def hashed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Make every vector kind embed with a HashEmbedder, its cache in tmp."""
    monkeypatch.setattr(
        "monitor.search.vector.open_embedder", lambda options: HashEmbedder(DIMENSION)
    )
    monkeypatch.setenv("MONITOR_CACHE_DIR", str(tmp_path / "cache"))


def exact_top(text: str, k: int) -> list[str]:
    """Return numpy's exact cosine top ``k`` of ``text``'s vector over the corpus."""
    scores = VECTORS @ HashEmbedder(DIMENSION).embed([text])[0]
    return [IDS[i] for i in np.argsort(-scores, kind="stable")[:k]]


def numpy_ann_recall(answers: dict[str, list[str]], k: int) -> float:
    """Return the mean share of each query's exact top ``k`` found in its answer."""
    shares = [len(set(exact_top(t, k)) & set(ids[:k])) / k for t, ids in answers.items()]
    return float(np.mean(shares))


@pytest.mark.parametrize(
    ("expected", "ann", "exact", "k"),
    [
        (1.0, ["a", "b", "c"], ["c", "b", "a"], 3),
        (0.5, ["a", "x", "y", "b"], ["a", "b", "c", "d"], 4),
        (0.5, ["a", "x"], ["a", "b", "c"], 2),
        (1.0, ["a"], ["a"], 10),
        (1.0, [], [], 10),
        (0.0, [], ["a", "b"], 10),
    ],
)
def test_ann_recall_is_the_share_of_the_exact_top_k_found(
    expected: float, ann: list[str], exact: list[str], k: int
) -> None:
    """ann_recall@k is |ANN top k ∩ exact top k| / min(k, |exact top k|)."""
    assert expected == ann_recall(ann, exact, k)


class NumpyStore:
    """A vector search over VECTORS whose ANN answer keeps only ``kept`` of the exact hits."""

    def __init__(self, kept: int) -> None:
        from monitor.search.vector import QueryVectors

        self.vectors = QueryVectors(HashEmbedder(DIMENSION))
        self.kept = kept
        self.exact_calls: list[int] = []

    def search_vectors(self, vectors: Any, k: int) -> list[list[Hit]]:
        self.exact_calls.append(len(vectors))
        order = np.argsort(-(np.asarray(vectors) @ VECTORS.T), axis=1, kind="stable")[:, :k]
        return [[Hit(IDS[i]) for i in row] for row in order]

    def exact_search(self) -> NumpyStore:
        return self


def test_measure_matches_numpy_and_sends_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """measure() gives numpy's mean recall of the answers, asking the exact search in batches."""
    monkeypatch.setattr("monitor.search.health.EXACT_BATCH", 16)
    texts = [query.text for query in QUERIES]
    answers = {t: [*exact_top(t, 10)[:7], "x1", "x2", "x3"] for t in texts[:20]}
    answers |= {t: exact_top(t, 10) for t in texts[20:]}
    store = NumpyStore(kept=7)
    health = measure(store, texts, list(answers.values()), 10)  # type: ignore[arg-type]
    assert (numpy_ann_recall(answers, 10), 40, [16, 16, 8]) == (
        pytest.approx(health.ann_recall),
        health.queries,
        store.exact_calls,
    )


# -- qdrant local mode -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def qdrant_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A local-mode folder holding the corpus as collection ``docs``."""
    path = tmp_path_factory.mktemp("qdrant")
    load_collection("docs", IDS, IDS, VECTORS, path=str(path))
    return path


@pytest.mark.slow
def test_a_qdrant_run_with_index_health_keeps_ann_recall_in_its_stats(qdrant_path: Path) -> None:
    """Local mode searches exactly, so a run with index_health measures ann_recall@10 of 1."""
    search = build_search(
        "qdrant", {"path": str(qdrant_path), "collection": "docs", "index_health": True}
    )
    try:
        result = run_queries(QUERIES, search, k=10)
    finally:
        search.close()
    stats = result.search_stats
    assert (1.0, 10, 40) == (
        stats["ann_recall@10"],
        stats["ann_recall_k"],
        stats["ann_recall_queries"],
    )


def test_index_health_samples_at_most_sample_queries(qdrant_path: Path) -> None:
    """With ``sample: 7`` the exact search is asked for 7 of the 40 answered queries."""
    options = {"k": 5, "sample": 7}
    search = build_search(
        "qdrant", {"path": str(qdrant_path), "collection": "docs", "index_health": options}
    )
    try:
        result = run_queries(QUERIES, search, k=10)
    finally:
        search.close()
    assert (7, 1.0) == (
        result.search_stats["ann_recall_queries"],
        result.search_stats["ann_recall@5"],
    )


def test_the_sample_is_the_same_queries_in_any_order() -> None:
    """The sampled ids do not depend on the order the queries ran in."""
    ids = [f"q{index}" for index in range(50)]
    picked = {ids[row] for row in sample_rows(ids, 10)}
    turned = ids[::-1]
    assert (10, picked) == (len(picked), {turned[row] for row in sample_rows(turned, 10)})


def test_a_run_without_index_health_measures_no_ann_recall(qdrant_path: Path) -> None:
    """Index health is opt-in: a plain run's stats hold no ann_recall."""
    search = build_search("qdrant", {"path": str(qdrant_path), "collection": "docs"})
    try:
        result = run_queries(QUERIES[:3], search, k=10)
    finally:
        search.close()
    assert [] == [key for key in result.search_stats if key.startswith("ann_recall")]


@pytest.mark.parametrize(
    ("value", "option"),
    [({"k": 0}, "index_health.k"), ({"depth": 5}, "index_health.depth"), ("yes", "index_health")],
)
def test_a_bad_index_health_option_is_named(qdrant_path: Path, value: Any, option: str) -> None:
    """A malformed index_health is a setup error naming the option."""
    options = {"path": str(qdrant_path), "collection": "docs", "index_health": value}
    with pytest.raises(SearchSetupError) as caught:
        build_search("qdrant", options)
    assert option == caught.value.option


def larkfield_collection(path: Path) -> None:
    """Load the bundled Larkfield passages into collection ``larkfield`` at ``path``."""
    passages = bundled.larkfield_passages()
    ids = [p["id"] for p in passages]
    texts = [p["text"] for p in passages]
    load_collection("larkfield", ids, texts, HashEmbedder(DIMENSION).embed(texts), path=str(path))


@pytest.mark.slow
def test_sweep_prints_one_row_per_value_on_qdrant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A qdrant sweep of hnsw_ef gives each value its recall, ANN recall (1 in local mode)
    and p95 latency, and draws an SVG."""
    larkfield_collection(tmp_path / "q")
    config = tmp_path / "monitor.yaml"
    config.write_text(
        "suites:\n  lark:\n    evalset: {bundled: larkfield}\n"
        f"    search: {{kind: qdrant, path: '{tmp_path / 'q'}', collection: larkfield}}\n"
        "    metrics: [recall@10]\n",
        encoding="utf-8",
    )
    plot = tmp_path / "sweep.svg"
    argv = ["sweep", "--config", str(config), "--suite", "lark", "--param", "hnsw_ef=8,64"]
    code = main([*argv, "--format", "json", "--plot", str(plot)])
    data = json.loads(capsys.readouterr().out)
    assert (0, [8, 64], [1.0, 1.0]) == (
        code,
        [point["value"] for point in data["points"]],
        [point["ann_recall@10"] for point in data["points"]],
    )
    assert all(point["latency_p95_seconds"] > 0 for point in data["points"])
    assert plot.read_text(encoding="utf-8").startswith("<svg")


@pytest.mark.parametrize(
    "text", ["hnsw.ef_search", "hnsw.ef_search=", "ef=10,x", "ef=0", "ef=10,10", "=10"]
)
def test_a_bad_param_is_refused_in_one_line(text: str) -> None:
    """--param takes NAME=V1,V2,... with distinct positive integers."""
    with pytest.raises(UsageError, match="--param"):
        parse_param(text)


def test_sweep_refuses_a_kind_without_an_index_knob(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A suite whose search is not a vector kind cannot be swept: exit 2, one line."""
    config = tmp_path / "monitor.yaml"
    config.write_text(
        "suites:\n  lark:\n    evalset: {bundled: larkfield}\n"
        "    search: {kind: replay, bundled: larkfield/keyword}\n",
        encoding="utf-8",
    )
    code = main(["sweep", "--config", str(config), "--suite", "lark", "--param", "ef=10"])
    assert (2, 1) == (code, len(capsys.readouterr().err.strip().splitlines()))


# -- rules and figures -----------------------------------------------------------------------

SUITE = """\
suites:
  s:
    evalset: {{bundled: larkfield}}
    search: {{kind: qdrant, path: /tmp/q, collection: c{health}}}
    metrics: [recall@10]
{rules}"""


def suite_rules(health: str = "", rules: str = "") -> tuple[RuleConfig, ...]:
    """Return the rules of a qdrant suite with ``health`` options and ``rules`` YAML."""
    text = SUITE.format(health=health, rules=rules + "\n" if rules else "")
    return load_config_text(text).suite("s").rules


def floors(rules: tuple[RuleConfig, ...]) -> list[tuple[float, int | None]]:
    """Return the ann_recall_min rules' thresholds and cutoffs."""
    return [(r.threshold, r.k) for r in rules if r.check is Check.ANN_RECALL_MIN]


@pytest.mark.parametrize(
    ("expected", "health", "rules"),
    [
        ([(0.95, 10)], ", index_health: true", ""),
        ([(0.95, 20)], ", index_health: {k: 20}", "    rules: [{error_rate_max: 0}]"),
        ([(0.9, 10)], ", index_health: {k: 10}", "    rules: [{metric: ann_recall@10, min: 0.9}]"),
        ([(0.8, None)], ", index_health: true", "    rules: [{ann_recall_min: 0.8}]"),
        ([], "", ""),
    ],
)
def test_index_health_gets_a_default_floor_unless_a_rule_names_one(
    expected: list[tuple[float, int | None]], health: str, rules: str
) -> None:
    """With index health on and no ann_recall rule, the suite floors ann_recall@k at 0.95."""
    assert expected == floors(suite_rules(health, rules))


@pytest.mark.parametrize(
    ("expected", "health", "rules"),
    [
        ([0.1], ", index_health: true", "    rules: [{error_rate_max: 0}]"),
        ([0.3], ", index_health: true", "    rules: [{index_size_max_relative_drop: 0.3}]"),
        ([], "", "    rules: [{error_rate_max: 0}]"),
    ],
)
def test_index_health_alerts_an_unexpected_drop_of_the_vectors_unless_told(
    expected: list[float], health: str, rules: str
) -> None:
    """With index health on, a fall of more than 10% in the indexed vectors breaches unless
    an index_size rule says otherwise; without it, no such rule is added."""
    found = suite_rules(health, rules)
    assert expected == [r.threshold for r in found if r.check is Check.INDEX_SIZE_MAX_RELATIVE_DROP]


@pytest.mark.parametrize(
    ("health", "rule", "says"),
    [
        (", index_health: {k: 10}", "{metric: ann_recall@5, min: 0.9}", "ann_recall@5 to be"),
        ("", "{metric: ann_recall@10, min: 0.9}", "index_health is off"),
        (", index_health: true", "{metric: ann_recall@10, max_drop: 0.1}", "only 'min'"),
        (", index_health: true", "{metric: ann_recall@x, min: 0.9}", "positive integer"),
    ],
)
def test_a_wrong_ann_recall_rule_names_its_line(health: str, rule: str, says: str) -> None:
    """An ann_recall rule at another cutoff, without index health, or not a floor is refused."""
    with pytest.raises(ConfigError, match=says) as caught:
        suite_rules(health, f"    rules:\n      - {rule}\n")
    assert re.match(r"<string>:\d+: suites\.s\.rules", str(caught.value))


def run_with(stats: dict[str, object]) -> RunRecord:
    """Return a stored run whose search stats are ``stats``."""
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    figures = RunFigures(**stats_figures(stats))
    return RunRecord(suite="s", pipeline="s", started_at=now, finished_at=now, figures=figures)


@pytest.mark.parametrize(
    ("status", "stats"),
    [
        ("ok", {"ann_recall@10": 0.97, "ann_recall_k": 10}),
        ("breach", {"ann_recall@10": 0.90, "ann_recall_k": 10}),
        ("skipped", {"index_size": 5}),
    ],
)
def test_the_floor_breaches_below_its_threshold(status: str, stats: dict[str, object]) -> None:
    """The ann_recall_min rule reads the run's ANN recall back from its stats."""
    rule = RuleConfig(Check.ANN_RECALL_MIN, 0.95, k=10)
    outcome = apply_rule(rule, run_with(stats), None, None, SignificanceConfig())
    assert (status, "ann_recall@10 min") == (outcome.status, outcome.rule)


def test_the_gauge_carries_the_cutoff_as_a_label() -> None:
    """retrieval_ann_recall_ratio exports the run's ANN recall with label k."""
    (gauge,) = [g for g in GAUGES if g.name == "retrieval_ann_recall_ratio"]
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    snapshot = SuiteSnapshot(
        suite="s",
        pipeline="s",
        success=True,
        started_at=now,
        finished_at=now,
        ann_recall_k=10,
        ann_recall=0.93,
    )
    assert [(("10",), 0.93)] == list(gauge.read(snapshot))


# -- pgvector --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    """Return the pgvector database's URL with this module's table loaded, or skip."""
    url = os.environ.get("MONITOR_PGVECTOR_URL", DEFAULT_PGVECTOR_URL)
    import psycopg

    try:
        psycopg.connect(url, connect_timeout=3).close()
    except psycopg.Error as exc:
        unavailable(f"pgvector not available at {urlsplit(url).hostname}: {exc}")
    load_table(url, TABLE, IDS, IDS, VECTORS, m=4, ef_construction=8)
    os.environ["INDEX_HEALTH_TEST_URL"] = url
    yield url
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f"DROP TABLE IF EXISTS {TABLE}")


def pgvector(**options: Any) -> Any:
    """Return a pgvector search of the module's table that always uses its HNSW index."""
    settings = {"enable_seqscan": "off", **options.pop("settings", {})}
    return build_search(
        "pgvector",
        {"url_env": "INDEX_HEALTH_TEST_URL", "table": TABLE, "settings": settings, **options},
    )


@pytest.mark.service
@pytest.mark.parametrize("ef_search", [5, 10])
def test_pgvector_ann_recall_equals_numpy_on_the_same_answers(pg_url: str, ef_search: int) -> None:
    """A small ef_search misses exact neighbours; the run's ann_recall@10 is numpy's figure
    for the answers it gave, below 1."""
    search = pgvector(settings={"hnsw.ef_search": ef_search}, index_health={"k": 10})
    try:
        result = run_queries(QUERIES, search, k=10)
    finally:
        search.close()
    answers = {outcome.query: list(outcome.retrieved_ids) for outcome in result.outcomes}
    measured = result.search_stats["ann_recall@10"]
    assert pytest.approx(numpy_ann_recall(answers, 10)) == measured
    assert measured < 1.0


@pytest.mark.service
def test_pgvector_exact_search_has_ann_recall_one(pg_url: str) -> None:
    """The exact search measured against itself finds every exact neighbour."""
    search = pgvector(exact=True, index_health=True)
    try:
        result = run_queries(QUERIES[:10], search, k=10)
    finally:
        search.close()
    assert 1.0 == result.search_stats["ann_recall@10"]


@pytest.mark.service
def test_pgvector_sweep_raises_ann_recall_with_ef_search(
    pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Sweeping hnsw.ef_search prints a table whose ANN recall grows from ef 5 to ef 200."""
    passages = bundled.larkfield_passages()
    ids = [p["id"] for p in passages]
    texts = [p["text"] for p in passages]
    table = f"{TABLE}_lark"
    load_table(pg_url, table, ids, texts, HashEmbedder(DIMENSION).embed(texts), m=4)
    config = tmp_path / "monitor.yaml"
    config.write_text(
        "suites:\n  lark:\n    evalset: {bundled: larkfield}\n"
        "    search: {kind: pgvector, url_env: INDEX_HEALTH_TEST_URL, "
        f"table: {table}, settings: {{enable_seqscan: 'off'}}}}\n"
        "    metrics: [recall@10]\n",
        encoding="utf-8",
    )
    argv = ["sweep", "--config", str(config), "--suite", "lark"]
    try:
        code = main([*argv, "--param", "hnsw.ef_search=5,200"])
    finally:
        import psycopg

        with psycopg.connect(pg_url, autocommit=True) as connection:
            connection.execute(f"DROP TABLE IF EXISTS {table}")
    lines = capsys.readouterr().out.splitlines()
    low, high = (float(line.split()[2]) for line in lines[1:])
    assert (0, ["hnsw.ef_search", "recall@10", "ann_recall@10", "p95", "ms"], True) == (
        code,
        lines[0].split(),
        low < high,
    )
