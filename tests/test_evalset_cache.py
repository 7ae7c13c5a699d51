"""A large frozen eval set is parsed once: later runs read its columns back from the cache."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from monitor.evalset import EvalSet, cache

LINES = [
    {"id": "q1", "query": "café", "relevant": {"d1": 2, "d2": 0}, "metadata": {"kind": "a"}},
    {"id": "q2", "query": "two", "relevant": ["dé"], "metadata": {"kind": "a", "w": 1.0}},
    {"id": "q3", "query": "", "metadata": {"ok": True, "n": 3, "none": None}},
    {"id": "q4", "query": "four", "relevant": {"d1": 1}, "metadata": {"kind": "a"}},
]


@pytest.fixture(autouse=True)
def _keep_every_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache, "MIN_BYTES", 0)


def _evalset(tmp_path: Path, lines: list[dict[str, object]] = LINES) -> EvalSet:
    path = tmp_path / "set.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return EvalSet.load(path)


def test_a_kept_set_reads_back_as_it_was_read(tmp_path: Path) -> None:
    """Queries, name, metadata types and the columns themselves come back unchanged."""
    evalset = _evalset(tmp_path)
    cache.write("sha256:ab", evalset, 10, tmp_path / "cache")
    back = cache.read("sha256:ab", tmp_path / "cache")
    assert back is not None
    assert evalset == back
    assert "set" == back.name
    assert evalset.columns() == back.columns()
    assert {"kind": "a", "w": 1.0} == dict(back["q2"].metadata)
    assert float is type(back["q2"].metadata["w"])
    assert evalset.fingerprint == back.fingerprint


def test_other_files_find_nothing(tmp_path: Path) -> None:
    """A set kept for one digest is not read for another."""
    cache.write("sha256:ab", _evalset(tmp_path), 10, tmp_path / "cache")
    assert cache.read("sha256:cd", tmp_path / "cache") is None


def test_a_damaged_cache_file_is_ignored(tmp_path: Path) -> None:
    """Bytes that are not a kept set, or a kept set of other files, read as nothing."""
    folder = tmp_path / "cache"
    cache.write("sha256:ab", _evalset(tmp_path), 10, folder)
    (kept,) = folder.iterdir()
    kept.write_bytes(b"not a cache file")
    assert cache.read("sha256:ab", folder) is None
    cache.write("sha256:ab", _evalset(tmp_path), 10, folder)
    kept.rename(folder / kept.name.replace("ab", "cd"))
    assert cache.read("sha256:cd", folder) is None


def test_a_small_file_is_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a set read from files of at least MIN_BYTES in all is written."""
    folder = tmp_path / "cache"
    monkeypatch.setattr(cache, "MIN_BYTES", 11)
    cache.write("sha256:ab", _evalset(tmp_path), 10, folder)
    assert not folder.exists()


def test_only_the_last_sets_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Beyond KEEP files, the ones read or written longest ago are deleted."""
    monkeypatch.setattr(cache, "KEEP", 2)
    folder = tmp_path / "cache"
    evalset = _evalset(tmp_path)
    for i, digest in enumerate(("sha256:01", "sha256:02", "sha256:03")):
        cache.write(digest, evalset, 10, folder)
        for path in folder.iterdir():
            if digest[7:] in path.name:
                os.utime(path, (1000 + i, 1000 + i))
    assert ["v1-02.npz", "v1-03.npz"] == sorted(path.name for path in folder.iterdir())


def test_a_tampered_file_of_inconsistent_arrays_is_ignored(tmp_path: Path) -> None:
    """Arrays whose lengths do not fit together are refused, not read as a set."""
    folder = tmp_path / "cache"
    cache.write("sha256:ab", _evalset(tmp_path), 10, folder)
    (kept,) = folder.iterdir()
    with np.load(kept) as held:
        arrays = dict(held)
    arrays["counts"] = arrays["counts"] + 1
    with kept.open("wb") as out:
        np.savez(out, **arrays)
    assert cache.read("sha256:ab", folder) is None


def test_the_cache_folder_follows_the_environment() -> None:
    """MONITOR_CACHE_DIR names the folder; else XDG_CACHE_HOME's retrieval-monitor folder."""
    assert Path("/c") == cache.cache_dir({"MONITOR_CACHE_DIR": "/c"})
    assert Path("/x/retrieval-monitor/evalsets") == cache.cache_dir({"XDG_CACHE_HOME": "/x"})


def _run_suite(tmp_path: Path, lines: list[dict[str, object]]) -> int:
    from monitor.cli import main

    (tmp_path / "set.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8"
    )
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 1.0 t\nq2 Q0 dé 1 1.0 t\nq4 Q0 d9 1 1.0 t\n", encoding="utf-8")
    config = tmp_path / "monitor.yaml"
    config.write_text(
        f"store: {{path: {tmp_path / 'm.db'}}}\n"
        "suites:\n"
        "  nightly:\n"
        f"    evalset: {{path: {tmp_path / 'set.jsonl'}}}\n"
        f"    search: {{kind: replay, path: {run}, format: trec}}\n"
        "    metrics: [mrr@10, recall@5]\n"
        "    exporters: []\n"
        "    notifiers: []\n",
        encoding="utf-8",
    )
    return main(["run", "--config", str(config), "--no-progress", "--format", "json"])


def test_a_run_reads_a_kept_set_instead_of_parsing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The second run of unchanged files parses nothing and measures the same figures;
    a changed file is parsed again, its new queries measured."""
    from monitor.evalset import suite

    assert 0 == _run_suite(tmp_path, LINES)
    first = json.loads(capsys.readouterr().out)["suites"][0]["means"]
    parse = suite.load_evalset

    def refused(config: object) -> EvalSet:
        raise AssertionError("parsed again")

    monkeypatch.setattr(suite, "load_evalset", refused)
    assert 0 == _run_suite(tmp_path, LINES)
    assert first == json.loads(capsys.readouterr().out)["suites"][0]["means"]
    monkeypatch.setattr(suite, "load_evalset", parse)
    assert 0 == _run_suite(tmp_path, LINES[:2])
    assert first != json.loads(capsys.readouterr().out)["suites"][0]["means"]
