"""Alerts of broken invariants: one per invariant, listed query by query, resolved when it holds."""

from __future__ import annotations

import textwrap
from datetime import datetime, timezone
from pathlib import Path

from monitor.alerts import Alert, InvariantDetails
from monitor.alerts.build import invariant_alerts
from monitor.alerts.delivery import Delivery
from monitor.alerts.testing import ManualClock, RecordingNotifier, no_sleep
from monitor.alerts.text import alert_annotations, plain
from monitor.compare.records import Comparison, InvariantOutcome, InvariantQuery
from monitor.config import load_config
from monitor.job import run_suite
from monitor.store import open_store

T0 = datetime(2030, 1, 1, tzinfo=timezone.utc)

SUITE = """
store: {{path: {store}}}
suites:
  nightly:
    evalset: {{bundled: larkfield}}
    search: {{kind: replay, bundled: larkfield/{method}}}
    baseline: {{bundled_run: larkfield/rerank}}
    metrics: [recall@5]
    rules: []
    invariants:
      - {{query: Q34, must_include: [d9a5bd8ea531], within: 5, severity: critical}}
      - {{no_lost_hits: {{k: 5}}}}
      - {{query: Q999, must_include: [x]}}
"""


def run(tmp_path: Path, method: str, notifier: RecordingNotifier, clock: ManualClock) -> None:
    """Run the suite once replaying the bundled run ``method``."""
    path = tmp_path / "monitor.yaml"
    path.write_text(textwrap.dedent(SUITE.format(store=tmp_path / "m.db", method=method)))
    config = load_config(path)
    with open_store(config.store.url.reveal()) as store:
        run_suite(
            config.suite("nightly"),
            store,
            progress=False,
            notifiers={"nightly/test": notifier},
            clock=clock,
            delivery=Delivery(sleep=no_sleep),
        )


def broken(queries: tuple[InvariantQuery, ...] = ()) -> InvariantOutcome:
    """Return a breached ``must_include Q34`` outcome."""
    queries = queries or (InvariantQuery("Q34", 5, ("d9a5bd8ea531",), ("a", "b", "c")),)
    return InvariantOutcome(
        "must_include Q34", "must_include", "breach", queries, "d9a5bd8ea531 not in the top 5"
    )


def test_each_broken_invariant_fires_its_own_alert(tmp_path: Path) -> None:
    """The keyword run breaks both checkable invariants: one alert each, none for the skipped."""
    notifier = RecordingNotifier("nightly/test")
    run(tmp_path, "keyword", notifier, ManualClock())
    assert [
        ("firing", "invariant must_include Q34"),
        ("firing", "invariant no_lost_hits@5"),
    ] == sorted(notifier.transitions())


def test_an_invariant_alert_lists_its_queries_one_by_one(tmp_path: Path) -> None:
    """The no_lost_hits alert's description has a line per query that lost its hit."""
    notifier = RecordingNotifier("nightly/test")
    run(tmp_path, "keyword", notifier, ManualClock())
    (sent,) = [n.alert for n in notifier.sent if n.alert.rule == "invariant no_lost_hits@5"]
    assert isinstance(sent.details, InvariantDetails)
    lines = [line for line in sent.description.splitlines() if line.startswith("- ")]
    assert [q.query_id for q in sent.details.invariant.queries] == [
        line[2:].split(":")[0] for line in lines
    ]
    assert "- Q34: expected d9a5bd8ea531 in the top 5; retrieved " in sent.description


def test_invariant_alerts_take_the_invariants_severity(tmp_path: Path) -> None:
    """``severity: critical`` on the pair makes its alert critical; the policy's is warning."""
    notifier = RecordingNotifier("nightly/test")
    run(tmp_path, "keyword", notifier, ManualClock())
    assert {"invariant must_include Q34": "critical", "invariant no_lost_hits@5": "warning"} == {
        n.alert.rule: n.alert.severity for n in notifier.sent
    }


def test_invariant_alerts_resolve_when_the_invariants_hold_again(tmp_path: Path) -> None:
    """A rerank run after the keyword one keeps every hit: both alerts resolve."""
    notifier, clock = RecordingNotifier("nightly/test"), ManualClock()
    run(tmp_path, "keyword", notifier, clock)
    clock.advance(3600)
    run(tmp_path, "rerank", notifier, clock)
    assert [
        ("resolved", "invariant must_include Q34"),
        ("resolved", "invariant no_lost_hits@5"),
    ] == sorted(notifier.transitions()[2:])


def test_an_invariant_alert_survives_its_dictionary_form() -> None:
    """``Alert.from_dict(alert.to_dict())`` gives back an equal invariant alert."""
    comparison = Comparison("nightly", 7, 3, "regression", invariants=(broken(),))
    (alert,) = invariant_alerts("nightly", comparison, at=T0)
    assert alert == Alert.from_dict(alert.to_dict())


def test_an_invariant_alert_names_its_rule_summary_and_queries() -> None:
    """The alert's rule is ``invariant <name>``; its summary and annotations say what broke."""
    comparison = Comparison("nightly", 7, 3, "regression", invariants=(broken(),))
    (alert,) = invariant_alerts("nightly", comparison, at=T0)
    annotations = alert_annotations(alert)
    assert "invariant must_include Q34" == alert.rule
    assert "nightly: invariant must_include Q34 broke: d9a5bd8ea531 not in the top 5" == (
        alert.summary
    )
    assert ("must_include Q34", "Q34") == (annotations["invariant"], annotations["queries"])
    assert "retrieved a, b, c" in plain(alert)


def test_a_long_list_of_breaching_queries_is_cut_with_a_count() -> None:
    """Past twenty queries the description says how many more broke the invariant."""
    queries = tuple(InvariantQuery(f"Q{i:02d}", 5, ("x",), ("y",)) for i in range(25))
    outcome = InvariantOutcome("no_lost_hits@5", "no_lost_hits", "breach", queries, "25 lost")
    comparison = Comparison("nightly", 7, 3, "regression", invariants=(outcome,))
    (alert,) = invariant_alerts("nightly", comparison, at=T0)
    assert "- and 5 more" == alert.description.splitlines()[-1]
    assert "nightly: invariant no_lost_hits@5 broke for 25 queries" == alert.summary
