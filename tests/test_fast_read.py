"""The columnar TREC reader ranks every judged pair exactly as the line reader does."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import numpy as np
import pytest

from monitor.metrics.evaluation import evaluate
from monitor.metrics.ranked import RankedColumns, RankedMapping, resolve
from monitor.search import trec_columns, trec_read
from monitor.search.saved import load_run
from monitor.search.trec_read import read_trec_columns

CONFORMANCE = Path("/work/shared/conformance/peers/trec_eval")
ALL = ["map", "ndcg", "mrr", "r_precision", "precision@10", "recall@100", "ndcg@10"]


def _random_run(seed: int) -> tuple[str, dict[str, dict[str, int]]]:
    """Return a messy TREC run text and qrels that judge some of its documents."""
    rng = random.Random(seed)
    ids = ["d1", "d10", "d2", "D2", "é9", "a" * 9, "b" * 17, "c" * 70, "x#1", *map(str, range(30))]
    lines = ["# a comment", "   ", "#another one with fields a b c d e f"]
    qrels: dict[str, dict[str, int]] = {}
    for q in range(rng.randint(1, 12)):
        qid = rng.choice([f"q{q}", f"query-number-{q:04d}", str(q)])
        docs = rng.choices(ids, k=rng.randint(1, 25))  # repeats: duplicate ids
        for doc in docs:
            score = rng.choice(
                [rng.randint(-3, 3), round(rng.uniform(-5, 5), rng.randint(0, 4)), 1e-05, 2.5e3]
            )
            text = rng.choice([repr(float(score)), f"{score}", f"{float(score):.3f}"])
            sep = rng.choice([" ", "\t", "  ", " \t "])
            extra = rng.choice(["", " extra fields", "\tmore"])
            lines.append(sep.join([qid, "Q0", doc, "1", text, "tag"]) + extra)
        qrels[qid] = {doc: rng.randint(-1, 3) for doc in rng.sample(ids, 6)}
    rng.shuffle(lines)  # queries interleaved, scores out of order
    return "\r\n".join(lines) if seed % 3 == 0 else "\n".join(lines), qrels


def _fields(resolution: object) -> dict[str, list[object]]:
    out: dict[str, list[object]] = {}
    names = ("n_relevant", "n_retrieved", "duplicates", "missing", "query", "grade", "rank")
    names += ("ideal_grade", "judged_query", "judged_grade", "judged_rank")
    for part in ("ranks", "graded"):
        ranks = getattr(resolution, part)
        for name in names:
            value = getattr(ranks, name)
            out[f"{part}.{name}"] = None if value is None else value.tolist()
        out[f"{part}.query_ids"] = list(ranks.query_ids)
    out["counts"] = [
        resolution.skipped_no_relevant,  # type: ignore[attr-defined]
        resolution.not_judged,  # type: ignore[attr-defined]
        resolution.not_in_run,  # type: ignore[attr-defined]
    ]
    return out


#: Every option of resolve, alone and together.
OPTIONS: list[dict[str, object]] = [
    {},
    {"include_no_relevant": True},
    {"only_in_run": True},
    {"include_no_relevant": True, "only_in_run": True},
    {"relevance_level": 2},
    {"max_docs": 3},
    {"judged_only": True},
    {"with_judged": True},
    {"relevance_level": 2, "max_docs": 5, "judged_only": True, "include_no_relevant": True},
]


@pytest.mark.parametrize("seed", range(40))
def test_columns_rank_like_the_line_reader(tmp_path: Path, seed: int) -> None:
    """On runs with ties, repeats, comments, odd spacing and long ids both readers agree."""
    text, qrels = _random_run(seed)
    path = tmp_path / "run.trec"
    path.write_text(text, encoding="utf-8")
    columns = read_trec_columns(path)
    assert columns is not None
    run = load_run(path)
    for options in OPTIONS:
        expected = _fields(resolve(qrels, RankedMapping(run), **options))  # type: ignore[arg-type]
        assert expected == _fields(resolve(qrels, RankedColumns(columns), **options)), options  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", range(6))
def test_columns_agree_across_chunks(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file read in many small chunks ranks as one read whole."""
    text, qrels = _random_run(seed + 100)
    path = tmp_path / "run.trec"
    path.write_text(text, encoding="utf-8")
    expected = _fields(resolve(qrels, RankedMapping(load_run(path))))
    monkeypatch.setattr(trec_read, "CHUNK_BYTES", 37)
    columns = read_trec_columns(path)
    assert columns is not None
    assert expected == _fields(resolve(qrels, RankedColumns(columns)))


