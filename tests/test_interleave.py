"""Team-draft interleaving: the merge's rules, click crediting and scoring with planted truth,
the click-model simulation, the ``interleave`` search kind and the ``interleave`` commands.

The hand-built logs of the scoring tests (times in seconds after T0):

    search  client  t      served (team)        clicks            outcome
    s1      A       0      x(a) p(b) y(a) q(b)  x                 a wins
    s2      A       60     p(b) x(a) q(b) y(a)  q, p              b wins
    s3      B       0      x(a) p(b)            x, p              tie
    s4      B       5000   x(a) p(b)            -                 unclicked
    s5      C       0      x(a) p(b)            z (not served)    unclicked, 1 uncredited
    s6      -       -      x(a)                 (not in the logs) missing
    s7      D       0      x(a) p(b)            position 2 only   b wins

s1 and s2 are one session of A (60 s apart); s3 and s4 are two sessions of B (5000 s apart).
The sessions with a click: A's is a tie (a win and a loss), B's first a tie, D's a win for b.
"""

from __future__ import annotations

import json
import math
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from monitor.cli import main
from monitor.errors import InputError, SearchSetupError
from monitor.evalset import bundled
from monitor.metrics.evaluation import evaluate
from monitor.records import Query
from monitor.search import build_search
from monitor.traffic.clickmodel import ClickModel, simulate
from monitor.traffic.interleave import Interleaving, team_draft
from monitor.traffic.preference import (
    delta_of,
    impressions_needed,
    outcome_of,
    preference,
    sign_test,
)
from monitor.traffic.teams import Served, read_team_log

DOCS = st.lists(st.sampled_from([f"d{n}" for n in range(12)]), max_size=12)


def disjoint(n: int) -> tuple[list[str], list[str]]:
    return [f"a{i}" for i in range(n)], [f"b{i}" for i in range(n)]


# -- team draft ------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [0, 1, 2, 5, 10])
def test_each_team_places_ceil_or_floor_of_half_when_both_have_enough(k: int) -> None:
    """With k distinct documents in each ranking, the teams place ceil(k/2) and floor(k/2)."""
    for session in range(20):
        merged = team_draft(*disjoint(k), k, seed=3, query="q", session=str(session))
        counts = sorted([merged.teams.count("a"), merged.teams.count("b")])
        assert [k // 2, math.ceil(k / 2)] == counts


def test_the_first_pick_is_a_fair_coin_over_seeds() -> None:
    """Over 2000 seeds, team a picks first about half the time."""
    firsts = [team_draft(*disjoint(2), 2, seed=seed).teams[0] for seed in range(2000)]
    assert 0.45 < firsts.count("a") / len(firsts) < 0.55


def test_the_same_seed_query_and_session_give_the_same_interleaving() -> None:
    """An impression replays exactly: the same inputs give the same merged list and teams."""
    a, b = disjoint(10)
    first = team_draft(a, b, 10, seed=7, query="red shoes", session="s-1")
    assert first == team_draft(a, b, 10, seed=7, query="red shoes", session="s-1")


def test_sessions_draw_different_coins() -> None:
    """Different sessions of one query do not all get the same interleaving."""
    a, b = disjoint(10)
    drawn = {team_draft(a, b, 10, seed=7, query="q", session=str(n)).teams for n in range(30)}
    assert len(drawn) > 10


def test_when_one_ranking_runs_out_the_other_fills_the_list() -> None:
    """A short ranking's team stops; the other team fills the rest with its own documents."""
    merged = team_draft(["x"], ["p", "q", "r", "s"], None, seed=1)
    assert ("x", "p", "q", "r", "s") == tuple(sorted(merged.ids, key="xpqrs".index))
    assert ("a", "b", "b", "b", "b") == tuple(merged.team_of(doc) for doc in "xpqrs")


def test_a_document_both_rank_is_placed_once_by_the_team_that_took_it() -> None:
    """A document the other team already placed is skipped and stays credited to its placer."""
    merged = team_draft(["x", "y"], ["x", "z"], None, seed=0, session="s")
    first = merged.teams[0]
    assert "x" == merged.ids[0]
    assert 3 == len(merged.ids)
    assert first == merged.team_of("x")


@pytest.mark.slow
@given(a=DOCS, b=DOCS, k=st.none() | st.integers(0, 30), seed=st.integers(0, 10**6))
def test_the_merge_holds_each_document_once_in_each_teams_order(
    a: list[str], b: list[str], k: int | None, seed: int
) -> None:
    """The merged list repeats no id, each id comes from its team's ranking in that ranking's
    order, its length is the cap or every distinct id, and the teams' counts differ by at
    most one while both still have documents to place."""
    merged = team_draft(a, b, k, seed=seed, query="q")
    assert len(set(merged.ids)) == len(merged.ids)
    distinct = len(set(a) | set(b))
    assert (distinct if k is None else min(k, distinct)) == len(merged.ids)
    for team, ranking in (("a", a), ("b", b)):
        placed = [doc for doc, t in zip(merged.ids, merged.teams, strict=True) if t == team]
        positions = [ranking.index(doc) for doc in placed]
        assert sorted(positions) == positions


def test_a_negative_cap_is_refused() -> None:
    """A negative length is a usage error, not an empty list."""
    with pytest.raises(Exception, match="0 or more"):
        team_draft(["x"], ["y"], -1)


# -- preference statistics -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("clicks_a", "clicks_b", "expected"),
    [(2, 1, "win"), (0, 1, "loss"), (1, 1, "tie"), (0, 0, "unclicked")],
)
def test_an_impressions_outcome_follows_the_credited_clicks(
    clicks_a: int, clicks_b: int, expected: str
) -> None:
    """More clicks for a is a win, for b a loss, as many (not none) a tie."""
    assert expected == outcome_of(clicks_a, clicks_b)


