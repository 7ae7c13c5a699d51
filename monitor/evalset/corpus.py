"""The corpus beside an eval set: every passage's text and the fields that group passages.

A corpus file is JSONL (one object per line), CSV or TSV (a header row), optionally gzip
compressed (``.gz``, or any file that starts with the gzip magic bytes). Each passage has an
``id``, a ``text`` and any other fields (``doc_id``, ``section``, ``version``, ...): those are
what :mod:`monitor.metrics.units` groups passages by. Field values are kept as strings; a JSON
number or boolean is written as JSON writes it, and ``null`` is a missing field.

:meth:`Corpus.text` is the seam other stages use to show a hit whose search gave no text.
"""

from __future__ import annotations

import _csv
import csv
import functools
import gzip
import io
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from monitor.errors import InputError
from monitor.evalset._files import decode
from monitor.io import MAX_INPUT_BYTES, read_bytes_limited

if TYPE_CHECKING:
    from collections.abc import Iterable

    from monitor.config.model import EvalSetConfig
    from monitor.metrics.spec import Metric

#: The corpus formats, by the suffix before an optional ``.gz``.
CORPUS_FORMATS = {".jsonl": "jsonl", ".csv": "csv", ".tsv": "tsv"}
_GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True, slots=True)
class Passage:
    """One passage of a corpus: its id, text and other fields (all strings)."""

    id: str
    text: str
    fields: Mapping[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", MappingProxyType(dict(self.fields)))

    def get(self, name: str) -> str | None:
        """Return field ``name`` (``id`` and ``text`` included), or None when it is absent."""
        if name == "id":
            return self.id
        if name == "text":
            return self.text
        return self.fields.get(name)


@dataclass(frozen=True, slots=True, eq=False)
class Corpus:
    """Passages by id, read from ``source``."""

    passages: Mapping[str, Passage]
    source: str = "<corpus>"

    def __post_init__(self) -> None:
        object.__setattr__(self, "passages", MappingProxyType(dict(self.passages)))

    def __len__(self) -> int:
        return len(self.passages)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self.passages

    def __iter__(self) -> Iterator[Passage]:
        return iter(self.passages.values())

    def text(self, doc_id: str) -> str | None:
        """Return the text of passage ``doc_id``, or None when the corpus does not hold it."""
        passage = self.passages.get(doc_id)
        return None if passage is None else passage.text

    def get(self, doc_id: str) -> Passage | None:
        """Return passage ``doc_id``, or None when the corpus does not hold it."""
        return self.passages.get(doc_id)

    @property
    def field_names(self) -> tuple[str, ...]:
        """Return every field some passage has, ``id`` and ``text`` first, then as first seen."""
        names: dict[str, None] = {"id": None, "text": None}
        for passage in self.passages.values():
            names.update(dict.fromkeys(passage.fields))
        return tuple(names)

    @classmethod
    def load(cls, path: str | PathLike[str]) -> Corpus:
        """Read a JSONL, CSV or TSV corpus file (gzip accepted); raise InputError if invalid."""
        path = Path(path)
        try:
            data = read_bytes_limited(path)
        except OSError as error:
            found = error.strerror or str(error)
            raise InputError(str(path), "a readable corpus file", found=found) from None
        return cls.parse(data, corpus_format(path), str(path))

    @classmethod
    def parse(cls, data: bytes, fmt: str, source: str = "<corpus>") -> Corpus:
        """Read corpus ``data`` in format ``fmt`` (``jsonl``, ``csv`` or ``tsv``)."""
        if data.startswith(_GZIP_MAGIC):
            data = _gunzip(data, source)
        text = decode(data, source)
        if fmt == "jsonl":
            rows = _jsonl_rows(text, source)
        elif fmt in ("csv", "tsv"):
            rows = _table_rows(text, source, "\t" if fmt == "tsv" else ",")
        else:
            raise InputError(source, "a corpus format: " + ", ".join(CORPUS_FORMATS.values()))
        passages: dict[str, Passage] = {}
        for line, row in rows:
            passage = _passage(row, source, line)
            if passage.id in passages:
                raise InputError(source, "passage ids listed once", line=line, found=passage.id)
            passages[passage.id] = passage
        return cls(passages, source)


def load_corpus(config: EvalSetConfig) -> Corpus | None:
    """Return the corpus an eval set config names (a bundled set brings its own), or None.

    A run reads it in several stages (scoring units, aligning the baseline, texts for the
    labeling queue): an unchanged file (same path, size and modification time) is read once.
    """
    if config.corpus is not None:
        path = Path(config.corpus)
    elif config.bundled == "larkfield":
        from monitor.evalset import bundled

        path = Path(bundled.data_path("larkfield", "passages.jsonl"))
    else:
        return None
    try:
        stat = path.stat()
    except OSError:
        return Corpus.load(path)  # it names the fault
    return _load_unchanged(str(path), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=4)
def _load_unchanged(path: str, size: int, mtime_ns: int) -> Corpus:
    """Return the corpus at ``path`` as of ``size`` and ``mtime_ns`` (the cache's key)."""
    return Corpus.load(path)


def corpus_for(config: EvalSetConfig, metrics: Iterable[Metric]) -> Corpus | None:
    """Return the corpus when one of ``metrics`` counts units, else None (nothing is read)."""
    return load_corpus(config) if any(m.unit is not None for m in metrics) else None


def corpus_format(path: Path) -> str:
    """Return the corpus format of ``path`` from its suffix (``.gz`` looked through)."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes.pop()
    fmt = CORPUS_FORMATS.get(suffixes[-1] if suffixes else "")
    if fmt is None:
        known = ", ".join(f"{s}[.gz]" for s in CORPUS_FORMATS)
        raise InputError(str(path), f"a corpus file named *{known}", found=path.name)
    return fmt


def _gunzip(data: bytes, source: str) -> bytes:
    """Return ``data`` decompressed, at most :data:`MAX_INPUT_BYTES` of it."""
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
            out = stream.read(MAX_INPUT_BYTES + 1)
    except (OSError, EOFError) as error:
        raise InputError(source, "a valid gzip file", found=str(error)) from None
    if len(out) > MAX_INPUT_BYTES:
        raise InputError(source, f"at most {MAX_INPUT_BYTES} bytes once decompressed")
    return out


def _jsonl_rows(text: str, source: str) -> Iterator[tuple[int, Mapping[str, object]]]:
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as error:
            expected = f"one JSON object per line ({error.msg}: column {error.colno})"
            raise InputError(source, expected, line=number) from None
        except RecursionError:
            raise InputError(
                source, "a passage object nested a few levels deep", line=number
            ) from None
        except ValueError:  # an integer past the 4,300 digits Python converts
            expected = "a passage object with numbers of at most 4300 digits"
            raise InputError(source, expected, line=number) from None
        if not isinstance(obj, dict):
            raise InputError(source, "a passage object", line=number, found=obj)
        yield number, obj


def _table_rows(
    text: str, source: str, delimiter: str
) -> Iterator[tuple[int, Mapping[str, object]]]:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        yield from _table_cells(reader, source)
    except csv.Error as error:  # a field past the csv module's limit of 131072 characters
        raise InputError(source, f"valid CSV ({error})", line=reader.line_num) from None


def _table_cells(reader: _csv.Reader, source: str) -> Iterator[tuple[int, Mapping[str, object]]]:
    header: list[str] | None = None
    for row in reader:
        if not any(cell.strip() for cell in row):
            continue
        if header is None:
            header = [cell.strip() for cell in row]
            if len(set(header)) != len(header):
                raise InputError(source, "column names given once", line=reader.line_num)
            continue
        if len(row) != len(header):
            expected = f"{len(header)} columns as in the header"
            raise InputError(source, expected, line=reader.line_num, found=len(row))
        yield reader.line_num, {name: cell for name, cell in zip(header, row, strict=True) if cell}
    if header is None:
        raise InputError(source, "a header row with the columns id and text", line=1)


def _passage(row: Mapping[str, object], source: str, line: int) -> Passage:
    values: dict[str, str] = {}
    for key, value in row.items():
        if value is None:
            continue
        if isinstance(value, dict | list):
            expected = "a field value that is a string, number or boolean"
            raise InputError(f"{source}", f"{expected} in field {key!r}", line=line, found=value)
        values[key] = value if isinstance(value, str) else json.dumps(value)
    doc_id = values.pop("id", "")
    if not doc_id:
        raise InputError(source, "a passage with a non-empty 'id'", line=line)
    if "text" not in values:
        raise InputError(source, f"a 'text' field for passage {doc_id!r}", line=line)
    text = values.pop("text")
    return Passage(doc_id, text, values)
