"""A comparison matches the two runs' queries once and reads every figure from the match."""

from __future__ import annotations

import hashlib
import json
import math
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from monitor.compare.coverage import pooled_qrels
from monitor.compare.diff import (
    labelled_segment_changes,
    segment_changes,
    segment_labels,
    worse_queries,
)
from monitor.compare.matched import Matched
from monitor.compare.rules import left_out
from monitor.config import default_config
from monitor.evalset import EvalSet
from monitor.job import run_suite
from monitor.judgments import labels_of, merge
from monitor.records import MetaValue
from monitor.store import open_store
from monitor.store.records import QueryRecord, RunRecord

AT = datetime(2030, 1, 1, tzinfo=timezone.utc)


def run(values: dict[str, float | None], failed: tuple[str, ...] = ()) -> RunRecord:
    """Return a run whose queries score ``values`` on ndcg@10 (None: not evaluated)."""
    return RunRecord(
        suite="s",
        pipeline="p",
        started_at=AT,
        finished_at=AT,
        means={"ndcg@10": 0.5},
        queries=tuple(
            QueryRecord(
                query_id=qid,
                values={} if value is None else {"ndcg@10": value},
                retrieved_ids=(f"d-{qid}",),
                relevant_ids=() if value is None else (f"d-{qid}",),
                error_type="Timeout" if qid in failed else None,
            )
            for qid, value in values.items()
        ),
    )


def test_pairs_follow_the_current_order_and_skip_unanswered_or_unevaluated_queries() -> None:
    """Only queries both runs answered and evaluated pair up, in the current run's order."""
    before = run({"a": 0.1, "b": 0.2, "c": 0.3, "d": None, "e": 0.5}, failed=("e",))
    after = run({"e": 0.9, "d": 0.8, "c": 0.7, "x": 0.6, "b": math.nan, "a": 0.4})
    ids, old, new = Matched.of(before, after).aligned("ndcg@10")
    assert ["c", "b", "a"] == ids
    assert [0.3, 0.2, 0.1] == old.tolist()
    assert [0.7, 0.4] == [new[0], new[2]]
    assert math.isnan(new[1])


@pytest.mark.parametrize("paired", [True, False])
def test_the_match_counts_left_out_queries_as_the_record_walk_does(paired: bool) -> None:
    """Matched.left_out gives the count rules.left_out gives, with and without pairs."""
    before = run({"a": 0.1, "b": 0.2, "c": None, "d": 0.4}, failed=("b", "c"))
    after = run({"a": 0.5, "b": 0.5, "c": 0.5, "d": None, "e": 0.1}, failed=("d", "e"))
    expected = left_out(after, before if paired else None)
    assert expected == Matched.of(before, after).left_out(paired=paired)


def test_worse_queries_break_ties_by_id_among_many_equal_losses() -> None:
    """With more equal losses than are shown, the smallest ids come first."""
    ids = [f"q{i:02d}" for i in range(40)]
    before = run(dict.fromkeys(ids, 1.0))
    after = run({qid: 0.0 if i % 2 else 0.5 for i, qid in enumerate(ids)})
    shown = worse_queries(before, after, "ndcg@10", top=3)
    assert ["q01", "q03", "q05"] == [diff.query_id for diff in shown]


def test_segments_of_a_subset_equal_the_breakdown_of_that_subset() -> None:
    """Labels made once for all queries give each metric's subset its own breakdown."""
    ids = [f"q{i}" for i in range(12)]
    metadata = {qid: {"kind": "ab"[i % 2], "lang": i % 3} for i, qid in enumerate(ids)}
    rng = np.random.default_rng(3)
    before, after = rng.random(12), rng.random(12)
    rows = np.array([0, 2, 3, 5, 8, 11])
    labels = segment_labels(ids, ["kind", "lang", "absent"], metadata)
    chosen = [ids[i] for i in rows]
    expected = segment_changes(
        chosen, before[rows], after[rows], "ndcg@10", ["kind", "lang", "absent"], metadata
    )
    assert expected == labelled_segment_changes(labels, rows, before[rows], after[rows], "ndcg@10")


def test_the_labels_digest_the_canonical_rows_of_ids_texts_and_grades() -> None:
    """labels_of digests [[id, text], ...] and [[id, [[doc, grade], ...]], ...], all sorted."""
    evalset = EvalSet("e")
    evalset.add("q2", "two", relevant={"b": 1, "a": 0})
    evalset.add("q10", "ten", relevant={"z": 2})
    evalset.add("q1", "one")
    texts = [["q1", "one"], ["q10", "ten"], ["q2", "two"]]
    grades = [["q1", []], ["q10", [["z", 2]]], ["q2", [["a", 0], ["b", 1]]]]
    labels = labels_of(evalset)
    assert (digest(texts), digest(grades)) == (
        labels.queries_fingerprint,
        labels.judgments_version,
    )


def digest(rows: object) -> str:
    """Return the sha256 of the compact JSON of ``rows``, as the labels are defined."""
    text = json.dumps(rows, ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_a_run_digests_its_eval_set_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Storing a run's labels and aligning its baseline share one reading of the eval set."""
    suite = default_config().suite("larkfield")
    with open_store(tmp_path / "m.db") as store:
        run_suite(suite, store, progress=False)
        reads: list[int] = []
        digest = merge._RowsDigest  # one reading of the set writes two digests
        monkeypatch.setattr(merge, "_RowsDigest", lambda: reads.append(1) or digest())
        outcome = run_suite(suite, store, progress=False)
    assert (2, 1) == (len(reads), outcome.comparison.baseline_run_id)


def test_segments_are_named_by_the_text_of_their_value() -> None:
    """Values 1 and "1" share segment "1"; a query without the key is in "(none)"."""
    metadata: dict[str, dict[str, MetaValue]] = {"a": {"k": 1}, "b": {"k": "1"}, "c": {}}
    before, after = np.array([0.5, 0.5, 0.5]), np.array([0.0, 1.0, 0.5])
    changes = segment_changes(["a", "b", "c"], before, after, "ndcg@10", ["k"], metadata)
    assert {("1", 2), ("(none)", 1)} == {(change.value, change.n) for change in changes}


def test_pooled_judgments_are_those_with_a_non_relevant_grade() -> None:
    """A query with a grade of 0 or below is pooled; relevant-only and unjudged ones not."""
    qrels = {"q1": {"a": 1, "b": 0}, "q2": {"a": 2}, "q3": {}, "q4": {"c": -1}}
    assert ["q1", "q4"] == list(pooled_qrels(qrels))