@pytest.mark.parametrize(
    ("wins", "losses", "expected"),
    [(0, 5, 2 / 32), (5, 0, 2 / 32), (3, 3, 1.0), (1, 9, 2 * 11 / 1024), (0, 0, 1.0)],
)
def test_the_sign_test_is_the_exact_two_sided_binomial(
    wins: int, losses: int, expected: float
) -> None:
    """The p-value is 2 P(X <= min) under Binomial(n, 1/2), capped at 1."""
    assert expected == pytest.approx(sign_test(wins, losses))


@given(wins=st.integers(0, 200), losses=st.integers(0, 200), ties=st.integers(0, 200))
def test_swapping_the_searches_negates_delta_and_keeps_p(wins: int, losses: int, ties: int) -> None:
    """Delta lies in [-0.5, 0.5], changes sign when a and b swap; the p-value does not change."""
    delta = delta_of(wins, losses, ties)
    swapped = delta_of(losses, wins, ties)
    if delta is None:
        assert (0, None) == (wins + losses + ties, swapped)
    else:
        assert -0.5 <= delta <= 0.5
        assert pytest.approx(-delta) == swapped
    assert sign_test(wins, losses) == sign_test(losses, wins)
    assert 0 < sign_test(wins, losses) <= 1


def test_delta_is_wins_and_half_the_ties_over_clicked_minus_a_half() -> None:
    """Chapelle et al.'s preference: (3 + 2/2) / 6 - 0.5."""
    assert pytest.approx(4 / 6 - 0.5) == delta_of(3, 1, 2)


def test_the_impressions_needed_follow_the_normal_approximation() -> None:
    """n = ((z_0.975 + z_0.8) sd / delta)^2 / clicked share, rounded up."""
    clicked = ((1.959964 + 0.841621) * 0.5 / 0.1) ** 2
    assert math.ceil(clicked / 0.25) == impressions_needed(0.1, 0.5, 0.25)


def test_no_difference_needs_no_sizing() -> None:
    """A delta of 0 gives no sample size, never an infinite one."""
    assert impressions_needed(0.0, 0.5, 0.3) is None


