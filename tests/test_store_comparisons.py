"""The comparisons the store keeps beside its runs, the same on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timezone

import pytest
from test_store import make_run

from monitor.errors import StoreLookupError
from monitor.store import SCHEMA_VERSION, JudgmentLayer, SqlStore, open_store, schema
from monitor.store.comparisons import ComparisonKey, StoredComparison
from monitor.store.retention import Retention

KEY = ComparisonKey(1, None, "sha256:judged", "sha256:basis")


def stored(run_id: int, data: bytes = b"\x00comparison\xff", **changes: object) -> StoredComparison:
    """Return a stored comparison of run ``run_id``."""
    return StoredComparison(replace(KEY, run_id=run_id, **changes), "test-codec", data)


@pytest.fixture
def store(store_url: str) -> Iterator[SqlStore]:
    """Return an open store on an empty database."""
    with open_store(store_url) as opened:
        assert isinstance(opened, SqlStore)
        yield opened


def test_a_stored_comparison_reads_back_as_saved(store: SqlStore) -> None:
    """The key, the codec and the bytes of a comparison read back unchanged."""
    run_id = store.save_run(make_run())
    kept = stored(run_id, baseline_run_id=7)
    store.save_comparison(kept)
    assert kept == store.stored_comparison(run_id)


def test_a_comparison_without_judgments_or_baseline_reads_back_as_saved(store: SqlStore) -> None:
    """A key with no baseline and no judgments version keeps both as None."""
    run_id = store.save_run(make_run())
    kept = stored(run_id, judgments_version=None)
    store.save_comparison(kept)
    assert kept == store.stored_comparison(run_id)


def test_a_run_has_no_stored_comparison_until_one_is_saved(store: SqlStore) -> None:
    """A run saved alone has no comparison."""
    assert None is store.stored_comparison(store.save_run(make_run()))


def test_saving_again_replaces_the_comparison(store: SqlStore) -> None:
    """A run keeps one comparison: the last saved."""
    run_id = store.save_run(make_run())
    store.save_comparison(stored(run_id))
    later = stored(run_id, b"later", baseline_run_id=3, basis="sha256:other")
    store.save_comparison(later)
    assert later == store.stored_comparison(run_id)


def test_a_comparison_of_an_unknown_run_is_refused(store: SqlStore) -> None:
    """Saving a comparison of no stored run raises StoreLookupError and keeps nothing."""
    with pytest.raises(StoreLookupError):
        store.save_comparison(stored(99))
    assert None is store.stored_comparison(99)


def test_pruning_a_run_drops_its_stored_comparison(store: SqlStore) -> None:
    """Retention drops a run's stored comparison with its per-query detail, and keeps the
    comparisons of the runs it keeps."""
    old, new = (store.save_run(make_run(day=day)) for day in (0, 1))
    for run_id in (old, new):
        store.save_comparison(stored(run_id))
    store.prune("nightly", Retention(runs=1))
    assert (None, stored(new)) == (store.stored_comparison(old), store.stored_comparison(new))


def test_layer_ids_are_the_suite_s_in_the_order_added(store: SqlStore) -> None:
    """The ids of a suite's layers come oldest first, another suite's left out."""
    when = datetime(2024, 5, 1, tzinfo=timezone.utc)
    ids = [
        store.add_layer(JudgmentLayer(suite, "labels.csv", "ann", "human", when, {"q": {"d": 1}}))
        for suite in ("nightly", "other", "nightly")
    ]
    assert (ids[0], ids[2]) == store.layer_ids("nightly")


def test_a_store_of_the_previous_version_gains_the_comparisons_table(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database at the schema before stored comparisons is migrated on open: its runs stay,
    they have no comparison, and new comparisons can be kept."""
    monkeypatch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:-1])
    with open_store(store_url) as old:
        assert isinstance(old, SqlStore)
        run_id = old.save_run(make_run())
        assert SCHEMA_VERSION - 1 == old.schema_version()
    monkeypatch.undo()
    with open_store(store_url) as new:
        assert isinstance(new, SqlStore)
        before = new.stored_comparison(run_id)
        new.save_comparison(stored(run_id))
        assert (SCHEMA_VERSION, run_id, None, stored(run_id)) == (
            new.schema_version(),
            new.get_run(run_id).run_id,
            before,
            new.stored_comparison(run_id),
        )
