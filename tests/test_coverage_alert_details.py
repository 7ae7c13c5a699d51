"""The labels-needed alert carries its evidence as fields, not only as text: how many
unjudged documents came into the top k in how many queries, the coverage before and after,
and the command that lists them; its dictionary form reads back into the same alert."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from monitor.alerts import LabelsNeededDetails
from monitor.alerts.model import LABELS_NEEDED_RULE, Alert, AlertIdentity
from monitor.alerts.testing import RecordingReceiver
from monitor.cli import main
from tests.test_coverage_alerts import pin_baseline, write

TODO = "retrieval-monitor judgments todo --suite nightly --run 2"


@pytest.fixture
def receiver() -> Iterator[RecordingReceiver]:
    with RecordingReceiver() as running:
        yield running


def needed(**change: object) -> Alert:
    """Return a labels-needed alert of suite nightly with evidence changed by ``change``."""
    fields: dict[str, object] = {
        "k": 10,
        "unjudged": 60,
        "queries": 30,
        "baseline": 1.0,
        "current": 0.8,
        "todo": TODO,
        "rules": ("mrr@10 max_drop",),
        "queue": "https://labels.example/nightly/2",
        "run_id": 2,
        "baseline_run_id": 1,
        **change,
    }
    return Alert(
        identity=AlertIdentity("labels_needed", "nightly", LABELS_NEEDED_RULE),
        severity="warning",
        summary="nightly: labels needed",
        starts_at=datetime(2026, 1, 2, 3, 4, tzinfo=UTC),
        details=LabelsNeededDetails(**fields),  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("change", [{}, {"queue": None}, {"rules": ()}])
def test_the_labels_needed_evidence_round_trips_its_dictionary_form(
    change: dict[str, object],
) -> None:
    """to_dict then from_dict gives back an equal alert, through JSON."""
    alert = needed(**change)
    assert alert == Alert.from_dict(json.loads(json.dumps(alert.to_dict())))


def test_the_dictionary_form_names_the_counts_the_coverage_and_the_command() -> None:
    """The details hold unjudged_documents, queries, k, coverage and todo under their names."""
    details = needed().to_dict()["details"]["labels_needed"]
    assert (60, 30, 10, {"baseline": 1.0, "current": 0.8}, TODO) == (
        details["unjudged_documents"],
        details["queries"],
        details["k"],
        details["coverage"],
        details["todo"],
    )


def test_unknown_coverage_reads_back_as_not_a_number() -> None:
    """A coverage nobody measured is written as null and read back as NaN."""
    alert = Alert.from_dict(needed(baseline=float("nan")).to_dict())
    assert isinstance(alert.details, LabelsNeededDetails)
    assert (None, True) == (
        needed(baseline=float("nan")).to_dict()["details"]["labels_needed"]["coverage"]["baseline"],
        alert.details.baseline != alert.details.baseline,
    )


@pytest.mark.slow
def test_the_webhook_payload_carries_the_labels_needed_fields(
    tmp_path: Path, receiver: RecordingReceiver
) -> None:
    """A run whose top 10 took in unjudged documents posts them as separate annotations."""
    pin_baseline(tmp_path, receiver)
    assert 0 == main(
        ["run", "--config", str(write(tmp_path, receiver, "unjudged")), "--no-progress"]
    )
    (request,) = receiver.accepted
    (alert,) = json.loads(request.body)["alerts"]
    shown = {
        name: alert["annotations"].get(name)
        for name in ("unjudged_documents", "queries", "k", "coverage_baseline", "todo")
    }
    assert {
        "unjudged_documents": "60",
        "queries": "30",
        "k": "10",
        "coverage_baseline": "1",
        "todo": f"retrieval-monitor judgments todo --config {tmp_path / 'monitor.yaml'} "
        "--suite nightly --run 2",
    } == shown
    assert "https://labels.example/nightly/2" == alert["annotations"]["labeling_queue"]
