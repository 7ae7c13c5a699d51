"""Structured logs: every line is one event with its fields, as logfmt (default) or JSON.

A module gets its logger with :func:`get_logger` and logs an event, a short snake_case name,
with its fields as keyword arguments::

    log = get_logger(__name__)
    log.error("export_failed", suite=suite.name, exporter="pushgateway", error=str(error))

The logger is a :class:`structlog.stdlib.BoundLogger` over the standard library's logger of
that name, so every event is a :class:`logging.LogRecord` (levels, handlers and pytest's
``caplog`` work as usual; ``record.msg`` is the event's dict). Nothing is set up at import
time: the command line's ``main`` calls :func:`configure_logging` once, which puts one handler
on the root logger. That handler renders the monitor's events and any other library's records
(APScheduler, httpx) alike, as ``time=... level=info logger=monitor.daemon event=run_finished
suite=nightly run_id=7`` or ``{"time": ..., "level": "info", ..., "suite": "nightly"}``.

A record of another library carries its formatted message as ``event``. Fields that are
None are left out; datetimes print in ISO 8601 UTC; in logfmt a list prints comma-separated;
an exception given as ``exc_info`` prints its traceback as one ``exception`` field, so each
record stays one line. A URL's password or user-only credential is masked in every text
value, and a :class:`~monitor.config.model.Secret` prints as its masked form. Every line is
scrubbed by the handler's :class:`~monitor.secrets.Scrubber` (secret-shaped text, and the
known values :func:`hide_secrets` taught it) before it is written.

Other libraries' loggers stay at the levels of :data:`QUIET_LOGGERS` (httpx and httpcore at
WARNING, so request URLs with their ``api_key`` are never logged at INFO); a program that
asks for their INFO or DEBUG lines by setting those loggers' levels itself still gets them
scrubbed.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Mapping, MutableMapping
from datetime import datetime, timezone
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, TextIO, get_args

from monitor.secrets import Scrubber, scrub_shapes

if TYPE_CHECKING:
    from structlog.stdlib import BoundLogger

LogFormat = Literal["logfmt", "json"]

#: The formats :func:`configure_logging` renders, the first the default.
LOG_FORMATS: tuple[LogFormat, ...] = get_args(LogFormat)

#: The levels the command line's ``--log-level`` takes, by name.
LOG_LEVELS: Mapping[str, int] = MappingProxyType(
    {
        "debug": logging.DEBUG,
        "info": logging.INFO,
        "warning": logging.WARNING,
        "error": logging.ERROR,
    }
)

#: Loggers of other libraries kept at a higher level, with the reason.
QUIET_LOGGERS: tuple[tuple[str, int], ...] = (
    # The daemon's scheduler listener reports missed and skipped runs and job faults itself.
    ("apscheduler", logging.ERROR),
    # httpx logs each request's URL at INFO; a webhook URL's path is its credential.
    ("httpx", logging.WARNING),
    ("httpcore", logging.WARNING),
    # pyspark's gateway logs each connection it closes at INFO, four lines a Spark command.
    ("py4j", logging.WARNING),
)

#: The keys every line starts with, in this order.
_LEADING = ("time", "level", "logger", "event")

EventDict = MutableMapping[str, Any]


def get_logger(name: str) -> BoundLogger:
    """Return the structured logger ``name`` (a module's ``__name__``); it configures nothing."""
    from structlog.stdlib import BoundLogger, ProcessorFormatter, filter_by_level

    # Only the level check happens at the call; rendering is the root handler's, so the
    # monitor's events and other libraries' records take the same way to the same lines.
    return BoundLogger(
        logging.getLogger(name),
        processors=[filter_by_level, ProcessorFormatter.wrap_for_formatter],
        context={},
    )


class LogHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The handler :func:`configure_logging` puts on the root logger.

    Without a stream it writes to ``sys.stderr`` as it is when a record comes, so a
    replaced ``sys.stderr`` (a test's capture) is followed, not written to after it closed.
    """

    def __init__(self, log_format: LogFormat, stream: TextIO | None = None) -> None:
        # Handler's, not StreamHandler's, __init__: that one would fix sys.stderr as it is now.
        logging.Handler.__init__(self)
        self._fixed = stream
        self.log_format = log_format
        #: Masks secrets in every line this handler writes.
        self.scrub = Scrubber()

    def format(self, record: logging.LogRecord) -> str:
        """Return the record's line, its secrets masked."""
        if self.formatter is None:
            # Made at the first line, not at start-up: a command that logs nothing does not
            # import structlog's renderers (a tenth of a second).
            self.setFormatter(log_formatter(self.log_format))
        return self.scrub(super().format(record))

    @property
    def stream(self) -> TextIO:
        """Return the stream records go to."""
        return self._fixed if self._fixed is not None else sys.stderr

    @stream.setter
    def stream(self, value: TextIO | None) -> None:
        self._fixed = value


def configure_logging(
    log_format: LogFormat = "logfmt", *, stream: TextIO | None = None, level: int = logging.INFO
) -> LogHandler:
    """Render every record at ``level`` and above as ``log_format`` lines on ``stream``.

    ``stream`` defaults to ``sys.stderr``. Calling it again replaces the handler it put on
    the root logger before, so records are never written twice. Return the new handler.
    """
    if log_format not in LOG_FORMATS:
        known = ", ".join(LOG_FORMATS)
        raise ValueError(f"unknown log format {log_format!r}; known: {known}")
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, LogHandler)]:
        root.removeHandler(old)
    handler = LogHandler(log_format, stream)
    root.addHandler(handler)
    root.setLevel(level)
    for name, quiet in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(quiet)
    return handler


