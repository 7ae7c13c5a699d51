"""Read eval set files as checked UTF-8 text, and write them atomically."""

from __future__ import annotations

import os
import secrets
from os import PathLike
from pathlib import Path

from monitor.errors import InputError


def read_text(path: str | PathLike[str]) -> str:
    """Return the text of the file at ``path``; raise InputError if unreadable or not UTF-8."""
    try:
        data = Path(path).read_bytes()
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


def write_atomic(path: str | PathLike[str], text: str) -> None:
    """Write ``text`` as UTF-8 to ``path`` so that readers see the old file or the new one.

    The text goes to a temporary file in the same folder (so the rename cannot cross file
    systems), is flushed to disk, then replaces ``path`` with :func:`os.replace`.
    """
    target = Path(path)
    data = text.encode("utf-8")
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    # os.open with 0o666 lets the umask decide the mode, as a plain open() would.
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
