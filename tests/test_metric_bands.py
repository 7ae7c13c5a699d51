"""Reading bands: each mean of a banded family reads high, medium or low, in every output,
with edges a suite may move in its ``bands:`` section; bands never alert."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from monitor.cli import main
from monitor.config import config_hash, config_schema, load_config_text
from monitor.errors import ConfigError, UsageError
from monitor.metrics.bands import DEFAULT_BANDS, MEANINGS, Bands, Thresholds

SUITE = """\
suites:
  nightly:
    evalset: {bundled: larkfield}
    search: {kind: replay, bundled: larkfield/keyword}
"""


def _suite(bands: str = "") -> str:
    return SUITE + (f"    bands: {bands}\n" if bands else "")


@pytest.mark.parametrize(
    ("metric", "value", "expected"),
    [
        ("mrr@10", 0.6622, "medium"),
        ("mrr@10", 0.81, "high"),
        ("mrr@10", 0.8, "medium"),
        ("mrr@10", 0.5, "medium"),
        ("mrr@10", 0.49, "low"),
        ("recall@5", 0.9, "high"),
        ("precision@1", 0.2, "low"),
        ("ndcg@10[section]", 0.7, "medium"),
        ("hit_rate@10", 0.95, "high"),
        ("hit_rate@10", 0.85, "medium"),
        ("hit_rate@10", 0.6, "low"),
    ],
)
def test_a_mean_reads_the_band_of_its_family(metric: str, value: float, expected: str) -> None:
    """A mean above ``high`` reads high, below ``low`` low, and medium between (edges in)."""
    band = DEFAULT_BANDS.of(metric, value)
    assert expected == (band.name if band else None)


@pytest.mark.parametrize(
    "metric", ["latency_p95_seconds", "map@10", "err@10", "num_ret", "judged@10", "bpref"]
)
def test_a_figure_outside_the_banded_families_has_no_band(metric: str) -> None:
    """Latency, counts, MAP, ERR and coverage get no band."""
    assert None is DEFAULT_BANDS.of(metric, 0.5)


def test_an_unknown_mean_has_no_band() -> None:
    """A NaN mean (not computable) reads no band."""
    assert None is DEFAULT_BANDS.of("mrr@10", math.nan)


def test_each_band_says_what_it_means_for_users() -> None:
    """The high band reads as most queries finding what they need near the top."""
    assert "most queries find what they need near the top" == MEANINGS["high"]


def test_a_suite_moves_one_familys_edges_and_keeps_the_others() -> None:
    """``bands: {mrr: {high: 0.9, low: 0.7}}`` moves mrr's edges only."""
    suite = load_config_text(_suite("{mrr: {high: 0.9, low: 0.7}}")).suite("nightly")
    assert (Thresholds(0.7, 0.9), Thresholds(0.5, 0.8)) == (
        suite.bands.thresholds["mrr"],
        suite.bands.thresholds["recall"],
    )


def test_an_edge_left_out_keeps_its_default() -> None:
    """``bands: {recall: {high: 0.95}}`` keeps recall's default low edge."""
    suite = load_config_text(_suite("{recall: {high: 0.95}}")).suite("nightly")
    assert Thresholds(0.5, 0.95) == suite.bands.thresholds["recall"]


def test_defaults_bands_merge_family_by_family() -> None:
    """A suite's ``bands`` entry merges with ``defaults.bands`` family by family."""
    text = "defaults:\n  bands: {recall: {low: 0.6}}\n" + _suite("{mrr: {low: 0.4}}")
    suite = load_config_text(text).suite("nightly")
    assert (0.6, 0.4) == (suite.bands.thresholds["recall"].low, suite.bands.thresholds["mrr"].low)


@pytest.mark.parametrize(
    ("bands", "key", "expected"),
    [
        ("{map: {high: 0.9}}", "suites.nightly.bands.map", "recall"),
        ("{mrr: {hi: 0.9}}", "suites.nightly.bands.mrr.hi", "high"),
        ("{mrr: {high: 1.5}}", "suites.nightly.bands.mrr.high", "1"),
        ("{mrr: {high: 0.4}}", "suites.nightly.bands.mrr", "at most high"),
        ("{mrr: 0.9}", "suites.nightly.bands.mrr", "high and low"),
    ],
)
def test_a_bad_bands_section_names_the_key_and_what_fits(
    bands: str, key: str, expected: str
) -> None:
    """A malformed ``bands`` entry is a config error naming line, key path and what fits."""
    with pytest.raises(ConfigError) as caught:
        load_config_text(_suite(bands), "monitor.yaml")
    message = str(caught.value)
    assert (True, True, True) == (
        "monitor.yaml:5" in message,
        key in message,
        expected in message,
    ), message


def test_the_schema_lists_each_banded_family() -> None:
    """The config JSON Schema gives ``bands`` a high and low entry per banded family."""
    suite = config_schema()["$defs"]["suite"]["properties"]["bands"]
    assert ["hit_rate", "mrr", "ndcg", "precision", "recall"] == sorted(suite["properties"])


def test_bands_leave_the_config_fingerprint_alone() -> None:
    """Bands only read figures: moving their edges keeps runs comparable (same config hash)."""
    plain = load_config_text(_suite()).suite("nightly")
    banded = load_config_text(_suite("{mrr: {high: 0.9}}")).suite("nightly")
    assert config_hash(plain) == config_hash(banded)


