"""Log lines: one structured event a line, its fields as fields, in logfmt or JSON."""

from __future__ import annotations

import io
import json
import logging
import shlex
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

from monitor.cli import build_parser, main
from monitor.logs import (
    LOG_LEVELS,
    LogHandler,
    configure_logging,
    get_logger,
    mask_credentials,
)


@pytest.fixture
def root_logging() -> Iterator[None]:
    """Put the root logger's handlers and level back as they were after the test."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)


def logged(log_format: str) -> io.StringIO:
    """Configure logging as ``log_format`` into a buffer; return the buffer."""
    stream = io.StringIO()
    configure_logging(log_format, stream=stream)  # type: ignore[arg-type]
    return stream


def pairs(line: str) -> dict[str, str]:
    """Read a logfmt line back into its fields."""
    return dict(word.split("=", 1) for word in shlex.split(line))


def log_event() -> None:
    """Log the same event, with a text, a number, a list and a None field."""
    get_logger("tests.logs").warning(
        "run_missed", suite="nightly", late_seconds=2.5, suites=["a", "b"], removed=None
    )


@pytest.mark.usefixtures("root_logging")
def test_logfmt_line_carries_the_events_fields_as_fields() -> None:
    """In logfmt an event is one line: time, level, logger, event, then its fields."""
    stream = logged("logfmt")
    log_event()
    line = stream.getvalue()
    assert 1 == line.count("\n")
    fields = pairs(line)
    assert ["time", "level", "logger", "event", "suite", "late_seconds", "suites"] == list(fields)
    expected = {
        "level": "warning",
        "logger": "tests.logs",
        "event": "run_missed",
        "suite": "nightly",
        "late_seconds": "2.5",
        "suites": "a,b",
    }
    assert expected == {key: fields[key] for key in expected}


@pytest.mark.usefixtures("root_logging")
def test_json_line_carries_the_same_events_fields_as_fields() -> None:
    """In JSON the same event is one object with the same fields, typed."""
    stream = logged("json")
    log_event()
    line = stream.getvalue()
    assert 1 == line.count("\n")
    record = json.loads(line)
    assert ["time", "level", "logger", "event", "suite", "late_seconds", "suites"] == list(record)
    expected = {
        "level": "warning",
        "logger": "tests.logs",
        "event": "run_missed",
        "suite": "nightly",
        "late_seconds": 2.5,
        "suites": ["a", "b"],
    }
    assert expected == {key: record[key] for key in expected}


@pytest.mark.parametrize("log_format", ["logfmt", "json"])
@pytest.mark.usefixtures("root_logging")
def test_a_stdlib_record_is_rendered_like_an_event(log_format: str) -> None:
    """Another library's record (APScheduler's) prints its message as the event, same format."""
    stream = logged(log_format)
    logging.getLogger("apscheduler.scheduler").error("Run time of job %r was missed", "demo")
    line = stream.getvalue()
    fields = json.loads(line) if log_format == "json" else pairs(line)
    expected = {
        "level": "error",
        "logger": "apscheduler.scheduler",
        "event": "Run time of job 'demo' was missed",
    }
    assert expected == {key: fields[key] for key in expected}
    assert ["time", "level", "logger", "event"] == list(fields)


@pytest.mark.parametrize("log_format", ["logfmt", "json"])
@pytest.mark.usefixtures("root_logging")
def test_a_traceback_stays_on_the_events_line(log_format: str) -> None:
    """An exception given as exc_info is one ``exception`` field; the event stays one line."""
    stream = logged(log_format)
    try:
        raise ValueError("boom")
    except ValueError as error:
        get_logger("tests.logs").error("run_failed", suite="nightly", exc_info=error)
    line = stream.getvalue()
    assert 1 == line.count("\n")
    fields = json.loads(line) if log_format == "json" else pairs(line)
    assert "ValueError: boom" in fields["exception"]


@pytest.mark.usefixtures("root_logging")
def test_a_datetime_field_prints_as_iso_utc() -> None:
    """A datetime prints as ISO 8601 in UTC to the millisecond."""
    stream = logged("logfmt")
    at = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
    get_logger("tests.logs").warning("run_missed", scheduled_at=at)
    assert "2026-03-01T12:00:00.000Z" == pairs(stream.getvalue())["scheduled_at"]


@pytest.mark.usefixtures("root_logging")
def test_events_below_the_level_are_not_written() -> None:
    """At the default INFO level a debug event writes nothing."""
    stream = logged("logfmt")
    get_logger("tests.logs").debug("job_executed", suite="nightly")
    assert "" == stream.getvalue()


@pytest.mark.usefixtures("root_logging")
def test_configuring_again_replaces_the_handler() -> None:
    """A second configuration writes each record once, in the new format only."""
    first = logged("logfmt")
    second = logged("json")
    log_event()
    assert ("", 1) == (first.getvalue(), len(second.getvalue().splitlines()))
    assert 1 == sum(isinstance(h, LogHandler) for h in logging.getLogger().handlers)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("postgresql://monitor:hunter2@db/monitor", "postgresql://monitor:***@db/monitor"),
        ("https://TOKEN@github.com/org/repo", "https://***@github.com/org/repo"),
        ("see https://example.org/path?q=1", "see https://example.org/path?q=1"),
    ],
)
def test_url_credentials_are_masked(text: str, expected: str) -> None:
    """A URL's password or user-only credential is masked; a URL without one is kept."""
    assert expected == mask_credentials(text)


