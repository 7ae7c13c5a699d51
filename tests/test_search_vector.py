"""The vector search kinds against real stores: pgvector (the PostgreSQL at
``MONITOR_PGVECTOR_URL``, default 127.0.0.1:55433, started by .ci/run) and Qdrant's local mode
(a temporary folder). Answers are checked against exact numpy search on the same vectors.

Queries are embedded by :class:`monitor.testing.HashEmbedder` (a fixed random unit vector
per text), so that exact answers are known without a model; the packaged model is used
where the command line loads a corpus.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pytest
from conftest import unavailable

from monitor.cli import main
from monitor.errors import SearchCallError, SearchSetupError
from monitor.records import Query
from monitor.runner.run import run_queries
from monitor.search import build_search
from monitor.search.pgvector import load_table
from monitor.search.qdrant import load_collection
from monitor.testing import HashEmbedder

os.environ["HF_HUB_OFFLINE"] = "1"

DEFAULT_PGVECTOR_URL = "postgresql://postgres@127.0.0.1:55433/monitor_test"
DIMENSION = 32
DOCS = 300
TABLE = f"vector_test_{os.getpid()}"
IDS = [f"d{index:03d}" for index in range(DOCS)]
TEXTS = [f"passage {index}" for index in range(DOCS)]
VECTORS = np.random.default_rng(7).standard_normal((DOCS, DIMENSION)).astype(np.float32)
VECTORS /= np.linalg.norm(VECTORS, axis=1, keepdims=True)
QUERIES = [f"query {index}" for index in range(20)]


@pytest.fixture(autouse=True)
def hashed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[HashEmbedder]:
    """Make every vector kind embed with a HashEmbedder; list those made; cache in tmp."""
    made: list[HashEmbedder] = []

    def fake(options: Any) -> HashEmbedder:
        embedder = HashEmbedder(DIMENSION, model_id=f"hash:{DIMENSION}")
        made.append(embedder)
        return embedder

    monkeypatch.setattr("monitor.search.vector.open_embedder", fake)
    monkeypatch.setenv("MONITOR_CACHE_DIR", str(tmp_path / "cache"))
    return made


def query_vector(text: str) -> Any:
    """Return the vector HashEmbedder gives ``text``."""
    return HashEmbedder(DIMENSION).embed([text])[0]


def exact_ids(scores: Any, k: int) -> list[str]:
    """Return the ids of the ``k`` best scores, best first."""
    return [IDS[index] for index in np.argsort(-scores, kind="stable")[:k]]


# -- pgvector --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    """Return the pgvector database's URL with this module's tables loaded, or skip."""
    url = os.environ.get("MONITOR_PGVECTOR_URL", DEFAULT_PGVECTOR_URL)
    import psycopg

    try:
        psycopg.connect(url, connect_timeout=3).close()
    except psycopg.Error as exc:
        unavailable(f"pgvector not available at {urlsplit(url).hostname}: {exc}")
    for distance in ("cosine", "l2", "inner_product"):
        load_table(url, f"{TABLE}_{distance}", IDS, TEXTS, VECTORS, distance=distance)
    os.environ["VECTOR_TEST_URL"] = url
    yield url
    with psycopg.connect(url, autocommit=True) as connection:
        for distance in ("cosine", "l2", "inner_product"):
            connection.execute(f"DROP TABLE IF EXISTS {TABLE}_{distance}")


def pgvector(distance: str = "cosine", **options: Any) -> Any:
    """Return a pgvector search of this module's table for ``distance``."""
    return build_search(
        "pgvector",
        {
            "url_env": "VECTOR_TEST_URL",
            "table": f"{TABLE}_{distance}",
            "distance": distance,
            "text_column": "text",
            **options,
        },
    )


#: Each distance's exact scores over the corpus, and its hits' scores from a query vector.
EXACT_SCORES = {
    "cosine": lambda q: VECTORS @ q,
    "l2": lambda q: -np.linalg.norm(VECTORS - q, axis=1),
    "inner_product": lambda q: VECTORS @ q,
}


@pytest.mark.slow
@pytest.mark.service
@pytest.mark.parametrize("distance", ["cosine", "l2", "inner_product"])
def test_pgvector_exact_equals_numpy(pg_url: str, distance: str) -> None:
    """The exact mode ranks as numpy's brute force does, with its scores."""
    search = pgvector(distance, exact=True)
    try:
        for text in QUERIES[:5]:
            scores = EXACT_SCORES[distance](query_vector(text))
            hits = search(text, 10)
            assert exact_ids(scores, 10) == [hit.id for hit in hits]
            expected = np.sort(scores)[::-1][:10]
            assert np.allclose(expected, [hit.score for hit in hits], atol=1e-5)
    finally:
        search.close()


