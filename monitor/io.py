"""Atomic file writes (a reader sees the old file or the new one, never half of one), and
bounded reads of input files."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from monitor.errors import InputError


def write_bytes_atomic(
    path: str | os.PathLike[str], data: bytes, *, mode: int | None = None
) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename.

    The temporary file sits beside ``path`` (so the rename cannot cross file systems), is
    flushed to disk, then replaces ``path`` with :func:`os.replace`. Missing parent folders
    are created. The new file's mode follows the umask, as a plain ``open()`` would, unless
    ``mode`` is given (e.g. 0o644 for a file another user's process must read).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_text_atomic(path: str | os.PathLike[str], text: str, *, mode: int | None = None) -> None:
    """Write ``text`` as UTF-8 to ``path`` atomically (``mode`` as in write_bytes_atomic)."""
    write_bytes_atomic(path, text.encode("utf-8"), mode=mode)


#: The largest eval set, run or queries file read, in bytes (a guard against ``/dev/zero``).
MAX_INPUT_BYTES = 256 << 20


def read_bytes_limited(path: str | os.PathLike[str], limit: int = MAX_INPUT_BYTES) -> bytes:
    """Return the bytes of the file at ``path``; raise InputError if it holds more than ``limit``.

    At most ``limit + 1`` bytes are read, so a device that never ends (``/dev/zero``, a FIFO
    fed forever) costs no more memory than the limit. OSError passes through to the caller.
    """
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise InputError(str(path), f"a file of at most {limit} bytes (this one holds more)")
    return data
