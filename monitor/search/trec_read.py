"""Read a TREC run into flat numpy columns (:class:`~monitor.search.trec_columns.TrecColumns`),
with no Python object per line.

This is the fast path of ``evaluate``: ten million lines in a few seconds and a few hundred
megabytes. It reads the file in chunks of whole lines and works on the bytes with numpy:
whitespace splits fields (space, tab, CR, LF, VT, FF, as C's ``isspace``), a line whose first
field starts with ``#`` is a comment, fields after the sixth are ignored. Scores written as
plain decimals of at most 15 digits are converted exactly in numpy (an integer mantissa
divided by a power of ten is the correctly rounded double, as ``strtod`` gives); any other
score is read as C's ``atof`` reads it (:func:`monitor.evalset.trec_fields.c_double`: ``1_0``
is 1, a non-ASCII digit is no digit). Ids are packed into big-endian 64-bit words, so
comparing words compares bytes, as ``strcmp`` does.

A file already in trec_eval's order (the usual case: each query's lines together, best
first) is not sorted again.

:func:`read_trec_columns` returns None for anything it does not read the same way as the
line reader of :mod:`monitor.search.saved` would (a short line, a score that is not a
finite number, bytes that are not UTF-8, control characters other than the separators): the
caller then reads the file with that reader, which names the first bad line or gives the
same ranking.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

from monitor.errors import InputError
from monitor.evalset.trec_fields import BOM, c_double
from monitor.io import MAX_RUN_BYTES, open_input
from monitor.search.trec_columns import TrecColumns, assemble

_U64 = npt.NDArray[np.uint64]
_I64 = npt.NDArray[np.int64]
_I32 = npt.NDArray[np.int32]
_F64 = npt.NDArray[np.float64]
_U8 = npt.NDArray[np.uint8]


#: Bytes read at a time; the per-chunk temporaries are a few times this.
CHUNK_BYTES = 16 << 20


_FIELDS = 6


_POW10 = 10.0 ** np.arange(23)


_MAX_DIGITS = 15  # a mantissa below 2**53: exact in a double


#: A longer line is no TREC run line (a guard against ``/dev/zero``): the line reader decides.
MAX_LINE_BYTES = 1 << 20


_BOM = BOM.encode("utf-8")


_PAD = 64  # spaces after a chunk, so a column read past a short token stays in bounds


class _NotALineFile(Exception):
    """The file holds a line longer than :data:`MAX_LINE_BYTES`."""


def read_trec_columns(
    path: str | os.PathLike[str], limit: int = MAX_RUN_BYTES
) -> TrecColumns | None:
    """Return the TREC run at ``path`` as columns, or None if the line reader must read it.

    Raise InputError if the file holds more than ``limit`` bytes; OSError passes through.
    """
    codes: dict[str, int] = {}
    parts: list[tuple[_I32, _U64, _F64]] = []
    with open_input(path) as handle:
        try:
            for n, chunk in enumerate(_chunks(handle, path, limit)):
                if not n:  # a leading byte order mark is dropped, as every reader drops it
                    chunk = chunk.removeprefix(_BOM)
                part = _read_chunk(chunk, codes)
                if part is None:
                    return None
                parts.append(part)
        except _NotALineFile:
            return None
    return assemble(parts, codes)


def _chunks(handle: io.BufferedIOBase, path: str | os.PathLike[str], limit: int) -> Iterator[bytes]:
    """Yield the file's bytes as chunks of whole lines (each ending with a line feed).

    Chunks are parsed as they come, so only one chunk's bytes are held at a time.
    """
    carry = b""
    total = 0
    while True:
        block = handle.read(CHUNK_BYTES)
        total += len(block)
        if total > limit:
            raise InputError(str(path), f"a file of at most {limit} bytes (this one holds more)")
        if not block:
            if carry.strip():
                yield carry + b"\n"
            return
        data = carry + block
        cut = data.rfind(b"\n") + 1
        if cut:
            yield data[:cut]
        carry = data[cut:]
        if len(carry) > MAX_LINE_BYTES:
            raise _NotALineFile


def _read_chunk(chunk: bytes, codes: dict[str, int]) -> tuple[_I32, _U64, _F64] | None:
    """Return (query code, doc words, score) of each line of ``chunk``, or None to fall back."""
    if not chunk.isascii():
        try:
            chunk.decode("utf-8")
        except UnicodeDecodeError:
            return None
    a = np.frombuffer(chunk, dtype=np.uint8)
    control = np.flatnonzero(a < 32)
    kinds = a[control]
    if bool(((kinds < 9) | (kinds > 13)).any()):
        return None
    newlines = control[kinds == 10]
    space = a <= 32
    edges = np.flatnonzero(space[1:] != space[:-1]) + 1
    if not space[0]:
        edges = np.concatenate(([0], edges))
    starts, ends = edges[0::2], edges[1::2]
    if not len(starts):
        return np.zeros(0, np.int32), np.zeros((0, 1), dtype=np.uint64), np.zeros(0, np.float64)
    # The usual file: six fields on every line. Then line k's first token is token 6k, and
    # it is so exactly when each line feed falls between tokens 6k-1 and 6k.
    first: _I64 | None = None
    if len(starts) == _FIELDS * len(newlines) and bool(
        (starts[_FIELDS::_FIELDS] > newlines[:-1]).all()
        and (starts[_FIELDS - 1 :: _FIELDS] < newlines).all()
        and (a[starts[::_FIELDS]] != ord("#")).all()  # a comment may hold six fields too
    ):
        first = None  # every line regular: fields are strided slices
    else:
        first = _line_firsts(a, starts, newlines)
        if first is None:
            return None
        if not len(first):
            return np.zeros(0, np.int32), np.zeros((0, 1), dtype=np.uint64), np.zeros(0, np.float64)
    padded = np.frombuffer(chunk + b" " * _PAD, dtype=np.uint8)

    def field(k: int) -> tuple[_I64, _I64]:
        if first is None:
            start, end = starts[k::_FIELDS], ends[k::_FIELDS]
        else:
            start, end = starts[first + k], ends[first + k]
        return start, end - start

    score = _parse_scores(chunk, padded, *field(4))
    if score is None:
        return None
    query = _query_codes(chunk, padded, *field(0), codes)
    doc_words = _pack(padded, *field(2))
    return query, doc_words, score


def _line_firsts(a: _U8, starts: _I64, newlines: _I64) -> _I64 | None:
    """Return the first token of each line that is not blank or a comment; None if a line
    has fewer than six fields."""
    # Tokens before each line feed: a line's tokens are those between two line feeds.
    before = np.searchsorted(starts, newlines)
    first = np.concatenate(([0], before[:-1]))
    count = before - first
    keep = count > 0
    first, count = first[keep], count[keep]
    keep = a[starts[first]] != ord("#")
    first, count = first[keep], count[keep]
    if bool((count < _FIELDS).any()):
        return None
    return np.asarray(first, dtype=np.int64)


def _pack(a: _U8, starts: _I64, lengths: _I64) -> _U64:
    """Return each token's bytes as big-endian uint64 words, zero padded."""
    width = max(int(lengths.max()) if len(lengths) else 1, 1)
    words = np.zeros((len(starts), -(-width // 8)), dtype=np.uint64)
    uniform = bool((lengths == width).all())
    position = starts.copy()
    for j in range(width):
        byte = _column(a, position, j, width).astype(np.uint64)
        if not uniform:
            byte[lengths <= j] = 0
        words[:, j // 8] |= byte << np.uint64(8 * (7 - j % 8))
        position += 1
    return words


def _column(a: _U8, position: _I64, j: int, width: int) -> _U8:
    """Return the bytes at ``position`` (column ``j`` of tokens at most ``width`` long)."""
    if width <= _PAD:  # the chunk ends with a line feed and _PAD spaces: always in bounds
        return a[position]
    return a[np.minimum(position, len(a) - 1)]


def _query_codes(chunk: bytes, a: _U8, starts: _I64, lengths: _I64, codes: dict[str, int]) -> _I32:
    """Return each line's query code, adding new query ids to ``codes`` in file order."""
    words = _pack(a, starts, lengths)
    change = np.concatenate(([True], (words[1:] != words[:-1]).any(axis=1)))
    heads = np.flatnonzero(change)
    head_codes = np.empty(len(heads), dtype=np.int32)
    spans = zip(starts[heads].tolist(), lengths[heads].tolist(), strict=True)
    for i, (start, length) in enumerate(spans):
        qid = chunk[start : start + length].decode("utf-8")
        head_codes[i] = codes.setdefault(qid, len(codes))
    return np.repeat(head_codes, np.diff(np.append(heads, len(starts))))


def _parse_scores(chunk: bytes, a: _U8, starts: _I64, lengths: _I64) -> _F64 | None:
    """Return each score token as a double, or None if one is not a finite number."""
    n = len(starts)
    mantissa = np.zeros(n, dtype=np.int64)
    digits = np.zeros(n, dtype=np.int64)
    decimals = np.zeros(n, dtype=np.int64)
    dot = np.zeros(n, dtype=bool)
    ok = np.ones(n, dtype=bool)
    negative = a[starts] == ord("-")
    signed = negative | (a[starts] == ord("+"))
    width = int(lengths.max())
    uniform = bool((lengths == width).all())
    position = starts.copy()
    ten = np.int64(10)
    for j in range(width):
        digit = _column(a, position, j, width) - np.uint8(48)  # wraps: a non-digit is >= 10
        is_digit = digit < 10
        is_dot = digit == np.uint8(254)  # "." (46) - 48, wrapped
        if not uniform:
            inside = lengths > j
            is_digit &= inside
            is_dot &= inside
        is_dot &= ~dot
        if j == 0:
            ok &= is_digit | is_dot | signed
        elif uniform:
            ok &= is_digit | is_dot
        else:
            ok &= ~inside | is_digit | is_dot
        mantissa = np.where(is_digit, mantissa * ten + digit, mantissa)
        digits += is_digit
        decimals += is_digit & dot
        dot |= is_dot
        position += 1
    ok &= (digits >= 1) & (digits <= _MAX_DIGITS)
    value = mantissa / _POW10[np.minimum(decimals, len(_POW10) - 1)]
    value = np.where(negative, -value, value)
    for i in np.flatnonzero(~ok).tolist():
        start = int(starts[i])
        number = c_double(chunk[start : start + int(lengths[i])].decode("utf-8"))
        if number is None:
            return None
        value[i] = number
    if not np.isfinite(value).all():
        return None
    return value
