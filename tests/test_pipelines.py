"""A/B comparison of search pipelines on one eval set."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from monitor.cli import main
from monitor.compare.pipelines import compare_pipelines
from monitor.errors import SearchBackendError, SearchCallError
from monitor.evalset.bundled import larkfield_evalset, larkfield_run
from monitor.metrics.spec import parse_metrics
from monitor.search import build_search
from monitor.testing import FakeSearch


def test_the_reference_row_has_no_deltas_and_the_others_have_p_values() -> None:
    """The first pipeline is the reference; every other gets a delta and p per metric."""
    searches = {
        name: build_search("replay", {"bundled": f"larkfield/{name}"})
        for name in ("rerank", "keyword")
    }
    comparison = compare_pipelines(
        larkfield_evalset(), searches, parse_metrics("mrr@10,recall@5"), iterations=2000, k=10
    )
    reference, keyword = comparison.rows
    assert {} == dict(reference.p_values)
    assert (
        pytest.approx(keyword.means["mrr@10"] - reference.means["mrr@10"])
        == (keyword.deltas["mrr@10"])
    )
    assert keyword.p_values["mrr@10"] < 0.05  # keyword is clearly worse at ranking
    assert keyword.p_values["recall@5"] > 0.05  # but not significantly at recall@5


def test_the_cli_prints_one_json_object(capsys: pytest.CaptureFixture[str]) -> None:
    """`compare-pipelines --format json` lists the pipelines, the reference first."""
    code = main(
        [
            "compare-pipelines",
            "--pipeline",
            "rerank=replay:larkfield/rerank",
            "--pipeline",
            "vector={kind: replay, bundled: larkfield/vector}",
            "--iterations",
            "500",
            "--format",
            "json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert 0 == code
    assert "rerank" == out["reference"]
    assert ["rerank", "vector"] == [p["name"] for p in out["pipelines"]]


@pytest.mark.parametrize(
    "argv",
    [
        ["--pipeline", "only=replay:larkfield/rerank"],
        ["--pipeline", "a=replay:larkfield/rerank", "--pipeline", "a=replay:larkfield/vector"],
        ["--pipeline", "a=nonsense", "--pipeline", "b=replay:larkfield/vector"],
        ["--pipeline", "a={kind: [", "--pipeline", "b=replay:larkfield/vector"],
    ],
)
def test_bad_pipeline_options_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Too few pipelines, a repeated name or an unreadable spec exit 2 with a message."""
    assert 2 == main(["compare-pipelines", *argv])
    assert "pipeline" in capsys.readouterr().err


@pytest.fixture
def dead_url() -> str:
    """Return an HTTP search URL, with credentials and a key, where nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://bob:hunter2@127.0.0.1:{port}/search?key=SECRET&q={{query}}"


def dead_pipeline(name: str, url: str) -> str:
    """Return a ``--pipeline`` value for an HTTP search at ``url``."""
    return f'{name}={{kind: http, url: "{url}", ids: "hits[*].id", timeout: 2}}'


def test_a_dead_pipeline_exits_3_and_says_what_failed(
    dead_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pipeline whose every query failed exits 3, naming it and its error on stderr."""
    code = main(
        [
            "compare-pipelines",
            "--pipeline",
            "rerank=replay:larkfield/rerank",
            "--pipeline",
            dead_pipeline("down", dead_url),
            "--iterations",
            "200",
        ]
    )
    captured = capsys.readouterr()
    assert 3 == code
    assert "pipeline 'down': every one of its" in captured.err
    assert "ConnectError" in captured.err
    assert "FAILED" in captured.out


