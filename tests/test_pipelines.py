"""A/B comparison of search pipelines on one eval set."""

from __future__ import annotations

import json

import pytest

from monitor.bundled import larkfield_evalset
from monitor.cli import main
from monitor.metrics.spec import parse_metrics
from monitor.pipelines import compare_pipelines
from monitor.search import build_search


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