@pytest.mark.parametrize(
    "score", ["1.5", "-0.25", "007", "1e-05", "2.5E3", "+3", ".5", "5.", "123456789012345678"]
)
def test_scores_are_read_as_float_reads_them(tmp_path: Path, score: str) -> None:
    """Every score literal becomes the double Python's float gives."""
    path = tmp_path / "run.trec"
    path.write_text(f"q Q0 d 1 {score} t\n")
    columns = read_trec_columns(path)
    assert columns is not None
    assert float(score) == columns.score[0]


def test_decimal_scores_are_correctly_rounded() -> None:
    """Random decimals of up to 15 digits parse to exactly float()'s double."""
    rng = np.random.default_rng(0)
    texts = [
        f"{v:.{d}f}"
        for v, d in zip(rng.uniform(-1e4, 1e4, 2000), rng.integers(0, 11, 2000), strict=True)
    ]
    chunk = (" ".join(texts) + "\n").encode()
    a = np.frombuffer(chunk + b" " * 64, dtype=np.uint8)
    starts = np.cumsum([0] + [len(t) + 1 for t in texts[:-1]])
    lengths = np.array([len(t) for t in texts])
    values = trec_read._parse_scores(chunk, a, starts, lengths)
    assert values is not None
    assert [float(t) for t in texts] == values.tolist()


@pytest.mark.parametrize(
    "text",
    [
        "q Q0 d 1 x t\n",
        "q Q0 d 1 nan t\n",
        "q Q0 d 1 2\n",
        "q Q0 d\x01 1 2 t\n",
        b"q Q0 \xff 1 2 t\n",
    ],
    ids=["word", "nan", "short", "control", "not-utf8"],
)
def test_lines_the_line_reader_must_name_are_left_to_it(tmp_path: Path, text: str | bytes) -> None:
    """A fault makes the columnar reader step aside (None), so the error names the line."""
    path = tmp_path / "run.trec"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    assert read_trec_columns(path) is None


@pytest.mark.slow
def test_conformance_runs_rank_like_the_line_reader() -> None:
    """trec_eval's own test runs give the same ranks through both readers."""
    if not CONFORMANCE.is_dir():
        pytest.skip("trec_eval's test folder is not here")
    for qrels_name, run_name in [
        ("qrels.test", "results.test"),
        ("qrels.test.with-comments", "results.trunc"),
        ("qrels.comment.test", "results.comment.test"),
    ]:
        qrels_path, run_path = CONFORMANCE / qrels_name, CONFORMANCE / run_name
        fast = evaluate(qrels_path, run_path, ALL, include_no_relevant=True)
        slow = evaluate(qrels_path, load_run(run_path), ALL, include_no_relevant=True)
        assert slow.means == fast.means


def test_gzip_run_reads_like_the_plain_file(tmp_path: Path) -> None:
    """A gzip-compressed run gives the plain file's columns."""
    text, qrels = _random_run(7)
    plain, packed = tmp_path / "run.trec", tmp_path / "run.trec.gz"
    plain.write_text(text)
    packed.write_bytes(gzip.compress(text.encode()))
    assert _fields(resolve(qrels, RankedMapping(load_run(plain)))) == _fields(
        resolve(qrels, RankedColumns(read_trec_columns(packed)))  # type: ignore[arg-type]
    )


def test_a_file_without_line_feeds_is_left_to_the_line_reader(tmp_path: Path) -> None:
    """Bytes that never end a line (a device such as /dev/zero) are not buffered without end."""
    path = tmp_path / "run.trec"
    path.write_bytes(b"\0" * (trec_read.MAX_LINE_BYTES + trec_read.CHUNK_BYTES + 1))
    assert read_trec_columns(path) is None


