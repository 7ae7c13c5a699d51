"""Atomic file writes (a reader sees the old file or the new one, never half of one), and
bounded reads of input files, decompressed by suffix.

Every input file (qrels, runs, eval sets, queries, corpora) may be compressed: a name ending
in ``.gz``, ``.bz2``, ``.xz`` or ``.lzma`` is decompressed as it is read, with the standard
library's codecs, and the size limit applies to the decompressed bytes (a small archive that
expands without end costs no more than the limit).
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import secrets
from collections.abc import Callable
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


def write_input_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` as UTF-8 to ``path`` atomically, compressed as its suffix names."""
    data = text.encode("utf-8")
    compression = compression_of(path)
    if compression == ".gz":
        data = gzip.compress(data, mtime=0)
    elif compression == ".bz2":
        data = bz2.compress(data)
    elif compression is not None:
        data = lzma.compress(data, format=_LZMA_FORMATS[compression])
    write_bytes_atomic(path, data)


#: The largest eval set, qrels or queries file read, in bytes (a guard against ``/dev/zero``).
MAX_INPUT_BYTES = 256 << 20
#: The largest run file read, in bytes: a TREC run of ten million lines holds about 500 MB.
MAX_RUN_BYTES = 8 << 30

#: Compression suffix -> the function that opens such a file for reading bytes.
# The openers return file objects for the caller's own ``with``.
COMPRESSIONS: dict[str, Callable[[str], io.BufferedIOBase]] = {
    ".gz": lambda name: gzip.open(name, "rb"),  # noqa: SIM115
    ".bz2": lambda name: bz2.open(name, "rb"),  # noqa: SIM115
    ".xz": lambda name: lzma.open(name, "rb"),  # noqa: SIM115
    ".lzma": lambda name: lzma.open(name, "rb"),  # noqa: SIM115
}


_LZMA_FORMATS = {".xz": lzma.FORMAT_XZ, ".lzma": lzma.FORMAT_ALONE}


def compression_of(path: str | os.PathLike[str]) -> str | None:
    """Return the compression suffix of ``path`` (``.gz``, ...), or None for a plain file."""
    suffix = Path(path).suffix.lower()
    return suffix if suffix in COMPRESSIONS else None


def logical_suffix(path: str | os.PathLike[str]) -> str:
    """Return the suffix that names the format of ``path``, beneath any compression suffix.

    ``run.trec.gz`` gives ``.trec``, ``set.JSONL`` gives ``.jsonl``.
    """
    name = Path(path)
    if compression_of(name) is not None:
        name = name.with_suffix("")
    return name.suffix.lower()


def logical_stem(path: str | os.PathLike[str]) -> str:
    """Return the file name of ``path`` without its compression and format suffixes."""
    name = Path(path)
    if compression_of(name) is not None:
        name = name.with_suffix("")
    return name.stem


def open_input(path: str | os.PathLike[str]) -> io.BufferedIOBase:
    """Open the file at ``path`` for reading bytes, decompressing by suffix."""
    compression = compression_of(path)
    if compression is None:
        return open(path, "rb")
    return COMPRESSIONS[compression](os.fspath(path))


def read_bytes_limited(path: str | os.PathLike[str], limit: int = MAX_INPUT_BYTES) -> bytes:
    """Return the bytes of the file at ``path``, decompressed when its suffix names a
    compression; raise InputError if it holds more than ``limit`` bytes (decompressed).

    At most ``limit + 1`` bytes are read, so a device that never ends (``/dev/zero``, a FIFO
    fed forever) costs no more memory than the limit. OSError passes through to the caller;
    a corrupt or truncated archive raises InputError naming the file and its compression.
    """
    compression = compression_of(path)
    try:
        with open_input(path) as handle:
            data = handle.read(limit + 1)
    except (EOFError, gzip.BadGzipFile, lzma.LZMAError, OSError, ValueError) as error:
        if compression is None or (isinstance(error, OSError) and error.errno is not None):
            raise
        raise InputError(
            str(path), f"a {compression} compressed file", found=str(error) or "truncated"
        ) from None
    if len(data) > limit:
        raise InputError(str(path), f"a file of at most {limit} bytes (this one holds more)")
    return data
