"""Click judgments: COEC per impression, click share, unjudged pairs, planted truth, layers.

The hand-built logs (one query key, two documents, every search by its own client):

    search  shown  click
    s1      a b    a
    s2      b a    a
    s3      a b    -
    s4      b a    b

Rank CTRs: rank 1 is clicked in 2 of 4 impressions (0.5), rank 2 in 1 of 4 (0.25). Each
pair is shown twice at each rank, so its expected clicks are 2 * 0.5 + 2 * 0.25 = 1.5: a
has 2 clicks (COEC 4/3), b has 1 (2/3). Putting every impression at the pair's best rank
would expect 2.0 clicks and give a COEC of 1.0.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("duckdb")

from monitor.cli import main
from monitor.errors import UsageError
from monitor.evalset import bundled
from monitor.traffic.clicks import ClickGrade, ClickSettings, click_grades
from monitor.traffic.engine import connect
from monitor.traffic.importer import import_logs
from monitor.traffic.keys import query_key
from tests.traffic_logs import click, generate, search, write_ndjson

QUERIES = [
    search("s1", "k", "ab", client="c1"),
    search("s2", "k", "ba", client="c2"),
    search("s3", "k", "ab", client="c3"),
    search("s4", "k", "ba", client="c4"),
]
EVENTS = [click("s1", "a", 1), click("s2", "a", 2), click("s4", "b", 1)]


def load(tmp_path: Path, queries: list[dict[str, object]], events: list[dict[str, object]]) -> Path:
    db = tmp_path / "traffic.duckdb"
    connection = connect(db)
    try:
        import_logs(
            connection,
            [write_ndjson(tmp_path / "q.ndjson", queries)],
            [write_ndjson(tmp_path / "e.ndjson", events)],
            min_distinct_clients=1,
        )
    finally:
        connection.close()
    return db


def graded(db: Path, **settings: object) -> dict[str, ClickGrade]:
    connection = connect(db, read_only=True)
    try:
        found = click_grades(connection, ClickSettings(**settings))  # type: ignore[arg-type]
    finally:
        connection.close()
    return {item.doc: item for item in found}


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return load(tmp_path, QUERIES, EVENTS)


def test_coec_expects_the_rank_ctr_of_each_impression_not_of_the_best_rank(db: Path) -> None:
    """Expected clicks sum each impression's rank CTR: 1.5 each, COEC 4/3 and 2/3."""
    found = graded(db, min_impressions=1, prior=0.0)
    assert [(4, 2, 1.5, 4 / 3), (4, 1, 1.5, 2 / 3)] == [
        (g.impressions, g.clicks, g.expected, pytest.approx(g.score)) for g in found.values()
    ]


def test_the_prior_pulls_the_score_toward_one_and_sets_the_confidence(db: Path) -> None:
    """With prior 1, a's COEC is (2 + 1) / (1.5 + 1) and its confidence 1.5 / 2.5."""
    found = graded(db, min_impressions=1, prior=1.0)["a"]
    assert (pytest.approx(1.2), pytest.approx(0.6)) == (found.score, found.confidence)


def test_the_grade_counts_the_cutoffs_the_score_reaches(db: Path) -> None:
    """Under the default COEC cut-offs 0.5, 1, 2: 4/3 is grade 2 and 2/3 grade 1."""
    found = graded(db, min_impressions=1, prior=0.0)
    assert {"a": 2, "b": 1} == {doc: g.grade for doc, g in found.items()}


def test_a_pair_below_min_impressions_stays_unjudged(db: Path) -> None:
    """Four impressions are too few under min_impressions 5: no grade, not grade 0."""
    assert {} == graded(db, min_impressions=5)


def test_max_rank_counts_only_impressions_at_or_above_it(db: Path) -> None:
    """Under max_rank 1 each pair has two impressions, both at rank 1."""
    found = graded(db, min_impressions=1, max_rank=1, prior=0.0)
    assert {"a": (2, 1), "b": (2, 1)} == {d: (g.impressions, g.clicks) for d, g in found.items()}


def test_click_share_grades_by_the_share_of_the_querys_clicks(db: Path) -> None:
    """a has 2 of the 3 clicks (grade 3 under 0.1, 0.25, 0.5) and b 1 of 3 (grade 2)."""
    found = graded(db, model="ctr_share", min_impressions=1)
    assert {"a": (pytest.approx(2 / 3), 3), "b": (pytest.approx(1 / 3), 2)} == {
        doc: (g.score, g.grade) for doc, g in found.items()
    }


