"""TREC qrels (``qid iter docno rel``) and the ``qid<TAB>text`` queries file.

A qrels line has exactly four fields, split as trec_eval splits them (ASCII space, tab, CR,
VT and FF: see :mod:`monitor.evalset.trec_fields`; a Unicode space is part of an id);
``iter`` is ignored and ``rel`` is an integer grade (1 or more is relevant, 0 and below judged
not relevant). Blank lines and comment lines (first non-blank character ``#``) are skipped,
as trec_eval 10 does. A query and document pair judged twice is an error, as is a NUL byte
or a file without a judgment.

Grades (see :data:`GRADE_MODES`): ``exact`` (the default) reads an integral decimal such as
``1.0`` or ``2e0`` as that integer and refuses, naming the line, a fractional one (``0.5``)
and one that trec_eval's ``atol`` reads as another integer (``1e1``, which ``atol`` reads as
1); ``truncate`` reads every grade as ``atol`` does, its longest integer prefix (``1.7`` is
1, ``1e1`` is 1, ``2.5e1`` is 2, ``-0.5`` is 0).

:func:`read_trec_qrels` is a plain loop over the lines: on a file of a million lines it is
as fast as ``pandas.read_csv`` followed by the grouping into dicts, and it keeps the exact
line of every error.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from os import PathLike

from monitor.errors import InputError, UsageError
from monitor.evalset._checks import Invalid, check_grade, grade_from_text
from monitor.evalset._files import read_text
from monitor.evalset.trec_fields import (
    SEPARATORS,
    c_double,
    c_long,
    nul_line,
    plain_double,
    split_fields,
    splitter,
)
from monitor.records import Query

_QRELS_SHAPE = "4 whitespace-separated fields: qid iter docno rel"
#: How a grade that is not written as an integer is read: ``exact`` refuses a fractional one,
#: ``truncate`` reads its integer prefix, as trec_eval's ``atol`` does.
GRADE_MODES = ("exact", "truncate")


def read_trec_qrels(
    path: str | PathLike[str], *, grades: str = "exact"
) -> dict[str, dict[str, int]]:
    """Return query id -> doc id -> grade from a TREC qrels file, in file order.

    Raise :class:`~monitor.errors.InputError` naming the file and line on a malformed line,
    a non-integer grade (a fractional one unless ``grades="truncate"``), a repeated (qid,
    docno) pair, undecodable bytes or a file without a judgment.
    """
    return parse_qrels(read_text(path), str(path), grades=grades)


def parse_qrels(text: str, source: str, *, grades: str = "exact") -> dict[str, dict[str, int]]:
    """Return query id -> doc id -> grade from the text of a qrels file."""
    check_grade_mode(grades)
    truncate = grades == "truncate"
    nul = nul_line(text)
    if nul is not None:
        raise InputError(source, "text without NUL bytes", line=nul)
    split = splitter(text)
    qrels: dict[str, dict[str, int]] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        fields = split(line)
        if len(fields) != 4:
            if not fields or fields[0].startswith("#"):
                continue
            raise InputError(source, _QRELS_SHAPE, line=number, found=line.strip())
        query_id, _, doc, rel = fields
        if query_id.startswith("#"):
            continue
        try:
            # The common case first: a million lines must load in well under two seconds.
            grade = int(rel) if rel.isascii() and rel.isdigit() and len(rel) < 19 else None
            if grade is None:
                grade = grade_from_literal(rel, truncate=truncate)
        except Invalid as error:
            raise InputError(
                source, f"{error.expected} in field 4 (rel)", line=number, found=error.found
            ) from None
        judgments = qrels.get(query_id)
        if judgments is None:
            judgments = qrels[query_id] = {}
        elif doc in judgments:
            first = _first_line(text, query_id, doc)
            raise InputError(
                source,
                f"one judgment per query and document (first on line {first})",
                line=number,
                found=f"{query_id} {doc}",
            )
        judgments[doc] = grade
    if not qrels:
        raise InputError(source, f"at least one qrels line ({_QRELS_SHAPE})", line=1)
    return qrels


def check_grade_mode(grades: str) -> None:
    """Raise UsageError unless ``grades`` is one of :data:`GRADE_MODES`."""
    if grades not in GRADE_MODES:
        raise UsageError(f"unknown grades mode {grades!r}; known modes: {', '.join(GRADE_MODES)}")


def grade_from_literal(text: str, *, truncate: bool = False) -> int:
    """Return the grade written in ``text``; raise :class:`Invalid` if there is none.

    By default ``text`` must be an integer, or a decimal that is integral and that
    trec_eval's ``atol`` reads as the same integer (``1.0``, ``3e0``; not ``1e1``). With
    ``truncate`` it is read as ``atol`` reads it: its longest integer prefix (``1.7`` and
    ``1e1`` are 1; ``.5`` is 0); a field that starts with no number is still refused.
    """
    try:
        return grade_from_text(text)
    except Invalid as error:
        if truncate:
            prefix = c_long(text)
            if prefix is not None:
                return grade_from_number(prefix, text)
            value = c_double(text)  # a sign or a point first: atol reads 0
            if value is None or not math.isfinite(value):
                raise error from None
            return 0
        value = plain_double(text)
        if value is None or not math.isfinite(value):
            raise error from None
        if not value.is_integer():
            raise Invalid(
                "an integer grade (a fractional one is read with --grades truncate)", text
            ) from None
        grade = math.trunc(value)
        if grade != c_long(text):
            raise Invalid(
                f"an integer grade written as trec_eval reads it (its atol reads "
                f"{c_long(text)} here; write {grade}, or read atol's way with --grades "
                "truncate)",
                text,
            ) from None
        return grade_from_number(grade, text)


def grade_from_number(value: int, text: str) -> int:
    """Return ``value`` if it is in the grade range; raise :class:`Invalid` naming ``text``."""
    try:
        return check_grade(value)
    except Invalid as error:
        raise Invalid(error.expected, text) from None


def parse_queries(text: str, source: str) -> dict[str, str]:
    """Return query id -> text from the text of a ``qid<TAB>text`` file, in file order.

    The text is everything after the first tab, kept as written; blank lines are skipped.
    """
    texts: dict[str, str] = {}
    lines: dict[str, int] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        query_id, tab, query = line.partition("\t")
        query_id = query_id.strip(SEPARATORS)  # a Unicode space is part of the id, as in qrels
        if not tab or not query_id:
            raise InputError(source, "a line 'qid<TAB>text'", line=number, found=line)
        if query_id in texts:
            raise InputError(
                source,
                f"each query id once (first on line {lines[query_id]})",
                line=number,
                found=query_id,
            )
        texts[query_id] = query
        lines[query_id] = number
    if not texts:
        raise InputError(source, "at least one line 'qid<TAB>text'", line=1)
    return texts


def load_trec(
    qrels_path: str | PathLike[str], queries_path: str | PathLike[str] | None
) -> tuple[Query, ...]:
    """Return the queries of a qrels file and, if given, its queries file.

    With a queries file, queries come in its order (those without judgments are kept) and
    every judged query must be listed there. Without one, texts are ``""``.
    """
    qrels_text = read_text(qrels_path)
    qrels = parse_qrels(qrels_text, str(qrels_path))
    if queries_path is None:
        return tuple(Query(query_id, "", judgments) for query_id, judgments in qrels.items())
    texts = parse_queries(read_text(queries_path), str(queries_path))
    for query_id in qrels:
        if query_id not in texts:
            raise InputError(
                str(qrels_path),
                f"a query id listed in {queries_path}",
                line=_first_line(qrels_text, query_id),
                found=query_id,
            )
    return tuple(Query(query_id, text, qrels.get(query_id, {})) for query_id, text in texts.items())


def format_qrels(queries: Sequence[Query]) -> str:
    """Return the qrels text of ``queries`` (``iter`` is 0); raise UsageError if impossible."""
    lines = []
    for query in queries:
        _check_token(query.id, "query id")
        if query.id.startswith("#") and query.judgments:
            raise UsageError(
                f"query id {query.id!r} starts with '#' and cannot be written to TREC qrels "
                "(a line starting with '#' is a comment there)"
            )
        for doc, grade in query.judgments.items():
            _check_token(doc, "document id")
            lines.append(f"{query.id} 0 {doc} {grade}\n")
    if not lines:
        raise UsageError("cannot write TREC qrels: no query has a judgment")
    return "".join(lines)


def format_queries(queries: Sequence[Query]) -> str:
    """Return the ``qid<TAB>text`` text of ``queries``; raise UsageError if impossible."""
    for query in queries:
        _check_token(query.id, "query id")
        if "\n" in query.text or "\r" in query.text:
            raise UsageError(f"query {query.id!r}: a text with a line break cannot go to a TSV")
    return "".join(f"{query.id}\t{query.text}\n" for query in queries)


def _check_token(value: str, what: str) -> None:
    """Refuse an id that whitespace-separated files cannot hold."""
    if split_fields(value) != [value] or "\n" in value or "\0" in value:
        raise UsageError(f"{what} {value!r} holds whitespace and cannot be written to TREC files")


def _first_line(text: str, query_id: str, doc: str | None = None) -> int | None:
    """Return the first line that judges ``query_id`` (and ``doc``, if given)."""
    split = splitter(text)
    for number, line in enumerate(text.split("\n"), start=1):
        fields = split(line)
        if len(fields) == 4 and fields[0] == query_id and doc in (None, fields[2]):
            return number
    return None
