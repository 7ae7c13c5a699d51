"""The k sweep: how long the run's rankings are, against the swept cutoffs."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.metrics.ksweep import k_sweep
from monitor.search import saved

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


def test_a_trec_run_file_is_swept_from_its_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A TREC run file is read by the column readers, not the line reader, with the same
    means and the same longest ranking (repeated ids counted once) as the run in memory."""
    path = tmp_path / "run.trec"
    path.write_text(
        "q1 Q0 b 1 3.0 t\nq1 Q0 a 2 2.0 t\nq1 Q0 b 3 1.0 t\nq1 Q0 e 4 0.5 t\nq2 Q0 c 1 1.0 t\n"
    )
    in_memory = k_sweep(QRELS, {"q1": {"b": 3.0, "a": 2.0, "e": 0.5}, "q2": ["c"]}, [1, 2, 5])

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the line reader read the run")

    monkeypatch.setattr(saved, "load_run", refuse)
    from_file = k_sweep(QRELS, path, [1, 2, 5])
    assert in_memory.means == from_file.means
    assert 3 == from_file.longest_ranking
    assert (5,) == from_file.ks_beyond_run