def test_a_query_without_clicks_grades_nothing_by_click_share(tmp_path: Path) -> None:
    """Click share of a query nobody clicked is undefined: its pairs stay unjudged."""
    db = load(tmp_path, QUERIES, [])
    assert {} == graded(db, model="ctr_share", min_impressions=1)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"cutoffs": (1.0, 0.5)}, "--cutoffs must be increasing"),
        ({"min_impressions": 0}, "--min-impressions must be 1 or more"),
        ({"max_rank": 0}, "--max-rank must be 1 or more"),
        ({"prior": -1.0}, "--prior must be a number >= 0"),
    ],
)
def test_bad_settings_are_refused_by_name(settings: dict[str, object], message: str) -> None:
    """Each bad setting is a usage error naming its option."""
    with pytest.raises(UsageError, match=message):
        ClickSettings(**settings)  # type: ignore[arg-type]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_coec_recovers_the_planted_grades(tmp_path: Path, seed: int) -> None:
    """On position-biased clicks, COEC ranks pairs as the planted grades (Spearman >= 0.9)."""
    planted = generate(seed=seed, n_queries=10, docs_per_query=8, searches_per_query=200)
    db = load(tmp_path, planted.queries, planted.events)
    connection = connect(db, read_only=True)
    try:
        found = click_grades(connection, ClickSettings(min_impressions=200))
    finally:
        connection.close()
    truth = {
        (key, doc): grade for key, docs in planted.grades.items() for doc, grade in docs.items()
    }
    pairs = pd.DataFrame(
        [(truth[(g.query_key, g.doc)], g.score) for g in found], columns=["planted", "coec"]
    )
    assert (80, True) == (
        len(pairs),
        pairs["planted"].corr(pairs["coec"], method="spearman") >= 0.9,
    )


def larkfield_logs(tmp_path: Path) -> Path:
    """Return a database of clicks on the first three Larkfield queries and one other."""
    texts = [query.text for query in list(bundled.larkfield_evalset())[:3]] + ["not in the set"]
    planted = generate(seed=3, texts=texts, docs_per_query=4, searches_per_query=30)
    return load(tmp_path, planted.queries, planted.events)


@pytest.mark.slow
def test_from_clicks_adds_a_layer_whose_source_names_the_model_and_its_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The eval-set queries' grades become one layer; the query not in the set is counted."""
    monkeypatch.chdir(tmp_path)
    db = larkfield_logs(tmp_path)
    store = tmp_path / "monitor.db"
    assert 0 == main(["judgments", "from-clicks", "--suite", "larkfield", "--store", str(store),
                      "--db", str(db), "--who", "tester"])  # fmt: skip
    out = capsys.readouterr().out
    assert "layer 1 added to larkfield: 12 grades from clicks:coec max_rank=10" in out
    assert "graded queries not in the eval set: 1;" in out
    with sqlite3.connect(store) as connection:
        (source,) = connection.execute("SELECT source FROM judgment_layers").fetchone()
    assert (
        "clicks:coec max_rank=10 min_impressions=10 prior=1 cutoffs=0.5,1,2 click_action=click"
        " window=all"
    ) == source


@pytest.mark.slow
def test_from_clicks_keeps_each_grades_counts_and_confidence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Table click_grades holds, per grade of the layer, its impressions, clicks, confidence."""
    monkeypatch.chdir(tmp_path)
    db = larkfield_logs(tmp_path)
    assert 0 == main(["judgments", "from-clicks", "--suite", "larkfield", "--store",
                      str(tmp_path / "monitor.db"), "--db", str(db)])  # fmt: skip
    connection = connect(db, read_only=True)
    try:
        rows = connection.execute(
            "SELECT layer_id, count(*), min(impressions), max(confidence) < 1 FROM click_grades"
            " GROUP BY layer_id"
        ).fetchall()
    finally:
        connection.close()
    assert [(1, 12, 30, True)] == [tuple(row) for row in rows]


@pytest.mark.slow
def test_from_clicks_with_no_eval_set_query_in_the_logs_adds_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Logs that grade no query of the suite are exit 2, saying nothing was added."""
    monkeypatch.chdir(tmp_path)
    db = load(tmp_path, QUERIES, EVENTS)
    store = tmp_path / "monitor.db"
    code = main(["judgments", "from-clicks", "--suite", "larkfield", "--store", str(store),
                 "--db", str(db), "--min-impressions", "1"])  # fmt: skip
    assert (2, True) == (code, "none of the 1 click-graded queries" in capsys.readouterr().err)


def test_eval_set_queries_meet_the_logs_by_their_normalised_key() -> None:
    """A Larkfield query shouted with extra spaces has the key of its text in the set."""
    text = next(iter(bundled.larkfield_evalset())).text
    assert query_key(text) == query_key(f"  {text.upper()}  ")


def test_from_clicks_without_the_database_names_the_command_that_makes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A --db that does not exist is exit 2 saying how to make it, and no file is left."""
    monkeypatch.chdir(tmp_path)
    missing = tmp_path / "none.duckdb"
    code = main(["judgments", "from-clicks", "--suite", "larkfield", "--store",
                 str(tmp_path / "monitor.db"), "--db", str(missing)])  # fmt: skip
    assert (2, False) == (code, missing.exists())
    assert "no traffic database there; `logs import` with `--db" in capsys.readouterr().err
