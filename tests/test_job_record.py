"""The job hands the store a run's queries as records and as the columns it saves: both
describe the same queries, byte for byte once encoded."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

import monitor.job.path
from monitor.cli import main
from monitor.evalset import EvalSet
from monitor.store import RunRecord, columnar

SUITE = """
store: {{path: {store}}}
suites:
  nightly:
    evalset: {{bundled: larkfield}}
    search: {{kind: replay, bundled: larkfield/keyword}}
    metrics: [mrr@10, ndcg@10, recall@5]
    exporters: []
    notifiers: []
"""


def test_the_columns_of_a_run_encode_as_its_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The columns the job builds for the store are the run's records, blob for blob, with
    the eval set's relevant ids."""
    records: list[RunRecord] = []
    evalsets: list[EvalSet] = []
    build = monitor.job.path.run_record

    def keep(*args: Any, **kwargs: Any) -> RunRecord:
        record = build(*args, **kwargs)
        records.append(record)
        evalsets.append(args[1])
        return record

    monkeypatch.setattr(monitor.job.path, "run_record", keep)
    config = tmp_path / "monitor.yaml"
    config.write_text(textwrap.dedent(SUITE.format(store=tmp_path / "m.db")))
    assert 0 == main(["run", "--config", str(config), "--no-progress", "--format", "json"])
    (record,) = records
    (evalset,) = evalsets
    assert record.columns is not None
    assert 0 < sum(1 for q in record.queries if not q.values)  # some queries are not judged
    expected = columnar.encode_queries(record.queries)
    assert expected == columnar.encode_columns(record.columns)
    relevant = [evalset[q.query_id].relevant_ids for q in record.queries]
    assert relevant == list(record.columns.relevant_ids)


BULK_SUITE = """
store: {{path: {store}}}
suites:
  nightly:
    evalset: {{bundled: larkfield}}
    search: {{kind: replay, path: {run}, format: trec}}
    metrics: [mrr@10, ndcg@10, recall@5]
    exporters: []
    notifiers: []
"""


def test_a_run_answered_in_bulk_encodes_as_its_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replayed TREC run (answered in bulk, its hits kept as arrays) hands the store
    columns that encode as its records do, blob for blob."""
    from monitor.evalset.bundled import larkfield_run
    from monitor.search.base import normalise_hits

    lines = []
    for qid, hits in larkfield_run("keyword").items():
        for rank, hit in enumerate(normalise_hits(hits), 1):
            lines.append(f"{qid} Q0 {hit.id} {rank} {100 - rank} tag\n")
    run = tmp_path / "keyword.trec"
    run.write_text("".join(lines), encoding="utf-8")
    records: list[RunRecord] = []
    build = monitor.job.path.run_record

    def keep(*args: Any, **kwargs: Any) -> RunRecord:
        record = build(*args, **kwargs)
        records.append(record)
        return record

    monkeypatch.setattr(monitor.job.path, "run_record", keep)
    config = tmp_path / "monitor.yaml"
    config.write_text(textwrap.dedent(BULK_SUITE.format(store=tmp_path / "m.db", run=run)))
    assert 0 == main(["run", "--config", str(config), "--no-progress", "--format", "json"])
    (record,) = records
    assert record.columns is not None
    # One dictionary for both, numbered as the store numbers it: stored as it is.
    shared = columnar._one_dictionary(record.columns.retrieved_ids, record.columns.relevant_ids)
    assert shared is not None
    expected = columnar.encode_queries(tuple(record.queries))
    assert expected == columnar.encode_columns(record.columns)
