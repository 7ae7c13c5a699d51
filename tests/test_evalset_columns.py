"""An eval set read into columns: the same queries, look-ups, digests and scores as records."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor import evaluate
from monitor.compare.coverage import pooled_qrels
from monitor.compare.diff import segment_labels
from monitor.evalset import EvalSet
from monitor.evalset._documents import read_jsonl_lines
from monitor.evalset._jsonl_columns import Columns, read_jsonl
from monitor.evalset.columns import EvalColumns
from monitor.records import Query, relevant_columns
from monitor.runner import run_queries
from monitor.search.replay import ReplaySearch
from monitor.texts import pack_ids, pack_texts

#: Graded and listed judgments, grade 0 and negative grades, a query judged by nothing, a
#: non-ASCII id and an id longer than two words, metadata shared and not.
LINES = [
    {"id": "q1", "query": "café hours", "relevant": {"d1": 2, "d2": 0, "dé": 1}},
    {"id": "q2", "query": "x", "relevant": ["d3", "d4"], "metadata": {"kind": "nav"}},
    {"id": "q3", "query": "", "metadata": {"kind": "nav"}},
    {"id": "q4", "query": "long", "relevant": {"a-doc-id-longer-than-sixteen-bytes": 3, "d1": -1}},
    {"id": "q5", "query": "five", "relevant": {"d5": 1}, "metadata": {"kind": "how", "n": 2}},
]
TEXT = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in LINES)
RUN = """\
q1 Q0 d2 1 0.9 t
q1 Q0 dé 2 0.8 t
q1 Q0 d1 3 0.7 t
q2 Q0 d4 1 0.9 t
q2 Q0 zz 2 0.8 t
q3 Q0 d9 1 0.5 t
q4 Q0 d1 1 0.9 t
q4 Q0 a-doc-id-longer-than-sixteen-bytes 2 0.8 t
q5 Q0 d6 1 0.9 t
"""


def _columnar(tmp_path: Path, text: str = TEXT) -> EvalSet:
    path = tmp_path / "set.jsonl"
    path.write_text(text, encoding="utf-8")
    evalset = EvalSet.load(path)
    return evalset


def _records(text: str = TEXT) -> list[Query]:
    return [entry.query for entry in read_jsonl_lines(text, "<set>")]


def test_columns_read_the_queries_the_line_reader_reads() -> None:
    """Each query of the columns is the record the standard reader builds from its line."""
    read = read_jsonl(TEXT, "<set>")
    assert isinstance(read, Columns)
    columns = read.queries
    assert _records() == list(columns)
    assert _records() == [columns[i] for i in range(len(columns))]
    assert tuple(_records()[1:4]) == columns[1:4]
    assert (1, 2, 3, 4, 5) == read.lines


def test_a_columnar_set_answers_every_look_up_as_a_set_of_records(tmp_path: Path) -> None:
    """Length, ids, indexing, membership, judgments and the fingerprint match a set built
    from the same records."""
    columnar = _columnar(tmp_path)
    records = EvalSet("set", _records())
    assert len(records) == len(columnar)
    assert records.ids == columnar.ids
    assert records["q4"] == columnar["q4"]
    assert records[-1] == columnar[-1]
    assert columnar.get("nope") is None
    assert "q2" in columnar
    assert "nope" not in columnar
    assert 3 not in columnar
    assert records["q1"] in columnar
    assert Query("q1", "other text") not in columnar
    assert dict(records.qrels()) == dict(columnar.qrels())
    assert records.fingerprint == columnar.fingerprint
    assert list(records) == list(columnar)
    assert records == columnar
    with pytest.raises(KeyError):
        columnar["nope"]


def test_a_query_added_to_a_columnar_set_joins_its_records(tmp_path: Path) -> None:
    """Adding builds the records once; the set then holds both the old and the new query."""
    columnar = _columnar(tmp_path)
    before = columnar.fingerprint
    columnar.add("q6", "six", relevant=["d6"])
    assert ("q1", "q2", "q3", "q4", "q5", "q6") == columnar.ids
    assert {"d6": 1} == dict(columnar["q6"].judgments)
    assert before != columnar.fingerprint
    assert ("q1", "q2", "q3", "q4", "q5", "q6") == columnar.columns().ids


def test_position_finds_each_id_and_nothing_else(tmp_path: Path) -> None:
    """Every id is found at its position; another string, or no string, is not found."""
    columns = _columnar(tmp_path).columns()
    assert [0, 1, 2, 3, 4] == [columns.position(q) for q in columns.ids]
    assert columns.position("q") is None
    assert columns.position(1) is None


def test_relevant_words_are_the_relevant_ids_packed() -> None:
    """Each query's relevant ids (grade >= 1) come out packed as the store packs ids."""
    columns = EvalColumns.of(_records())
    counts, words = columns.relevant_words()
    judged, relevant = relevant_columns(_records())
    assert judged == counts.tolist()
    assert pack_ids(relevant).tolist() == words.tolist()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30)))
