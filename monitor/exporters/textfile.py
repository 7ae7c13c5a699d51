"""Write a snapshot for node_exporter's textfile collector: a ``.prom`` file, replaced whole.

node_exporter reads every ``*.prom`` file in its ``--collector.textfile.directory`` at each
scrape, so the file must never be seen half written: it is written to a temporary file in the
same folder (a name node_exporter ignores) and renamed over the old one.

Several suites may share one file. Each write reads the file, replaces the series of its own
suite as :func:`monitor.exporters.gauges.merge` does (everything after a success, only the
attempt gauges after a failure, so the last success stays) and keeps the other suites' series;
a lock file beside it (``.NAME.lock``) keeps two writers from losing each other's update.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from monitor.errors import ExportError, UsageError
from monitor.exporters.gauges import merge, render_families
from monitor.exporters.snapshot import SuiteSnapshot
from monitor.io import write_text_atomic

#: The file's mode: node_exporter usually runs as another user than the monitor.
FILE_MODE: Final = 0o644


def write_textfile(snapshot: SuiteSnapshot, path: str | Path) -> None:
    """Merge ``snapshot`` into the ``.prom`` file at ``path`` atomically.

    Raise UsageError if ``path`` does not end in ``.prom`` (node_exporter would never read
    it) and ExportError if the file cannot be read, parsed or written.
    """
    path = Path(path)
    if path.suffix != ".prom":
        raise UsageError(
            f"textfile {path}: the name must end in .prom (node_exporter reads only those)"
        )
    target = f"textfile {path}"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with _locked(path):
            previous = _read(path, target)
            _replace(path, render_families(merge(previous, snapshot)))
    except OSError as error:
        raise ExportError(target, f"{type(error).__name__}: {error}") from error


def _read(path: Path, target: str) -> list[Metric]:
    """Return the families in the file, none if there is no file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except UnicodeDecodeError as error:
        raise ExportError(target, f"the file is not UTF-8 text; left as it is: {error}") from error
    try:
        return list(text_string_to_metric_families(text))
    except (ValueError, IndexError, KeyError) as error:
        raise ExportError(
            target, f"the file is not Prometheus text exposition; left as it is: {error}"
        ) from error


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``.NAME.lock`` beside ``path`` (POSIX advisory lock).

    The lock file is never a symlink: in a folder other users can write (node_exporter's
    textfile folder often is), one planted there would make the monitor create or truncate a
    file elsewhere with its own rights.
    """
    import fcntl

    lock = path.with_name(f".{path.name}.lock")
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        descriptor = os.open(lock, flags, FILE_MODE)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise ExportError(
                f"textfile {path}", f"the lock file {lock} is a symlink; refusing to follow it"
            ) from None
        raise
    with os.fdopen(descriptor, "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _replace(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically, readable by node_exporter's own user."""
    write_text_atomic(path, text, mode=FILE_MODE)