@pytest.mark.service
def test_pgvector_hnsw_finds_the_exact_top_10(pg_url: str) -> None:
    """The HNSW answer with a wide ef_search holds at least 95% of the exact top 10."""
    search = pgvector(settings={"hnsw.ef_search": 100, "enable_seqscan": False})
    try:
        found = [
            len(set(exact_ids(VECTORS @ query_vector(t), 10)) & {h.id for h in search(t, 10)})
            for t in QUERIES
        ]
    finally:
        search.close()
    assert sum(found) / (10 * len(QUERIES)) >= 0.95


@pytest.mark.service
def test_pgvector_settings_reach_the_session(pg_url: str) -> None:
    """hnsw.ef_search 5 (index forced) returns at most 5 rows, as pgvector's HNSW does."""
    search = pgvector(settings={"hnsw.ef_search": 5, "enable_seqscan": False})
    try:
        assert 5 >= len(search(QUERIES[0], 10))
        assert "5" == search.stats()["hnsw.ef_search"]
    finally:
        search.close()


@pytest.mark.service
def test_pgvector_exact_search_is_one_call_away(pg_url: str) -> None:
    """exact_search() of an ANN search answers exactly on the same connection."""
    search = pgvector(settings={"hnsw.ef_search": 5, "enable_seqscan": False})
    try:
        exact = search.exact_search()
        hits = exact(QUERIES[1], 10)
        assert exact_ids(VECTORS @ query_vector(QUERIES[1]), 10) == [hit.id for hit in hits]
    finally:
        search.close()


@pytest.mark.service
def test_pgvector_filter_restricts_the_rows(pg_url: str) -> None:
    """A SQL filter keeps only the rows it selects, ranked as numpy ranks them."""
    search = pgvector(exact=True, filter="id LIKE 'd1%'")
    try:
        hits = search(QUERIES[2], 5)
    finally:
        search.close()
    scores = np.where([doc.startswith("d1") for doc in IDS], VECTORS @ query_vector(QUERIES[2]), -9)
    assert exact_ids(scores, 5) == [hit.id for hit in hits]


@pytest.mark.service
def test_pgvector_batches_answer_as_single_queries(pg_url: str) -> None:
    """search_vectors over many vectors gives what one call per vector gives."""
    search = pgvector(exact=True)
    try:
        vectors = np.stack([query_vector(text) for text in QUERIES[:4]])
        batched = search.search_vectors(vectors, 5)
        single = [search(text, 5) for text in QUERIES[:4]]
    finally:
        search.close()
    assert [[h.id for h in hits] for hits in single] == [[h.id for h in hits] for hits in batched]


@pytest.mark.service
def test_pgvector_stats_and_fingerprint(pg_url: str) -> None:
    """stats report the vectors and the HNSW index; the fingerprint changes with a new row."""
    import psycopg

    table = f"{TABLE}_cosine"
    search = pgvector(updated_column="updated_at")
    try:
        stats = search.stats()
        before = search.corpus_fingerprint()
        assert before == search.corpus_fingerprint()
        with psycopg.connect(pg_url, autocommit=True) as connection:
            connection.execute(
                f"INSERT INTO {table} (id, text, embedding) VALUES ('extra', 'x', %s::vector)",
                (str(VECTORS[0].tolist()),),
            )
        after = search.corpus_fingerprint()
        with psycopg.connect(pg_url, autocommit=True) as connection:
            connection.execute(f"DELETE FROM {table} WHERE id = 'extra'")
    finally:
        search.close()
    assert (DOCS, True) == (stats["index_size"], "USING hnsw" in str(stats["index_definition"]))
    assert (DOCS, DOCS + 1) == (before["count"], after["count"])
    assert before["updated_at"] != after["updated_at"]


