"""Choose an eval set format by name or suffix, and load or save it.

=========  =====================  =============================================
format     suffixes               shape
=========  =====================  =============================================
``jsonl``  .jsonl, .ndjson        one query object per line
``json``   .json                  a list of query objects, or name + queries
``csv``    .csv                   columns id, query, relevant, then metadata
``yaml``   .yaml, .yml            as JSON
``trec``   .qrels, .trec          ``qid iter docno rel``, plus a queries TSV
=========  =====================  =============================================

A compression suffix after the format's (``set.jsonl.gz``, ``judgments.qrels.bz2``; see
:mod:`monitor.io`) is decompressed as the file is read.

Every reader raises :class:`~monitor.errors.InputError` naming the file and the line for
an empty file, bytes that are not UTF-8, a line of the wrong shape, a non-integer grade or
a repeated query id; errors from json, yaml and csv are wrapped, never passed through.
Every writer replaces the file atomically.

The readers return :class:`Contents`, the set's name and its queries, and the writers take
it: this module knows no :class:`~monitor.evalset.model.EvalSet`, which builds itself from
what is read here (:meth:`EvalSet.load`, :meth:`EvalSet.parse`) and saves itself through it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from operator import attrgetter
from os import PathLike

from monitor.errors import InputError, UsageError
from monitor.evalset import _documents, _jsonl_columns, _table, trec
from monitor.evalset._checks import Invalid, check_id
from monitor.evalset._documents import Entry
from monitor.evalset._files import read_text
from monitor.evalset._jsonl_columns import Columns
from monitor.evalset.columns import EvalColumns
from monitor.io import logical_stem, logical_suffix
from monitor.io import write_input_atomic as write_atomic
from monitor.records import Query

_ID = attrgetter("id")

#: The format names :meth:`EvalSet.load` and :meth:`EvalSet.save` take.
FORMATS = ("jsonl", "json", "csv", "yaml", "trec")
#: The suffixes that choose a format when none is given.
SUFFIXES = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".csv": "csv",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".qrels": "trec",
    ".trec": "trec",
}


@dataclass(frozen=True, slots=True)
class Contents:
    """What an eval set file holds: the set's name and its queries, in file order.

    Every reader here checks each query as it reads it and refuses a repeated id, so an
    :class:`~monitor.evalset.model.EvalSet` takes these queries without checking them again.
    """

    name: str
    #: The queries as columns: read whole into them, or gathered from the records a reader
    #: read one at a time.
    queries: EvalColumns


def format_of(path: str | PathLike[str], format: str | None = None) -> str:
    """Return ``format`` checked, or the format that the suffix of ``path`` names."""
    if format is not None:
        if format not in FORMATS:
            raise UsageError(
                f"unknown eval set format {format!r}; known formats: {', '.join(FORMATS)}"
            )
        return format
    suffix = logical_suffix(path)
    if suffix not in SUFFIXES:
        known = ", ".join(f"{s} ({f})" for s, f in SUFFIXES.items())
        raise UsageError(
            f"cannot tell the eval set format of {str(path)!r} from its suffix; "
            f"pass format= ({', '.join(FORMATS)}) or use one of: {known}"
        )
    return SUFFIXES[suffix]


def load_evalset(
    path: str | PathLike[str],
    format: str | None = None,
    *,
    queries: str | PathLike[str] | None = None,
    name: str | None = None,
) -> Contents:
    """Read the eval set at ``path`` (see :meth:`EvalSet.load`)."""
    chosen = format_of(path, format)
    default_name = logical_stem(path) if name is None else name
    if chosen == "trec":
        return Contents(default_name, EvalColumns.of(trec.load_trec(path, queries)))
    if queries is not None:
        raise UsageError("queries= names the queries file of TREC qrels only")
    return parse_evalset(read_text(path), chosen, str(path), name=name, default_name=default_name)


def read_qrels(path: str | PathLike[str], *, grades: str = "exact") -> dict[str, dict[str, int]]:
    """Return query id -> doc id -> grade from judgments in any format, chosen by suffix.

    A ``.json`` file holds an eval set or the dict form of ranx and pytrec_eval, ``{qid:
    {doc: grade}}`` (every value an object); a suffix no eval-set format claims is read as
    TREC qrels. ``grades`` is how TREC and dict-form grades written as decimals are read
    (:data:`monitor.evalset.trec.GRADE_MODES`).
    """
    trec.check_grade_mode(grades)
    suffix = logical_suffix(path)
    if suffix not in SUFFIXES or SUFFIXES[suffix] == "trec":
        return trec.read_trec_qrels(path, grades=grades)
    if SUFFIXES[suffix] == "json":
        text = read_text(path)
        try:
            # A literal too long for a grade is kept as its length (int() of more than
            # 4,300 digits raises ValueError), for _dict_grade to name.
            document = json.loads(text, parse_int=_documents._json_int)
        except (json.JSONDecodeError, RecursionError):
            document = None  # the eval-set reader names the fault and its line
        if _is_dict_qrels(document):
            return _dict_qrels(document, str(path), truncate=grades == "truncate")
        contents = parse_evalset(text, "json", str(path), default_name=logical_stem(path))
    else:
        contents = load_evalset(path)
    return {query.id: dict(query.judgments) for query in contents.queries}


def _is_dict_qrels(document: object) -> bool:
    """Tell whether a JSON document is ``{qid: {doc: grade}}`` rather than an eval set."""
    return (
        isinstance(document, dict)
        and bool(document)
        and all(isinstance(value, dict) for value in document.values())
    )


def _dict_qrels(document: object, source: str, *, truncate: bool) -> dict[str, dict[str, int]]:
    """Return the checked judgments of a ``{qid: {doc: grade}}`` document."""
    qrels: dict[str, dict[str, int]] = {}
    for query_id, judgments in dict(document).items():  # type: ignore[call-overload]
        if not query_id.strip():
            raise InputError(source, "a non-blank query id", found=query_id)
        _dict_id(query_id, "query id", source)
        checked: dict[str, int] = {}
        for doc, grade in judgments.items():
            if not doc.strip():
                raise InputError(source, f"a non-blank doc id in query {query_id!r}", found=doc)
            _dict_id(doc, f"doc id in query {query_id!r}", source)
            checked[doc] = _dict_grade(grade, source, query_id, doc, truncate=truncate)
        qrels[query_id] = checked
    return qrels


def _dict_id(value: str, what: str, source: str) -> None:
    """Refuse an id of a dict-form qrels that no eval set holds (a NUL, a lone surrogate)."""
    try:
        check_id(value, what)
    except Invalid as error:
        shown = value.encode("utf-8", "backslashreplace").decode("utf-8")
        raise InputError(source, error.expected, found=shown) from None


def _dict_grade(grade: object, source: str, query_id: str, doc: str, *, truncate: bool) -> int:
    """Return one dict-form grade as an integer, as TREC qrels read the same number."""
    where = f"for query {query_id!r}, document {doc!r}"
    if isinstance(grade, _documents.LongInteger):
        raise InputError(source, f"an integer grade of at most 19 digits {where}", found=grade)
    if isinstance(grade, bool) or not isinstance(grade, int | float):
        raise InputError(source, f"a numeric grade {where}", found=grade)
    if isinstance(grade, float):
        if not math.isfinite(grade):
            raise InputError(source, f"a finite grade {where}", found=grade)
        if not truncate and not grade.is_integer():
            raise InputError(
                source,
                f"an integer grade {where} (a fractional one is read with --grades truncate)",
                found=grade,
            )
        grade = math.trunc(grade)
    try:
        return trec.grade_from_number(grade, str(grade))
    except Invalid as error:
        raise InputError(source, f"{error.expected} {where}", found=error.found) from None


def parse_evalset(
    text: str, format: str, source: str, *, name: str | None = None, default_name: str = ""
) -> Contents:
    """Return the eval set in ``text`` (any format but ``trec``); ``source`` names it in errors.

    The set is called ``name`` if given, else by the name the file holds, else
    ``default_name``.
    """
    if not text.strip():
        raise InputError(source, "at least one query (the file is empty)", line=1)
    held: str | None = None
    entries: Iterable[Entry] | Columns
    if format == "jsonl":
        entries = _jsonl_columns.read_jsonl(text, source)
    elif format == "json":
        held, entries = _documents.read_json(text, source)
    elif format == "yaml":
        held, entries = _documents.read_yaml(text, source)
    elif format == "csv":
        entries = _table.read_csv(text, source)
    else:
        raise UsageError(f"cannot parse format {format!r} from text")
    chosen = name if name is not None else held if held is not None else default_name
    return _assemble(entries, source, chosen)


def save_evalset(
    evalset: Contents,
    path: str | PathLike[str],
    format: str | None = None,
    *,
    queries: str | PathLike[str] | None = None,
) -> None:
    """Write ``evalset`` to ``path`` (see :meth:`EvalSet.save`)."""
    chosen = format_of(path, format)
    if queries is not None and chosen != "trec":
        raise UsageError("queries= names the queries file of TREC qrels only")
    items = evalset.queries
    if not items:
        raise UsageError(f"eval set {evalset.name!r} has no query to save")
    if chosen == "trec":
        qrels_text = trec.format_qrels(items)
        queries_text = None if queries is None else trec.format_queries(items)
        write_atomic(path, qrels_text)
        if queries is not None and queries_text is not None:
            write_atomic(queries, queries_text)
        return
    write_atomic(path, format_evalset(evalset, chosen))


def format_evalset(evalset: Contents, format: str) -> str:
    """Return the text of ``evalset`` in ``format`` (any but ``trec``, which needs two files)."""
    items = evalset.queries
    if format == "jsonl":
        return _documents.write_jsonl(items)
    if format == "json":
        return _documents.write_json(evalset.name, items)
    if format == "yaml":
        return _documents.write_yaml(evalset.name, items)
    if format == "csv":
        return _table.write_csv(items)
    raise UsageError(f"cannot format {format!r} as a single text")


def _assemble(entries: Iterable[Entry] | Columns, source: str, name: str) -> Contents:
    """Return the eval set of ``entries``; raise InputError on a repeated id or none at all.

    Columns read whole are checked at once: only a set holding a repeated id is walked, to
    name the first repeat as the entries are.
    """
    if isinstance(entries, Columns):
        queries = entries.queries
        if len(set(queries.ids)) == len(queries) and queries:
            return Contents(name, queries)
        entries = map(Entry, entries.lines, queries)
    listed: list[Query] = []
    first: dict[str, int | None] = {}
    for entry in entries:
        query_id = entry.query.id
        if query_id in first:
            seen = first[query_id]
            where = "" if seen is None else f" (first on line {seen})"
            raise InputError(source, f"a unique query id{where}", line=entry.line, found=query_id)
        first[query_id] = entry.line
        listed.append(entry.query)
    if not first:
        raise InputError(source, "at least one query", line=1)
    return Contents(name, EvalColumns.of(listed))