def hide_secrets(scrubber: Scrubber) -> None:
    """Teach the handler :func:`configure_logging` put on the root logger ``scrubber``'s
    values, on top of those it knows; do nothing when logging was not configured."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, LogHandler):
            handler.scrub = handler.scrub | scrubber


def log_formatter(log_format: LogFormat) -> logging.Formatter:
    """Return the formatter that renders a record, the monitor's or another's, as one line."""
    from structlog.processors import JSONRenderer, LogfmtRenderer, format_exc_info
    from structlog.stdlib import ProcessorFormatter, add_log_level, add_logger_name

    # The values are plain by then (text, numbers, lists, dicts): no renderer falls back on
    # repr(), which would show what a Secret's str() masks.
    renderer: Any = JSONRenderer() if log_format == "json" else LogfmtRenderer(bool_as_flag=False)
    processors: list[Any] = [
        add_time,
        add_log_level,
        add_logger_name,
        ProcessorFormatter.remove_processors_meta,
        format_exc_info,
        drop_none,
        plain_values if log_format == "json" else logfmt_values,
        leading_keys,
        renderer,
    ]
    return ProcessorFormatter(processors=processors, use_get_message=True)


def add_time(logger: Any, method: str, event: EventDict) -> EventDict:
    """Add ``time``: when the record was made, in UTC to the millisecond."""
    record = event.get("_record")
    created = record.created if isinstance(record, logging.LogRecord) else time.time()
    event["time"] = iso_time(datetime.fromtimestamp(created, timezone.utc))
    return event


def drop_none(logger: Any, method: str, event: EventDict) -> EventDict:
    """Leave out the fields whose value is None."""
    for key in [key for key, value in event.items() if value is None]:
        del event[key]
    return event


def plain_values(logger: Any, method: str, event: EventDict) -> EventDict:
    """Give each value a JSON form: datetimes as ISO text, sets sorted, URLs masked."""
    for key, value in event.items():
        event[key] = _plain(value)
    return event


def logfmt_values(logger: Any, method: str, event: EventDict) -> EventDict:
    """Give each value a logfmt form: as :func:`plain_values`, and lists comma-separated."""
    for key, value in event.items():
        plain = _plain(value)
        if isinstance(plain, list):
            plain = ",".join(str(item) for item in plain)
        event[key] = plain
    return event


def leading_keys(logger: Any, method: str, event: EventDict) -> EventDict:
    """Put time, level, logger and event first, the fields after them in their order."""
    ordered = {key: event[key] for key in _LEADING if key in event}
    ordered.update((key, value) for key, value in event.items() if key not in ordered)
    return ordered


def mask_credentials(text: str) -> str:
    """Return ``text`` with the secrets recognisable by their shape masked: URL credentials
    (``user:***@``, ``***@``), secret-named parameters, ``Authorization`` values."""
    return scrub_shapes(text)


def iso_time(moment: datetime) -> str:
    """Return ``moment`` as ISO 8601 text in UTC to the millisecond (``...T12:00:00.000Z``)."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _plain(value: object) -> object:
    if isinstance(value, str):
        return mask_credentials(value)
    if isinstance(value, bool | int | float):
        return value
    if isinstance(value, datetime):
        return iso_time(value)
    if isinstance(value, set | frozenset):
        return [_plain(item) for item in sorted(value, key=str)]
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    return mask_credentials(str(value))
