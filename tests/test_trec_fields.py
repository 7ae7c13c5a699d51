"""TREC qrels and runs are split and their numbers read as trec_eval (C) reads them, by every
reader: ``evaluate``'s column readers, the line reader, the replay search and the qrels reader."""

from __future__ import annotations

import ctypes
from pathlib import Path

import pytest

from monitor.errors import InputError
from monitor.evalset.trec import parse_qrels, parse_queries
from monitor.evalset.trec_fields import UNICODE_SPACES, c_double, c_long, split_fields
from monitor.judgments.files import read_grades
from monitor.metrics.evaluation import evaluate
from monitor.records import Query
from monitor.search.replay import ReplaySearch
from monitor.search.saved import load_run
from monitor.search.trec_arrow import read_trec_arrow
from monitor.search.trec_read import read_trec_columns

#: Characters Python's str.split() splits at and trec_eval does not (part of an id there).
NOT_SEPARATORS = ["\xa0", "\u2028", "\x85", "\u3000", "\x1c", "\x1d", "\x1e", "\x1f"]
QRELS = "q1 0 a 1\n"

_LIBC = ctypes.CDLL(None)
_LIBC.atof.restype, _LIBC.atof.argtypes = ctypes.c_double, [ctypes.c_char_p]
_LIBC.atol.restype, _LIBC.atol.argtypes = ctypes.c_long, [ctypes.c_char_p]


