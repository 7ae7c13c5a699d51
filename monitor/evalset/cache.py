"""Keep a large frozen eval set's columns on disk, so that the next run need not parse it.

A scheduled monitor reads the same frozen file run after run. Parsing a JSONL set of a
million queries takes most of ten seconds; reading back the columns it was parsed into
takes under one. So the columns (:class:`~monitor.evalset.columns.EvalColumns`) of a set
read from a file of :data:`MIN_BYTES` or more is written, after it is read, to one ``.npz`` file
named by the SHA-256 of the set's files (:func:`monitor.evalset.digests.files_digest`: every
byte of them, the format and the path). A run whose files hash alike reads that file instead
of parsing; any other byte is another name, and the set is parsed again.

The file holds arrays only (numpy's format, read without pickle) and the metadata as JSON,
so reading one can build nothing but an eval set. A cache file that cannot be read, or reads
as something else, is ignored (and replaced); one that cannot be written is skipped: the run
goes on either way. The folder is ``$MONITOR_CACHE_DIR``, else
``$XDG_CACHE_HOME/retrieval-monitor/evalsets`` (``~/.cache/...``); the :data:`KEEP` files
read or written last are kept, older ones deleted.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from monitor import texts
from monitor.evalset import digests
from monitor.evalset.columns import EvalColumns
from monitor.evalset.model import EvalSet
from monitor.logs import get_logger
from monitor.records import MetaValue

if TYPE_CHECKING:
    from monitor.config.model import EvalSetConfig

log = get_logger("monitor.evalset")

#: The cache's format: a change to what a file holds must bump it.
FORMAT = 1
#: The smallest eval-set file kept: a smaller one parses in a fraction of a second.
MIN_BYTES = 1 << 20
#: How many cached sets are kept.
KEEP = 8
_ARRAYS = ("counts", "doc_lengths", "doc_bytes", "grades")


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Return the cache folder named by the environment."""
    env = os.environ if environ is None else environ
    if env.get("MONITOR_CACHE_DIR"):
        return Path(env["MONITOR_CACHE_DIR"])
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "retrieval-monitor" / "evalsets"


def read(files: str, directory: Path | None = None) -> EvalSet | None:
    """Return the eval set kept for the files of digest ``files``, or None."""
    path = _path(files, directory)
    try:
        with np.load(path, allow_pickle=False) as held:
            evalset = _evalset(files, held)
        os.utime(path)  # read last: kept the longest
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError) as error:
        log.warning("evalset_cache_unreadable", path=str(path), error=str(error))
        return None
    return evalset


def write(files: str, evalset: EvalSet, size: int, directory: Path | None = None) -> None:
    """Keep ``evalset`` (read from files of digest ``files``, ``size`` bytes in all) when it
    is large enough to be worth it."""
    if size < MIN_BYTES:
        return
    columns = evalset.columns()
    path = _path(files, directory)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as out:
                np.savez(out, **_arrays(files, evalset.name, columns))
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        _forget_old(path.parent)
    except OSError as error:
        log.warning("evalset_cache_unwritable", path=str(path), error=str(error))


def _path(files: str, directory: Path | None) -> Path:
    name = files.removeprefix("sha256:")
    return (directory or cache_dir()) / f"v{FORMAT}-{name}.npz"


def _arrays(files: str, name: str, columns: EvalColumns) -> dict[str, Any]:
    id_lengths, id_bytes = texts.layout_of(columns.ids)
    text_lengths, text_bytes = texts.layout_of(columns.texts)
    kinds: dict[int, int] = {}
    distinct: list[Mapping[str, MetaValue]] = []
    codes = np.empty(len(columns), dtype=np.int32)
    for i, metadata in enumerate(columns.metadata):
        code = kinds.get(id(metadata))
        if code is None:  # the reader shares one dict between queries of equal metadata
            code = kinds[id(metadata)] = len(distinct)
            distinct.append(metadata)
        codes[i] = code
    header = {"format": FORMAT, "files": files, "name": name}
    return {
        "header": _json_bytes(header),
        "metadata": _json_bytes([dict(m) for m in distinct]),
        "metadata_codes": codes,
        "id_lengths": id_lengths,
        "id_bytes": id_bytes,
        "text_lengths": text_lengths,
        "text_bytes": text_bytes,
        **{field: getattr(columns, field) for field in _ARRAYS},
    }


def _evalset(files: str, held: Any) -> EvalSet:
    header = json.loads(held["header"].tobytes())
    if header.get("format") != FORMAT or header.get("files") != files:
        raise ValueError("the file holds another eval set")
    distinct = [dict(m) for m in json.loads(held["metadata"].tobytes())]
    codes = held["metadata_codes"]
    if codes.size and (int(codes.min()) < 0 or int(codes.max()) >= len(distinct)):
        raise ValueError("a metadata code out of range")
    ids = texts.decode(held["id_lengths"], held["id_bytes"])
    columns = EvalColumns(
        tuple(ids),
        tuple(texts.decode(held["text_lengths"], held["text_bytes"])),
        tuple(map(distinct.__getitem__, codes.tolist())),
        *(np.asarray(held[field], dtype=_DTYPES[field]) for field in _ARRAYS),
    )
    if len(set(ids)) != len(ids):
        raise ValueError("a repeated query id")
    return EvalSet.of_columns(str(header.get("name", "")), columns)


_DTYPES = {"counts": np.int64, "doc_lengths": np.int64, "doc_bytes": np.uint8, "grades": np.int64}


def _json_bytes(value: object) -> Any:
    return np.frombuffer(json.dumps(value, ensure_ascii=False).encode("utf-8"), dtype=np.uint8)


def _forget_old(directory: Path) -> None:
    """Delete all but the :data:`KEEP` cache files read or written last."""
    held = sorted(directory.glob("v*-*.npz"), key=_mtime, reverse=True)
    for path in held[KEEP:]:
        path.unlink(missing_ok=True)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def load_tracked(config: EvalSetConfig) -> tuple[EvalSet, str | None]:
    """Return the eval set ``config`` names and the digest of the files it was read from
    (:func:`monitor.evalset.digests.files_digest`; None for a bundled set, or files that
    changed while they were read, which are neither trusted nor kept).

    A large set read before is read back from the cache instead of parsed again, and one
    parsed now is kept there.
    """
    from monitor.evalset.suite import load_evalset  # looked up when called

    before = digests.stat_files(config)
    files = digests.files_digest(config) if before is not None else None
    cached = read(files) if files is not None else None
    evalset = cached if cached is not None else load_evalset(config)
    if digests.stat_files(config) != before:
        return (load_evalset(config) if cached is not None else evalset), None  # as it is now
    if cached is None and files is not None and before is not None:
        write(files, evalset, sum(size for size, _, _ in before))
    return evalset, files
