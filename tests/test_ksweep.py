"""The k sweep: how long the run's rankings are, against the swept cutoffs."""

from __future__ import annotations

from monitor.ksweep import k_sweep

QRELS = {"q1": {"a": 1}, "q2": {"c": 1}}


def test_repeated_ids_do_not_lengthen_a_ranking() -> None:
    """The longest ranking counts distinct ids, as the measures do."""
    sweep = k_sweep(QRELS, {"q1": ["a", "a", "b"], "q2": ["c"]}, [1, 2, 3])
    assert 2 == sweep.longest_ranking
    assert (3,) == sweep.ks_beyond_run


def test_a_scored_ranking_counts_its_documents() -> None:
    """A {doc: score} ranking is as long as the documents it scores."""
    sweep = k_sweep(QRELS, {"q1": {"a": 2.0, "b": 1.0, "d": 0.5}, "q2": ["c"]}, [1, 3, 5])
    assert 3 == sweep.longest_ranking
    assert (5,) == sweep.ks_beyond_run
    assert sweep.note() is not None


def test_no_note_when_every_cutoff_fits() -> None:
    """When no k exceeds the longest ranking there is nothing to note."""
    sweep = k_sweep(QRELS, {"q1": ["a", "b"], "q2": ["c"]}, [1, 2])
    assert () == sweep.ks_beyond_run
    assert sweep.note() is None
