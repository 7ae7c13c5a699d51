"""Reports built from a shared basis (eval set, judgments, baseline, trends) are the reports
built alone: the web app builds the basis once per suite and reuses it for every run."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from monitor.config import default_config
from monitor.evalset.bundled import larkfield_evalset
from monitor.job import run_suite
from monitor.judgments.layers import add_layer
from monitor.report import render_json
from monitor.report.compose import (
    ReportBasis,
    SuiteTrends,
    compose_report,
    load_frozen,
    report_basis,
    suite_judgments,
    suite_trends,
)
from monitor.store import RunRecord, open_store

SUITE = "larkfield"
T0 = datetime(2024, 5, 1, tzinfo=timezone.utc)


def _filled(path: Path, *, layered: bool) -> Path:
    """Run the bundled suite twice (runs 1-3), with a human layer added before the last."""
    suite = default_config().suite(SUITE)
    with open_store(path) as store:
        run_suite(suite, store, progress=False)
        if layered:
            grades = {"Q34": {"ce196c57771f": 2}}
            add_layer(store, SUITE, grades, frozen=larkfield_evalset(), source="test")
        run_suite(suite, store, progress=False)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("layered", [False, True], ids=["frozen", "with-a-layer"])
@pytest.mark.parametrize("run_id", [1, 2, 3])
def test_a_report_from_a_shared_basis_is_the_report_built_alone(
    tmp_path: Path, layered: bool, run_id: int
) -> None:
    """Every run's report reads the same with a basis and trends built once beforehand."""
    suite = default_config().suite(SUITE)
    path = _filled(tmp_path / "m.db", layered=layered)
    with open_store(path) as store:
        alone = compose_report(store, suite, run_id=run_id, now=T0)
        basis = report_basis(store, suite)
        kept: dict[tuple[str, ...], SuiteTrends] = {}

        def trends_of(charted: tuple[str, ...], baseline: RunRecord | None) -> SuiteTrends:
            if charted not in kept:
                kept[charted] = suite_trends(store, suite, basis.judgments, charted, baseline)
            return kept[charted]

        for other in (1, 2, 3):  # the basis serves every run, in any order
            compose_report(store, suite, run_id=other, basis=basis, trends_of=trends_of)
        shared = compose_report(
            store, suite, run_id=run_id, now=T0, basis=basis, trends_of=trends_of
        )
    assert render_json(alone) == render_json(shared)


def test_judgments_read_once_give_the_effective_set_and_its_digests(tmp_path: Path) -> None:
    """The judgments hold the layer's grade in force and the digests of that set."""
    from monitor.judgments.merge import labels_of

    suite = default_config().suite(SUITE)
    path = _filled(tmp_path / "m.db", layered=True)
    with open_store(path) as store:
        judged = suite_judgments(store, suite)
    assert judged.effective is not None
    assert judged.qrels is not None
    assert 2 == judged.effective["Q34"].judgments["ce196c57771f"]
    assert labels_of(judged.effective) == judged.labels
    assert 2 == judged.qrels["Q34"]["ce196c57771f"]


def test_an_unreadable_eval_set_is_reported_with_its_error(tmp_path: Path) -> None:
    """A missing eval set file loads as nothing, with the reason the report then gives."""
    from dataclasses import replace

    suite = default_config().suite(SUITE)
    missing = replace(suite, evalset=replace(suite.evalset, bundled=None, path=tmp_path / "x"))
    loaded = load_frozen(missing)
    assert (None, True) == (loaded.evalset, str(tmp_path / "x") in (loaded.problem or ""))


def test_a_basis_reads_the_baseline_through_the_reader_given(tmp_path: Path) -> None:
    """A caller keeping runs in memory hands the baseline in: the store is not asked for it."""
    suite = default_config().suite(SUITE)
    path = _filled(tmp_path / "m.db", layered=False)
    asked: list[int] = []
    with open_store(path) as store:

        def read(run_id: int) -> RunRecord:
            asked.append(run_id)
            return store.get_run(run_id)

        basis = report_basis(store, suite, read_run=read)
    assert ([1], 1) == (asked, basis.baseline.run_id if basis.baseline else None)
    assert isinstance(basis, ReportBasis)