@pytest.mark.service
def test_pgvector_run_embeds_the_queries_once_in_a_batch(
    pg_url: str, hashed: list[HashEmbedder]
) -> None:
    """A run embeds its queries in one batch; a second run embeds none (the cache)."""
    queries = [Query(f"q{index}", text, {IDS[index]: 1}) for index, text in enumerate(QUERIES)]
    for _ in range(2):
        search = pgvector()
        try:
            result = run_queries(queries, search, k=10, concurrency=2)
        finally:
            search.close()
    first, second = hashed
    assert ([QUERIES], [], 0, 20) == (
        first.calls,
        second.calls,
        result.search_stats["embedded_queries"],
        result.search_stats["cached_queries"],
    )


@pytest.mark.service
def test_pgvector_errors_never_show_the_password(monkeypatch: pytest.MonkeyPatch) -> None:
    """A connection that fails is a retryable SearchCallError without the URL's password."""
    monkeypatch.setenv("VECTOR_BAD_URL", "postgresql://me:hunter2secret@127.0.0.1:9/db")
    search = build_search(
        "pgvector", {"url_env": "VECTOR_BAD_URL", "table": "t", "connect_timeout": 2}
    )
    with pytest.raises(SearchCallError) as caught:
        search("a query", 3)
    assert (True, False) == (caught.value.retryable, "hunter2secret" in str(caught.value))


@pytest.mark.parametrize(
    ("options", "option"),
    [
        ({"table": "t"}, "url_env"),
        ({"table": "t", "url_env": "VECTOR_TEST_HTTP_URL"}, "url_env"),
        ({"table": "t", "url_env": "VECTOR_TEST_PG", "distance": "dot"}, "distance"),
        ({"table": "t", "url_env": "VECTOR_TEST_PG", "settings": {"x.y": [1]}}, "settings.x.y"),
        ({"table": "t", "url_env": "VECTOR_TEST_PG", "tabel": "t"}, "tabel"),
        ({"table": "t", "url_env": "VECTOR_TEST_PG", "embedding": {"cache": 1}}, "embedding.cache"),
    ],
)
def test_pgvector_bad_options_name_the_option(
    monkeypatch: pytest.MonkeyPatch, options: dict[str, Any], option: str
) -> None:
    """An option the kind cannot use is a SearchSetupError naming it."""
    monkeypatch.setenv("VECTOR_TEST_PG", "postgresql://127.0.0.1:9/db")
    monkeypatch.setenv("VECTOR_TEST_HTTP_URL", "http://127.0.0.1:9/db")
    with pytest.raises(SearchSetupError) as caught:
        build_search("pgvector", options)
    assert option == caught.value.option


# -- qdrant ----------------------------------------------------------------------------------

#: Local mode stores each point on its own (milliseconds apiece): a smaller collection.
QDRANT_DOCS = 120
QDRANT_VECTORS = VECTORS[:QDRANT_DOCS]


@pytest.fixture(scope="module")
def qdrant_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A local-mode folder holding the module's collection."""
    path = tmp_path_factory.mktemp("qdrant")
    load_collection("docs", IDS[:QDRANT_DOCS], TEXTS[:QDRANT_DOCS], QDRANT_VECTORS, path=str(path))
    return path


@pytest.fixture
def qdrant(qdrant_path: Path) -> Iterator[Any]:
    """A qdrant search of the module's collection (local mode allows one client at a time)."""
    search = build_search("qdrant", {"path": str(qdrant_path), "collection": "docs"})
    yield search
    search.close()


@pytest.mark.slow
def test_qdrant_equals_numpy(qdrant: Any) -> None:
    """Local mode ranks as numpy's brute force does, with cosine scores and payload texts."""
    for text in QUERIES[:5]:
        scores = QDRANT_VECTORS @ query_vector(text)
        hits = qdrant(text, 10)
        assert exact_ids(scores, 10) == [hit.id for hit in hits]
        assert np.allclose(np.sort(scores)[::-1][:10], [hit.score for hit in hits], atol=1e-5)
        assert TEXTS[IDS.index(hits[0].id)] == hits[0].text


def test_qdrant_batches_answer_as_single_queries(qdrant: Any) -> None:
    """search_vectors over many vectors gives what one call per vector gives."""
    vectors = np.stack([query_vector(text) for text in QUERIES[:4]])
    batched = qdrant.search_vectors(vectors, 5)
    single = [qdrant(text, 5) for text in QUERIES[:4]]
    assert [[h.id for h in hits] for hits in single] == [[h.id for h in hits] for hits in batched]


