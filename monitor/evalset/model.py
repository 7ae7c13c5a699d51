"""The eval set: an ordered collection of queries with unique ids, and its fingerprint."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from os import PathLike
from types import MappingProxyType

from monitor.errors import UsageError
from monitor.evalset import formats
from monitor.evalset._checks import (
    GRADE_MAX,
    GRADE_MIN,
    Invalid,
    check_id,
    check_text,
    judgments_from,
    metadata_from,
)
from monitor.evalset.columns import EvalColumns
from monitor.records import MetaValue, Query

#: How many queries' canonical rows the fingerprint writes and hashes at once.
_FINGERPRINT_BLOCK = 4096

#: What :meth:`EvalSet.add` takes as ``relevant``: doc ids (grade 1 each) or id -> grade.
Relevant = Iterable[str] | Mapping[str, int]


class EvalSet:
    """An ordered collection of :class:`~monitor.records.Query` records with unique ids.

    Build one in code with :meth:`add`, or read one with :meth:`load` (JSONL, JSON, CSV,
    YAML or TREC qrels). Index it by position (``es[0]``) or by id (``es["q1"]``).

    Every query is checked when it is added: ids are non-empty strings, grades are integers
    (1 or more is relevant; 0 and below are judged not relevant), metadata values are
    scalars. A bad value raises :class:`~monitor.errors.UsageError`; the loaders raise
    :class:`~monitor.errors.InputError` with the file and line instead.

    The queries are held as columns (:class:`~monitor.evalset.columns.EvalColumns`), however
    the set was made: the queries added since the last read wait as records and join the
    columns when the set is next read. A record is built only when a query is read.
    """

    __slots__ = ("_added", "_added_ids", "_columns", "_fingerprint", "_qrels", "name")

    def __init__(self, name: str = "", queries: Iterable[Query] = ()) -> None:
        self.name = name
        self._columns = EvalColumns.of(())
        self._added: list[Query] = []
        self._added_ids: set[str] = set()
        self._fingerprint: str | None = None
        self._qrels: Mapping[str, Mapping[str, int]] | None = None
        for query in queries:
            self.add(query)

    def add(
        self,
        query: Query | str,
        text: str | None = None,
        *,
        relevant: Relevant | None = None,
        metadata: Mapping[str, MetaValue] | None = None,
    ) -> Query:
        """Append a query and return it; raise UsageError on a duplicate id or a bad value.

        Pass either a ready :class:`~monitor.records.Query`, or its parts:
        ``es.add("q1", "text", relevant=["d1", "d2"])`` (grade 1 each) or
        ``relevant={"d1": 2, "d2": 0}``.
        """
        if isinstance(query, Query):
            if text is not None or relevant is not None or metadata is not None:
                raise UsageError("give either a Query or its id, text, relevant and metadata")
            if not _already_valid(query):
                query = self._checked(query.id, query.text, query.judgments, query.metadata)
        else:
            query = self._checked(query, "" if text is None else text, relevant, metadata)
        if query.id in self._added_ids or self._columns.position(query.id) is not None:
            raise UsageError(f"eval set {self.name!r} already has a query with id {query.id!r}")
        self._added.append(query)
        self._added_ids.add(query.id)
        self._fingerprint = self._qrels = None
        return query

    @staticmethod
    def _checked(query_id: object, text: object, relevant: object, metadata: object) -> Query:
        """Return a Query built from checked parts, or raise UsageError naming the bad part."""
        label = repr(query_id) if isinstance(query_id, str) else "?"
        try:
            checked_id = check_id(query_id)
            checked_text = check_text(text)
            try:
                judgments = judgments_from(relevant)
            except Invalid as error:
                raise error.under("relevant") from None
            try:
                meta = metadata_from(metadata)
            except Invalid as error:
                raise error.under("metadata") from None
        except Invalid as error:
            message = f"query {label}: expected {error.describe()}"
            if error.found is not None:
                message += f", found {error.found!r}"
            raise UsageError(message) from None
        return Query(checked_id, checked_text, judgments, meta)

    @classmethod
    def from_qrels(
        cls,
        qrels: Mapping[str, Mapping[str, int]],
        texts: Mapping[str, str] | None = None,
        *,
        name: str = "",
    ) -> EvalSet:
        """Build an eval set from query id -> doc id -> grade, and optionally id -> text.

        Queries come in ``qrels`` order, then the queries found only in ``texts`` (kept,
        with no judgment). Without ``texts`` every text is ``""``; with it, a judged query
        that has no text raises UsageError.
        """
        evalset = cls(name=name)
        for query_id, judgments in qrels.items():
            if texts is None:
                text = ""
            elif query_id in texts:
                text = texts[query_id]
            else:
                raise UsageError(f"query {query_id!r} has judgments but no text in texts")
            evalset.add(query_id, text, relevant=judgments)
        for query_id, text in (texts or {}).items():
            if query_id not in evalset:
                evalset.add(query_id, text)
        return evalset

    @classmethod
    def load(
        cls,
        path: str | PathLike[str],
        format: str | None = None,
        *,
        queries: str | PathLike[str] | None = None,
        name: str | None = None,
    ) -> EvalSet:
        """Read an eval set from ``path``; raise InputError naming the file and line if bad.

        ``format`` is one of ``jsonl``, ``json``, ``csv``, ``yaml`` or ``trec``; without it
        the suffix decides. For ``trec``, ``queries`` names a ``qid<TAB>text`` file. The
        set's name is ``name``, else the file's own name (JSON, YAML), else the file stem.
        """
        contents = formats.load_evalset(path, format, queries=queries, name=name)
        # A file's queries are checked by its reader (decoded UTF-8 holds no lone surrogate,
        # which only a text given in code can), and its ids are unique: none is checked again.
        return cls._of_read(contents)

    @classmethod
    def of_columns(cls, name: str, columns: EvalColumns) -> EvalSet:
        """Return the eval set of queries held as ``columns`` (checked, unique ids): they
        are taken as they are, a record built only when a query is read."""
        return cls._of_read(formats.Contents(name, columns))

    @classmethod
    def _of_read(cls, contents: formats.Contents) -> EvalSet:
        """Return the eval set of queries a reader checked, without checking them again."""
        columns = contents.queries
        if len(set(columns.ids)) != len(columns):  # never from a reader; add() names the repeat
            return cls(contents.name, contents.queries)
        evalset = cls(contents.name)
        evalset._columns = columns
        return evalset

    @classmethod
    def parse(
        cls, text: str, format: str, source: str = "<text>", *, name: str | None = None
    ) -> EvalSet:
        """Read an eval set from ``text`` in ``format`` (any but ``trec``); raise InputError.

        ``source`` names the text in errors. The set's name is ``name``, else the name the
        text holds (JSON, YAML), else ``""``.
        """
        contents = formats.parse_evalset(text, format, source, name=name)
        return cls(contents.name, contents.queries)

    def save(
        self,
        path: str | PathLike[str],
        format: str | None = None,
        *,
        queries: str | PathLike[str] | None = None,
    ) -> None:
        """Write the eval set to ``path`` atomically, in ``format`` or the suffix's format.

        For ``trec`` the file holds the qrels only; ``queries`` names where to write the
        ``qid<TAB>text`` file (without it, texts and unjudged queries are not written).
        """
        contents = formats.Contents(self.name, self.columns())
        formats.save_evalset(contents, path, format, queries=queries)

    def qrels(self) -> Mapping[str, Mapping[str, int]]:
        """Return query id -> doc id -> grade for every query (``{}`` when unjudged).

        The mapping is read-only, as the queries' judgments it holds are: it is built once,
        and every later call returns it again until a query is added.
        """
        if self._qrels is None:
            columns = self.columns()
            frozen = map(MappingProxyType, columns.judgment_dicts())
            self._qrels = MappingProxyType(dict(zip(columns.ids, frozen, strict=True)))
        return self._qrels

    def columns(self) -> EvalColumns:
        """Return the queries as columns (:class:`~monitor.evalset.columns.EvalColumns`),
        the ones added since the last read joined to them first."""
        if self._added:
            self._columns = EvalColumns.concatenate([self._columns, EvalColumns.of(self._added)])
            self._added = []
            self._added_ids = set()
        return self._columns

    @property
    def queries(self) -> tuple[Query, ...]:
        """Return the queries in order."""
        return tuple(self.columns())

    @property
    def ids(self) -> tuple[str, ...]:
        """Return the query ids in order."""
        return self.columns().ids

    @property
    def fingerprint(self) -> str:
        """Return ``"sha256:<hex>"`` of the content that metrics depend on.

        The canonical form is the UTF-8 encoding of
        ``json.dumps(rows, ensure_ascii=False, separators=(",", ":"))`` where ``rows`` is
        ``[[id, text, [[doc, grade], ...]], ...]``: queries sorted by id, judgments sorted
        by doc id (both in code point order), texts exactly as stored.

        The set's name and the queries' metadata are deliberately left out: relabelling a
        category must not invalidate a baseline, while changing a query text, adding or
        removing a query, or changing, adding or removing a judgment (grade 0 included)
        must. The same content read from any format, in any order, has the same
        fingerprint.
        """
        if self._fingerprint is None:
            digest = hashlib.sha256(b"[")
            # The rows of a block of queries at a time: the whole set's would hold a list per
            # query and a pair per judgment at once (half a gigabyte at a million queries).
            for start, rows in enumerate(self.canonical_blocks(_FINGERPRINT_BLOCK)):
                if start:
                    digest.update(b",")
                digest.update(canonical_json(rows)[1:-1])  # the rows without [ and ]
            digest.update(b"]")
            self._fingerprint = f"sha256:{digest.hexdigest()}"
        return self._fingerprint

    def canonical_blocks(self, size: int) -> Iterator[list[tuple[str, str, list[tuple[str, int]]]]]:
        """Yield ``(id, text, judgments)`` of every query in id order, ``size`` queries at a
        time, judgments as (doc, grade) pairs sorted by doc id: the rows of the digests
        (:meth:`EvalColumns.canonical_blocks`)."""
        return self.columns().canonical_blocks(size)

    def adopt_fingerprint(self, fingerprint: str) -> None:
        """Take ``fingerprint`` as this set's: one computed before from the very bytes the set
        was read from (:mod:`monitor.evalset.digests`). A query added later drops it, as it
        drops one computed here."""
        if not (isinstance(fingerprint, str) and fingerprint.startswith("sha256:")):
            raise UsageError(f"a fingerprint is 'sha256:<hex>', not {fingerprint!r}")
        self._fingerprint = fingerprint

    def get(self, query_id: str, default: Query | None = None) -> Query | None:
        """Return the query with ``query_id``, or ``default`` when there is none."""
        columns = self.columns()
        at = columns.position(query_id)
        return default if at is None else columns[at]

    def __len__(self) -> int:
        return len(self._columns) + len(self._added)

    def __iter__(self) -> Iterator[Query]:
        return iter(self.columns())  # built a block at a time, not kept

    def __contains__(self, item: object) -> bool:
        if isinstance(item, Query):
            return item in self.columns()
        return self.columns().position(item) is not None

    def __getitem__(self, key: int | str) -> Query:
        """Return the query at position ``key`` (an int) or with id ``key`` (a string)."""
        if isinstance(key, str):
            found = self.get(key)
            if found is None:
                raise KeyError(key)
            return found
        if isinstance(key, bool) or not isinstance(key, int):
            raise TypeError(f"eval set index must be an int or a query id, not {key!r}")
        return self.columns()[key]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EvalSet):
            return NotImplemented
        return self.name == other.name and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]  # mutable: add() changes it

    def __repr__(self) -> str:
        return f"<EvalSet {self.name!r}: {len(self)} queries>"


def canonical_json(rows: Sequence[object]) -> bytes:
    """Return the UTF-8 bytes of ``json.dumps(rows, ensure_ascii=False, separators=(",",
    ":"))``, written by orjson when it is installed: the same bytes for the strings, integers
    and lists of a fingerprint, in one pass in C."""
    try:
        import orjson
    except ImportError:  # optional: the standard encoder writes the same bytes
        pass
    else:
        try:
            return orjson.dumps(rows)
        except orjson.JSONEncodeError:  # an integer beyond 64 bits: the standard one writes it
            pass
    return json.dumps(rows, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _already_valid(query: Query) -> bool:
    """Return whether ``query`` holds only what :meth:`EvalSet._checked` keeps unchanged.

    A loader's queries (and a merged eval set's) were checked once already: this test of the
    plain types costs a fraction of the full checks, which still run, and name the fault,
    for anything it does not accept.
    """
    judgments, metadata = query.judgments, query.metadata
    if type(query.id) is not str or not query.id or type(query.text) is not str:
        return False
    if not all(type(doc) is str and doc for doc in judgments):
        return False
    if not all(type(g) is int and GRADE_MIN <= g <= GRADE_MAX for g in judgments.values()):
        return False
    texts = [query.id, query.text, *judgments]
    for key, value in metadata.items():
        if type(key) is not str or not key:
            return False
        if type(value) is str:
            texts.append(value)
        elif type(value) is float:
            if not math.isfinite(value):
                return False
        elif value is not None and type(value) not in (int, bool):
            return False
    try:
        "".join(texts).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: the full checks name it
        return False
    return True
