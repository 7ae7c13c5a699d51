"""Ranking judged pairs in a run's columns: the dense comparison and the hashed look-up agree."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from monitor import evaluate
from monitor.metrics.ranks import NOT_RETRIEVED
from monitor.search import trec_columns
from monitor.search.trec_read import read_trec_columns

DOCS = ["d1", "d2", "d3", "dé", "a-document-id-longer-than-sixteen-bytes", "x"]

rankings = st.dictionaries(
    st.sampled_from(["q1", "q2", "q3"]),
    st.lists(st.tuples(st.sampled_from(DOCS), st.sampled_from([0.5, 1.0, 2.0])), max_size=8),
    min_size=1,
)
judged = st.lists(st.tuples(st.sampled_from(["q1", "q2", "q3", "q9"]), st.sampled_from(DOCS)))


def _write(path: Path, run: dict[str, list[tuple[str, float]]]) -> Path:
    lines = [
        f"{qid} Q0 {doc} {rank} {score} tag\n"
        for qid, hits in run.items()
        for rank, (doc, score) in enumerate(hits, 1)
    ]
    path.write_text("".join(lines), encoding="utf-8")
    return path


@pytest.mark.slow
@given(run=rankings, pairs=judged)
def test_dense_and_hashed_ranks_agree(
    tmp_path_factory: pytest.TempPathFactory,
    run: dict[str, list[tuple[str, float]]],
    pairs: list[tuple[str, str]],
) -> None:
    """Ties, repeated ids, long and non-ASCII ids and unknown queries rank alike both ways."""
    path = _write(tmp_path_factory.mktemp("run") / "run.trec", run)
    columns = read_trec_columns(path)
    if columns is None:  # a run of blank queries only: nothing to rank
        return
    codes = np.array(
        [columns.query_ids.index(q) if q in columns.query_ids else -1 for q, _ in pairs]
    )
    docs = [doc for _, doc in pairs]
    dense = columns.ranks(codes, docs)
    saved, saved_pairs = trec_columns.DENSE_MAX_ROWS, trec_columns._RANK_PAIRS
    trec_columns._RANK_PAIRS = 2  # the pairs ranked two at a time
    try:
        in_blocks = columns.ranks(codes, docs)
        trec_columns.DENSE_MAX_ROWS = 0
        hashed = columns.ranks(codes, docs)
    finally:
        trec_columns.DENSE_MAX_ROWS, trec_columns._RANK_PAIRS = saved, saved_pairs
    assert hashed.tolist() == dense.tolist()
    assert dense.tolist() == in_blocks.tolist()


def test_dense_ranks_skip_later_copies(tmp_path: Path) -> None:
    """A repeated id counts once, at its best position, and the ranks below it close up."""
    path = _write(
        tmp_path / "run.trec",
        {"q1": [("d1", 4.0), ("d2", 3.0), ("d1", 2.0), ("d3", 1.0)], "q2": [("d3", 1.0)]},
    )
    columns = read_trec_columns(path)
    assert columns is not None
    ranks = columns.ranks(np.array([0, 0, 0, 1, 1, -1]), ["d1", "d2", "d3", "d3", "d1", "d1"])
    assert [1, 2, 3, 1, NOT_RETRIEVED, NOT_RETRIEVED] == ranks.tolist()


def test_scores_from_columns_equal_scores_from_rankings(tmp_path: Path) -> None:
    """evaluate of the file (columns) and of its rankings as mappings give the same values."""
    run = {
        "q1": [("d1", 2.0), ("d2", 2.0), ("d1", 1.0), ("dé", 0.5)],
        "q2": [("x", 1.0), ("d3", 0.5)],
    }
    path = _write(tmp_path / "run.trec", run)
    qrels = {"q1": {"d1": 1, "dé": 2, "d7": 0}, "q2": {"d3": 1}, "q3": {"d1": 1}}
    metrics = ["ndcg@3", "recall@2", "mrr@10", "map", "judged@3"]
    from_file = evaluate(qrels, path, metrics)
    ranked = {"q1": ["d2", "d1", "dé"], "q2": ["x", "d3"]}  # trec_eval's order, copies gone
    from_rankings = evaluate(qrels, ranked, metrics)
    for metric in from_rankings.metrics:
        assert from_rankings.values[metric].tolist() == from_file.values[metric].tolist()


def test_dense_ranks_check_the_ids_when_hashes_collide(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every row hashing alike (the worst collision), each pair still gets its own id's rank."""
    import dataclasses

    path = _write(
        tmp_path / "run.trec",
        {"q1": [("d1", 4.0), ("d2", 3.0), ("d1", 2.0), ("d3", 1.0)], "q2": [("d3", 1.0)]},
    )
    columns = read_trec_columns(path)
    assert columns is not None
    columns = dataclasses.replace(columns, row_hash=np.zeros_like(columns.row_hash))
    monkeypatch.setattr(trec_columns, "_hash", lambda codes, words: np.zeros(len(codes), np.uint64))
    ranks = columns.ranks(np.array([0, 0, 0, 1, 1, 0]), ["d1", "d2", "d3", "d3", "d1", "d9"])
    assert [1, 2, 3, 1, NOT_RETRIEVED, NOT_RETRIEVED] == ranks.tolist()


@pytest.mark.parametrize("block", [1, 4, 1 << 20])
def test_rows_are_counted_per_query_in_blocks_of_any_size(
    block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counting a run's rows per query a block of rows at a time gives the counts of one
    count over all of them, queries with no row included."""
    monkeypatch.setattr(trec_columns, "_COUNT_ROWS", block)
    query = np.random.default_rng(2).integers(0, 30, 500).astype(np.int32)
    expected = np.bincount(query, minlength=40).tolist()
    assert expected == trec_columns._count(query, 40).tolist()
    assert [0] * 3 == trec_columns._count(query[:0], 3).tolist()
