"""A baseline file holds a suite's baseline run and reads back as the same run."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from monitor.errors import InputError, UsageError
from monitor.gate.baseline_file import FORMAT, VERSION, read_baseline, write_baseline
from monitor.records import LatencySummary
from monitor.store.records import QueryRecord, RunFigures, RunRecord

PINNED = datetime(2024, 5, 1, 2, 0, tzinfo=timezone.utc)


def baseline_run(**changes: Any) -> RunRecord:
    """Return a small baseline run with every field filled."""
    fields: dict[str, Any] = {
        "suite": "nightly",
        "pipeline": "rerank",
        "started_at": datetime(2024, 5, 1, 1, 0, tzinfo=timezone.utc),
        "finished_at": datetime(2024, 5, 1, 1, 5, tzinfo=timezone.utc),
        "evalset_fingerprint": "sha256:abc",
        "config_hash": "f00d",
        "means": {"recall@5": 0.5, "ndcg@10": 0.25},
        "figures": RunFigures(
            latency=LatencySummary(count=2, mean=0.2, p50=0.2, p95=0.29, p99=0.3, max=0.3),
            error_rate=0.0,
            zero_result_rate=0.5,
            mean_top1_score=None,
            queries_per_second=10.0,
            index_size=120,
            sent=2,
            failed=0,
            evaluated=2,
        ),
        "stats": {"replay_source": "run.json"},
        "queries": (
            QueryRecord("Q1", {"recall@5": 1.0, "ndcg@10": 0.5}, ("d1", "d2"), ("d1",), 0.1),
            QueryRecord("Q2", {"recall@5": 0.0, "ndcg@10": 0.0}, (), ("d3",), 0.3),
        ),
        "run_id": 12,
    }
    fields.update(changes)
    return RunRecord(**fields)


def written(tmp_path: Path, run: RunRecord) -> Path:
    path = tmp_path / "baseline.json"
    write_baseline(path, run, metrics=["recall@5", "ndcg@10"], pinned_at=PINNED)
    return path


def test_the_run_written_is_the_run_read(tmp_path: Path) -> None:
    """Every field of the run, its queries and its figures survive the file."""
    run = baseline_run()
    assert run == read_baseline(written(tmp_path, run)).run


def test_the_file_keeps_the_metric_names_and_pinned_time(tmp_path: Path) -> None:
    """The metric names and the time the run was pinned are read back."""
    read = read_baseline(written(tmp_path, baseline_run()))
    assert (("recall@5", "ndcg@10"), PINNED) == (read.metrics, read.pinned_at)


def test_the_file_names_its_format_and_version(tmp_path: Path) -> None:
    """The file starts with the format and version a reader checks."""
    document = json.loads(written(tmp_path, baseline_run()).read_text())
    assert (FORMAT, VERSION) == (document["format"], document["version"])


def test_a_mean_that_could_not_be_computed_is_null_and_reads_back_as_nan(tmp_path: Path) -> None:
    """NaN, which JSON cannot hold, is written as null and read back as NaN."""
    path = written(tmp_path, baseline_run(means={"recall@5": math.nan}))
    assert None is json.loads(path.read_text())["means"]["recall@5"]
    assert math.isnan(read_baseline(path).run.means["recall@5"])


def test_a_failed_run_is_no_baseline(tmp_path: Path) -> None:
    """A failed run is refused, naming the run."""
    with pytest.raises(UsageError, match=r"run 12 of suite .nightly. failed"):
        write_baseline(
            tmp_path / "b.json", baseline_run(status="failed", means={}), metrics=["recall@5"]
        )


def edited(document: dict[str, Any], key: str, value: object) -> dict[str, Any]:
    changed = json.loads(json.dumps(document))
    if value is _DROP:
        del changed[key]
    else:
        changed[key] = value
    return changed


_DROP = object()


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("format", "something-else", "format 'retrieval-monitor-baseline'"),
        ("version", 2, "version 1 of retrieval-monitor-baseline, found 2"),
        ("queries", _DROP, "a JSON list at queries"),
        ("queries", [{"query_id": 7}], r"a string at queries\[0\].query_id"),
        (
            "queries",
            [{"query_id": "Q", "values": {}, "retrieved_ids": [1]}],
            "a list of doc id strings at queries\\[0\\].retrieved_ids",
        ),
        ("means", {"recall@5": "high"}, "a number or null at means.recall@5"),
        ("started_at", "yesterday", "an ISO 8601 time with its zone at started_at"),
        (
            "figures",
            {"latency": {"count": -1}, "sent": 1, "failed": 0, "evaluated": 1},
            r"a count \(an integer from 0 to 9223372036854775807\) at figures.latency.count",
        ),
    ],
    ids=["format", "version", "no-queries", "query-id", "ids", "mean", "time", "figures"],
)
def test_a_malformed_file_is_refused_naming_the_file_and_key(
    tmp_path: Path, key: str, value: object, said: str
) -> None:
    """A file of another format or version, or a bad value, names the file, key and want."""
    path = written(tmp_path, baseline_run())
    path.write_text(json.dumps(edited(json.loads(path.read_text()), key, value)))
    with pytest.raises(InputError, match=said) as caught:
        read_baseline(path)
    assert str(path) == caught.value.source


def first_query(**changes: object) -> Callable[[dict[str, Any]], None]:
    """Return an edit that updates the first query of a document with ``changes``."""
    return lambda document: document["queries"][0].update(changes)


def first_values(**changes: object) -> Callable[[dict[str, Any]], None]:
    """Return an edit that updates the first query's metric values with ``changes``."""
    return lambda document: document["queries"][0]["values"].update(changes)