def test_qdrant_filter_restricts_the_points(qdrant_path: Path) -> None:
    """A Qdrant filter mapping keeps only the points it matches."""
    chosen = IDS[:50]
    search = build_search(
        "qdrant",
        {
            "path": str(qdrant_path),
            "collection": "docs",
            "filter": {"must": [{"key": "doc_id", "match": {"any": chosen}}]},
        },
    )
    try:
        hits = search(QUERIES[3], 5)
    finally:
        search.close()
    scores = np.where(
        np.isin(IDS[:QDRANT_DOCS], chosen), QDRANT_VECTORS @ query_vector(QUERIES[3]), -9
    )
    assert exact_ids(scores, 5) == [hit.id for hit in hits]


def test_qdrant_stats_and_fingerprint(qdrant: Any) -> None:
    """stats count the points and give the index parameters; the fingerprint is stable."""
    stats = qdrant.stats()
    assert (QDRANT_DOCS, True) == (stats["index_size"], '"m": 16' in str(stats["index_definition"]))
    assert qdrant.corpus_fingerprint() == qdrant.corpus_fingerprint()
    assert QDRANT_DOCS == qdrant.corpus_fingerprint()["count"]


def test_qdrant_exact_search_is_one_call_away(qdrant: Any) -> None:
    """exact_search() gives the exact answer on the same client."""
    hits = qdrant.exact_search()(QUERIES[4], 10)
    assert exact_ids(QDRANT_VECTORS @ query_vector(QUERIES[4]), 10) == [hit.id for hit in hits]


@pytest.mark.parametrize(
    ("options", "option"),
    [
        ({"collection": "c"}, "path"),
        ({"collection": "c", "path": "/p", "url": "http://h"}, "path"),
        ({"collection": "c", "url": "grpc://h"}, "url"),
        ({"collection": "c", "path": "/p", "hnsw_ef": 0}, "hnsw_ef"),
        ({"collection": "c", "path": "/p", "filter": {"must": 3}}, "filter"),
    ],
)
def test_qdrant_bad_options_name_the_option(options: dict[str, Any], option: str) -> None:
    """An option the kind cannot use is a SearchSetupError naming it."""
    with pytest.raises(SearchSetupError) as caught:
        build_search("qdrant", options)
    assert option == caught.value.option


@pytest.mark.parametrize(("kind", "module"), [("qdrant", "qdrant_client"), ("pgvector", "psycopg")])
def test_a_missing_extra_names_the_command_in_one_line(
    monkeypatch: pytest.MonkeyPatch, kind: str, module: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without the store's client the command line says which extra to install, exit 2."""
    import sys

    for name in [name for name in sys.modules if name.split(".")[0] == module]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, module, None)
    options = {"qdrant": ["--path", "/tmp/none"], "pgvector": ["--url", "postgresql://h/db"]}
    code = main(["corpus", "load", "--into", kind, *options[kind]])
    err = capsys.readouterr().err.strip()
    assert (2, 1) == (code, len(err.splitlines()))
    assert "pip install 'retrieval-monitor[vector]'" in err


@pytest.mark.slow
def test_corpus_load_fills_a_collection_the_suite_searches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """corpus load embeds a corpus file with the packaged model into a Qdrant collection."""
    monkeypatch.undo()  # the packaged model this time
    monkeypatch.setenv("MONITOR_CACHE_DIR", str(tmp_path / "cache"))
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        '{"id": "p1", "text": "Refunds for double charges are made within 5 days."}\n'
        '{"id": "p2", "text": "Hedge trimmer blades need oil after each use."}\n'
        '{"id": "p3", "text": "Our stores open at nine on Saturdays."}\n'
    )
    path = tmp_path / "store"
    code = main(
        ["corpus", "load", "--into", "qdrant", "--path", str(path), "--corpus", str(corpus)]
    )
    assert (0, "loaded 3 passages") == (code, capsys.readouterr().out[:17])
    search = build_search("qdrant", {"path": str(path), "collection": "larkfield"})
    try:
        assert "p2" == search("how do I look after the trimmer blade?", 1)[0].id
    finally:
        search.close()


@pytest.mark.parametrize(("name", "kind"), [("pgvector", "pgvector"), ("qdrant", "qdrant")])
def test_the_example_suites_load(name: str, kind: str) -> None:
    """Each example config under examples/vector reads as a suite of its store's kind."""
    from monitor.config import load_config

    path = Path(__file__).resolve().parents[1] / "examples" / "vector" / f"{name}.yaml"
    (suite,) = load_config(path).suites.values()
    assert (kind, "larkfield") == (suite.search.kind, suite.evalset.bundled)
