"""Read a TREC run into the columns of :mod:`monitor.search.trec_columns` with pyarrow.

pyarrow's CSV reader splits the usual file (six fields, one space apart) on both cores, in
C++; it is used when the optional ``fast`` extra is installed. It reads only files it reads
exactly as the line reader would: any line it cannot split into six single-space separated
fields (tabs, runs of spaces, extra fields, a comment line, a trailing space), an id with a
control byte or bytes that are not UTF-8, or a score that is not a finite number makes
:func:`read_trec_arrow` return None, and the caller reads the file with the numpy tokeniser,
which handles all of those. Scores are converted by Arrow's correctly rounded parser (the
value ``strtod`` gives); ids keep their bytes, packed as the numpy reader packs them, so the
ranking, ties and repeated ids are the numpy reader's, by the same code.
"""

from __future__ import annotations

import mmap
import os
import re
from typing import Any

import numpy as np

from monitor.io import MAX_RUN_BYTES
from monitor.search.trec_columns import (
    TrecColumns,
    _in_trec_order,
    _later_copies,
)

_NAMES = ["query", "q0", "doc", "rank", "score", "tag"]
_BLOCK_BYTES = 16 << 20
#: Smaller files are read by the numpy tokeniser: importing pyarrow costs about 0.3 s.
ARROW_MIN_BYTES = 64 << 20
_COMPRESSED = (".gz", ".bz2", ".xz", ".lzma", ".zst")
_LONE_CR = re.compile(b"\r(?!\n)")
_MAGIC = (b"\x1f\x8b", b"BZh", b"\xfd7zXZ", b"\x28\xb5\x2f\xfd")  # gzip, bzip2, xz, zstd


def available() -> bool:
    """Return whether pyarrow can be imported."""
    try:
        import pyarrow.csv  # noqa: F401
    except ImportError:
        return False
    return True


def read_trec_arrow(path: str | os.PathLike[str], limit: int = MAX_RUN_BYTES) -> TrecColumns | None:
    """Return the plain (uncompressed) TREC run at ``path`` as columns, or None when the
    numpy reader must read it (pyarrow missing, an irregular line, a file over ``limit``)."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.csv as csv
    except ImportError:
        return None
    if os.path.getsize(path) > limit or not _plain_lines(path):
        return None
    try:
        table = csv.read_csv(
            os.fspath(path),  # read in blocks: a memory map would count the file in RSS
            read_options=csv.ReadOptions(
                column_names=_NAMES, use_threads=True, block_size=_BLOCK_BYTES
            ),
            parse_options=csv.ParseOptions(
                delimiter=" ", quote_char=False, escape_char=False, newlines_in_values=False
            ),
            convert_options=csv.ConvertOptions(
                column_types={"query": pa.string(), "doc": pa.string(), "score": pa.float64()},
                include_columns=["query", "doc", "score"],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
                null_values=[],
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    query_col = table.column("query").combine_chunks()
    doc_col = table.column("doc").combine_chunks()
    score_col = table.column("score").combine_chunks()
    del table
    if len(query_col) == 0:
        return None
    # Checked on the value bytes with numpy: pyarrow's scalar conversions import pandas.
    for column in (query_col, doc_col):
        offsets, data = _values(column)
        if bool((np.diff(offsets) == 0).any()):
            return None  # an empty field: a line starting with a space, fields shifted
        if bool((data < 32).any()):
            return None  # whitespace other than a single space, or a control byte
    offsets, data = _values(query_col)
    if bool((data[offsets[:-1] - offsets[0]] == ord("#")).any()):
        return None  # a comment line of six fields
    score = _numbers(score_col, np.float64)
    if score_col.null_count or not np.isfinite(score).all():
        return None
    encoded = pc.dictionary_encode(query_col)  # codes in order of first appearance
    codes_list = encoded.dictionary.to_pylist()
    query = _numbers(encoded.indices, np.int32).astype(np.int64)
    del encoded, query_col
    words = _pack_binary(doc_col)
    del doc_col
    query, words, score = _in_trec_order(query, words, score)
    codes = {qid: i for i, qid in enumerate(codes_list)}
    return TrecColumns(
        query_ids=tuple(codes_list),
        query=query,
        doc_words=words,
        score=score,
        copy=_later_copies(query, words),
        _codes=codes,
    )


def _plain_lines(path: str | os.PathLike[str]) -> bool:
    """Return whether the file is not compressed and ends its lines with LF or CR LF only
    (Arrow ends a line at a lone CR too; the line reader takes it for a space)."""
    if os.fspath(path).endswith(_COMPRESSED):
        return False
    with open(path, "rb") as handle:
        if handle.read(6).startswith(_MAGIC):
            return False
        if os.fstat(handle.fileno()).st_size == 0:
            return False
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return data.find(b"\r") < 0 or _LONE_CR.search(data) is None


def _numbers(column: Any, dtype: Any) -> Any:
    """Return a null-free numeric array's values (``to_numpy`` would import pandas)."""
    buffer = column.buffers()[1]
    return np.frombuffer(buffer, dtype=dtype)[column.offset : column.offset + len(column)]


def _values(column: Any) -> tuple[Any, Any]:
    """Return a string array's offsets (int64, one more than rows) and value bytes."""
    import pyarrow as pa

    column = column.cast(pa.large_string())
    _, offsets_buf, data_buf = column.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[
        column.offset : column.offset + len(column) + 1
    ]
    if data_buf is None:
        return offsets, np.zeros(0, dtype=np.uint8)
    return offsets, np.frombuffer(data_buf, dtype=np.uint8)[offsets[0] : offsets[-1]]


def _pack_binary(column: Any) -> Any:
    """Return a string array's values packed as big-endian words, as ``_pack`` packs them."""
    offsets, data = _values(column)
    lengths = np.diff(offsets)
    rows = len(lengths)
    width = max(int(lengths.max()) if rows else 1, 1)
    size = 8 * -(-width // 8)
    if bool((lengths == width).all()):  # the usual run: every doc id as long
        grid = np.zeros((rows, size), dtype=np.uint8)
        grid[:, :width] = data.reshape(rows, width)
    else:
        flat = np.zeros(rows * size, dtype=np.uint8)
        starts = offsets[:-1] - offsets[0]
        target = np.arange(len(data), dtype=np.int64) + np.repeat(
            np.arange(rows, dtype=np.int64) * size - starts, lengths
        )
        flat[target] = data
        grid = flat.reshape(rows, size)
    return grid.view(">u8").reshape(rows, size // 8).astype(np.uint64)
