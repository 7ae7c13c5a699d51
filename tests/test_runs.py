"""Reading saved runs: TREC run files and JSON, and the errors that name the bad line."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.errors import InputError
from monitor.metrics.evaluation import evaluate
from monitor.search.saved import load_hits, load_run

DATA = Path(__file__).parent / "data" / "runs"

# tests/data/runs holds one run in three formats. bm25.trec interleaves the queries, gives
# ranks that disagree with the scores, ties d1 and d2 at 2.0, and uses the ids "NA" and "null".
BM25 = {"q1": ["d2", "d1", "d3", "d9"], "q2": ["null", "NA"]}


def write(tmp_path: Path, content: bytes, name: str = "run.txt") -> Path:
    """Write ``content`` to a file in ``tmp_path`` and return its path."""
    path = tmp_path / name
    path.write_bytes(content)
    return path


def test_trec_run_is_ranked_as_trec_eval_ranks_it() -> None:
    """A TREC run loads as ranked lists: by score descending, then doc id descending."""
    assert BM25 == load_run(DATA / "bm25.trec", "trec")


def test_trec_rank_column_is_ignored(tmp_path: Path) -> None:
    """The rank column does not order the documents: the score does."""
    path = write(tmp_path, b"q Q0 low 1 0.1 t\nq Q0 high 2 0.9 t\n")
    assert {"q": ["high", "low"]} == load_run(path, "trec")


def test_trec_tied_scores_are_ordered_by_doc_id_descending(tmp_path: Path) -> None:
    """Documents with the same score follow doc id descending, compared as strings."""
    path = write(tmp_path, b"q Q0 d10 1 1.0 t\nq Q0 d9 2 1.0 t\nq Q0 d2 3 1.0 t\n")
    assert {"q": ["d9", "d2", "d10"]} == load_run(path, "trec")


def test_trec_repeated_doc_is_kept_in_ranking_order(tmp_path: Path) -> None:
    """A repeated doc id stays in the list at each of its positions, best score first."""
    path = write(tmp_path, b"q Q0 a 1 0.2 t\nq Q0 b 2 0.5 t\nq Q0 a 3 0.9 t\n")
    assert {"q": ["a", "b", "a"]} == load_run(path, "trec")


def test_engine_counts_a_repeated_trec_doc_once_at_its_best_score(tmp_path: Path) -> None:
    """The engine keeps the best-scored copy of a repeated id and reports the copy dropped."""
    path = write(tmp_path, b"q Q0 r 1 0.2 t\nq Q0 n 2 0.5 t\nq Q0 r 3 0.9 t\n")
    result = evaluate({"q": {"r": 1}}, path, ["mrr"])
    assert (1.0, 1) == (result.means["mrr"], result.duplicates)


@pytest.mark.parametrize(
    "content",
    [
        b"q\tQ0\ta\t1\t2.0\tt\nq\tQ0\tb\t2\t1.0\tt\n",
        b"q Q0 a 1 2.0 t\r\nq Q0 b 2 1.0 t\r\n",
        b"  q   Q0  a 1 2.0   t\nq Q0 b 2 1.0 t",
    ],
    ids=["tabs", "crlf", "spaces and no final newline"],
)
def test_trec_fields_are_split_on_any_whitespace(tmp_path: Path, content: bytes) -> None:
    """Tabs, runs of spaces and CRLF line ends all separate fields."""
    assert {"q": ["a", "b"]} == load_run(write(tmp_path, content), "trec")


@pytest.mark.parametrize("doc", ["NA", "null", "nan", "None", "N/A", "#N/A"])
def test_trec_na_like_doc_ids_are_strings(tmp_path: Path, doc: str) -> None:
    """Doc ids that table readers take for missing values stay as the strings written."""
    path = write(tmp_path, f"NA Q0 {doc} 1 1.0 t\n".encode())
    assert {"NA": [doc]} == load_run(path, "trec")


@pytest.mark.parametrize(
    "name",
    ["bm25.trec", "bm25_lists.json", "bm25_scores.json"],
    ids=["trec", "json lists", "json scores"],
)
def test_load_run_reads_each_format_by_its_content(name: str) -> None:
    """load_run tells a TREC run from JSON by the file's content and ranks each the same."""
    assert BM25 == load_run(DATA / name)


