"""How trec_eval reads a line of a TREC file: where its fields end and what its numbers are.

Every reader of qrels and run text (the line readers, the numpy and pyarrow column readers,
the replay of saved runs) reads through this module, so they agree with trec_eval and with
each other:

- **Fields** are separated by runs of the bytes C's ``isspace`` takes in the C locale, as
  trec_eval's own tokeniser: ASCII space and tab, and CR, VT and FF (so a CR LF line end is
  a separator before the line feed). Lines end at LF. Nothing else separates fields: a
  Unicode space (U+00A0, U+2028, U+0085, U+3000), the separators U+001C to U+001F and
  every other control character are part of the id that holds them, as in trec_eval.
  A NUL byte is refused: trec_eval stops reading the file there, silently. A byte order
  mark at the start of a file is dropped (trec_eval would read it into the first id).
- **Scores** are read as C's ``atof`` (``strtod``) reads them: the longest prefix that is a
  decimal (or hexadecimal) floating-point literal, so ``1_0`` is 1 and ``12abc`` is 12.
  Only ASCII digits are digits (U+0661, an Arabic-Indic one, is no number). A field with
  no numeric prefix at all is refused (``atof`` would read 0), as is a score that is not
  finite.
- **Grades** read with ``--grades truncate`` are read as C's ``atol`` reads them: the longest
  prefix that is an optionally signed run of ASCII digits (``1.7`` is 1, ``1e1`` is 1).

Python's own ``str.split()``, ``float()`` and ``int()`` differ on each point (Unicode
whitespace, underscores, non-ASCII digits, ``1e1`` as a grade), which is why no reader
calls them on a TREC field.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

#: A byte order mark, dropped from the start of a file (where trec_eval would read it as
#: part of the first query id): every reader drops it, as pyarrow's does and as an eval set
#: file's is dropped.
BOM = "\ufeff"

#: The bytes that separate fields on a line (C's ``isspace`` without the line feed).
SEPARATORS = " \t\r\v\f"

#: Every character ``str.split()`` splits at that C's ``isspace`` does not: text holding
#: none of them is split by ``str.split()`` exactly as trec_eval splits it.
UNICODE_SPACES = (
    "\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)

_ASCII_SPACES = UNICODE_SPACES[:4]  # U+001C to U+001F, the ASCII ones among them
_UNICODE_SPACE = re.compile(f"[{UNICODE_SPACES}]")
_SEPARATOR_RUN = re.compile(f"[{SEPARATORS}]+")

# strtod's grammar, in the order a regex must try it (hexadecimal before decimal, since
# "0x1" starts with the decimal "0"; "infinity" before "inf"). An exponent counts only with
# a digit after it, as in C ("1e" is 1). ASCII only: re's \d would take any Unicode digit.
_DOUBLE_PREFIX = re.compile(
    r"[+-]?(?:"
    r"(?P<hex>0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?)"
    r"|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    r"|(?i:infinity|inf|nan)"
    r")"
)
_PLAIN_DOUBLE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_LONG_PREFIX = re.compile(r"[+-]?[0-9]+")
#: Digits of the longest C ``long`` (2**63 - 1 has 19).
LONG_DIGITS = 19


def splitter(text: str) -> Callable[[str], list[str]]:
    """Return the function that splits each line of ``text`` into its fields.

    ``str.split`` is exact (and fast) on text without the characters it alone takes for
    whitespace; other text is split at :data:`SEPARATORS` only.
    """
    if text.isascii():
        plain = not any(c in text for c in _ASCII_SPACES)
    else:
        plain = _UNICODE_SPACE.search(text) is None
    return str.split if plain else split_fields


def split_fields(line: str) -> list[str]:
    """Return the fields of ``line`` as trec_eval splits them (at :data:`SEPARATORS`)."""
    stripped = line.strip(SEPARATORS + "\n")
    return _SEPARATOR_RUN.split(stripped) if stripped else []


def nul_line(text: str) -> int | None:
    """Return the 1-based line of the first NUL in ``text``, or None if it holds none."""
    at = text.find("\0")
    return None if at < 0 else text.count("\n", 0, at) + 1


def c_double(text: str) -> float | None:
    """Return the number C's ``atof`` reads from ``text`` (its longest numeric prefix), or
    None when ``text`` starts with no number (where ``atof`` would give 0)."""
    if _PLAIN_DOUBLE.fullmatch(text):  # the usual score: all of it, decimal
        return float(text)
    match = _DOUBLE_PREFIX.match(text)
    if match is None:
        return None
    if match.group("hex") is not None:
        try:
            return float.fromhex(match.group(0))
        except OverflowError:  # strtod gives HUGE_VAL (infinity), as float() does for 1e999
            return -math.inf if match.group(0).startswith("-") else math.inf
    return float(match.group(0))


def plain_double(text: str) -> float | None:
    """Return ``text`` as a double when all of it is a decimal literal (``2``, ``1.0``,
    ``3e0``), else None."""
    return float(text) if _PLAIN_DOUBLE.fullmatch(text) else None


def c_long(text: str) -> int | None:
    """Return the integer C's ``atol`` reads from ``text`` (its longest prefix of an optional
    sign and ASCII digits), or None when ``text`` starts with no digit.

    A prefix of more than :data:`LONG_DIGITS` significant digits, beyond any C ``long``, is
    returned as plus or minus ``2**64`` (Python converts at most 4,300 digits).
    """
    match = _LONG_PREFIX.match(text)
    if match is None:
        return None
    literal = match.group(0)
    if len(literal.lstrip("+-0")) > LONG_DIGITS:
        return -(2**64) if literal.startswith("-") else 2**64
    return int(literal)
