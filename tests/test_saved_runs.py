"""One reader for saved runs: ``evaluate`` and the ``replay`` search give the same answers.

Every row of the tables below is a saved run file. Both entry points read it: ``evaluate``
(what ``retrieval-monitor evaluate --run FILE`` calls) and a ``replay`` search built from it
(what a suite with ``search: {kind: replay, path: FILE}`` runs). They must rank every query
the same way, or refuse the file with the same InputError.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest

from monitor.cli import main
from monitor.errors import InputError, SearchSetupError
from monitor.metrics.evaluation import evaluate
from monitor.records import Query
from monitor.search import build_search
from monitor.search.replay import ReplaySearch

# name -> (file name, content, expected ranking of each query, best first)
READABLE = {
    "trec, ties by doc id descending": (
        "run.trec",
        "q1 Q0 d1 1 0.5 t\nq1 Q0 d3 2 0.9 t\nq1 Q0 d2 3 0.5 t\nq2 Q0 x 1 1 t\n",
        {"q1": ["d3", "d2", "d1"], "q2": ["x"]},
    ),
    "trec, negative and tiny scores": (
        "run.trec",
        "q Q0 a 1 -1e300 t\nq Q0 b 2 1e-400 t\nq Q0 c 3 -0.5 t\n",
        {"q": ["b", "c", "a"]},
    ),
    "json lists of ids": (
        "run.json",
        '{"q1": ["b", "a"], "q2": ["c"]}',
        {"q1": ["b", "a"], "q2": ["c"]},
    ),
    "json hit objects": (
        "run.json",
        '{"q1": [{"id": "a", "score": 0.1}, {"id": "b", "score": 2}]}',
        {"q1": ["a", "b"]},
    ),
    "json hit objects with and without score and text": (
        "run.json",
        '{"q1": [{"id": "c"}, {"id": "a", "score": null, "text": "t"}, {"id": "b"}]}',
        {"q1": ["c", "a", "b"]},
    ),
    "json score objects, ties by doc id descending": (
        "run.json",
        '{"q1": {"a": 1, "c": 2, "b": 1.0}, "q2": {"d10": 0.5, "d9": 0.5}}',
        {"q1": ["c", "b", "a"], "q2": ["d9", "d10"]},
    ),
    "json scores at the edge of a double": (
        "run.json",
        '{"q": {"a": 1.7976931348623157e308, "b": 1' + "0" * 300 + ', "c": -1e308}}',
        {"q": ["a", "b", "c"]},
    ),
    "json read by content, whatever the suffix": (
        "run.trec",
        '  {"q1": ["a"]}',
        {"q1": ["a"]},
    ),
}

FINITE_TREC = "a finite score in field 5"

# name -> (file name, content, what the error names after the file: ":line: ..." or ": ...")
REFUSED = {
    "trec nan": ("run.trec", "q Q0 a 1 1.0 t\nq Q0 b 2 nan t\n", f":2: expected {FINITE_TREC}"),
    "trec inf": ("run.trec", "q Q0 a 1 inf t\n", f":1: expected {FINITE_TREC}, found 'inf'"),
    "trec -inf": ("run.trec", "q Q0 a 1 1 t\nq Q0 b 2 -inf t\n", f":2: expected {FINITE_TREC}"),
    "trec Infinity": ("run.trec", "q Q0 a 1 Infinity t\n", f":1: expected {FINITE_TREC}"),
    "trec 1e400": ("run.trec", "q Q0 a 1 1e400 t\n", f":1: expected {FINITE_TREC}, found '1e400'"),
    "trec -1e400": ("run.trec", "q Q0 a 1 -1e400 t\n", f":1: expected {FINITE_TREC}"),
    "trec word score": ("run.trec", "q Q0 a 1 high t\n", ":1: expected a numeric score in field 5"),
    "json ids and hit objects mixed": (
        "run.json",
        '{"q1": ["c", {"id": "a"}]}',
        ": expected a ranking for query 'q1' of doc id strings or of hit objects, not both",
    ),
    "json NaN score": (
        "run.json",
        '{"q1": {"a": NaN}}',
        ": expected a finite score for query 'q1', document 'a', found nan",
    ),
    "json Infinity score": (
        "run.json",
        '{"q1": {"b": 1.0, "a": Infinity}}',
        ": expected a finite score for query 'q1', document 'a', found inf",
    ),
    "json -Infinity score": (
        "run.json",
        '{"q1": {"a": -Infinity}}',
        ": expected a finite score for query 'q1', document 'a', found -inf",
    ),
    "json 1e400 score": (
        "run.json",
        '{"q1": {"a": 1e400}}',
        ": expected a finite score for query 'q1', document 'a'",
    ),
    "json integer too large for a double": (
        "run.json",
        '{"q1": {"a": 1' + "0" * 400 + "}}",
        ": expected a finite score for query 'q1', document 'a'",
    ),
    "json NaN in a hit object": (
        "run.json",
        '{"q1": [{"id": "a", "score": 1}, {"id": "b", "score": NaN}]}',
        ": expected a finite score for query 'q1', document 'b', found nan",
    ),
    "json -1e400 in a hit object": (
        "run.json",
        '{"q1": [{"id": "a", "score": -1e400}]}',
        ": expected a finite score for query 'q1', document 'a', found -inf",
    ),
    "json string score": ("run.json", '{"q1": {"a": "high"}}', ": expected a numeric score"),
    "json bool score": ("run.json", '{"q1": {"a": true}}', ": expected a numeric score"),
    "json integer ids": ("run.json", '{"q1": [1, 2]}', ": expected a ranking for query 'q1'"),
    "json empty doc id": ("run.json", '{"q1": ["", "a"]}', ": expected a ranking for query 'q1'"),
    "json empty doc id in a score object": (
        "run.json",
        '{"q1": {"": 1.0}}',
        ": expected a non-empty doc id for query 'q1'",
    ),
    "json string ranking": ("run.json", '{"q1": "a"}', ": expected a list of hits or a"),
    "json array": ("run.json", '[["a"]]', ": expected a JSON object"),
    "json syntax": ("run.json", '{"q1": ["a",\n]}', ":2: expected valid JSON"),
}


def write(tmp_path: Path, name: str, content: str) -> Path:
    """Write ``content`` to ``tmp_path / name`` and return the path."""
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    return path


def ranking_seen_by_evaluate(path: Path, docs: dict[str, list[str]]) -> dict[str, list[str]]:
    """Return each query's ``docs`` in the order ``evaluate`` ranks them in the run at ``path``.

    Judging one document at a time relevant, the reciprocal rank gives its rank; documents
    ``evaluate`` did not find in the run are left out.
    """
    ranks: dict[str, list[tuple[float, str]]] = {qid: [] for qid in docs}
    for qid, ids in docs.items():
        for doc in ids:
            mrr = evaluate({qid: {doc: 1}}, path, ["mrr"]).value("mrr", qid)
            if mrr > 0:
                ranks[qid].append((1 / mrr, doc))
    return {qid: [doc for _, doc in sorted(found)] for qid, found in ranks.items()}


def ranking_seen_by_replay(path: Path, qids: list[str]) -> dict[str, list[str]]:
    """Return the doc ids a replay of the run at ``path`` answers each query with."""
    search = cast("ReplaySearch", build_search("replay", {"path": str(path)}))
    return {qid: [hit.id for hit in search(Query(qid, ""), 1000)] for qid in qids}


@pytest.mark.parametrize(("name", "content", "expected"), READABLE.values(), ids=list(READABLE))
def test_evaluate_ranks_a_saved_run_as_documented(
    tmp_path: Path, name: str, content: str, expected: dict[str, list[str]]
) -> None:
    """evaluate ranks each query of a saved run in the documented order."""
    path = write(tmp_path, name, content)
    assert expected == ranking_seen_by_evaluate(path, expected)


@pytest.mark.parametrize(("name", "content", "expected"), READABLE.values(), ids=list(READABLE))
def test_replay_answers_a_saved_run_as_documented(
    tmp_path: Path, name: str, content: str, expected: dict[str, list[str]]
) -> None:
    """A replay answers each query of a saved run with the documented ranking."""
    path = write(tmp_path, name, content)
    assert expected == ranking_seen_by_replay(path, list(expected))


@pytest.mark.parametrize(("name", "content", "where"), REFUSED.values(), ids=list(REFUSED))
def test_evaluate_and_replay_refuse_a_bad_run_alike(
    tmp_path: Path, name: str, content: str, where: str
) -> None:
    """evaluate and replay refuse a bad run with the same InputError, naming file and place."""
    path = write(tmp_path, name, content)
    with pytest.raises(InputError) as by_evaluate:
        evaluate({"q1": {"a": 1}}, path, ["mrr"])
    with pytest.raises(SearchSetupError) as by_replay:
        build_search("replay", {"path": str(path)})
    assert str(by_evaluate.value) == str(by_replay.value.__cause__)
    assert str(by_evaluate.value).startswith(f"{path}{where}")


@pytest.mark.parametrize(
    "content",
    ['{"q1": {"a": NaN}}', "q1 Q0 a 1 1e400 t\n"],
    ids=["json", "trec"],
)
def test_evaluate_command_refuses_a_non_finite_score_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str
) -> None:
    """`retrieval-monitor evaluate` exits 2 on a non-finite score, naming the file."""
    qrels = write(tmp_path, "test.qrels", "q1 0 a 1\n")
    run = write(tmp_path, "run.txt", content)
    code = main(["evaluate", "--qrels", str(qrels), "--run", str(run)])
    err = capsys.readouterr().err
    assert (2, True, False) == (code, "a finite score" in err, "Traceback" in err)
    assert str(run) in err
