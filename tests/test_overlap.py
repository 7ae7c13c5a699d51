"""Label-free overlap of the current top k with the baseline's: RBO, Jaccard@k, min_overlap."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from monitor.compare import compare_runs
from monitor.compare import overlap as overlap_module
from monitor.compare.overlap import (
    PERSISTENCE,
    jaccard,
    overlap_of,
    overlaps,
    rank_biased_overlap,
)
from monitor.config import Check, RuleConfig
from monitor.store.records import QueryRecord, RunRecord

# The reference implementation of Webber et al.'s RBO; its metadata caps numpy below 2,
# so it is installed without its dependencies (see .ci/run), not as an extra.
try:
    import rbo
except ImportError:  # pragma: no cover - the reference test alone is skipped
    rbo = None

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


@pytest.fixture(scope="module", autouse=True)
def _no_tqdm_monitor_thread() -> Iterator[None]:
    """Keep the reference's progress bars (tqdm) from starting their monitor thread, which
    would run on after the test."""
    with pytest.MonkeyPatch.context() as patch:
        if rbo is not None:
            import tqdm

            patch.setattr(tqdm.tqdm, "monitor_interval", 0)
        yield


rankings = st.lists(st.sampled_from([f"d{i}" for i in range(15)]), max_size=12, unique=True)


def run(lists: dict[str, list[str]], run_id: int, failed: tuple[str, ...] = ()) -> RunRecord:
    """Store ``lists`` as a run's rankings (``failed`` queries with an error and no hits)."""
    return RunRecord(
        suite="s",
        pipeline="p",
        started_at=T0,
        finished_at=T0,
        evalset_fingerprint="sha256:a",
        means={"recall@10": 1.0},
        queries=tuple(
            QueryRecord(
                query_id=qid,
                values={} if qid in failed else {"recall@10": 1.0},
                retrieved_ids=() if qid in failed else tuple(ids),
                error_type="Timeout" if qid in failed else None,
            )
            for qid, ids in lists.items()
        ),
        run_id=run_id,
    )


@given(rankings.filter(bool), rankings.filter(bool))
def test_rbo_matches_the_reference_extrapolated_rbo(a: list[str], b: list[str]) -> None:
    """RBO at depth 10 equals rbo.RankingSimilarity(...).rbo_ext(p=0.9) on the cut lists."""
    if rbo is None:
        pytest.skip("the rbo reference package is not installed")
    expected = rbo.RankingSimilarity(a[:10], b[:10]).rbo_ext(p=PERSISTENCE)
    assert expected == pytest.approx(rank_biased_overlap(a, b, 10), abs=1e-12)


@given(rankings, rankings)
def test_overlaps_stay_in_the_unit_interval(a: list[str], b: list[str]) -> None:
    """Both measures lie in [0, 1] and are symmetric."""
    for measure in (rank_biased_overlap, jaccard):
        value = measure(a, b, 10)
        assert 0.0 <= value <= 1.0
        assert value == pytest.approx(measure(b, a, 10))


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (["x", "y", "z"], ["x", "y", "z"], 1.0),
        (["x", "y"], ["u", "v"], 0.0),
        ([], [], 1.0),
        (["x"], [], 0.0),
    ],
)
def test_identical_lists_score_one_and_disjoint_ones_zero(
    a: list[str], b: list[str], expected: float
) -> None:
    """Identical (or both empty) rankings overlap fully; disjoint ones not at all."""
    assert expected == rank_biased_overlap(a, b, 10)
    assert expected == jaccard(a, b, 10)


def test_jaccard_ignores_order_below_the_cutoff() -> None:
    """Jaccard@2 of [a, b, c] and [b, a, d] is 1: the same two documents, in any order."""
    assert 1.0 == jaccard(["a", "b", "c"], ["b", "a", "d"], 2)


def test_rbo_weighs_the_top_more_than_the_bottom() -> None:
    """Swapping the first two ranks costs more RBO than swapping the last two."""
    base = [f"d{i}" for i in range(10)]
    top = [base[1], base[0], *base[2:]]
    bottom = [*base[:8], base[9], base[8]]
    assert rank_biased_overlap(base, top, 10) < rank_biased_overlap(base, bottom, 10)


def test_overlap_leaves_out_queries_that_failed_in_either_run() -> None:
    """A query that failed in the current run has no ranking to compare: n counts one."""
    before = run({"q1": ["a", "b"], "q2": ["c"]}, 1)
    after = run({"q1": ["a", "b"], "q2": ["c"]}, 2, failed=("q2",))
    overlap = overlap_of(before, after, 10)
    assert (1, 1.0, 1.0) == (overlap.n, overlap.rbo, overlap.jaccard)


