"""Query drift on queries: query files, traffic windows, embedding, and `drift check`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from monitor.cli import main
from monitor.config.windows import Window, parse_span, windows
from monitor.drift import queries
from monitor.drift.queries import (
    QuerySample,
    check_queries,
    embed,
    read_query_file,
)
from monitor.drift.settings import DriftSettings
from monitor.errors import InputError, UsageError
from tests.drift_fakes import WORDS_A, WORDS_B, HashedWords, texts, write_logs


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> HashedWords:
    """The fake embedder, as the one `drift check` opens."""
    embedder = HashedWords()
    monkeypatch.setattr(queries, "open_embedder", lambda kind: embedder)
    return embedder


def test_a_query_file_counts_each_key_with_its_most_frequent_text(tmp_path: Path) -> None:
    """Lines that share a key are one query, its text the commonest raw form."""
    path = tmp_path / "q.txt"
    path.write_text("Red Shoes\nred shoes\nred  shoes\nred shoes\n\nblue hat\n", encoding="utf-8")
    found = read_query_file(path)
    assert (("blue hat", "red shoes"), [1, 4]) == (found.texts, found.searches.tolist())


@pytest.mark.parametrize("field", ["query", "text"])
def test_a_jsonl_file_reads_its_text_field(tmp_path: Path, field: str) -> None:
    """JSON Lines rows give their query in `query` or `text`."""
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({field: "Where is it", "id": 1}) + "\n", encoding="utf-8")
    assert ("Where is it",) == read_query_file(path).texts


def test_a_jsonl_row_without_text_names_file_and_line(tmp_path: Path) -> None:
    """A JSON row without a text field is an InputError naming the file and line."""
    path = tmp_path / "q.jsonl"
    path.write_text('{"query": "ok"}\n{"id": 2}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"q\.jsonl:2: expected a JSON object"):
        read_query_file(path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "2026-11-01..2026-11-08",
            Window(datetime(2026, 11, 1), datetime(2026, 11, 8)),
        ),
        ("7d", Window(datetime(2026, 11, 23), datetime(2026, 11, 30))),
    ],
)
def test_parse_span(text: str, expected: Window) -> None:
    """A window is START..END, or a length ending at the given end."""
    assert expected == parse_span(text, "--current", until=datetime(2026, 11, 30))


@pytest.mark.parametrize("text", ["2026-11-08..2026-11-01", "seven days", "2026-13-01..2027"])
def test_a_bad_span_names_its_option(text: str) -> None:
    """A window that does not parse, or ends before it starts, names its option."""
    with pytest.raises(UsageError, match="--reference"):
        parse_span(text, "--reference", until=datetime(2026, 11, 30))


def test_a_reference_length_ends_where_the_current_window_starts() -> None:
    """`28d` before `7d`: the four weeks before the last one."""
    reference, _ = windows("28d", "7d", until=datetime(2026, 11, 29))
    assert Window(datetime(2026, 10, 25), datetime(2026, 11, 22)) == reference


def test_embed_embeds_each_distinct_text_once() -> None:
    """Repeated texts are embedded once and their rows repeated in order."""
    embedder = HashedWords()
    rows = embed(embedder, ["a b", "c", "a b"])
    assert ([2], rows[0].tolist()) == (embedder.calls, rows[2].tolist())


def test_searches_weighting_caps_the_searches_drawn() -> None:
    """Weighted by searches, a capped sample draws that many searches."""
    sample = QuerySample("s", ("a", "b"), np.array([900, 100], dtype=np.int64))
    chosen = sample.chosen("searches", 50, np.random.default_rng(0))
    assert 50 == len(chosen)


@pytest.mark.parametrize(("other", "status"), [(WORDS_A, "ok"), (WORDS_B, "drift")])
def test_check_queries(other: list[str], status: str) -> None:
    """Queries from the same words are ok; queries from other words drift."""
    reference = queries._sample("r", texts(WORDS_A, 120, seed=1))
    current = queries._sample("c", texts(other, 120, seed=2))
    found = check_queries(reference, current, HashedWords(), DriftSettings(permutations=100))
    assert status == found.status


def test_too_few_queries_embeds_nothing() -> None:
    """A sample below min_queries is no data, and nothing is embedded."""
    embedder = HashedWords()
    small = queries._sample("s", ["one query"])
    found = check_queries(small, small, embedder, DriftSettings())
    assert ("no data", []) == (found.status, embedder.calls)


def _write(path: Path, texts: Sequence[str]) -> Path:
    path.write_text("".join(f"{text}\n" for text in texts), encoding="utf-8")
    return path


@pytest.mark.parametrize(("other", "code"), [(WORDS_A, 0), (WORDS_B, 4)])
def test_cli_exit_code_follows_the_verdict(
    tmp_path: Path, fake: HashedWords, other: list[str], code: int
) -> None:
    """`drift check` on two files exits 0 when ok and 4 on drift."""
    reference = _write(tmp_path / "r.txt", texts(WORDS_A, 120, seed=1))
    current = _write(tmp_path / "c.txt", texts(other, 120, seed=2))
    argv = ["drift", "check", "--reference-file", str(reference), "--current-file", str(current)]
    assert code == main([*argv, "--permutations", "100"])


def test_cli_json_holds_the_three_figures(
    tmp_path: Path, fake: HashedWords, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--format json` prints the MMD, the AUC, the centroid distance and the verdict."""
    reference = _write(tmp_path / "r.txt", texts(WORDS_A, 80, seed=1))
    current = _write(tmp_path / "c.txt", texts(WORDS_B, 80, seed=2))
    argv = ["drift", "check", "--reference-file", str(reference), "--current-file", str(current)]
    main([*argv, "--format", "json", "--permutations", "50"])
    body = json.loads(capsys.readouterr().out)
    figures = {"mmd2", "mmd_p_value", "auc", "centroid_cosine_distance"}
    assert ("drift", set()) == (body["status"], figures - set(body["statistics"]))