@pytest.mark.slow
def test_the_dead_pipeline_message_shows_no_credentials_or_query_string(
    dead_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Neither the URL's password nor its query string reaches the output."""
    main(
        [
            "compare-pipelines",
            "--pipeline",
            "rerank=replay:larkfield/rerank",
            "--pipeline",
            dead_pipeline("down", dead_url),
            "--iterations",
            "200",
        ]
    )
    captured = capsys.readouterr()
    for secret in ("hunter2", "SECRET"):
        assert secret not in captured.err + captured.out


def test_one_dead_pipeline_among_live_ones_still_exits_3(
    dead_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """With one dead pipeline of three, the JSON lists it as failed and the exit code is 3."""
    code = main(
        [
            "compare-pipelines",
            "--pipeline",
            "rerank=replay:larkfield/rerank",
            "--pipeline",
            dead_pipeline("down", dead_url),
            "--pipeline",
            "vector=replay:larkfield/vector",
            "--iterations",
            "200",
            "--format",
            "json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert 3 == code
    assert ["down"] == out["failed_pipelines"]
    assert [False, True, False] == [p["all_failed"] for p in out["pipelines"]]


def test_some_failed_queries_warn_without_failing_the_comparison() -> None:
    """A pipeline where only some queries failed gets a warning and no backend failure."""
    evalset = larkfield_evalset()
    first = next(iter(evalset)).id
    broken = FakeSearch(
        failures={first: SearchCallError("HTTPStatusError 503", "GET http://u:pw@h/s?key=K busy")}
    )
    searches = {"rerank": build_search("replay", {"bundled": "larkfield/rerank"}), "fake": broken}
    comparison = compare_pipelines(evalset, searches, parse_metrics("mrr@10"), iterations=200)
    assert comparison.backend_failure() is None
    assert (
        f"pipeline 'fake': 1 of {len(evalset)} queries failed ({1 / len(evalset):.1%}): "
        "HTTPStatusError 503 x1 (first: GET http://h/s busy)",
    ) == comparison.warnings()


def test_every_query_failing_is_a_backend_failure() -> None:
    """When every query of a pipeline fails, backend_failure names it and its error type."""
    evalset = larkfield_evalset()
    down = FakeSearch(failures={q.id: SearchCallError("ConnectError", "refused") for q in evalset})
    searches = {"down": down, "rerank": build_search("replay", {"bundled": "larkfield/rerank"})}
    comparison = compare_pipelines(evalset, searches, parse_metrics("mrr@10"), iterations=200)
    failure = comparison.backend_failure()
    assert isinstance(failure, SearchBackendError)
    assert (
        f"pipeline 'down': every one of its {len(evalset)} queries failed: "
        f"ConnectError x{len(evalset)} (first: refused)"
    ) == str(failure)


def test_failed_queries_are_left_out_not_counted_as_misses() -> None:
    """The rerank ranking with ten of its queries failing differs from rerank by nothing on
    the queries it answered: a failed query is not a miss."""
    evalset = larkfield_evalset()
    rerank = larkfield_run("rerank")
    failing = {q.id: SearchCallError("HTTPStatusError 500", "boom") for q in list(evalset)[:10]}
    flaky = FakeSearch(rerank, failures=failing)
    searches = {"rerank": build_search("replay", {"bundled": "larkfield/rerank"}), "flaky": flaky}
    comparison = compare_pipelines(evalset, searches, parse_metrics("mrr@10"), iterations=200)
    row = comparison.rows[1]
    assert (0.0, 10) == (row.deltas["mrr@10"], row.failed)


def _pipeline_means(argv: list[str], capsys: pytest.CaptureFixture[str]) -> list[float]:
    """Return each pipeline's recall@5 as `compare-pipelines ARGV --format json` prints it."""
    assert 0 == main(["compare-pipelines", *argv, "--metrics", "recall@5", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    return [row["metrics"]["recall@5"] for row in out["pipelines"]]


def _evaluated(method: str, **scoring: object) -> float:
    from monitor.metrics.evaluation import evaluate

    result = evaluate(larkfield_evalset(), larkfield_run(method), ["recall@5"], **scoring)
    return float(result.means["recall@5"])


def test_the_cli_scores_with_trec_eval_options_as_evaluate_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`-M 1` cuts every ranking to its first document before scoring, as in `evaluate`."""
    argv = ["--pipeline", "a=replay:larkfield/rerank", "--pipeline", "b=replay:larkfield/keyword"]
    means = _pipeline_means([*argv, "-M", "1", "--iterations", "200"], capsys)
    expected = [_evaluated("rerank", max_docs=1), _evaluated("keyword", max_docs=1)]
    assert expected == means
    assert _evaluated("rerank") != means[0]  # the option changed the figure


def test_a_suites_scoring_applies_unless_the_cli_gives_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With --config, the first suite's `scoring:` scores every pipeline; an option on the
    command line wins over it."""
    config = tmp_path / "monitor.yaml"
    config.write_text(
        "version: 1\n"
        f"store: {{path: {tmp_path / 'm.db'}}}\n"
        "defaults: {evalset: {bundled: larkfield}, metrics: [recall@5], scoring: {max_docs: 1}}\n"
        "suites:\n"
        "  rerank: {search: {kind: replay, bundled: larkfield/rerank}}\n"
        "  keyword: {search: {kind: replay, bundled: larkfield/keyword}}\n"
    )
    argv = ["--config", str(config), "--iterations", "200"]
    from_suite = _pipeline_means(argv, capsys)
    from_cli = _pipeline_means([*argv, "-M", "3"], capsys)
    assert [_evaluated("rerank", max_docs=1), _evaluated("keyword", max_docs=1)] == from_suite
    assert [_evaluated("rerank", max_docs=3), _evaluated("keyword", max_docs=3)] == from_cli
