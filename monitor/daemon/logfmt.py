"""Structured log lines: one ``key=value`` line per record (logfmt), for the daemon's stderr.

The daemon's own records carry an event name and fields (:func:`emit`); they print as
``time=... level=info logger=monitor.daemon event=run_finished suite=nightly run_id=7``.
Records from other loggers print their message as ``msg="..."``. A traceback becomes one
quoted ``exc`` value, so every record stays on one line.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import TextIO

#: The ``extra`` key under which :func:`emit` puts a record's fields.
FIELDS = "logfmt_fields"


def emit(logger: logging.Logger, level: int, event: str, /, **fields: object) -> None:
    """Log ``event`` with ``fields`` as one structured record; ``None`` fields are left out."""
    if logger.isEnabledFor(level):
        logger.log(level, event, extra={FIELDS: fields})


class LogfmtFormatter(logging.Formatter):
    """Format a record as one ``key=value`` line: time, level, logger, event or msg, fields."""

    def format(self, record: logging.LogRecord) -> str:
        """Return the record as one logfmt line."""
        pairs: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, timezone.utc),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        fields = getattr(record, FIELDS, None)
        if isinstance(fields, Mapping):
            pairs["event"] = record.msg
            pairs.update(fields)
        else:
            pairs["msg"] = record.getMessage()
        if record.exc_info:
            pairs["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            pairs["exc"] = record.exc_text
        return " ".join(
            f"{key}={value_text(value)}" for key, value in pairs.items() if value is not None
        )


def value_text(value: object) -> str:
    """Return ``value`` as a logfmt value, quoted only when it has to be."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(timezone.utc)
        text = value.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    elif isinstance(value, int | float):
        return repr(value)
    elif isinstance(value, list | tuple | set | frozenset):
        items = sorted(value) if isinstance(value, set | frozenset) else value
        text = ",".join(str(item) for item in items)
    else:
        text = str(value)
    if text and all(ch.isprintable() and ch not in ' "=\\' for ch in text):
        return text
    return json.dumps(text, ensure_ascii=False)


def configure_logging(stream: TextIO, level: int = logging.INFO) -> logging.Handler:
    """Send every record at ``level`` and above to ``stream`` as logfmt lines; return the handler.

    APScheduler's own warnings (missed runs, runs skipped while one is running) and job
    errors are reported by the daemon's listener as structured events, so its logger is
    quietened to errors only.
    """
    handler = logging.StreamHandler(stream)
    handler.setFormatter(LogfmtFormatter())
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(level)
    logging.getLogger("apscheduler").setLevel(logging.ERROR)
    return handler