def test_edges_out_of_order_are_refused() -> None:
    """Thresholds whose low edge is above the high one are refused."""
    with pytest.raises(UsageError, match="above high"):
        Thresholds(low=0.9, high=0.5)


def test_bands_name_only_known_families() -> None:
    """Bands for a family without bands are refused, naming the known ones."""
    with pytest.raises(UsageError, match="expected one of recall"):
        Bands({"map": Thresholds(0.5, 0.8)})


# Every output reads the same bands ----------------------------------------------------------


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    """Return a config whose suite ran once against its rerank baseline (keyword: run 2),
    with mrr's edges moved so mrr@10 0.6622 reads low."""
    path = tmp_path / "monitor.yaml"
    path.write_text(
        "store: {path: m.db}\n"
        + SUITE
        + "    baseline: {bundled_run: larkfield/rerank}\n    bands: {mrr: {low: 0.7}}\n",
        encoding="utf-8",
    )
    assert 0 == main(["run", "--config", str(path), "--suite", "nightly", "--no-progress"])
    return path


def _row(text: str, metric: str) -> list[str]:
    return next(line for line in text.splitlines() if line.startswith(f"{metric} ")).split()


def test_run_prints_each_mean_beside_its_band(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``run``'s table gives the band after the current mean: ndcg@10 0.6624 reads medium."""
    path = tmp_path / "monitor.yaml"
    path.write_text("store: {path: m.db}\n" + SUITE, encoding="utf-8")
    assert 0 == main(["run", "--config", str(path), "--suite", "nightly", "--no-progress"])
    assert ["ndcg@10", "0.6624", "medium"] == _row(capsys.readouterr().out, "ndcg@10")[:3]


def test_report_reads_the_suites_own_edges(
    stored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``report`` reads each mean with the suite's bands: mrr@10 0.6622 under ``low: 0.7``."""
    capsys.readouterr()
    assert 0 == main(["report", "--config", str(stored), "--suite", "nightly"])
    assert ["mrr@10", "0.8399", "0.6622", "low"] == _row(capsys.readouterr().out, "mrr@10")[:4]


def test_report_says_what_each_band_shown_means_and_that_it_never_alerts(
    stored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Below the table, the text report explains the bands shown and that they never alert."""
    capsys.readouterr()
    assert 0 == main(["report", "--config", str(stored), "--suite", "nightly"])
    out = capsys.readouterr().out
    assert (True, True) == (f" high: {MEANINGS['high']}" in out, "never an alert" in out)


def test_a_figure_without_bands_shows_none_in_the_text(
    stored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """map@10 has no band: its row goes straight from the current mean to the delta."""
    capsys.readouterr()
    assert 0 == main(["report", "--config", str(stored), "--suite", "nightly"])
    assert "-0.1601" == _row(capsys.readouterr().out, "map@10")[3]


def test_the_html_report_shows_each_band_with_its_meaning(
    stored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The HTML report's metrics table gives mrr@10's band, its meaning on hover."""
    capsys.readouterr()
    assert 0 == main(["report", "--config", str(stored), "--suite", "nightly", "--format", "html"])
    page = capsys.readouterr().out
    title = f"{MEANINGS['low']} (mrr: high above 0.8, low below 0.7)"
    assert f'<span class="band b-low" title="{title}">low</span>' in page


def test_the_web_run_page_shows_each_band(stored: Path) -> None:
    """The web app's run page gives mrr@10's band under the suite's edges, with its meaning."""
    from starlette.testclient import TestClient

    from monitor.config import load_config
    from monitor.store import open_store
    from monitor.web import WebSettings, create_app

    settings = WebSettings(
        config=load_config(stored),
        store=lambda: open_store(stored.parent / "m.db"),
        warm=False,
        refresh_seconds=None,
    )
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        page = client.get("/suites/nightly/runs/2").text
    assert f'<span class="band b-low" title="{MEANINGS["low"]} (mrr: high above 0.8' in page


def test_the_json_report_gives_each_banded_mean_its_band(
    stored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``report --format json`` maps each banded metric to its band and meaning, no others."""
    import json

    capsys.readouterr()
    assert 0 == main(["report", "--config", str(stored), "--suite", "nightly", "--format", "json"])
    bands = json.loads(capsys.readouterr().out)["bands"]
    assert ({"band": "low", "meaning": MEANINGS["low"]}, False) == (
        bands["mrr@10"],
        "map@10" in bands,
    )


def test_the_gate_reads_the_suites_own_edges(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``gate``'s text reads each mean with the suite's bands: rerank's mrr@10 0.8399 is
    medium under ``high: 0.9``."""
    path = tmp_path / "monitor.yaml"
    path.write_text(
        "store: {path: m.db}\nsuites:\n  nightly:\n    evalset: {bundled: larkfield}\n"
        "    search: {kind: replay, bundled: larkfield/rerank}\n"
        "    baseline: {bundled_run: larkfield/rerank}\n    bands: {mrr: {high: 0.9}}\n",
        encoding="utf-8",
    )
    assert 0 == main(["run", "--config", str(path), "--no-progress"])
    capsys.readouterr()
    main(["gate", "--config", str(path), "--suite", "nightly", "--no-progress"])
    assert ["mrr@10", "0.8399", "0.8399", "medium"] == _row(capsys.readouterr().out, "mrr@10")[:4]
