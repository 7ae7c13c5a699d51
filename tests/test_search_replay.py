"""The replay search kind: TREC and JSON runs, trec_eval's order, the Larkfield runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monitor import evaluate
from monitor.errors import InputError, SearchSetupError
from monitor.evalset.bundled import LARKFIELD_METHODS, larkfield_evalset, larkfield_run
from monitor.records import Hit, Query
from monitor.runner import run_queries
from monitor.search import build_search, wants_query
from monitor.search.replay import ReplaySearch
from monitor.search.saved import load_hits


def write(tmp_path: Path, name: str, text: str) -> Path:
    """Write ``text`` to a file in ``tmp_path`` and return its path."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_trec_run_ranks_by_score_then_doc_id_descending(tmp_path: Path) -> None:
    """The rank column is ignored; ties on score go to the larger doc id first (trec_eval)."""
    path = write(
        tmp_path,
        "run.trec",
        "q1 Q0 d1 1 0.5 tag\nq1 Q0 d3 2 0.9 tag\nq1 Q0 d2 3 0.5 tag\nq2 Q0 x 1 1 tag\n",
    )
    assert {
        "q1": [Hit("d3", 0.9), Hit("d2", 0.5), Hit("d1", 0.5)],
        "q2": [Hit("x", 1.0)],
    } == load_hits(path)


def test_json_lists_keep_their_order(tmp_path: Path) -> None:
    """A JSON list is the ranking as given, of ids or of hit objects."""
    path = write(tmp_path, "run.json", json.dumps({"q1": [{"id": "b"}, {"id": "a", "score": 0.1}]}))
    assert {"q1": [Hit("b"), Hit("a", 0.1)]} == load_hits(path)


def test_json_score_maps_rank_like_trec(tmp_path: Path) -> None:
    """A {doc: score} object ranks by score, ties by doc id descending."""
    path = write(tmp_path, "run.json", json.dumps({"q1": {"a": 1, "c": 2, "b": 1}}))
    assert {"q1": [Hit("c", 2.0), Hit("b", 1.0), Hit("a", 1.0)]} == load_hits(path)


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [
        ("run.trec", "q1 Q0 d1 1 0.5 tag\nq1 Q0 d2 2\n", 2),
        ("run.trec", "q1 Q0 d1 1 high tag\n", 1),
        ("run.json", '{"q1": [1, 2]}', None),
        ("run.json", '{"q1": ', 1),
        ("run.json", '["a"]', None),
    ],
    ids=["short-line", "bad-score", "int-ids", "bad-json", "not-object"],
)
def test_malformed_runs_raise_input_errors(
    tmp_path: Path, name: str, text: str, line: int | None
) -> None:
    """A malformed run names the file and, where known, the line."""
    path = write(tmp_path, name, text)
    with pytest.raises(InputError) as caught:
        load_hits(path)
    assert (str(path), line) == (caught.value.source, caught.value.line)


def test_replay_takes_the_query_and_answers_by_id(tmp_path: Path) -> None:
    """A replay asks for the Query and answers with its saved ranking cut to k."""
    search = build_search("replay", {"path": str(write(tmp_path, "r.json", '{"q1": ["a", "b"]}'))})
    assert wants_query(search)
    assert (Hit("a"),) == search(Query("q1", "text"), 1)  # type: ignore[arg-type]


def test_replay_answers_unknown_queries_with_nothing() -> None:
    """A query the run does not hold gets no hits, as trec_eval counts it."""
    assert () == ReplaySearch({"q1": ["a"]})(Query("q2", "text"), 10)


def test_replay_reports_its_source_in_stats() -> None:
    """stats() names where the run came from and its size."""
    assert {"replay_source": "<run>", "replay_queries": 1} == ReplaySearch({"q": []}).stats()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"path": "/no/such/run.trec"}, "expected a readable run file"),
        ({}, "'path': expected a run file"),
        ({"path": "x", "format": "csv"}, "'format': expected auto or trec or json"),
        ({"bundled": "larkfield/nope"}, "unknown Larkfield method 'nope'"),
        ({"bundled": "other/keyword"}, "'bundled': expected larkfield/<method>"),
    ],
    ids=["missing-file", "no-path", "format", "bundled-method", "bundled-set"],
)
def test_replay_setup_errors(options: dict[str, object], message: str) -> None:
    """A replay that cannot load its run is a setup error."""
    with pytest.raises(SearchSetupError, match=message):
        build_search("replay", options)


@pytest.mark.parametrize("method", LARKFIELD_METHODS)
def test_replaying_a_larkfield_run_scores_like_the_run_itself(method: str) -> None:
    """Running the Larkfield set through a replay gives the saved run's metrics exactly."""
    evalset = larkfield_evalset()
    search = build_search("replay", {"bundled": f"larkfield/{method}"})
    result = run_queries(evalset, search, k=10, progress=False)
    metrics = ["recall@5", "ndcg@10", "mrr"]
    assert evaluate(evalset, larkfield_run(method), metrics=metrics).means == (
        evaluate(evalset, result, metrics=metrics).means
    )
    assert (67, 0) == (result.total, result.failed)


def test_larkfield_keyword_short_lists_stay_short() -> None:
    """The keyword run's short lists (Q47: 9, Q63: 6) replay as they are."""
    result = run_queries(
        larkfield_evalset(),
        build_search("replay", {"bundled": "larkfield/keyword"}),
        k=10,
        progress=False,
    )
    lengths = {o.query_id: len(o.hits) for o in result.outcomes}
    assert (9, 6, 0) == (lengths["Q47"], lengths["Q63"], result.empty)


def test_replay_declares_that_it_answers_from_memory() -> None:
    """A replay search tells the runner it needs no worker thread."""
    from monitor.search.base import answers_in_memory

    assert True is answers_in_memory(ReplaySearch({"q1": ["d1"]}))


def test_replay_declares_that_its_hits_are_checked() -> None:
    """A replay search tells the runner its Hits need no second check."""
    from monitor.search.base import gives_checked_hits

    assert True is gives_checked_hits(ReplaySearch({"q1": ["d1"]}))


def test_a_big_trec_run_is_replayed_from_pyarrow_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run file over the size where pyarrow pays is read by it, as `evaluate` reads one,
    and replays the same rankings as the line reader's."""
    pytest.importorskip("pyarrow")
    from monitor.search import trec_arrow

    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 b 1 2.0 t\nq1 Q0 a 2 2.0 t\nq1 Q0 c 3 1.0 t\nq2 Q0 d 1 5.0 t\n")
    lines = {qid: tuple(hits) for qid, hits in load_hits(path).items()}
    read: list[object] = []
    real = trec_arrow.read_trec_arrow
    monkeypatch.setattr(trec_arrow, "ARROW_MIN_BYTES", 0)
    monkeypatch.setattr(trec_arrow, "read_trec_arrow", lambda p: read.append(p) or real(p))
    replay = ReplaySearch.from_file(path)
    assert [path] == read
    for qid in ("q1", "q2"):
        assert lines[qid] == replay(Query(qid, "text"), 10)
