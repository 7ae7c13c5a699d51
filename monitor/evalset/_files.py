"""Read eval set files as checked UTF-8 text."""

from __future__ import annotations

from os import PathLike
from pathlib import Path

from monitor.errors import InputError
from monitor.io import read_bytes_limited


def read_text(path: str | PathLike[str]) -> str:
    """Return the text of the file at ``path``; raise InputError if unreadable, not UTF-8 or
    larger than :data:`monitor.io.MAX_INPUT_BYTES`."""
    try:
        data = read_bytes_limited(Path(path))
    except OSError as error:
        raise InputError(str(path), "a readable file", found=error.strerror or str(error)) from None
    return decode(data, str(path))


def decode(data: bytes, source: str) -> str:
    """Return ``data`` decoded as UTF-8 (a leading byte order mark is dropped)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        bad = data[error.start : error.end]
        raise InputError(source, "UTF-8 text", line=line, found=bad) from None
