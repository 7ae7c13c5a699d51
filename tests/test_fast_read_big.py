"""The columnar readers keep trec_eval's ranking on runs big enough for their fast paths."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from monitor.metrics.ranked import RankedColumns, RankedMapping, resolve
from monitor.search import trec_columns
from monitor.search.saved import load_run
from monitor.search.trec_read import read_trec_columns


def _big_run(
    seed: int, queries: int = 900, docs: int = 90
) -> tuple[str, dict[str, dict[str, int]]]:
    """Return a run of ``queries * docs`` lines with a few repeated ids, and qrels for it."""
    rng = random.Random(seed)
    lines = []
    qrels: dict[str, dict[str, int]] = {}
    for q in range(queries):
        qid = f"q{q}" if q % 7 else f"qé{q}"
        ids = [f"d{rng.randrange(10**6)}" for _ in range(docs)]
        if q % 50 == 0:
            ids[-1] = ids[0]  # a repeated id: counted once, at its best position
        scores = sorted((round(rng.random(), 2) for _ in range(docs)), reverse=True)
        ranked = enumerate(zip(ids, scores, strict=True), 1)
        lines.extend(f"{qid} Q0 {d} {r} {s} tag" for r, (d, s) in ranked)
        qrels[qid] = {rng.choice(ids): rng.randint(0, 2), f"gone{q}": 1, ids[0]: 1}
    return "\n".join(lines) + "\n", qrels


def _same_resolution(path: Path, qrels: dict[str, dict[str, int]], columns: object) -> None:
    got = resolve(qrels, RankedColumns(columns), with_judged=True)  # type: ignore[arg-type]
    want = resolve(qrels, RankedMapping(load_run(path)), with_judged=True)
    assert want.ranks.query_ids == got.ranks.query_ids
    assert np.array_equal(want.ranks.duplicates, got.ranks.duplicates)
    assert np.array_equal(want.ranks.n_retrieved, got.ranks.n_retrieved)
    for name in ("query", "grade", "rank", "judged_rank"):
        assert np.array_equal(getattr(want.ranks, name), getattr(got.ranks, name)), name


@pytest.mark.slow
def test_repeated_ids_are_found_among_many_rows(tmp_path: Path) -> None:
    """With more rows than the sort-free filter's threshold, each repeat is still dropped."""
    text, qrels = _big_run(1)
    path = tmp_path / "run.trec"
    path.write_text(text, encoding="utf-8")
    columns = read_trec_columns(path)
    assert columns is not None
    assert len(columns.query) > 1 << 16
    pairs = [tuple(line.split()[::2][:2]) for line in text.splitlines()]
    assert len(pairs) - len(set(pairs)) == int(columns.copy.sum())
    _same_resolution(path, qrels, columns)


def test_repeats_survive_every_filter_round() -> None:
    """Hashes that repeat within a query are always found; the same hash in two is not."""
    rng = np.random.default_rng(3)
    hashes = rng.integers(0, 2**63, size=300_000, dtype=np.int64).astype(np.uint64)
    query = np.repeat(np.arange(3000, dtype=np.int32), 100)
    hashes[[5, 70_000]] = hashes[[23, 70_050]]
    hashes[299_999] = hashes[0]  # another query's hash: no repeat
    rows = trec_columns._maybe_repeated(hashes, query)
    assert [5, 23, 70_000, 70_050] == rows.tolist()


def test_wanted_hashes_pass_the_bit_table() -> None:
    """Every row whose hash is wanted passes, in row order, with few others."""
    rng = np.random.default_rng(4)
    hashes = rng.integers(0, 2**63, size=200_000, dtype=np.int64).astype(np.uint64)
    wanted = hashes[[7, 90_000, 199_999]]
    rows = trec_columns._maybe_in(hashes, wanted)
    assert {7, 90_000, 199_999} <= set(rows.tolist())
    assert len(rows) < 1000
    assert np.array_equal(np.sort(rows), rows)


def test_arrow_reads_in_batches_as_the_numpy_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read in many small batches, pyarrow gives the numpy reader's columns and ranks."""
    pytest.importorskip("pyarrow")
    from monitor.search import trec_arrow

    monkeypatch.setattr(trec_arrow, "_BLOCK_BYTES", 1 << 16)
    text, qrels = _big_run(2, queries=300)
    path = tmp_path / "run.trec"
    path.write_text(text, encoding="utf-8")
    arrow, columns = trec_arrow.read_trec_arrow(path), read_trec_columns(path)
    assert arrow is not None
    assert columns is not None
    for name in ("query_ids", "query", "doc_words", "score", "copy"):
        assert np.array_equal(getattr(columns, name), getattr(arrow, name)), name
    _same_resolution(path, qrels, arrow)


@pytest.mark.parametrize(("tail", "plain"), [(b"\r\n", True), (b"\r", False), (b"\rx\n", False)])
def test_a_carriage_return_at_a_block_edge_is_judged_with_the_next_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tail: bytes, plain: bool
) -> None:
    """CR LF across two blocks is a line end; a lone CR sends the file to the numpy reader."""
    pytest.importorskip("pyarrow")
    from monitor.search import trec_arrow

    monkeypatch.setattr(trec_arrow, "_BLOCK_BYTES", 16)
    path = tmp_path / "run.trec"
    path.write_bytes(b"q1 Q0 d1 1 2.5 t" + tail)  # the CR is the 17th byte
    assert plain == trec_arrow._plain_lines(path)


def test_arrow_leaves_undecodable_ids_to_the_numpy_reader(tmp_path: Path) -> None:
    """An id whose bytes are not UTF-8 is no column pyarrow reads: None."""
    pytest.importorskip("pyarrow")
    from monitor.search.trec_arrow import read_trec_arrow

    path = tmp_path / "run.trec"
    path.write_bytes(b"q1 Q0 d\xff 1 2.5 t\nq1 Q0 d\xc3\xa9 1 2.0 t\n")
    assert read_trec_arrow(path) is None


def test_the_builder_grows_and_widens_past_its_reservation() -> None:
    """Parts beyond the reserved rows, and doc ids wider than the first, keep every row."""
    builder = trec_columns.ColumnBuilder(1)
    first = np.array([[1], [2]], dtype=np.uint64)
    wide = np.array([[7, 8], [9, 10], [11, 12]], dtype=np.uint64)
    builder.append(np.array([0, 0], np.int32), first, np.array([3.0, 2.0]))
    builder.append(np.array([1, 1, 1], np.int32), wide, np.array([5.0, 4.0, 1.0]))
    builder.append(np.array([1], np.int32), first[:1], np.array([0.5]))
    columns = builder.build({"a": 0, "b": 1})
    assert [0, 0, 1, 1, 1, 1] == columns.query.tolist()
    assert [[1, 0], [2, 0], [7, 8], [9, 10], [11, 12], [1, 0]] == columns.doc_words.tolist()
    assert [3.0, 2.0, 5.0, 4.0, 1.0, 0.5] == columns.score.tolist()