@pytest.mark.usefixtures("root_logging")
def test_a_secret_or_a_url_with_a_password_never_reaches_the_line() -> None:
    """A Secret field prints masked, and a password inside a text field is masked too."""
    from monitor.config.model import Secret

    stream = logged("json")
    get_logger("tests.logs").error(
        "store_unreachable",
        store=Secret("postgresql://m:hunter2@db/m", masked="postgresql://m:***@db/m"),
        error="cannot connect to postgresql://m:hunter2@db/m",
    )
    line = stream.getvalue()
    assert "hunter2" not in line
    assert "postgresql://m:***@db/m" == json.loads(line)["store"]


def test_log_format_is_a_global_option_before_the_command() -> None:
    """``--log-format json`` goes before the sub-command; logfmt is the default."""
    parser = build_parser()
    assert "logfmt" == parser.parse_args(["config", "schema"]).log_format
    assert "json" == parser.parse_args(["--log-format", "json", "config", "schema"]).log_format


def test_an_unknown_log_format_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """A log format other than logfmt or json is refused, naming the choices."""
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["--log-format", "xml", "config", "schema"])
    assert 2 == exit_info.value.code
    assert "'logfmt', 'json'" in capsys.readouterr().err


@pytest.mark.usefixtures("root_logging")
def test_main_configures_the_format_its_flag_names(capsys: pytest.CaptureFixture[str]) -> None:
    """After ``main(["--log-format", "json", ...])`` a record goes to stderr as a JSON line."""
    main(["--log-format", "json", "config", "schema"])
    capsys.readouterr()
    get_logger("tests.logs").info("probe", suite="nightly")
    record = json.loads(capsys.readouterr().err)
    assert ("probe", "nightly") == (record["event"], record["suite"])


def test_quiet_leaves_only_warnings_and_errors_on_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--quiet run`` writes the report on stdout and no info line on stderr."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert 0 == main(["--quiet", "run", "--no-progress"])
    captured = capsys.readouterr()
    assert ("", True) == (captured.err, "verdict: REGRESSION" in captured.out)


@pytest.mark.parametrize(("level", "shown"), [("debug", True), ("info", True), ("error", False)])
def test_log_level_sets_the_least_serious_line_written(
    level: str, shown: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--log-level`` writes the monitor's info lines at info and below, not above."""
    args = build_parser().parse_args(["--log-level", level, "run"])
    configure_logging(level=LOG_LEVELS[args.log_level])
    get_logger("monitor.test").info("something_happened")
    assert shown == ("event=something_happened" in capsys.readouterr().err)
