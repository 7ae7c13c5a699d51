"""The daemon's log lines: one ``key=value`` line per record, quoted only where needed."""

from __future__ import annotations

import io
import logging
import shlex
from collections.abc import Iterator
from datetime import datetime, timezone

import pytest

from monitor.daemon.logfmt import LogfmtFormatter, emit, value_text


@pytest.fixture
def logged() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    """A logger writing logfmt lines into a string buffer."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(LogfmtFormatter())
    logger = logging.getLogger("tests.logfmt")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    yield logger, stream
    logger.removeHandler(handler)


def pairs(line: str) -> dict[str, str]:
    """Read a logfmt line back into its fields."""
    return dict(word.split("=", 1) for word in shlex.split(line))


def test_event_prints_time_level_logger_event_then_fields(
    logged: tuple[logging.Logger, io.StringIO],
) -> None:
    """An emitted event is one line: time, level, logger, event, then its fields in order."""
    logger, stream = logged
    emit(logger, logging.WARNING, "run_missed", suite="nightly", late_seconds=2.5)
    line = stream.getvalue()
    assert 1 == line.count("\n")
    assert ["time", "level", "logger", "event", "suite", "late_seconds"] == list(pairs(line))
    assert {"level": "warning", "logger": "tests.logfmt", "event": "run_missed"}.items() <= (
        pairs(line).items()
    )


def test_event_leaves_out_fields_that_are_none(
    logged: tuple[logging.Logger, io.StringIO],
) -> None:
    """A field given as None does not appear."""
    logger, stream = logged
    emit(logger, logging.INFO, "config_reloaded", added="b", removed=None)
    assert "removed" not in pairs(stream.getvalue())


def test_plain_record_prints_its_message_as_msg(
    logged: tuple[logging.Logger, io.StringIO],
) -> None:
    """A record logged the ordinary way carries its formatted message, quoted."""
    logger, stream = logged
    logger.info("run finished label=%s", "demo")
    assert "run finished label=demo" == pairs(stream.getvalue())["msg"]


def test_traceback_stays_on_the_records_line(logged: tuple[logging.Logger, io.StringIO]) -> None:
    """An exception's traceback is one quoted value, so the record is still one line."""
    logger, stream = logged
    try:
        raise ValueError("boom")
    except ValueError:
        logger.exception("job failed")
    line = stream.getvalue()
    assert 1 == line.count("\n")
    assert "ValueError: boom" in pairs(line)["exc"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("nightly", "nightly"),
        ("two words", '"two words"'),
        ('say "hi"', '"say \\"hi\\""'),
        ("a=b", '"a=b"'),
        ("", '""'),
        ("line\nbreak", '"line\\nbreak"'),
        (True, "true"),
        (3, "3"),
        (0.25, "0.25"),
        (("a", "b"), "a,b"),
        (datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc), "2026-03-01T12:00:00.000Z"),
    ],
)
def test_value_text(value: object, expected: str) -> None:
    """Values print bare when they can, quoted and escaped when they must."""
    assert expected == value_text(value)