@pytest.mark.parametrize("seed", range(10))
def test_a_file_in_score_order_has_its_ties_ordered(tmp_path: Path, seed: int) -> None:
    """Lines grouped by query and best first, ties by doc id ascending, rank as trec_eval."""
    rng = random.Random(seed)
    lines, qrels = [], {}
    for q in range(5):
        docs = rng.sample([f"d{i}" for i in range(40)], 20)
        scored = sorted(((rng.randint(0, 4), doc) for doc in docs), key=lambda s: (-s[0], s[1]))
        lines += [f"q{q} Q0 {doc} 0 {score} t" for score, doc in scored]
        qrels[f"q{q}"] = dict.fromkeys(rng.sample(docs, 5), 1)
    path = tmp_path / "run.trec"
    path.write_text("\n".join(lines) + "\n")
    columns = read_trec_columns(path)
    assert columns is not None
    assert _fields(resolve(qrels, RankedMapping(load_run(path)))) == _fields(
        resolve(qrels, RankedColumns(columns))
    )


def test_a_comment_of_six_fields_is_still_a_comment(tmp_path: Path) -> None:
    """A comment line that happens to hold six fields is skipped, not read as a run line."""
    path = tmp_path / "run.trec"
    path.write_text("# qid Q0 doc rank score\nq1 Q0 d1 1 2.0 t\n")
    columns = read_trec_columns(path)
    assert columns is not None
    assert ("q1",) == columns.query_ids


