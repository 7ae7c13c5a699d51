"""read_trec_qrels: the metric engine's fast path for qrels files."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from monitor.errors import InputError, UsageError
from monitor.evalset import EvalSet, read_trec_qrels

BAD = Path(__file__).parent / "data" / "evalset" / "bad"


def write(tmp_path: Path, text: str) -> Path:
    """Write ``text`` to a qrels file and return its path."""
    path = tmp_path / "run.qrels"
    path.write_text(text, encoding="utf-8")
    return path


def test_reads_query_doc_grade_in_file_order(tmp_path: Path) -> None:
    """Lines become query id -> doc id -> grade, in file order; iter is ignored."""
    path = write(tmp_path, "q2 0 d9 1\nq1 Q0 d1 2\n\nq1 7 d0 0\nq2 0 d8 -1\n")
    qrels = read_trec_qrels(path)
    assert {"q2": {"d9": 1, "d8": -1}, "q1": {"d1": 2, "d0": 0}} == qrels
    assert (["q2", "q1"], ["d1", "d0"]) == (list(qrels), list(qrels["q1"]))


def test_any_whitespace_separates_fields(tmp_path: Path) -> None:
    """Tabs, runs of spaces and leading or trailing blanks all separate fields."""
    path = write(tmp_path, "  q1\t0   d1 \t1  \n")
    assert {"q1": {"d1": 1}} == read_trec_qrels(path)


@pytest.mark.parametrize("rel", ["1.5", "1_0", "٣", "true", "+", "nan"])
def test_grade_must_be_plain_integer(rel: str, tmp_path: Path) -> None:
    """A rel that is not ASCII digits with an optional sign raises InputError at its line."""
    path = write(tmp_path, f"q1 0 d1 1\nq1 0 d2 {rel}\n")
    with pytest.raises(InputError, match=r"run\.qrels:2: expected an integer grade"):
        read_trec_qrels(path)


@pytest.mark.parametrize("rel", ["+2", "-1", "007"])
def test_signed_and_padded_integers_are_grades(rel: str, tmp_path: Path) -> None:
    """A sign or leading zeros still make an integer grade."""
    assert {"q1": {"d1": int(rel)}} == read_trec_qrels(write(tmp_path, f"q1 0 d1 {rel}\n"))


@pytest.mark.parametrize(
    ("name", "line"),
    [
        ("short_line.qrels", 2),
        ("grade_float.qrels", 2),
        ("duplicate_pair.qrels", 4),
        ("empty.qrels", 1),
        ("not_utf8.qrels", 2),
    ],
)
def test_malformed_qrels_name_file_and_line(name: str, line: int) -> None:
    """Malformed qrels raise InputError naming the file and the line."""
    path = BAD / name
    with pytest.raises(InputError) as caught:
        read_trec_qrels(path)
    assert f"{path}:{line}: expected " == str(caught.value)[: len(f"{path}:{line}: expected ")]


def test_duplicate_pair_names_both_lines() -> None:
    """A repeated (qid, docno) pair names the line of the repeat and of the first."""
    with pytest.raises(InputError, match=r"duplicate_pair\.qrels:4: .*first on line 2"):
        read_trec_qrels(BAD / "duplicate_pair.qrels")


@pytest.mark.slow
def test_a_million_lines_load_in_well_under_two_seconds(tmp_path: Path) -> None:
    """A qrels file of one million lines loads in under 2 s of CPU (about 0.6 s on a laptop)."""
    lines = [f"q{q} 0 doc{q * 131 + d} {d % 3}\n" for q in range(10_000) for d in range(100)]
    path = tmp_path / "big.qrels"
    path.write_text("".join(lines), encoding="utf-8")
    # CPU time, not wall time: the other tests and processes sharing the cores must not
    # make the reader look slow.
    start = time.process_time()
    qrels = read_trec_qrels(path)
    elapsed = time.process_time() - start
    assert (10_000, 1_000_000) == (len(qrels), sum(len(j) for j in qrels.values()))
    assert elapsed < 2.0, f"took {elapsed:.2f} s"


def test_a_judged_query_id_starting_with_a_hash_is_not_written_to_qrels(tmp_path: Path) -> None:
    """Saving refuses a judged query whose id would make its qrels lines comments."""
    evalset = EvalSet("x")
    evalset.add("#1", "text", relevant=["d1"])
    with pytest.raises(UsageError, match="starts with '#'"):
        evalset.save(tmp_path / "set.qrels", queries=tmp_path / "set.tsv")
    assert [] == sorted(tmp_path.iterdir())