def test_min_overlap_breaches_when_the_rankings_moved() -> None:
    """Disjoint top k in every query breach min_overlap 0.5, with no judgments at all."""
    before = run({"q1": ["a", "b"], "q2": ["c", "d"]}, 1)
    after = run({"q1": ["x", "y"], "q2": ["z", "w"]}, 2)
    comparison = compare_runs(after, before, [RuleConfig(Check.MIN_OVERLAP, 0.5)])
    (outcome,) = comparison.rules
    assert ("breach", 0.0, "regression") == (outcome.status, outcome.current, comparison.verdict)


def test_min_overlap_holds_for_unchanged_rankings() -> None:
    """The same rankings keep min_overlap at 1.0: ok."""
    before = run({"q1": ["a", "b"]}, 1)
    (outcome,) = compare_runs(
        run({"q1": ["a", "b"]}, 2), before, [RuleConfig(Check.MIN_OVERLAP, 0.9)]
    ).rules
    assert ("ok", 1.0) == (outcome.status, outcome.current)


def test_min_overlap_without_a_baseline_is_skipped() -> None:
    """Nothing to compare the rankings with: the rule is skipped."""
    (outcome,) = compare_runs(
        run({"q1": ["a"]}, 2), None, [RuleConfig(Check.MIN_OVERLAP, 0.9)]
    ).rules
    assert "skipped" == outcome.status


def test_the_comparison_json_carries_the_overlap_per_query() -> None:
    """to_dict gives k, p, the means and each query's RBO and Jaccard."""
    before = run({"q1": ["a", "b"]}, 1)
    data = compare_runs(run({"q1": ["b", "a"]}, 2), before, []).to_dict()["overlap"]
    assert (10, 0.9, 1, 1.0) == (data["k"], data["persistence"], data["n"], data["jaccard"])
    assert ["q1"] == [q["query_id"] for q in data["queries"]]


# Lists that repeat ids and run past the cutoff, as a search may return them.
loose_rankings = st.lists(st.sampled_from([f"d{i}" for i in range(15)]), max_size=25)


@pytest.mark.slow
@given(
    st.lists(st.tuples(loose_rankings, loose_rankings), max_size=8),
    st.integers(min_value=0, max_value=12),
)
def test_overlaps_of_many_queries_equal_the_one_query_measures(
    pairs: list[tuple[list[str], list[str]]], k: int
) -> None:
    """overlaps() gives each pair the very float rank_biased_overlap and jaccard give it."""
    first, second = [a for a, _ in pairs], [b for _, b in pairs]
    rbos, jaccards = overlaps(first, second, k)
    expected = [(rank_biased_overlap(a, b, k), jaccard(a, b, k)) for a, b in pairs]
    assert expected == list(zip(rbos.tolist(), jaccards.tolist(), strict=True))


def test_overlaps_measure_queries_beyond_one_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rankings split over several chunks are measured as if they were one."""
    monkeypatch.setattr(overlap_module, "CHUNK_QUERIES", 3)
    first = [[f"d{(i * j) % 7}" for j in range(6)] for i in range(10)]
    second = [[f"d{(i + j) % 7}" for j in range(6)] for i in range(10)]
    expected = [rank_biased_overlap(a, b, 5) for a, b in zip(first, second, strict=True)]
    assert expected == overlaps(first, second, 5)[0].tolist()


@pytest.mark.parametrize(("a", "b"), [(["a"], ["c"]), (["a", "b"], ["c", "a"])])
def test_overlaps_do_not_trust_a_hash_collision(
    monkeypatch: pytest.MonkeyPatch, a: list[str], b: list[str]
) -> None:
    """Different ids that share one hash are not taken for a shared document."""
    monkeypatch.setattr(overlap_module, "hash", lambda _: 7, raising=False)
    rbos, jaccards = overlaps([a], [b], 10)
    assert (rank_biased_overlap(a, b, 10), jaccard(a, b, 10)) == (rbos[0], jaccards[0])


def test_overlaps_match_an_id_whose_hash_is_the_padding() -> None:
    """The empty id hashes to 0, the padding's value, and still counts as shared."""
    rbos, jaccards = overlaps([["", "a"]], [["a", ""]], 10)
    assert (rank_biased_overlap(["", "a"], ["a", ""], 10), 1.0) == (rbos[0], jaccards[0])
