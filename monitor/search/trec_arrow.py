"""Read a TREC run into the columns of :mod:`monitor.search.trec_columns` with pyarrow.

pyarrow's CSV reader splits the usual file (six fields, one space apart) on both cores, in
C++ (pyarrow is a dependency; without it the numpy tokeniser reads every file). It reads
only files it reads exactly as the line reader would: any line it cannot split into six
single-space separated fields (tabs, runs of spaces, extra fields, a comment line, a
trailing space), an id with a control byte or bytes that are not UTF-8, or a score that is
not a finite number makes :func:`read_trec_arrow` return None, and the caller reads the file
with the numpy tokeniser, which handles all of those. Scores are converted by Arrow's
correctly rounded parser (the value ``strtod`` gives); ids keep their bytes, packed as the
numpy reader packs them, so the ranking, ties and repeated ids are the numpy reader's, by
the same code.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

from monitor.io import MAX_RUN_BYTES
from monitor.search.trec_columns import ColumnBuilder, TrecColumns

_NAMES = ["query", "q0", "doc", "rank", "score", "tag"]
_BLOCK_BYTES = 8 << 20
#: Smaller files are read by the numpy tokeniser: importing pyarrow costs about 0.1 s, which
#: its reader wins back from about 8 MiB (a run of 200,000 lines of 100 documents).
ARROW_MIN_BYTES = 8 << 20
#: Files from this size are read by pyarrow when it is loaded already.
ARROW_LOADED_MIN_BYTES = 4 << 20
_COMPRESSED = (".gz", ".bz2", ".xz", ".lzma", ".zst")
_LONE_CR = re.compile(b"\r(?!\n)")
_MAGIC = (b"\x1f\x8b", b"BZh", b"\xfd7zXZ", b"\x28\xb5\x2f\xfd")  # gzip, bzip2, xz, zstd


def read_columns(path: str | os.PathLike[str], format: str = "auto") -> TrecColumns | None:
    """Return the run at ``path`` as columns, or None when it is not a TREC run (by
    ``format``, or its first byte when ``auto``) or the line reader must read it (a line the
    column readers do not read as it does, a fault opening the file: it names the fault).

    A big plain file is read by pyarrow (a dependency) on every core; its
    import costs more than it saves below :data:`ARROW_MIN_BYTES`, so smaller files, and
    every file pyarrow leaves, are read by the numpy tokeniser. A process that has loaded
    pyarrow already (pandas loads it, and the job has pandas) reads a file of
    :data:`ARROW_LOADED_MIN_BYTES` or more with it too: its parse is one call that lets go
    of the GIL, so a thread reading the eval set beside it does not slow it down.
    """
    from monitor.search.saved import is_trec_run
    from monitor.search.trec_read import read_trec_columns

    try:
        if not is_trec_run(Path(path), format):
            return None
        size = os.path.getsize(path)
        big = size >= ARROW_MIN_BYTES or (
            size >= ARROW_LOADED_MIN_BYTES and "pyarrow" in sys.modules
        )
        columns = read_trec_arrow(path) if big else None
        return columns if columns is not None else read_trec_columns(path)
    except OSError:
        return None


def read_trec_arrow(path: str | os.PathLike[str], limit: int = MAX_RUN_BYTES) -> TrecColumns | None:
    """Return the plain (uncompressed) TREC run at ``path`` as columns, or None when the
    numpy reader must read it (pyarrow missing, an irregular line, a file over ``limit``)."""
    try:
        import pyarrow as pa
        import pyarrow.csv as csv
    except ImportError:
        return None
    if os.path.getsize(path) > limit or not _plain_lines(path):
        return None
    codes: dict[str, int] = {}
    # A line of six fields is at least 12 bytes ("q 0 d 1 2 t" and its line feed).
    builder = ColumnBuilder(os.path.getsize(path) // 12 + 1)
    rows = 0
    pool = pa.default_memory_pool()
    try:
        # The whole file is parsed at once, on every core (the streaming reader parses
        # block by block on one), then packed batch by batch, each batch let go as it is
        # packed: the text columns and the packed ones are never both held whole. Read in
        # blocks: a memory map would count the file in RSS.
        table = csv.read_csv(
            os.fspath(path),
            read_options=csv.ReadOptions(
                column_names=_NAMES, use_threads=True, block_size=_BLOCK_BYTES
            ),
            parse_options=csv.ParseOptions(
                delimiter=" ", quote_char=False, escape_char=False, newlines_in_values=False
            ),
            convert_options=csv.ConvertOptions(
                column_types={"query": pa.binary(), "doc": pa.binary(), "score": pa.float64()},
                include_columns=["query", "doc", "score"],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
                null_values=[],
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    batches = table.to_batches()
    del table
    batches.reverse()  # popped from the end, in file order
    while batches:
        batch = batches.pop()
        part = _pack_batch(batch, codes)
        if part is None:
            return None
        builder.append(*part)
        rows += len(part[2])
        del batch, part
        pool.release_unused()  # the batch's memory back to the system, not kept idle
    if not rows:
        return None
    return builder.build(codes)


def _pack_batch(batch: Any, codes: dict[str, int]) -> tuple[Any, Any, Any] | None:
    """Return one batch's (query code, doc words, score), adding new query ids to
    ``codes`` in file order; None if a field is one the numpy reader must read."""
    query_col, doc_col, score_col = batch.columns
    for column in (query_col, doc_col):
        offsets, data = _values(column)
        if bool((np.diff(offsets) == 0).any()):
            return None  # an empty field: a line starting with a space, fields shifted
        if bool((data < 33).any()):
            return None  # whitespace other than a single space, or a control byte
        if bool((data > 127).any()) and not _utf8(column):
            return None
    offsets, data = _values(query_col)
    if bool((data[offsets[:-1] - offsets[0]] == ord("#")).any()):
        return None  # a comment line of six fields
    if score_col.null_count:
        return None
    score = _numbers(score_col, np.float64)
    if not np.isfinite(score).all():
        return None
    return _query_codes(query_col, codes), _pack_binary(doc_col), score


def _query_codes(column: Any, codes: dict[str, int]) -> Any:
    """Return each row's query code, adding new query ids to ``codes`` in file order."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = len(column)
    # The usual run holds each query's lines together: only the first of each is looked up.
    change = np.ones(rows, dtype=bool)
    if rows > 1:
        change[1:] = _flags(pc.not_equal(column.slice(1), column.slice(0, rows - 1)))
    heads = np.flatnonzero(change)
    if len(heads) > rows // 4:  # interleaved queries: one dictionary pass instead
        encoded = pc.dictionary_encode(column)  # codes in order of first appearance
        known = _codes_of(encoded.dictionary, codes)
        return known[_numbers(encoded.indices, np.int32)]
    # An index array over numpy's buffer: pa.array() of a numpy array would import pandas.
    picks = pa.Array.from_buffers(pa.int64(), len(heads), [None, pa.py_buffer(heads)])
    known = _codes_of(column.take(picks), codes)
    return np.repeat(known, np.diff(np.append(heads, rows)))


