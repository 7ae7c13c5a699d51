"""A comparison read back from the form the store keeps is the comparison computed."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from monitor.cli import main
from monitor.compare import (
    Comparison,
    CoverageChange,
    MetricChange,
    Overlap,
    QueryOverlap,
    RuleOutcome,
)
from monitor.compare.overlap import OverlapRows
from monitor.compare.stored import decode_comparison, encode_comparison
from monitor.config import Check, load_config
from monitor.evalset.suite import load_evalset
from monitor.job.path import compare_with_baseline
from monitor.judgments.suite import suite_evalset
from monitor.store import open_store

CONFIG = """\
store: {path: m.db}
suites:
  nightly:
    evalset: {bundled: larkfield}
    search: {kind: replay, bundled: larkfield/keyword}
    baseline: {bundled_run: larkfield/rerank}
    segments: [kind, language]
    rules:
      - {metric: mrr@10, max_drop: 0.05}
      - {metric: ndcg@10, min: 0.3}
      - latency_p95_seconds_max: 0.2
    invariants:
      - {query: Q34, must_include: [d9a5bd8ea531], within: 5}
      - {no_lost_hits: {k: 5}}
"""


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Return a store holding a run of the bundled keyword search (run 2) and the rerank
    baseline (run 1), as the job left it."""
    path = tmp_path_factory.mktemp("stored") / "monitor.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    main(["run", "--config", str(path), "--no-progress"])
    return path.parent / "m.db"


@pytest.fixture(scope="module")
def computed(db: Path) -> Comparison:
    """Return the comparison of run 2 with its baseline, with every part a reader shows:
    rules, metric changes with judged-only means, query diffs, segments, invariants and the
    per-query overlap."""
    suite = load_config(db.parent / "monitor.yaml").suite("nightly")
    with open_store(db) as store:
        evalset = suite_evalset(store, suite, load_evalset(suite.evalset))
        current, baseline = store.get_run(2), store.get_run(1)
        return compare_with_baseline(suite, current, baseline, evalset, history={})


def _json(comparison: Comparison) -> str:
    """Return every field of ``comparison`` as JSON text (NaN spelt ``NaN``)."""
    return json.dumps(comparison.to_dict(), sort_keys=True)


def test_the_comparison_has_every_part(computed: Comparison) -> None:
    """The comparison the round trips read holds each part that has a form of its own."""
    parts = (
        computed.rules,
        computed.metrics,
        computed.worse_queries,
        computed.segments,
        computed.invariants,
        computed.overlap.queries if computed.overlap else (),
    )
    assert [True] * len(parts) == [bool(part) for part in parts]


def test_a_comparison_reads_back_equal(computed: Comparison) -> None:
    """Every record of the comparison reads back equal to the one computed."""
    assert computed == decode_comparison(encode_comparison(computed))


def test_every_field_reads_back_as_computed(computed: Comparison) -> None:
    """The JSON form of the comparison read back, the overlap's rows included, is the
    computed one's, character for character."""
    assert _json(computed) == _json(decode_comparison(encode_comparison(computed)))


def test_what_the_readers_derive_reads_back_alike(computed: Comparison) -> None:
    """The queries that moved most, the driving segment and the worse queries of the
    primary metric are those of the computed comparison."""
    read = decode_comparison(encode_comparison(computed))

    def derived(c: Comparison) -> object:
        moved = c.overlap.moved_most(10) if c.overlap else ()
        return (moved, c.driving_segment(), c.worse_for(), c.segments_for(), c.breaches)

    assert derived(computed) == derived(read)


def test_the_overlap_reads_back_as_columns(computed: Comparison) -> None:
    """The per-query overlap reads back as three columns, not a record per query."""
    read = decode_comparison(encode_comparison(computed))
    assert isinstance(read.overlap, Overlap)
    assert isinstance(read.overlap.queries, OverlapRows)


def test_an_overlaps_rows_read_back_as_the_same_rows() -> None:
    """Per-query overlaps read back as equal rows."""
    rows = OverlapRows.of((QueryOverlap("q1", 0.5, 0.25), QueryOverlap("q2", 1.0, 1.0)))
    comparison = Comparison("s", 2, 1, "ok", overlap=Overlap(10, 0.9, 0.75, 0.625, rows))
    assert comparison == decode_comparison(encode_comparison(comparison))


def test_a_comparison_without_a_baseline_reads_back_equal() -> None:
    """A comparison with no baseline, and so no overlap, reads back equal."""
    comparison = Comparison("s", 1, None, "no_baseline", warnings=("no baseline pinned",))
    assert comparison == decode_comparison(encode_comparison(comparison))


def test_figures_that_are_not_numbers_read_back_as_not_numbers() -> None:
    """NaN figures stay NaN (not null), an empty overlap's NaN means included."""
    rule = RuleOutcome("r", Check.MAX_DROP, "mrr@10", 0.05, "warning", "skipped", current=math.nan)
    change = MetricChange("mrr@10", 0.5, 0.25, -0.25, None, None, 0, math.nan, None)
    empty = Overlap(10, 0.9, math.nan, math.nan)
    comparison = Comparison("s", 2, 1, "ok", rules=(rule,), metrics=(change,), overlap=empty)
    read = decode_comparison(encode_comparison(comparison))
    assert read.overlap is not None
    means = (read.overlap.rbo, read.overlap.jaccard, read.overlap.n)
    assert (_json(comparison), "(nan, nan, 0)") == (_json(read), repr(means))


def test_coverage_changes_read_back_equal() -> None:
    """The judgment coverage against the baseline reads back equal."""
    change = CoverageChange(k=10, baseline=0.75, current=0.5, n=40, unjudged_added=60, queries=30)
    comparison = Comparison("s", 2, 1, "unjudged", coverage=(change,))
    assert comparison == decode_comparison(encode_comparison(comparison))


def test_a_stored_run_s_comparison_is_the_one_computed_from_it(
    computed: Comparison, db: Path
) -> None:
    """The comparison the job keeps for a run reads back as the comparison of the run."""
    with open_store(db) as store:
        kept = store.stored_comparison(2)
    assert kept is not None
    assert _json(computed) == _json(decode_comparison(kept.data))