def write(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` as UTF-8 and return the path."""
    path.write_bytes(text.encode("utf-8"))
    return path


@pytest.mark.parametrize("char", NOT_SEPARATORS, ids=[f"U+{ord(c):04X}" for c in NOT_SEPARATORS])
def test_evaluate_keeps_an_id_holding_a_unicode_space_whole(tmp_path: Path, char: str) -> None:
    """An id holding a character trec_eval does not split at stays one id (rank 2: RR 0.5),
    in a file whose control byte (in a run tag) sends it to the line reader."""
    run = write(tmp_path / "r.trec", f"q1 Q0 x{char}y 1 3 t\x01\nq1 Q0 a 2 2 t\n")
    result = evaluate(write(tmp_path / "q.qrels", QRELS), run, ["mrr"])
    assert {"mrr": 0.5} == result.means


@pytest.mark.parametrize("char", NOT_SEPARATORS, ids=[f"U+{ord(c):04X}" for c in NOT_SEPARATORS])
def test_the_line_reader_keeps_an_id_holding_a_unicode_space_whole(
    tmp_path: Path, char: str
) -> None:
    """The line reader reads such an id as one field, and the score after it as the score."""
    run = write(tmp_path / "r.trec", f"q1 Q0 x{char}y 1 3 t\nq1 Q0 a 2 2 t\n")
    assert {"q1": [f"x{char}y", "a"]} == load_run(run)


@pytest.mark.parametrize("char", NOT_SEPARATORS, ids=[f"U+{ord(c):04X}" for c in NOT_SEPARATORS])
def test_replay_keeps_an_id_holding_a_unicode_space_whole(tmp_path: Path, char: str) -> None:
    """The replay search answers with the id whole, ranked by its score, from a file with a
    control byte (read by the line reader)."""
    run = write(tmp_path / "r.trec", f"q1 Q0 x{char}y 1 3 t\x01\nq1 Q0 a 2 2 t\n")
    hits = ReplaySearch.from_file(run)(Query("q1", "", {}), 10)
    assert [f"x{char}y", "a"] == [hit.id for hit in hits]


@pytest.mark.parametrize("char", NOT_SEPARATORS, ids=[f"U+{ord(c):04X}" for c in NOT_SEPARATORS])
def test_qrels_keep_an_id_holding_a_unicode_space_whole(char: str) -> None:
    """A qrels line whose doc id holds such a character has four fields."""
    assert {"q1": {f"d{char}1": 2}} == parse_qrels(f"q1 0 d{char}1 2\n", "q.qrels")


def test_a_queries_file_keeps_a_unicode_space_ending_a_query_id() -> None:
    """The queries file's ids are the qrels' ids: a trailing U+00A0 stays part of one."""
    assert {"q1\xa0": "text"} == parse_queries("q1\xa0\ttext\n", "queries.tsv")


def test_the_c_separators_split_fields() -> None:
    """Space, tab, CR, VT and FF separate fields, in runs of any length."""
    assert ["q", "0", "d", "1"] == split_fields(" q\t0\r\v\fd  1\r")


def test_every_character_str_split_takes_beyond_c_is_listed() -> None:
    """UNICODE_SPACES holds exactly the characters str.split() splits at and C does not."""
    python = {chr(c) for c in range(0x110000) if chr(c).isspace()}
    assert python - set(" \t\n\r\v\f") == set(UNICODE_SPACES)


@pytest.mark.parametrize("reader", ["line", "columns"])
def test_a_leading_byte_order_mark_is_dropped_from_a_run(tmp_path: Path, reader: str) -> None:
    """A run starting with a BOM has the query ids its qrels have (as pyarrow reads it)."""
    run = tmp_path / "r.trec"
    run.write_bytes(b"\xef\xbb\xbfq1 Q0 a 1 2 t\n")
    columns = read_trec_columns(run)
    ids = list(load_run(run)) if reader == "line" else list(columns.query_ids if columns else [])
    assert ["q1"] == ids


def test_a_nul_byte_in_a_run_is_refused_naming_the_line(tmp_path: Path) -> None:
    """A NUL (where trec_eval silently stops reading) is an error naming file and line."""
    run = write(tmp_path / "r.trec", "q1 Q0 a 1 2 t\nq1 Q0 b\0 2 1 t\n")
    with pytest.raises(InputError, match=r"r\.trec:2: .*NUL"):
        load_run(run)


def test_a_nul_byte_in_qrels_is_refused_naming_the_line() -> None:
    """A NUL in a qrels file is an error naming the line."""
    with pytest.raises(InputError, match=r"q\.qrels:3: .*NUL"):
        parse_qrels("q1 0 a 1\nq1 0 b 1\nq1 0 c\0 1\n", "q.qrels")


@pytest.mark.parametrize(
    ("score", "ranking"),
    [
        ("1_0", ["b", "a"]),  # atof reads 1 (Python's float 10)
        ("12abc", ["a", "b"]),  # atof reads 12
        ("1e", ["b", "a"]),  # an exponent without digits: 1
        ("0x10", ["a", "b"]),  # hexadecimal: 16
    ],
)
def test_a_score_is_read_as_atof_reads_it(tmp_path: Path, score: str, ranking: list[str]) -> None:
    """A score is its longest numeric prefix, as C's atof reads it (b scores 5)."""
    run = write(tmp_path / "r.trec", f"q1 Q0 a 1 {score} t\nq1 Q0 b 2 5 t\n")
    assert {"q1": ranking} == load_run(run)


def test_the_column_reader_reads_scores_as_atof(tmp_path: Path) -> None:
    """The numpy column reader reads an irregular score as the line reader does."""
    run = write(tmp_path / "r.trec", "q1 Q0 a 1 1_0 t\nq1 Q0 b 2 5 t\n")
    columns = read_trec_columns(run)
    assert columns is not None
    assert [5.0, 1.0] == columns.score.tolist()


def test_the_arrow_reader_leaves_an_irregular_score_to_the_others(tmp_path: Path) -> None:
    """pyarrow, which does not read 1_0 as atof does, hands the file on."""
    run = write(tmp_path / "r.trec", "q1 Q0 a 1 1_0 t\nq1 Q0 b 2 5 t\n")
    assert None is read_trec_arrow(run)


@pytest.mark.parametrize("score", ["\u0661", "\uff11", "abc", "_1"])
def test_a_score_without_an_ascii_number_is_refused(tmp_path: Path, score: str) -> None:
    """A score that starts with no ASCII number (a Unicode digit is none) names the line."""
    run = write(tmp_path / "r.trec", f"q1 Q0 a 1 1 t\nq1 Q0 b 2 {score} t\n")
    with pytest.raises(InputError, match=r"r\.trec:2: .*numeric score"):
        evaluate(write(tmp_path / "q.qrels", QRELS), run, ["mrr"])


@pytest.mark.parametrize(
    ("grade", "expected"), [("1e1", 1), ("2.5e1", 2), ("1.7", 1), ("-0.5", 0), ("3abc", 3)]
)
def test_truncate_reads_a_grade_as_atol_does(grade: str, expected: int) -> None:
    """--grades truncate reads a grade's integer prefix, as trec_eval's atol does."""
    assert {"q1": {"d": expected}} == parse_qrels(f"q1 0 d {grade}\n", "q", grades="truncate")


@pytest.mark.parametrize("grade", ["1e1", "10e-1", "2.5e1"])
def test_exact_refuses_a_grade_atol_reads_otherwise(grade: str) -> None:
    """By default a grade trec_eval would read as another integer is refused, naming it."""
    with pytest.raises(InputError, match=r"q\.qrels:1: .*atol"):
        parse_qrels(f"q1 0 d {grade}\n", "q.qrels")


@pytest.mark.parametrize(("grade", "expected"), [("1.0", 1), ("3e0", 3), ("+2", 2), ("-1", -1)])
def test_exact_reads_an_integral_grade_atol_agrees_with(grade: str, expected: int) -> None:
    """An integral decimal atol reads as the same integer is that grade."""
    assert {"q1": {"d": expected}} == parse_qrels(f"q1 0 d {grade}\n", "q.qrels")


@pytest.mark.parametrize("grade", ["\u0661", "1_0", "\uff12"])
def test_a_grade_of_non_ascii_digits_or_underscores_is_refused(grade: str) -> None:
    """Python's int() takes these; trec_eval's atol does not read them as the number."""
    with pytest.raises(InputError, match=r"q\.qrels:1: .*integer grade"):
        parse_qrels(f"q1 0 d {grade}\n", "q.qrels")


def test_judgment_files_split_trec_lines_as_trec_eval(tmp_path: Path) -> None:
    """A TREC grades file keeps an id holding U+00A0 whole."""
    grades = write(tmp_path / "g.qrels", "q1 0 d\xa01 2\n")
    assert {"q1": {"d\xa01": 2}} == read_grades(grades)


@pytest.mark.parametrize(
    "text",
    ["1_0", "12abc", "1e", "1e+", "0x10", "0x", "0x1p3", "0X.8P1", ".5", "-.5e-1x", "5.", "+3",
     "1e400", "-1e-400", "007", "3.14159265358979323846", "1" * 40, "0x1p99999", "-0x1p99999"],
)  # fmt: skip
def test_c_double_reads_what_libc_atof_reads(text: str) -> None:
    """c_double gives what the C library's atof gives on a literal with a numeric prefix."""
    assert _LIBC.atof(text.encode()) == c_double(text)


@pytest.mark.parametrize("text", ["1e1", "2.5", "-7x", "+0", "12abc", "00042", "1_0"])
def test_c_long_reads_what_libc_atol_reads(text: str) -> None:
    """c_long gives what the C library's atol gives on a literal starting with a digit."""
    assert _LIBC.atol(text.encode()) == c_long(text)


@pytest.mark.parametrize("text", ["", "abc", "-", "+.", "\u0661", "_1", "e5"])
def test_c_double_finds_no_number_where_atof_finds_no_digit(text: str) -> None:
    """A literal with no numeric prefix is None (atof would read 0)."""
    assert None is c_double(text)