def _codes_of(names: Any, codes: dict[str, int]) -> Any:
    """Return the codes of a binary array of query ids, new ids added to ``codes``."""
    import pyarrow as pa

    ids = names.cast(pa.string()).to_pylist()  # checked UTF-8 by the caller
    return np.fromiter(
        (codes.setdefault(name, len(codes)) for name in ids), dtype=np.int32, count=len(ids)
    )


def _utf8(column: Any) -> bool:
    """Return whether every value of a binary array is UTF-8 on its own."""
    import pyarrow as pa

    try:
        column.cast(pa.string())
    except pa.ArrowInvalid:
        return False
    return True


def _plain_lines(path: str | os.PathLike[str]) -> bool:
    """Return whether the file is not compressed and ends its lines with LF or CR LF only
    (Arrow ends a line at a lone CR too; the line reader takes it for a space)."""
    if os.fspath(path).endswith(_COMPRESSED):
        return False
    with open(path, "rb") as handle:
        head = handle.read(6)
        if not head or head.startswith(_MAGIC):
            return False
        handle.seek(0)
        # Block by block into one buffer (a memory map would count the file in RSS): most
        # files hold no CR at all, which a byte search over the block tells at once. A CR
        # ending a block is judged with the next block's first byte.
        block = bytearray(_BLOCK_BYTES)
        view = memoryview(block)
        after_cr = False
        while size := handle.readinto(block):
            data = view[:size]
            if after_cr and data[0] != ord("\n"):
                return False
            after_cr = data[size - 1] == ord("\r")
            end = size - 1 if after_cr else size
            if block.find(b"\r", 0, end) >= 0 and _LONE_CR.search(data[:end]):
                return False
        return not after_cr


def _numbers(column: Any, dtype: Any) -> Any:
    """Return a null-free numeric array's values (``to_numpy`` would import pandas)."""
    buffer = column.buffers()[1]
    return np.frombuffer(buffer, dtype=dtype)[column.offset : column.offset + len(column)]


def _flags(column: Any) -> Any:
    """Return a null-free boolean array's values (Arrow packs them a bit each)."""
    bits = np.frombuffer(column.buffers()[1], dtype=np.uint8)
    flags = np.unpackbits(bits, bitorder="little").astype(bool)
    return flags[column.offset : column.offset + len(column)]


def _values(column: Any) -> tuple[Any, Any]:
    """Return a string array's offsets (int64, one more than rows) and value bytes."""
    import pyarrow as pa

    wide = pa.types.is_large_binary(column.type) or pa.types.is_large_string(column.type)
    _, offsets_buf, data_buf = column.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64 if wide else np.int32)[
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
    if bool((lengths == size).all()):  # every doc id as long, a whole number of words
        grid = data.reshape(rows, size).copy()  # the words are turned below: not Arrow's
    else:
        grid = _padded(column, rows, size)
    words = grid.view(np.uint64).reshape(rows, size // 8)
    if sys.byteorder == "little":
        words.byteswap(inplace=True)  # big-endian words, in the grid just filled: no copy
    return words


def _padded(column: Any, rows: int, size: int) -> Any:
    """Return the ids of a string array as rows of ``size`` bytes, zero padded.

    Arrow pads every id in one pass (the ids hold no NUL byte and are UTF-8, checked by the
    caller); its ASCII padding counts bytes, which the row lengths are checked against.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    padded = pc.ascii_rpad(column.cast(pa.string()), width=size, padding="\0")
    offsets, data = _values(padded)
    if bool((np.diff(offsets) == size).all()):
        return data.reshape(rows, size).copy()
    offsets, data = _values(column)  # padded by characters after all: place every byte
    lengths = np.diff(offsets)
    flat = np.zeros(rows * size, dtype=np.uint8)
    starts = offsets[:-1] - offsets[0]
    target = np.arange(len(data), dtype=np.int64) + np.repeat(
        np.arange(rows, dtype=np.int64) * size - starts, lengths
    )
    flat[target] = data
    return flat.reshape(rows, size)
