"""The job hands the store a run's queries as records and as the columns it saves: both
describe the same queries, byte for byte once encoded."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

import monitor.job
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
    build = monitor.job._record

    def keep(*args: Any, **kwargs: Any) -> RunRecord:
        record = build(*args, **kwargs)
        records.append(record)
        evalsets.append(args[1])
        return record

    monkeypatch.setattr(monitor.job, "_record", keep)
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
