"""Judgments are read as trec_eval 10 reads them: comments, decimal grades, compression, dicts."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
from collections.abc import Callable
from pathlib import Path

import pytest

from monitor.errors import InputError, UsageError
from monitor.evalset import EvalSet, read_trec_qrels
from monitor.evalset.formats import read_qrels

COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {
    ".gz": gzip.compress,
    ".bz2": bz2.compress,
    ".xz": lzma.compress,
    ".lzma": lambda data: lzma.compress(data, format=lzma.FORMAT_ALONE),
}


def write(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` (compressed when its suffix says so) and return it."""
    data = text.encode("utf-8")
    compress = COMPRESSORS.get(path.suffix)
    path.write_bytes(compress(data) if compress else data)
    return path


def test_comment_lines_are_skipped(tmp_path: Path) -> None:
    """A line whose first field starts with # is a comment, wherever it is."""
    path = write(tmp_path / "q.qrels", "# header\nq1 0 d1 1\n  # indented a b c\nq1 0 d2 0\n")
    assert {"q1": {"d1": 1, "d2": 0}} == read_trec_qrels(path)


def test_a_hash_inside_a_doc_id_is_no_comment(tmp_path: Path) -> None:
    """Only a leading # makes a comment: ids such as msmarco passages keep theirs."""
    path = write(tmp_path / "q.qrels", "q1 0 doc#4_163 2\n")
    assert {"q1": {"doc#4_163": 2}} == read_trec_qrels(path)


@pytest.mark.parametrize(("rel", "grade"), [("1.0", 1), ("2.", 2), ("-1.0", -1), ("3e0", 3)])
def test_integral_decimal_grades_read_as_integers(tmp_path: Path, rel: str, grade: int) -> None:
    """A grade written as an integral decimal is that integer."""
    path = write(tmp_path / "q.qrels", f"q1 0 d1 {rel}\n")
    assert {"q1": {"d1": grade}} == read_trec_qrels(path)


def test_fractional_grade_names_the_line_and_the_option(tmp_path: Path) -> None:
    """A fractional grade is refused at its line, saying how to read it anyway."""
    path = write(tmp_path / "q.qrels", "q1 0 d1 1\nq1 0 d2 0.5\n")
    with pytest.raises(InputError, match=r"q\.qrels:2: .*--grades truncate.*found '0\.5'"):
        read_trec_qrels(path)


@pytest.mark.parametrize(("rel", "grade"), [("1.7", 1), ("0.5", 0), ("-0.5", 0), ("2.0", 2)])
def test_truncate_cuts_grades_toward_zero(tmp_path: Path, rel: str, grade: int) -> None:
    """With grades="truncate" a decimal grade is cut toward zero, as atol reads it."""
    path = write(tmp_path / "q.qrels", f"q1 0 d1 {rel}\n")
    assert {"q1": {"d1": grade}} == read_trec_qrels(path, grades="truncate")


def test_truncate_still_refuses_a_word(tmp_path: Path) -> None:
    """Truncation applies to numbers only: a word is still an error at its line."""
    path = write(tmp_path / "q.qrels", "q1 0 d1 high\n")
    with pytest.raises(InputError, match=r"q\.qrels:1: expected an integer grade"):
        read_trec_qrels(path, grades="truncate")


def test_unknown_grades_mode_is_a_usage_error(tmp_path: Path) -> None:
    """A grades mode other than exact or truncate names the known ones."""
    path = write(tmp_path / "q.qrels", "q1 0 d1 1\n")
    with pytest.raises(UsageError, match="known modes: exact, truncate"):
        read_qrels(path, grades="round")


@pytest.mark.parametrize("suffix", list(COMPRESSORS))
def test_compressed_qrels_read_like_plain(tmp_path: Path, suffix: str) -> None:
    """Qrels compressed by any supported codec read as the plain file."""
    path = write(tmp_path / f"judgments.qrels{suffix}", "# c\nq1 0 d1 1\nq2 0 d9 0\n")
    assert {"q1": {"d1": 1}, "q2": {"d9": 0}} == read_qrels(path)


@pytest.mark.parametrize("suffix", [".gz", ".xz"])
def test_compressed_eval_set_keeps_its_format_and_name(tmp_path: Path, suffix: str) -> None:
    """An eval set's format and default name come from the suffix beneath the compression."""
    line = json.dumps({"id": "q1", "query": "a", "relevant": {"d1": 2}})
    path = write(tmp_path / f"nightly.jsonl{suffix}", line + "\n")
    evalset = EvalSet.load(path)
    assert ("nightly", {"q1": {"d1": 2}}) == (evalset.name, evalset.qrels())


def test_corrupt_archive_names_the_file(tmp_path: Path) -> None:
    """A file whose suffix says gzip but whose bytes are not is an InputError naming it."""
    path = tmp_path / "q.qrels.gz"
    path.write_bytes(b"not gzip at all")
    with pytest.raises(InputError, match=r"q\.qrels\.gz: expected a \.gz compressed file"):
        read_qrels(path)


def test_dict_qrels_json_reads_as_ranx_writes_it(tmp_path: Path) -> None:
    """A JSON {qid: {doc: grade}} file is judgments, integral floats included."""
    path = write(tmp_path / "qrels.json", json.dumps({"q1": {"d1": 1, "d2": 0.0}, "q2": {}}))
    assert {"q1": {"d1": 1, "d2": 0}, "q2": {}} == read_qrels(path)


def test_dict_qrels_json_refuses_a_fractional_grade_unless_truncated(tmp_path: Path) -> None:
    """A fractional dict grade names the query and document; truncate cuts it."""
    path = write(tmp_path / "qrels.json.gz", json.dumps({"q1": {"d1": 1.5}}))
    with pytest.raises(InputError, match=r"query 'q1', document 'd1'.*--grades truncate"):
        read_qrels(path)
    assert {"q1": {"d1": 1}} == read_qrels(path, grades="truncate")


@pytest.mark.parametrize("grade", [True, "1", None])
def test_dict_qrels_json_refuses_a_grade_that_is_no_number(tmp_path: Path, grade: object) -> None:
    """A boolean, string or null grade is refused naming the query and document."""
    path = write(tmp_path / "qrels.json", json.dumps({"q1": {"d1": grade}}))
    with pytest.raises(InputError, match="a numeric grade for query 'q1', document 'd1'"):
        read_qrels(path)


def test_json_eval_set_is_still_an_eval_set(tmp_path: Path) -> None:
    """A JSON eval set (a name and a list of queries) is not mistaken for dict qrels."""
    document = {"name": "s", "queries": [{"id": "q1", "query": "a", "relevant": ["d1"]}]}
    path = write(tmp_path / "set.json", json.dumps(document))
    assert {"q1": {"d1": 1}} == read_qrels(path)


@pytest.mark.parametrize("suffix", list(COMPRESSORS))
def test_saved_eval_set_is_compressed_as_its_suffix_names(tmp_path: Path, suffix: str) -> None:
    """EvalSet.save to a compressed name writes an archive that loads back the same."""
    original = EvalSet.parse('{"id": "q1", "query": "a", "relevant": {"d1": 2}}\n', "jsonl")
    path = tmp_path / f"set.jsonl{suffix}"
    original.save(path)
    assert not path.read_bytes().startswith(b"{")
    assert original.qrels() == EvalSet.load(path).qrels()