# (an edit of a good document, what the error must say)
REFUSED: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "no queries": (lambda d: d.update(queries=[]), r"at least one query at queries, found '\[\]'"),
    "a query twice": (
        lambda d: d["queries"].append(d["queries"][0]),
        r"each query once at queries\[2\].query_id, found 'Q1'",
    ),
    "version true": (lambda d: d.update(version=True), "version 1 of .*, found True"),
    "recall 7.0": (
        first_values(**{"recall@5": 7.0}),
        r"a number from 0 to 1 or null at queries\[0\].values.recall@5, found 7.0",
    ),
    "a mean of -1.0": (
        lambda d: d["means"].update({"ndcg@10": -1.0}),
        "a number from 0 to 1 or null at means.ndcg@10, found -1.0",
    ),
    "num_ret -1": (
        first_values(num_ret=-1.0),
        r"a number of at least 0 or null at queries\[0\].values.num_ret, found -1.0",
    ),
    "a negative latency": (
        first_query(latency_seconds=-0.5),
        r"at least 0 or null at queries\[0\].latency_seconds, found -0.5",
    ),
    "a negative mean latency": (
        lambda d: d["figures"]["latency"].update(mean=-1),
        "a number of at least 0 or null at figures.latency.mean, found -1",
    ),
    "an error rate of 2": (
        lambda d: d["figures"].update(error_rate=2),
        "a number from 0 to 1 or null at figures.error_rate, found 2",
    ),
    "a run id past 64 bits": (
        lambda d: d.update(run_id=2**63),
        r"a count \(an integer from 0 to 9223372036854775807\) at run_id",
    ),
    "a NUL in a query id": (
        first_query(query_id="Q\x00"),
        r"without control characters at queries\[0\].query_id",
    ),
    "a string of ids": (
        first_query(retrieved_ids="d1"),
        r"a list of doc id strings at queries\[0\].retrieved_ids, found 'd1'",
    ),
}


@pytest.mark.parametrize(("edit", "said"), REFUSED.values(), ids=REFUSED.keys())
def test_a_value_no_run_can_hold_is_refused_naming_the_key(
    tmp_path: Path, edit: Callable[[dict[str, Any]], None], said: str
) -> None:
    """No queries, a query twice, a share outside [0, 1] or a negative latency is refused."""
    path = written(tmp_path, baseline_run())
    document = json.loads(path.read_text())
    edit(document)
    path.write_text(json.dumps(document))
    with pytest.raises(InputError, match=said):
        read_baseline(path)


@pytest.mark.parametrize(
    ("literal", "said"),
    [
        ("9" * 5000, "expected integers of at most 30 digits, found one of 5000"),
        ("[" * 100_000 + "]" * 100_000, "expected JSON nested a few levels deep"),
        ("Infinity", r"expected finite numbers \(JSON has no Infinity\)"),
        ("1e400", "expected a finite number or null at queries"),
    ],
    ids=["5,000 digits", "100,000 deep", "Infinity", "1e400"],
)
def test_a_number_json_cannot_hold_is_one_error(tmp_path: Path, literal: str, said: str) -> None:
    """A 5,000-digit number, JSON nested 100,000 deep or an infinity is refused, no traceback."""
    path = written(tmp_path, baseline_run())
    text = path.read_text().replace('"latency_seconds": 0.1', f'"latency_seconds": {literal}')
    path.write_text(text)
    with pytest.raises(InputError, match=said):
        read_baseline(path)


def test_a_file_that_is_not_json_names_the_line(tmp_path: Path) -> None:
    """Text that is not JSON is refused with the file and line."""
    path = tmp_path / "baseline.json"
    path.write_text('{\n  "format": oops\n}\n')
    with pytest.raises(InputError, match=rf"{path}:2: expected valid JSON"):
        read_baseline(path)