def test_the_interval_resamples_sessions_with_the_seed() -> None:
    """The bootstrap interval holds delta and is the same for the same seed."""
    outcomes = ["win"] * 30 + ["loss"] * 10 + ["tie"] * 5
    sessions = [str(n // 3) for n in range(len(outcomes))]
    first = preference(outcomes, sessions, seed=4)  # type: ignore[arg-type]
    assert first.interval is not None
    assert first.delta is not None
    assert first.interval[0] < first.delta < first.interval[1]
    assert first == preference(outcomes, sessions, seed=4)  # type: ignore[arg-type]


# -- scoring from click logs -----------------------------------------------------------------

SERVED = [
    ("s1", ("x", "p", "y", "q"), ("a", "b", "a", "b")),
    ("s2", ("p", "x", "q", "y"), ("b", "a", "b", "a")),
    ("s3", ("x", "p"), ("a", "b")),
    ("s4", ("x", "p"), ("a", "b")),
    ("s5", ("x", "p"), ("a", "b")),
    ("s6", ("x",), ("a",)),
    ("s7", ("x", "p"), ("a", "b")),
]


@pytest.fixture
def logs(tmp_path: Path) -> tuple[Path, Path]:
    """Return the team log and the traffic database of the module docstring's table."""
    pytest.importorskip("duckdb")
    from monitor.traffic.engine import connect
    from monitor.traffic.importer import import_logs
    from tests.traffic_logs import T0, click, search, write_ndjson

    def at(seconds: int) -> object:
        return T0 + timedelta(seconds=seconds)

    shown = {query_id: ids for query_id, ids, _ in SERVED}
    searches = [
        search("s1", "q", shown["s1"], client="A", at=at(0)),  # type: ignore[arg-type]
        search("s2", "q", shown["s2"], client="A", at=at(60)),  # type: ignore[arg-type]
        search("s3", "q", shown["s3"], client="B", at=at(0)),  # type: ignore[arg-type]
        search("s4", "q", shown["s4"], client="B", at=at(5000)),  # type: ignore[arg-type]
        search("s5", "q", shown["s5"], client="C", at=at(0)),  # type: ignore[arg-type]
        search("s7", "q", shown["s7"], client="D", at=at(0)),  # type: ignore[arg-type]
    ]
    events = [
        click("s1", "x", 1),
        click("s1", "x", 1),
        click("s2", "q", 3),
        click("s2", "p", 1),
        click("s3", "x", 1),
        click("s3", "p", 2),
        click("s5", "z", 7),
        {key: value for key, value in click("s7", "p", 2).items() if key != "object"},
    ]
    team_log = tmp_path / "teams.jsonl"
    team_log.write_text(
        "".join(
            Served(query_id, "q", 0, Interleaving(ids, teams)).to_line()  # type: ignore[arg-type]
            for query_id, ids, teams in SERVED
        ),
        encoding="utf-8",
    )
    db = tmp_path / "traffic.duckdb"
    connection = connect(db)
    try:
        import_logs(
            connection,
            [write_ndjson(tmp_path / "q.ndjson", searches)],
            [write_ndjson(tmp_path / "e.ndjson", events)],
            min_distinct_clients=1,
        )
    finally:
        connection.close()
    return team_log, db


@pytest.mark.slow
def test_clicks_are_credited_to_the_team_that_placed_each_document(
    logs: tuple[Path, Path],
) -> None:
    """The hand-built logs give the outcomes of the module docstring's table."""
    from monitor.traffic.engine import connect
    from monitor.traffic.teams import score_clicks

    connection = connect(logs[1], read_only=True)
    try:
        scored = score_clicks(connection, read_team_log(logs[0]))
    finally:
        connection.close()
    assert ("win", "loss", "tie", "unclicked", "unclicked", "loss") == scored.outcomes
    assert (1, 1) == (scored.missing, scored.uncredited)
    assert scored.sessions[0] == scored.sessions[1]
    assert scored.sessions[2] != scored.sessions[3]


def test_a_replayed_line_of_the_team_log_counts_once(tmp_path: Path) -> None:
    """The same interleaving logged twice under one query id (a replayed run) is one."""
    line = Served("s0", "q", 0, Interleaving(("x", "y"), ("a", "b"))).to_line()
    path = tmp_path / "teams.jsonl"
    path.write_text(line + line)
    assert 1 == len(read_team_log(path))


def test_score_prints_the_preference_as_json(
    logs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """``interleave score`` gives the counts, delta and session figures of the logs."""
    code = main(["interleave", "score", "--teams", str(logs[0]), "--logs", str(logs[1]),
                 "--format", "json"])  # fmt: skip
    found = json.loads(capsys.readouterr().out)
    assert 0 == code
    expected = {"served": 7, "missing": 1, "impressions": 6, "wins_a": 1, "wins_b": 2,
                "ties": 1, "delta": 1.5 / 4 - 0.5, "sessions": 3, "session_wins_b": 1,
                "session_ties": 2}  # fmt: skip
    assert expected == {key: found[key] for key in expected}


def test_score_prints_the_counts_as_text(
    logs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """The text form names what was served, missing and uncredited, then the counts."""
    assert 0 == main(["interleave", "score", "--teams", str(logs[0]), "--logs", str(logs[1])])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("7 served interleavings, 6 of them in ")
    assert lines[0].endswith("(1 not); 1 clicks on documents not served")
    assert lines[1].startswith("impressions 6: a wins 1, b wins 2, ties 1; delta -0.1250 (")
    assert "preferred: neither (the interval covers 0)" == lines[-1]


def test_score_without_any_served_search_in_the_logs_exits_5(
    logs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A team log none of whose searches the database holds is no data: exit 5, one line."""
    other = tmp_path / "other.jsonl"
    other.write_text(Served("s-none", "q", 0, Interleaving(("x",), ("a",))).to_line())
    code = main(["interleave", "score", "--teams", str(other), "--logs", str(logs[1])])
    err = capsys.readouterr().err
    assert (5, 1) == (code, len(err.strip().splitlines()))
    assert "no data" in err


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("not json", "expected an object"),
        ('{"query_id": "s1", "ids": ["x"], "teams": ["c"]}', "'teams'"),
        ('{"query_id": "s1", "ids": ["x", "x"], "teams": ["a", "a"]}', "repeated id"),
        ('{"ids": ["x"], "teams": ["a"]}', "'query_id'"),
        ('{"query_id": "s0", "ids": ["y"], "teams": ["a"]}', "another is on line 1"),
    ],
)
def test_a_malformed_team_log_line_is_named(tmp_path: Path, line: str, said: str) -> None:
    """A bad line is an InputError naming the file, the line and what was expected."""
    path = tmp_path / "teams.jsonl"
    path.write_text(Served("s0", "q", 0, Interleaving(("x",), ("a",))).to_line() + line + "\n")
    with pytest.raises(InputError, match=said) as caught:
        read_team_log(path)
    assert 2 == caught.value.line


@pytest.mark.parametrize("missing", ["--teams", "--logs"])
def test_a_missing_file_exits_2_in_one_line(
    logs: tuple[Path, Path], tmp_path: Path, missing: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A team log or traffic database that is not there is one error line and exit 2."""
    files = {"--teams": str(logs[0]), "--logs": str(logs[1]), missing: str(tmp_path / "none")}
    code = main(["interleave", "score", *(part for item in files.items() for part in item)])
    err = capsys.readouterr().err
    assert (2, 1) == (code, len(err.strip().splitlines()))
    assert "none" in err


# -- simulation ------------------------------------------------------------------------------

#: Twenty queries of ten documents with planted grades: d0 is the best, d9 the worst.
PLANTED = {f"q{n}": {f"d{i}": max(0, 3 - i // 2) for i in range(10)} for n in range(20)}
BEST = {query: [f"d{i}" for i in range(10)] for query in PLANTED}
WORST = {query: [f"d{i}" for i in reversed(range(10))] for query in PLANTED}


@pytest.mark.parametrize("model", ["pbm", "cascade"])
def test_a_system_against_itself_has_no_preference(model: str) -> None:
    """Interleaving a ranking with itself: the interval covers 0 and nothing is preferred."""
    found = simulate(BEST, BEST, PLANTED, impressions=2000, seed=0, model=ClickModel(model))
    assert found.preference.interval is not None
    assert found.preference.interval[0] < 0 < found.preference.interval[1]
    assert found.preference.preferred is None


@pytest.mark.slow
def test_the_sign_test_of_a_system_against_itself_rejects_at_about_alpha() -> None:
    """Over 200 seeds, the self-interleaving sign test rejects at 0.05 at most 8% of the time."""
    rejected = sum(
        simulate(BEST, BEST, PLANTED, impressions=100, seed=seed, iterations=1).preference.p_value
        < 0.05
        for seed in range(200)
    )
    assert rejected / 200 <= 0.05 + 0.03


@pytest.mark.parametrize("model", ["pbm", "cascade"])
def test_the_better_ranking_by_ndcg_wins_the_planted_simulation(model: str) -> None:
    """The ranking sorted by the planted grades beats the reversed one, from either side."""
    assert evaluate(PLANTED, BEST, ["ndcg@10"]).means["ndcg@10"] > 0.99
    as_a = simulate(BEST, WORST, PLANTED, impressions=500, seed=2, model=ClickModel(model))
    as_b = simulate(WORST, BEST, PLANTED, impressions=500, seed=2, model=ClickModel(model))
    assert ("a", "b") == (as_a.preference.preferred, as_b.preference.preferred)
    assert as_a.needed is not None
    assert as_a.needed < 500


def test_the_better_bundled_method_by_ndcg_wins_in_simulation() -> None:
    """On Larkfield, rerank (the higher nDCG@10) beats keyword, and says how much traffic."""
    judgments = {query.id: dict(query.judgments) for query in bundled.larkfield_evalset()}
    keyword, rerank = bundled.larkfield_run("keyword"), bundled.larkfield_run("rerank")
    ndcg = [evaluate(judgments, run, ["ndcg@10"]).means["ndcg@10"] for run in (keyword, rerank)]
    found = simulate(keyword, rerank, judgments, impressions=3000, seed=1)
    assert ndcg[0] < ndcg[1]
    assert "b" == found.preference.preferred
    assert found.needed is not None
    assert found.needed < 3000


def test_an_unknown_click_model_is_refused() -> None:
    """A click model other than pbm or cascade is a usage error naming the known ones."""
    with pytest.raises(Exception, match="pbm, cascade"):
        ClickModel("ubm")  # type: ignore[arg-type]


def test_simulate_on_the_bundled_runs_prints_the_winner(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``interleave simulate`` on two bundled methods prints their nDCG and the preference."""
    code = main(["interleave", "simulate", "--a", "replay:larkfield/keyword", "--b",
                 "replay:larkfield/rerank", "--impressions", "1500", "--seed", "1",
                 "--format", "json"])  # fmt: skip
    found = json.loads(capsys.readouterr().out)
    assert (0, "b") == (code, found["preferred"])
    assert found["ndcg@10"]["a"] < found["ndcg@10"]["b"]


def test_simulate_with_a_missing_run_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run file that is not there is one error line and exit 2."""
    code = main(["interleave", "simulate", "--a", f"replay:{tmp_path / 'none.trec'}",
                 "--b", "replay:larkfield/rerank", "--impressions", "10"])  # fmt: skip
    assert (2, 1) == (code, len(capsys.readouterr().err.strip().splitlines()))


# -- the search kind -------------------------------------------------------------------------


def test_the_kind_interleaves_two_searches_built_through_the_registry(tmp_path: Path) -> None:
    """The ``interleave`` kind answers with the team draft of its two searches and logs it."""
    run_a = tmp_path / "a.json"
    run_a.write_text(json.dumps({"Q1": ["x", "y", "z"]}))
    team_log = tmp_path / "teams.jsonl"
    search = build_search(
        "interleave",
        {
            "a": {"kind": "replay", "path": str(run_a)},
            "b": {"kind": "python", "target": "tests.test_interleave:fixed_search"},
            "seed": 9,
            "team_log": str(team_log),
        },
    )
    query = Query("Q1", "red shoes")
    hits = search(query, 4)  # type: ignore[call-arg, arg-type]
    expected = team_draft(["x", "y", "z"], ["p", "x", "q"], 4, seed=9, query="red shoes",
                          session="Q1")  # fmt: skip
    assert expected.ids == tuple(hit.id for hit in hits)
    assert [Served("Q1", "red shoes", 9, expected)] == read_team_log(team_log)


def fixed_search(query: str, k: int) -> list[str]:
    """Answer every query with p, x, q (a ``python`` search for the kind's test)."""
    return ["p", "x", "q"][:k]


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"b": {"kind": "replay", "bundled": "larkfield/keyword"}}, "option 'a'"),
        ({"a": {"kind": "nope"}, "b": {"kind": "replay", "bundled": "larkfield/rerank"}}, "nope"),
        ({"a": {"bundled": "larkfield/keyword"}, "b": {"kind": "replay"}}, "'kind'"),
        ({"a": {"kind": "replay", "bundled": "larkfield/keyword"},
          "b": {"kind": "replay", "bundled": "larkfield/rerank"}, "colour": 1}, "colour"),
    ],
)  # fmt: skip
def test_bad_kind_options_are_named(options: dict[str, object], said: str) -> None:
    """A missing or bad search, or an unknown option, is a setup error that names it."""
    with pytest.raises(SearchSetupError, match=said):
        build_search("interleave", options)


# -- config ----------------------------------------------------------------------------------

INTERLEAVE_SUITE = """\
suites:
  ab:
    evalset: {{bundled: larkfield}}
    search:
      kind: interleave
      a: {{kind: {kind}, path: runs/a.json}}
      b: {{kind: replay, bundled: larkfield/rerank}}
      team_log: teams.jsonl
"""


def test_the_config_reads_both_searches_with_paths_from_its_folder(tmp_path: Path) -> None:
    """A suite's interleave search resolves its searches' paths and team log like any path."""
    from monitor.config import load_config

    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "a.json").write_text('{"Q01": ["x"]}')
    path = tmp_path / "monitor.yaml"
    path.write_text(INTERLEAVE_SUITE.format(kind="replay"))
    options = load_config(path).suites["ab"].search.plugin_options()
    expected = {
        "a": {"kind": "replay", "path": str(tmp_path / "runs" / "a.json")},
        "b": {"kind": "replay", "bundled": "larkfield/rerank"},
        "team_log": str(tmp_path / "teams.jsonl"),
    }
    assert expected == options


def test_a_bad_kind_of_an_interleaved_search_names_its_line(tmp_path: Path) -> None:
    """A misspelt kind of search ``a`` is a config error at its line and key path."""
    from monitor.config import load_config
    from monitor.errors import ConfigError

    path = tmp_path / "monitor.yaml"
    path.write_text(INTERLEAVE_SUITE.format(kind="replya"))
    with pytest.raises(ConfigError, match=r"monitor.yaml:6: suites.ab.search.a.kind: .*'replay'"):
        load_config(path)


def test_the_readme_simulation_prints_what_the_readme_shows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The README's interleaving command prints exactly the figures written under it."""
    import re
    import shlex

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n### Interleaving two searches\n", 1)[1]
    found = re.search(r"```sh\n(.*?)\n```\n```text\n(.*?)```", section, re.DOTALL)
    assert found is not None
    assert 0 == main(shlex.split(found[1])[1:])
    assert found[2] == capsys.readouterr().out
