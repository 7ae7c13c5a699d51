"""What reaches a terminal carries no control character, and the textfile exporter's lock
file is never followed through a symlink."""

from __future__ import annotations

import io
from datetime import datetime, timezone
from pathlib import Path

import pytest

from monitor.alerts.base import Notification, NotifierContext
from monitor.alerts.build import failure_alert
from monitor.alerts.notifiers.stdout import StdoutNotifier
from monitor.compare.records import Comparison, RuleOutcome
from monitor.errors import ExportError
from monitor.exporters.textfile import write_textfile
from monitor.report import render_comparison
from monitor.terminal import printable
from tests.test_exporters import make_snapshot

T0 = datetime(2024, 5, 1, tzinfo=timezone.utc)
#: Clears the screen, retitles the window, rings the bell, then a one-byte CSI.
HOSTILE = "q\x1b[2J\x1b]0;owned\x07\x9b31m\r\x00\u202eend"


def test_printable_keeps_only_printable_text_tabs_and_newlines() -> None:
    """ESC, BEL, CR, NUL, C1 controls and bidi overrides go; tabs and newlines stay."""
    assert "q[2J]0;owned31mend\ta\nb" == printable(HOSTILE + "\ta\nb")


def test_the_text_report_carries_no_control_character() -> None:
    """A rule message holding escape sequences is printed without them."""
    rule = RuleOutcome(
        "mrr@10 max_drop", "max_drop", "mrr@10", 0.05, "warning", "breach", message=HOSTILE
    )
    comparison = Comparison("nightly", 2, 1, "regression", rules=(rule,))
    text = render_comparison(comparison, {"mrr@10": 0.5})
    assert "q[2J]0;owned31mend" in text
    assert [] == [c for c in text if c != "\n" and (ord(c) < 32 or 127 <= ord(c) < 160)]


def test_the_stdout_notifier_writes_no_control_character() -> None:
    """An alert whose error text holds ESC and BEL reaches the terminal without them."""
    stream = io.StringIO()
    notifier = StdoutNotifier("s/out", NotifierContext("s/out", stream=stream))
    alert = failure_alert("s", "search_backend_down", HOSTILE, at=T0)
    notifier.send(Notification(alert, "firing", "s/out"))
    written = stream.getvalue()
    assert "q[2J]0;owned31m" in written
    assert set() == {c for c in written if c in "\x1b\x07\x9b\r\x00\u202e"}


def test_the_textfile_lock_is_not_followed_through_a_symlink(tmp_path: Path) -> None:
    """A symlink planted as the lock file is refused, and its target is left untouched."""
    victim = tmp_path / "victim"
    victim.write_text("keep", encoding="utf-8")
    (tmp_path / ".retrieval.prom.lock").symlink_to(victim)
    with pytest.raises(ExportError, match="is a symlink; refusing to follow it"):
        write_textfile(make_snapshot(), tmp_path / "retrieval.prom")
    assert "keep" == victim.read_text(encoding="utf-8")
    assert not (tmp_path / "retrieval.prom").exists()


@pytest.mark.parametrize(
    ("count", "noun", "said"),
    [(1, "grade", "1 grade"), (2, "grade", "2 grades"), (0, "note", "0 notes")],
)
def test_a_count_takes_its_noun_in_the_right_number(count: int, noun: str, said: str) -> None:
    """One grade, two grades: never "1 grades"."""
    from monitor.terminal import counted

    assert said == counted(count, noun)


def test_baseline_list_has_a_header_over_its_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``baseline list`` names its columns, and each row lines up under them."""
    from monitor.cli import main

    config = tmp_path / "monitor.yaml"
    config.write_text(
        f"store: {{path: {tmp_path / 'm.db'}}}\n"
        "suites:\n  lark:\n    evalset: {bundled: larkfield}\n"
        "    search: {kind: replay, bundled: larkfield/keyword}\n"
        "    baseline: {bundled_run: larkfield/rerank}\n"
    )
    main(["baseline", "set", "--suite", "lark", "--config", str(config)])
    capsys.readouterr()
    main(["baseline", "list", "--config", str(config)])
    header, row = capsys.readouterr().out.splitlines()
    assert (["suite", "run", "pinned", "(UTC)"], "lark", header.index("run")) == (
        header.split(),
        row.split()[0],
        row.index("1 "),
    )