def test_json_score_run_keeps_its_scores_as_floats() -> None:
    """A JSON {qid: {doc: score}} run's hits carry their scores, integers made floats."""
    hits = load_hits(DATA / "bm25_scores.json")
    expected = {"q1": [2.0, 2.0, 0.5, -0.001], "q2": [3.0, 1.0]}
    scores = {qid: [hit.score for hit in ranked] for qid, ranked in hits.items()}
    assert (expected, float) == (scores, type(hits["q2"][0].score))


def test_json_list_keeps_the_order_and_repeats_given(tmp_path: Path) -> None:
    """A JSON list is the ranking as given, repeated ids included."""
    path = write(tmp_path, b'{"q": ["b", "a", "b"]}')
    assert {"q": ["b", "a", "b"]} == load_run(path)


@pytest.mark.parametrize("name", ["bm25.trec", "bm25_lists.json", "bm25_scores.json"])
def test_every_format_of_a_run_scores_the_same(name: str) -> None:
    """The same run saved as TREC, JSON lists or JSON scores gives the same values."""
    qrels = {"q1": {"d1": 2, "d9": 1}, "q2": {"NA": 1}}
    # q1 ranks d1 (grade 2) 2nd and d9 4th; q2 ranks NA 2nd.
    # ndcg@3: q1 (2/log2(3)) / (2 + 1/log2(3)), q2 (1/log2(3)) / 1
    # map:    q1 (1/2 + 2/4) / 2 = 0.5,         q2 (1/2) / 1 = 0.5
    # mrr:    q1 1/2,                          q2 1/2
    log2_3 = math.log2(3)
    expected = {
        "ndcg@3": ((2 / log2_3) / (2 + 1 / log2_3) + 1 / log2_3) / 2,
        "map": 0.5,
        "mrr": 0.5,
    }
    assert pytest.approx(expected) == evaluate(qrels, DATA / name, list(expected)).means


# Tokens without whitespace, with quotes and the strings table readers take for missing values
# (a first field starting with "#" makes a comment line).
tokens = st.text("abcXYZ019-_.:#\"'é", min_size=1, max_size=4).filter(
    lambda t: not t.startswith("#")
) | st.sampled_from(["NA", "null", "nan"])
any_score = st.floats(allow_nan=False, allow_infinity=False)
trec_lines = st.lists(st.tuples(tokens, tokens, any_score), min_size=1, max_size=30)


@pytest.mark.slow
@settings(deadline=None)
@given(lines=trec_lines)
def test_trec_run_loads_in_trec_eval_order(
    tmp_path_factory: pytest.TempPathFactory, lines: list
) -> None:
    """Any well-formed TREC run loads each query's lines by exact score, then doc id, descending."""
    text = "".join(f"{qid} Q0 {doc} 0 {score!r} tag\n" for qid, doc, score in lines)
    path = write(tmp_path_factory.mktemp("run"), text.encode())
    expected: dict[str, list[str]] = {}
    for qid, doc, _score in sorted(
        lines, key=lambda line: (line[2], line[1].encode()), reverse=True
    ):
        expected.setdefault(qid, []).append(doc)
    assert expected == load_run(path, "trec")


@pytest.mark.slow
@settings(deadline=None)
@given(run=st.dictionaries(tokens, st.lists(tokens) | st.dictionaries(tokens, any_score)))
def test_json_run_loads_in_trec_eval_order(
    tmp_path_factory: pytest.TempPathFactory, run: dict
) -> None:
    """Any JSON run loads lists as written and score objects by score, then doc id, descending."""
    path = write(tmp_path_factory.mktemp("run"), json.dumps(run).encode())
    expected = {
        qid: ranking
        if isinstance(ranking, list)
        else [
            doc
            for doc, _ in sorted(
                ranking.items(), key=lambda item: (item[1], item[0].encode()), reverse=True
            )
        ]
        for qid, ranking in run.items()
    }
    assert expected == load_run(path)


