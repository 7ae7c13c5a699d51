"""Check the parts of a query, for the API and for every file format alike.

A failed check raises :class:`Invalid` with what was expected, what was found and where in
the query (a key path such as ``("relevant", "d1")``). The caller turns it into the error
that fits: :class:`~monitor.errors.UsageError` for values passed in code,
:class:`~monitor.errors.InputError` with file and line for values read from a file.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Iterable, Mapping

from monitor.records import MetaValue

_INTEGER = re.compile(r"[+-]?[0-9]+")
#: Grades are 64-bit signed integers, as trec_eval reads them (a C long); a longer literal is
#: refused before it is converted (Python refuses to convert more than 4,300 digits).
GRADE_MIN = -(2**63)
GRADE_MAX = 2**63 - 1
_GRADE_RANGE = f"an integer grade from {GRADE_MIN} to {GRADE_MAX}"

#: A position inside one query: keys of mappings and indexes of lists, outermost first.
KeyPath = tuple[str | int, ...]


class Invalid(Exception):
    """One part of a query does not pass its check."""

    def __init__(
        self, expected: str, found: object = None, path: KeyPath = (), *, labelled: bool = True
    ) -> None:
        super().__init__(expected)
        self.expected = expected
        self.found = found
        self.path = path
        # False when the path only locates the line (an unknown key is already the found value).
        self.labelled = labelled

    def under(self, *prefix: str | int) -> Invalid:
        """Return the same problem with ``prefix`` put in front of its key path."""
        return Invalid(self.expected, self.found, (*prefix, *self.path), labelled=self.labelled)

    def describe(self, *prefix: str | int) -> str:
        """Return what was expected, then where (``at relevant['d1']``) when known."""
        where = path_label((*prefix, *self.path) if self.labelled else prefix)
        return f"{self.expected} at {where}" if where else self.expected


def path_label(path: KeyPath) -> str:
    """Return ``path`` written as ``queries[3].relevant['d1']`` for error messages.

    A string part is a field name (``.relevant``) at the top and after a list index, and a
    data key (``['d1']``) after another string.
    """
    text = ""
    previous: str | int | None = None
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif previous is None or isinstance(previous, int):
            text += f".{part}" if text else part
        else:
            text += f"[{part!r}]"
        previous = part
    return text


def check_id(value: object, what: str = "query id") -> str:
    """Return ``value`` as an id: a non-empty string of valid Unicode without a NUL."""
    if not isinstance(value, str):
        raise Invalid(f"a {what} that is a string", value)
    if not value:
        raise Invalid(f"a non-empty {what}", value)
    if "\0" in value:
        # No store keeps a NUL in text (PostgreSQL refuses it), and no run file can write it.
        raise Invalid(f"a {what} without a NUL character", value)
    _check_unicode(value, what)
    return str(value)


def check_text(value: object) -> str:
    """Return ``value`` as a query text: a string of valid Unicode (it may be empty)."""
    if not isinstance(value, str):
        raise Invalid("a query text that is a string", value)
    _check_unicode(value, "query text")
    return str(value)


def check_grade(value: object) -> int:
    """Return ``value`` as a grade: an integer, and not a boolean."""
    # bool is an int subclass; numbers.Integral also admits numpy integers from DataFrames.
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise Invalid("an integer grade", value)
    grade = int(value)
    if not GRADE_MIN <= grade <= GRADE_MAX:
        raise Invalid(_GRADE_RANGE, _digits(grade))
    return grade


def grade_from_text(text: str) -> int:
    """Return the grade written in ``text`` (ASCII digits, optional sign)."""
    # int() alone would also take "1_000", " 7 " and non-ASCII digits.
    if not _INTEGER.fullmatch(text):
        raise Invalid("an integer grade", text)
    if len(text.lstrip("+-0")) > len(str(GRADE_MAX)):
        raise Invalid(_GRADE_RANGE, f"{len(text)} digits")
    return check_grade(int(text))


def _digits(grade: int) -> object:
    """Return ``grade`` for an error message, or a word on its size when it is long."""
    # str() of an int of more than 4,300 digits raises ValueError.
    return grade if abs(grade) < 10**30 else "an integer of more than 30 digits"


def judgments_from(value: object) -> dict[str, int]:
    """Return doc id -> grade from a list of ids (grade 1 each) or a mapping id -> grade."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        judgments: dict[str, int] = {}
        for doc, grade in value.items():
            try:
                doc_id = check_id(doc, "document id")
            except Invalid as error:
                raise error.under(_key(doc)) from None
            try:
                judgments[doc_id] = check_grade(grade)
            except Invalid as error:
                raise error.under(doc_id) from None
        return judgments
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise Invalid("a list of document ids or a mapping of document id to grade", value)
    listed: dict[str, int] = {}
    for index, doc in enumerate(value):
        try:
            doc_id = check_id(doc, "document id")
        except Invalid as error:
            raise error.under(index) from None
        if doc_id in listed:
            raise Invalid("document ids listed once", doc_id, (index,))
        listed[doc_id] = 1
    return listed


def metadata_from(value: object) -> dict[str, MetaValue]:
    """Return ``value`` as metadata: string keys, scalar values, finite numbers."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise Invalid("a mapping of metadata", value)
    metadata: dict[str, MetaValue] = {}
    for key, item in value.items():
        if not isinstance(key, str) or not key:
            raise Invalid("a metadata key that is a non-empty string", key)
        if item is not None and not isinstance(item, str | int | float):
            expected = "a metadata value that is a string, number, boolean or null"
            raise Invalid(expected, item, (key,))
        if isinstance(item, float) and not math.isfinite(item):
            raise Invalid("a finite number", item, (key,))
        if isinstance(item, str):
            _check_unicode(item, "metadata value")
        metadata[key] = item
    return metadata


def _check_unicode(value: str, what: str) -> None:
    """Refuse lone surrogates, which no UTF-8 file can hold."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise Invalid(f"a {what} of valid Unicode (no lone surrogates)", value) from None


def _key(value: object) -> str | int:
    """Return ``value`` usable as a key path part."""
    return value if isinstance(value, str | int) else repr(value)
