"""The bundled Larkfield example: eval set, saved runs and passages, read as package data."""

from __future__ import annotations

import pytest

from monitor.errors import UsageError
from monitor.evalset import EvalSet
from monitor.evalset.bundled import (
    LARKFIELD_METHODS,
    data_path,
    larkfield_evalset,
    larkfield_passages,
    larkfield_run,
)

UNANSWERABLE = tuple(f"Q{n}" for n in range(14, 22))


def test_evalset_has_67_queries_in_id_order() -> None:
    """The set holds Q01..Q67 in id order."""
    assert tuple(f"Q{n:02d}" for n in range(1, 68)) == larkfield_evalset().ids


def test_evalset_is_named_larkfield() -> None:
    """The bundled set is called larkfield."""
    assert "larkfield" == larkfield_evalset().name


def test_59_queries_are_answerable() -> None:
    """59 queries have at least one relevant passage."""
    assert 59 == sum(query.answerable for query in larkfield_evalset())


def test_q14_to_q21_are_kept_without_relevant_passages() -> None:
    """The 8 unanswerable queries are in the set, with no judgment at all."""
    evalset = larkfield_evalset()
    assert {qid: {} for qid in UNANSWERABLE} == {
        qid: judgments for qid, judgments in evalset.qrels().items() if not judgments
    }


def test_89_relevance_labels_all_grade_one() -> None:
    """There are 89 relevance labels, each of grade 1."""
    grades = [grade for query in larkfield_evalset() for grade in query.judgments.values()]
    assert (89, {1}) == (len(grades), set(grades))


def test_metadata_holds_kind_and_language() -> None:
    """Each query's metadata is its kind and language, with the source's counts."""
    evalset = larkfield_evalset()
    kinds = [query.metadata["kind"] for query in evalset]
    assert {"kind", "language"} == {key for query in evalset for key in query.metadata}
    assert (8, 9) == (
        kinds.count("unanswerable"),
        [query.metadata["language"] for query in evalset].count("fr"),
    )


def test_unanswerable_queries_are_labelled_so() -> None:
    """Exactly the queries without judgments have kind 'unanswerable'."""
    evalset = larkfield_evalset()
    labelled = tuple(q.id for q in evalset if q.metadata["kind"] == "unanswerable")
    assert UNANSWERABLE == labelled


def test_bundled_file_loads_with_the_public_loader() -> None:
    """The packaged evalset.jsonl is a plain JSONL eval set with the same fingerprint."""
    loaded = EvalSet.load(data_path("larkfield", "evalset.jsonl"))
    assert larkfield_evalset().fingerprint == loaded.fingerprint


def test_methods_are_the_four_saved_runs() -> None:
    """Four methods ship: hybrid, keyword, rerank and vector."""
    assert ("hybrid", "keyword", "rerank", "vector") == LARKFIELD_METHODS


@pytest.mark.parametrize("method", LARKFIELD_METHODS)
def test_each_run_ranks_all_67_queries(method: str) -> None:
    """Every run has a ranking for every query id of the set."""
    assert set(larkfield_evalset().ids) == set(larkfield_run(method))


@pytest.mark.parametrize("method", LARKFIELD_METHODS)
def test_rankings_hold_known_passages_without_repeats(method: str) -> None:
    """Every ranked id is a bundled passage, and no list repeats one."""
    passages = {passage["id"] for passage in larkfield_passages()}
    rankings = larkfield_run(method).values()
    assert set() == {doc for ranked in rankings for doc in ranked} - passages
    assert [len(ranked) for ranked in rankings] == [len(set(ranked)) for ranked in rankings]


def test_keyword_q47_and_q63_are_short() -> None:
    """The keyword run returned 9 ids for Q47 and 6 for Q63; every other list has 10."""
    run = larkfield_run("keyword")
    lengths = {qid: len(ranked) for qid, ranked in run.items() if len(ranked) != 10}
    assert {"Q47": 9, "Q63": 6} == lengths


def test_run_is_a_fresh_copy() -> None:
    """Changing a returned run does not change the next one."""
    larkfield_run("vector")["Q01"].clear()
    assert 10 == len(larkfield_run("vector")["Q01"])


def test_unknown_method_lists_the_known_ones() -> None:
    """An unknown method raises UsageError naming it and listing the four known ones."""
    with pytest.raises(UsageError, match=r"'bm25'.*hybrid, keyword, rerank, vector"):
        larkfield_run("bm25")


def test_passages_have_the_documented_fields() -> None:
    """There are 174 passages, each with id, doc_id, section, version, language, access, text."""
    passages = larkfield_passages()
    fields = {"id", "doc_id", "section", "version", "language", "access", "text"}
    assert (174, [fields]) == (len(passages), [set(p) for p in passages][:1])
    assert all(set(passage) == fields for passage in passages)


def test_every_relevant_id_is_a_passage() -> None:
    """Each relevant id of the set names a bundled passage."""
    passages = {passage["id"] for passage in larkfield_passages()}
    relevant = {doc for query in larkfield_evalset() for doc in query.relevant_ids}
    assert set() == relevant - passages


def test_data_path_opens_with_open() -> None:
    """data_path() gives a path the built-in open() reads."""
    with open(data_path("larkfield", "README.md"), encoding="utf-8") as handle:
        readme = handle.read()
    assert "0b31e75d85df9187f25f828f929827c7265c1ce6" in readme
    assert "CC0" in readme


@pytest.mark.parametrize("parts", [("larkfield", "nope.json"), ("..", "errors.py"), ()])
def test_data_path_refuses_missing_or_outside_files(parts: tuple[str, ...]) -> None:
    """A missing file, a path leaving the data folder or no path raises UsageError."""
    with pytest.raises(UsageError):
        data_path(*parts)


def test_data_path_gives_the_folder_of_a_set() -> None:
    """data_path("larkfield") is a folder holding the eval set and the runs."""
    from monitor.evalset.bundled import data_path

    folder = data_path("larkfield")
    assert (folder / "evalset.jsonl").is_file()
    assert (folder / "runs" / "rerank.json").is_file()