# Malformed runs: (content, line named in the error, what the message says was expected).
MALFORMED_TREC = {
    "four fields": (b"q Q0 a 1 1.0 t\nq Q0 b 2\n", 2, "qid Q0 docno rank score tag"),
    "non-numeric score": (b"q Q0 a 1 1.0 t\nq Q0 b 2 high t\n", 2, "numeric score"),
    "nan score": (b"q Q0 a 1 nan t\n", 1, "a finite score in field 5"),
    "undecodable bytes": (b"q Q0 a 1 1.0 t\nq Q0 \xff 2 0.5 t\n", 2, "UTF-8"),
    "five fields (no tag)": (b"q Q0 a 1 1.0 t\nq Q0 b 2 0.5\n", 2, "qid Q0 docno rank score tag"),
    "bad line after a blank line": (b"q Q0 a 1 1.0 t\n\nq Q0 b 2 high t\n", 3, "numeric score"),
}


@pytest.mark.parametrize(
    ("content", "line", "expected"),
    list(MALFORMED_TREC.values()),
    ids=list(MALFORMED_TREC),
)
def test_malformed_trec_run_names_file_and_line(
    tmp_path: Path, content: bytes, line: int, expected: str
) -> None:
    """A malformed TREC run raises an InputError naming the file, the line and the fault."""
    path = write(tmp_path, content)
    with pytest.raises(InputError, match=re.escape(f"{path}:{line}: ")) as caught:
        load_run(path)
    assert expected in str(caught.value)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b'q Q0 "a" 1 1.0 t\n', ['"a"']),
        (b'q Q0 "a 1 1.0 t\nq Q0 b 2 0.5 t\n', ['"a', "b"]),
    ],
    ids=["quoted id", "id opening a quote"],
)
def test_quotes_are_part_of_a_doc_id(tmp_path: Path, content: bytes, expected: list[str]) -> None:
    """A double quote is an ordinary character of a TREC doc id, as in trec_eval."""
    assert {"q": expected} == load_run(write(tmp_path, content), "trec")


def test_json_syntax_error_names_the_line(tmp_path: Path) -> None:
    """Invalid JSON raises an InputError naming the file and the line of the fault."""
    path = write(tmp_path, b'{"q": ["a",\n  "b",\n]}')
    with pytest.raises(InputError, match=re.escape(f"{path}:3: expected valid JSON")):
        load_run(path)


@pytest.mark.parametrize(
    "content",
    [
        b'{"q7": [1, 2]}',
        b'{"q7": ["a", null]}',
        b'{"q7": {"a": "high"}}',
        b'{"q7": {"a": true}}',
        b'{"q7": {"a": NaN}}',
        b'{"q7": "a"}',
        b'{"q7": 3}',
    ],
    ids=["int ids", "null id", "string score", "bool score", "NaN score", "string", "number"],
)
def test_json_wrong_type_names_the_query(tmp_path: Path, content: bytes) -> None:
    """A JSON ranking of the wrong type raises an InputError naming the file and the query."""
    path = write(tmp_path, content)
    with pytest.raises(InputError, match=re.escape(str(path))) as caught:
        load_run(path)
    assert "'q7'" in str(caught.value)


def test_json_array_is_not_a_run(tmp_path: Path) -> None:
    """A JSON document that is not an object raises an InputError asking for one."""
    path = write(tmp_path, b'[["a", "b"]]')
    with pytest.raises(InputError, match="a JSON object"):
        load_run(path)


def test_undecodable_json_names_the_line(tmp_path: Path) -> None:
    """A JSON run with bytes that are not UTF-8 raises an InputError naming the line."""
    path = write(tmp_path, b'{\n"q": ["\xff"]}')
    with pytest.raises(InputError, match=re.escape(f"{path}:2: expected UTF-8")):
        load_run(path)


def test_missing_file_names_the_file(tmp_path: Path) -> None:
    """A run path that cannot be read raises an InputError naming it."""
    path = tmp_path / "absent.trec"
    with pytest.raises(InputError, match=re.escape(str(path))):
        load_run(path)