def test_packed_docs_are_the_texts_packed(docs: list[str]) -> None:
    """Judged docs packed from the columns' bytes are the words their strings pack into,
    cut at the width when longer."""
    queries = [Query(f"q{i}", "", {doc: 1}) for i, doc in enumerate(dict.fromkeys(docs))]
    columns = EvalColumns.of(queries)
    unique = list(dict.fromkeys(docs))
    for width in (1, 2, 3):
        lengths, words = columns.docs().packed(width)
        want_lengths, want_words = pack_texts(unique, width)
        assert want_lengths.tolist() == lengths.tolist()
        assert want_words.tolist() == words.tolist()
    assert unique == list(columns.docs())


def test_scores_from_columns_are_the_scores_from_records(tmp_path: Path) -> None:
    """A bulk-answered run of a columnar set scores as the same run of a set of records:
    grade 0, negative grades and unjudged queries included."""
    run = tmp_path / "run.trec"
    run.write_text(RUN, encoding="utf-8")
    columnar = _columnar(tmp_path)
    records = EvalSet("set", _records())
    metrics = ["ndcg@10", "recall@5", "mrr@10", "precision@2", "judged@3", "bpref"]
    for average in ("answerable", "all", "trec_eval"):
        got = evaluate(
            columnar,
            run_queries(columnar.columns(), ReplaySearch.from_file(run, "trec"), k=5),
            metrics,
            average=average,
        )
        want = evaluate(
            records,
            run_queries(records, ReplaySearch.from_file(run, "trec"), k=5),
            metrics,
            average=average,
        )
        assert want.query_ids == got.query_ids
        assert want.counts == got.counts
        for metric in want.metrics:
            assert want.values[metric].tolist() == got.values[metric].tolist()


def test_segments_and_pooled_judgments_read_from_columns(tmp_path: Path) -> None:
    """The comparison's segment labels and pooled judgments are those of the records."""
    columns = _columnar(tmp_path).columns()
    records = _records()
    metadata = {q.id: q.metadata for q in records}
    for ids in (list(columns.ids), ["q5", "q1", "missing"]):
        want = segment_labels(ids, ["kind", "n"], metadata)
        got = segment_labels(ids, ["kind", "n"], columns.by_id(columns.metadata))
        assert {k: (v[0].tolist(), v[1]) for k, v in want.items()} == {
            k: (v[0].tolist(), v[1]) for k, v in got.items()
        }
    want_pooled = pooled_qrels({q.id: q.judgments for q in records})
    assert {k: dict(v) for k, v in want_pooled.items()} == {
        k: dict(v) for k, v in pooled_qrels(columns.qrels()).items()
    }
    assert ["q1", "q4"] == list(want_pooled)


def test_columns_of_no_query_hold_empty_arrays() -> None:
    """Columns of no query have no judgment, and their records are an empty list."""
    columns = EvalColumns.of([])
    assert 0 == len(columns)
    assert [] == columns.records()
    assert (0,) == columns.relevant_words()[0].shape
    assert np.array_equal(np.zeros(0, dtype=np.int64), columns.grades)


def test_digests_from_columns_are_the_digests_from_records(tmp_path: Path) -> None:
    """The fingerprint and both labels of a set held as columns are those of its records,
    for ids out of code point order and judgments out of doc order."""
    from monitor.judgments import labels_of

    lines = [LINES[4], LINES[0], *LINES[1:4], {"id": "Q0", "query": "é", "relevant": ["z", "a"]}]
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    columnar = _columnar(tmp_path, text)
    records = EvalSet("set", _records(text))
    assert records.fingerprint == columnar.fingerprint
    assert labels_of(records) == labels_of(columnar)


def test_a_shard_of_a_columnar_set_is_the_shard_of_its_records(tmp_path: Path) -> None:
    """Each shard's slice taken from the columns holds the queries a slice of records does,
    in the same order, and the slices together hold every query once."""
    from monitor.job.shards import Shard, select

    columnar = _columnar(tmp_path)
    records = EvalSet("set", _records())
    seen: list[str] = []
    for index in range(3):
        part = select(columnar, Shard(index, 3))
        assert list(select(records, Shard(index, 3))) == list(part)
        seen += part.ids
    assert sorted(columnar.ids) == sorted(seen)
    picked = columnar.columns().take([4, 0, 3])
    assert [_records()[i] for i in (4, 0, 3)] == list(picked)
