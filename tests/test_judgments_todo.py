"""The labeling queue and the grade files it comes back as."""

from __future__ import annotations

import csv
import io
from datetime import datetime, timezone
from pathlib import Path

import pytest

from monitor.errors import InputError
from monitor.evalset import EvalSet
from monitor.judgments.files import read_grades
from monitor.judgments.todo import TODO_COLUMNS, todo_items, write_todo
from monitor.store import QueryRecord, RunRecord

T0 = datetime(2024, 5, 1, 3, 0, tzinfo=timezone.utc)


def evalset() -> EvalSet:
    out = EvalSet("s")
    out.add("q1", "first", relevant={"d1": 1, "d0": 0})
    out.add("q2", "second", relevant={"d2": 1})
    return out


def run(pipeline: str, **rankings: list[str]) -> RunRecord:
    return RunRecord(
        suite="s",
        pipeline=pipeline,
        started_at=T0,
        finished_at=T0,
        queries=tuple(QueryRecord(qid, retrieved_ids=tuple(ids)) for qid, ids in rankings.items()),
    )


def test_the_queue_pools_unjudged_pairs_by_best_rank_then_query() -> None:
    """Judged pairs (grade 0 too) are left out; the rest come by best rank, then query id."""
    runs = [run("new", q1=["d0", "x", "d1"], q2=["y", "x"]), run("old", q1=["x"], q2=["d2", "z"])]
    got = [(i.query_id, i.doc_id, i.best_rank, i.pipelines) for i in todo_items(evalset(), runs)]
    assert [
        ("q1", "x", 1, ("new", "old")),
        ("q2", "y", 1, ("new",)),
        ("q2", "x", 2, ("new",)),
        ("q2", "z", 2, ("old",)),
    ] == got


def test_the_queue_stops_at_the_depth() -> None:
    """Only the top ``depth`` of each ranking is pooled."""
    items = todo_items(evalset(), [run("p", q2=["a", "b", "c"])], depth=2)
    assert ["a", "b"] == [item.doc_id for item in items]


def test_the_queue_takes_document_texts_from_the_seam() -> None:
    """The doc text column is what the ``doc_text`` callable knows."""
    items = todo_items(evalset(), [run("p", q2=["a", "b"])], doc_text={"a": "text a"}.get)
    assert ["text a", None] == [item.doc_text for item in items]


def test_the_csv_has_an_empty_grade_column_to_fill_in() -> None:
    """The CSV header is the documented columns and every grade cell is empty."""
    text = write_todo(todo_items(evalset(), [run("p", q2=["a"])]), "csv")
    rows = list(csv.reader(io.StringIO(text)))
    assert (list(TODO_COLUMNS), "") == (rows[0], rows[1][-1])


def test_a_filled_csv_reads_back_as_grades_skipping_empty_cells(tmp_path: Path) -> None:
    """Filled rows become grades; rows left empty are skipped."""
    items = todo_items(evalset(), [run("p", q2=["a", "b"])])
    text = write_todo(items, "csv").splitlines()
    text[1] += "2"
    path = tmp_path / "filled.csv"
    path.write_text("\n".join(text) + "\n")
    assert {"q2": {"a": 2}} == read_grades(path)


@pytest.mark.parametrize(
    ("name", "content", "grades"),
    [
        ("g.jsonl", '{"query_id": "q1", "doc_id": "a", "grade": 1}\n', {"q1": {"a": 1}}),
        ("g.qrels", "q1 0 a 2\nq1 0 b -1\n", {"q1": {"a": 2}}),
    ],
)
def test_jsonl_and_qrels_files_read_as_grades(
    tmp_path: Path, name: str, content: str, grades: dict[str, dict[str, int]]
) -> None:
    """JSONL objects and TREC qrels lines give grades; the queue's -1 means ungraded."""
    path = tmp_path / name
    path.write_text(content)
    assert grades == read_grades(path)


@pytest.mark.parametrize(
    ("name", "content", "where"),
    [
        ("g.csv", "query_id,doc_id,grade\nq1,a,high\n", "g.csv:2"),
        ("g.jsonl", '{"query_id": "q1", "doc_id": "a", "grade": 1}\n[1]\n', "g.jsonl:2"),
        ("g.qrels", "q1 0 a 1\nq1 0 a 0\n", "g.qrels:2"),
        ("g.qrels", "q1 a 1\n", "g.qrels:1"),
    ],
)
def test_a_bad_grade_file_names_the_file_and_line(
    tmp_path: Path, name: str, content: str, where: str
) -> None:
    """A bad grade, a non-object line, two grades for one pair or a short line name the line."""
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(InputError) as caught:
        read_grades(path)
    assert str(caught.value).startswith(str(tmp_path / where) + ": expected")


def test_a_filled_jsonl_queue_reads_back_as_grades(tmp_path: Path) -> None:
    """The JSONL queue with one grade set gives that grade; null grades are skipped."""
    lines = write_todo(todo_items(evalset(), [run("p", q2=["a", "b"])]), "jsonl").splitlines()
    lines[1] = lines[1].replace('"grade": null', '"grade": 1')
    path = tmp_path / "filled.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert {"q2": {"b": 1}} == read_grades(path)
