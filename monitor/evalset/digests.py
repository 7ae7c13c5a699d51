"""The digests a run records of its frozen eval set, kept while the set's files do not change.

Every run records the frozen set's fingerprint and its labels (the queries fingerprint and
the judgments version, :func:`monitor.judgments.labels_of`): three canonical serialisations
of every query, about a second at 100,000 queries and seven at a million. A scheduled
monitor reads the same frozen file run after run, so the digests are kept in the store
(state ``evalset_digests``, by suite) beside a SHA-256 of the bytes they were computed from:
the set's file, its TREC queries file, the format asked for, and the version of the
definitions below. A run whose files hash alike takes them from there; any other byte,
option or version computes them again. The files are stat-ed before the set is read and
after it is hashed: a file that changed meanwhile is neither trusted nor remembered.
A bundled set is small and never kept.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from monitor.config.model import EvalSetConfig

#: The store's state namespace.
NAMESPACE = "evalset_digests"
#: The version of the digests' definitions: a change to any of them must bump it.
VERSION = 1
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class SetDigests:
    """What a run records of a frozen eval set, and the files it was computed from."""

    files: str
    fingerprint: str
    queries_fingerprint: str
    judgments_version: str

    def as_state(self) -> dict[str, object]:
        """Return the store's form."""
        return {
            "version": VERSION,
            "files": self.files,
            "fingerprint": self.fingerprint,
            "queries_fingerprint": self.queries_fingerprint,
            "judgments_version": self.judgments_version,
        }


def stat_files(config: EvalSetConfig) -> tuple[tuple[int, int, int], ...] | None:
    """Return (size, mtime_ns, inode) of each file the set is read from; None for a bundled
    set or a file that cannot be stat-ed."""
    paths = _paths(config)
    if paths is None:
        return None
    try:
        stats = [os.stat(path) for path in paths]
    except OSError:
        return None
    return tuple((s.st_size, s.st_mtime_ns, s.st_ino) for s in stats)


def files_digest(config: EvalSetConfig) -> str | None:
    """Return ``sha256:<hex>`` of the set's files and options, None for a bundled set."""
    paths = _paths(config)
    if paths is None:
        return None
    digest = hashlib.sha256(f"v{VERSION}\0{config.format or ''}\0".encode())
    try:
        if not all(stat.S_ISREG(os.stat(path).st_mode) for path in paths):
            return None  # a device or a pipe: read (and refused) by the reader alone
        for path in paths:
            digest.update(f"{len(str(path))}:{path}\0".encode("utf-8", "surrogatepass"))
            with open(path, "rb") as handle:
                while chunk := handle.read(_CHUNK):
                    digest.update(chunk)
            digest.update(b"\0")
    except OSError:
        return None
    return "sha256:" + digest.hexdigest()


def known(state: Mapping[str, object] | None, files: str) -> SetDigests | None:
    """Return the digests kept in ``state`` when they were computed from ``files``."""
    if not state or state.get("version") != VERSION or state.get("files") != files:
        return None
    values = [state.get(name) for name in ("fingerprint", "queries_fingerprint")]
    values.append(state.get("judgments_version"))
    if not all(isinstance(value, str) and value.startswith("sha256:") for value in values):
        return None
    fingerprint, queries, judgments = (str(value) for value in values)
    return SetDigests(files, fingerprint, queries, judgments)


def _paths(config: EvalSetConfig) -> list[Path] | None:
    if config.path is None:
        return None
    return [config.path] if config.queries is None else [config.path, config.queries]