def test_cli_too_few_queries_exits_5(
    tmp_path: Path, fake: HashedWords, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file with fewer than --min-queries queries is no data, exit 5."""
    reference = _write(tmp_path / "r.txt", texts(WORDS_A, 80, seed=1))
    current = _write(tmp_path / "c.txt", ["one", "two"])
    argv = ["drift", "check", "--reference-file", str(reference), "--current-file", str(current)]
    assert (5, "verdict: no data") == (main(argv), capsys.readouterr().out.splitlines()[-1][:16])


@pytest.mark.parametrize(
    "argv",
    [
        ["--reference-file", "r.txt"],
        ["--logs", "db", "--reference", "7d"],
        ["--logs", "db", "--reference", "7d", "--current", "1d", "--current-file", "c.txt"],
    ],
)
def test_cli_needs_two_windows_or_two_files(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Anything but two windows of a database or two files exits 2 in one line."""
    assert 2 == main(["drift", "check", *argv])
    assert 1 == len(capsys.readouterr().err.splitlines())


def test_cli_without_an_embedder_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without the embedding package, `drift check` says in one line what to install."""
    import importlib

    def missing(name: str) -> object:
        raise ImportError(name)

    monkeypatch.setattr(importlib, "import_module", missing)
    reference = _write(tmp_path / "r.txt", ["a"])
    argv = ["drift", "check", "--reference-file", str(reference), "--current-file", str(reference)]
    assert 2 == main(argv)
    assert "retrieval-monitor[vector]" in capsys.readouterr().err


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A traffic database: a week of WORDS_A queries, then a week of WORDS_B queries."""
    pytest.importorskip("duckdb")
    return write_logs(tmp_path_factory.mktemp("drift"))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("current", "code"),
    [("2026-11-08..2026-11-15", 4), ("2026-11-20..2026-11-21", 5)],
)
def test_cli_on_two_windows_of_the_logs(
    logs: Path, fake: HashedWords, current: str, code: int
) -> None:
    """The second week drifts from the first; a day past the logs is no data."""
    argv = ["drift", "check", "--logs", str(logs), "--reference", "2026-11-01..2026-11-08"]
    argv += ["--current", current, "--permutations", "50"]
    assert code == main(argv)