@pytest.mark.parametrize("seed", range(5))
def test_ids_sharing_a_hash_still_rank_exactly(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When every id of a query hashes alike, ranks and copies are still found exactly."""
    monkeypatch.setattr(trec_columns, "_hash", lambda query, words: query.astype(np.uint64))
    text, qrels = _random_run(seed + 200)
    path = tmp_path / "run.trec"
    path.write_text(text, encoding="utf-8")
    columns = read_trec_columns(path)
    assert columns is not None
    assert _fields(resolve(qrels, RankedMapping(load_run(path)))) == _fields(
        resolve(qrels, RankedColumns(columns))
    )


def _same_columns(left: object, right: object) -> None:
    for name in ("query_ids", "query", "doc_words", "score", "copy"):
        assert np.array_equal(getattr(left, name), getattr(right, name)), name


def _regular_run(seed: int, *, grouped: bool = False) -> str:
    """Return a run of six single-space fields per line: ties, repeats, ids needing bytes;
    each query's lines together when ``grouped``, else shuffled."""
    rng = random.Random(seed)
    ids = ["d1", "d10", "d2", "D2", "é9", "a" * 9, "b" * 17, "c" * 70, "x#1", "Z", "z"]
    lines = []
    for q in rng.sample(range(40), rng.randint(1, 8)):
        for doc in rng.choices(ids, k=rng.randint(1, 30)):
            score = rng.choice([1, 2, -0.5, 2.25, 1e-05, 3.000001, round(rng.random(), 6)])
            lines.append(f"q{q} Q0 {doc} 1 {score} tag")
    rng.shuffle(lines)
    if grouped:
        lines.sort(key=lambda line: line.split(" ", 1)[0])
    return "\n".join(lines) + rng.choice(["", "\n", "\n\n"])


@pytest.mark.parametrize("seed", range(30))
def test_arrow_reads_regular_runs_as_the_numpy_reader(tmp_path: Path, seed: int) -> None:
    """pyarrow's columns equal the numpy tokeniser's, with ties, repeats and byte order."""
    pytest.importorskip("pyarrow")
    from monitor.search.trec_arrow import read_trec_arrow

    path = tmp_path / "run.trec"
    path.write_text(_regular_run(seed), encoding="utf-8")
    arrow, columns = read_trec_arrow(path), read_trec_columns(path)
    assert arrow is not None
    assert columns is not None
    _same_columns(arrow, columns)


@pytest.mark.parametrize("seed", range(20))
def test_arrow_reads_grouped_runs_in_small_blocks_as_the_numpy_reader(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each query's lines together (only the first looked up), split over many blocks
    (a query's lines across two): the same columns as the numpy tokeniser's."""
    pytest.importorskip("pyarrow")
    from monitor.search import trec_arrow

    monkeypatch.setattr(trec_arrow, "_BLOCK_BYTES", 256)
    path = tmp_path / "run.trec"
    path.write_text(_regular_run(seed, grouped=True), encoding="utf-8")
    arrow, columns = trec_arrow.read_trec_arrow(path), read_trec_columns(path)
    assert arrow is not None
    assert columns is not None
    _same_columns(arrow, columns)


@pytest.mark.parametrize(
    "ids", [["d1", "d22", "d333"], ["dddddddd", "eeeeeeee"], ["é9", "日本", "a"]]
)
def test_arrow_pads_ids_as_the_numpy_reader_when_its_padding_counts_characters(
    tmp_path: Path, ids: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ids padded to whole words by Arrow, or byte by byte where a padding counted
    characters instead of bytes: the numpy tokeniser's words either way."""
    pytest.importorskip("pyarrow")
    import pyarrow.compute as pc

    from monitor.search.trec_arrow import read_trec_arrow

    path = tmp_path / "run.trec"
    path.write_text("".join(f"q Q0 {doc} 1 {i} t\n" for i, doc in enumerate(ids)), "utf-8")
    columns = read_trec_columns(path)
    assert columns is not None
    for padding in (pc.ascii_rpad, pc.utf8_rpad):
        monkeypatch.setattr(pc, "ascii_rpad", padding)
        arrow = read_trec_arrow(path)
        assert arrow is not None
        _same_columns(arrow, columns)


@pytest.mark.parametrize("seed", range(40))
def test_arrow_leaves_irregular_runs_to_the_numpy_reader(tmp_path: Path, seed: int) -> None:
    """Tabs, runs of spaces, comments and extra fields: None, or the numpy reader's columns."""
    pytest.importorskip("pyarrow")
    from monitor.search.trec_arrow import read_trec_arrow

    text, _ = _random_run(seed)
    path = tmp_path / "run.trec"
    path.write_text(text, encoding="utf-8")
    arrow, columns = read_trec_arrow(path), read_trec_columns(path)
    if arrow is not None:
        assert columns is not None
        _same_columns(arrow, columns)


@pytest.mark.parametrize(
    "text",
    [
        "# q Q0 d 1 1 t\nq Q0 d 1 1 t\n",
        "q Q0 d 1 1 t extra\n",
        "q Q0 d 1 1 t \n",
        " q Q0 d 1 1 t\n",
        "q Q0 d 1 nan t\n",
        "q Q0 d 1 inf t\n",
        "q Q0 d 1 1 t\rq Q0 e 1 2 t\n",
        "q Q0 d\x0b 1 1 t\n",
        "q Q0 d 1 1_0 t\n",
        b"q Q0 \xff 1 1 t\n",
    ],
)
def test_arrow_refuses_what_it_would_read_differently(tmp_path: Path, text: str | bytes) -> None:
    pytest.importorskip("pyarrow")
    from monitor.search.trec_arrow import read_trec_arrow

    path = tmp_path / "run.trec"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    assert read_trec_arrow(path) is None


@pytest.mark.parametrize(
    ("data", "plain"),
    [
        (b"ab\r\ncd\n", True),
        (b"abc\r\nd\n", True),
        (b"abcd\r\n", True),
        (b"abcdefg\r\nx", True),
        (b"ab\rcd\n", False),
        (b"abc\rd\n", False),
        (b"abc\r", False),
        (b"abc\r\r\n", False),
    ],
)
def test_a_lone_cr_is_found_across_block_edges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes, plain: bool
) -> None:
    """A CR not followed by LF sends the file to the numpy reader wherever it falls, a CR
    ending a block judged with the next block's first byte."""
    from monitor.search import trec_arrow

    monkeypatch.setattr(trec_arrow, "_BLOCK_BYTES", 4)
    path = tmp_path / "run.trec"
    path.write_bytes(data)
    assert plain == trec_arrow._plain_lines(path)
