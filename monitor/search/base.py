"""What a search plug-in is, and how its answers become :class:`~monitor.records.Hit` records.

A search function is any callable ``(query: str, k: int) -> sequence of hits``. A hit is a
doc id string, a mapping with ``"id"`` (and optional ``"score"`` and ``"text"``), or a
:class:`~monitor.records.Hit`. The function may be ``async def``.

A plug-in that needs the whole :class:`~monitor.records.Query` (its id, to replay a saved
run, or its metadata) declares it with :func:`takes_query` or a true ``takes_query`` class
attribute; it is then called as ``(query: Query, k: int)``.

Every answer goes through :func:`normalise_hits`, one policy for every live search: a doc id
is a non-empty string of valid Unicode without a NUL (no lone surrogate, which no store can
hold, and no NUL, which a run's table of ids cannot: :mod:`monitor.run.table`) and a hit
text is valid Unicode, or the query fails with a SearchOutputError; a score is a number, and
one that is not finite (NaN, ``inf``, ``-inf``, an integer too large for a double) is recorded
as no score, since a live ranking is the order given and its scores are only reported. Saved
runs are stricter (:mod:`monitor.search.saved`): their scores rank the hits, so a non-finite
one is refused.

A plug-in that answers from memory, never waiting on I/O (a saved run, an in-process index
held in arrays), may say so with a true ``in_memory`` class attribute: the runner then calls
it on its own thread, one query after the other, whatever the concurrency, since no call can
hang and threads would only add their round trips (:func:`answers_in_memory`).

A plug-in whose answers are already tuples of :class:`~monitor.records.Hit` records that
pass those checks (a replay of a run its reader has checked) may say so with a true
``checked_hits`` class attribute: the runner then takes them as they come
(:func:`gives_checked_hits`).

A plug-in with a ``prepare(queries)`` method is handed the run's queries (a sequence of
:class:`~monitor.records.Query`) once before the first call (:func:`prepare_search`): a
vector search embeds them all in batches there rather than one per call. A failing
``prepare`` is logged and the run goes on, each call then doing its own work.

Optional extras, found by name: ``stats()`` returns scalars recorded with the run, and
``close()`` releases connections (:func:`close_search`). Stats keys the monitor knows:
``index_size`` (documents or vectors in the index; the ``index_size_max_relative_drop`` rule
reads it), ``index_version`` and ``model_version``; others are recorded as they come.

``corpus_fingerprint()`` returns a mapping of scalars that changes when the searched corpus
does (a document count, the last update, the index's parameters) and is cheap to ask for:
the daemon polls it for a suite with ``trigger: on_change``, and every run records
:func:`fingerprint_digest` of it (:func:`corpus_fingerprint`), so runs tell which corpus
they ran against. What goes into it is the plug-in's choice; the same corpus must give the
same mapping.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeAlias, TypeVar

from monitor.errors import SearchOutputError
from monitor.records import Hit, MetaValue, Query

#: One hit as a search function may give it.
HitLike: TypeAlias = "str | Hit | Mapping[str, Any]"
#: A ranking as a search function may give it, best first.
Hits: TypeAlias = "Sequence[HitLike]"

#: The plug-in point: ``(query text, k) -> hits``.
SearchFunction: TypeAlias = Callable[[str, int], Hits]
#: A plug-in declared with :func:`takes_query`: ``(query, k) -> hits``.
QuerySearchFunction: TypeAlias = Callable[[Query, int], Hits]
#: The async forms of both.
AsyncSearchFunction: TypeAlias = Callable[[str, int], Awaitable[Hits]]
AsyncQuerySearchFunction: TypeAlias = Callable[[Query, int], Awaitable[Hits]]
#: Anything the runner accepts as a search.
Search: TypeAlias = (
    "SearchFunction | QuerySearchFunction | AsyncSearchFunction | AsyncQuerySearchFunction"
)
#: What a plug-in's ``stats()`` reports.
SearchStats: TypeAlias = Mapping[str, MetaValue]
#: What a plug-in's ``corpus_fingerprint()`` reports.
CorpusFingerprint: TypeAlias = Mapping[str, MetaValue]

#: Hex digits of a corpus fingerprint's digest: 64 bits, short enough for a label value.
DIGEST_HEX_DIGITS = 16

_F = TypeVar("_F", bound=Callable[..., Any])


def takes_query(function: _F) -> _F:
    """Mark ``function`` as taking the :class:`~monitor.records.Query` rather than its text."""
    function.takes_query = True  # type: ignore[attr-defined]
    return function


def wants_query(search: object) -> bool:
    """Return whether ``search`` declared that it takes the whole Query."""
    return getattr(search, "takes_query", False) is True


def answers_in_memory(search: object) -> bool:
    """Return whether ``search`` declared that it answers from memory (``in_memory``)."""
    return getattr(search, "in_memory", False) is True and not is_async(search)


def gives_checked_hits(search: object) -> bool:
    """Return whether ``search`` declared that it answers with checked Hit tuples."""
    return getattr(search, "checked_hits", False) is True


def is_async(search: object) -> bool:
    """Return whether calling ``search`` gives an awaitable (an ``async def`` or ``__call__``)."""
    if inspect.iscoroutinefunction(search):
        return True
    call = getattr(type(search), "__call__", None)  # noqa: B004 - the method, not callability
    return inspect.iscoroutinefunction(call)


def normalise_hits(raw: object) -> tuple[Hit, ...]:
    """Return ``raw`` as Hit records; raise SearchOutputError for any other shape.

    Accepted: a list, tuple or other non-string sequence whose items are doc id strings,
    :class:`Hit` records or mappings with a string ``"id"`` and optional numeric ``"score"``
    and string ``"text"``. The order is kept as given: it is the plug-in's ranking.
    """
    if type(raw) is not list and type(raw) is not tuple:
        _check_sequence(raw)
    items: Sequence[object] = raw  # type: ignore[assignment]  # checked just above
    hits: list[Hit] = []
    append = hits.append
    for position, item in enumerate(items):
        kind = type(item)
        if kind is str:
            if not is_valid_id(item):
                raise SearchOutputError(
                    f"a non-empty doc id of valid Unicode without NUL at position {position}",
                    found=item,
                )
            append(Hit(item))  # type: ignore[arg-type]  # kind is str
        elif isinstance(item, Hit):
            append(_checked_hit(item, position))
        elif isinstance(item, Mapping):
            append(_hit_from_mapping(item, position))
        elif isinstance(item, str) and is_valid_id(item):  # a str subclass such as numpy.str_
            append(Hit(str(item)))
        else:
            raise SearchOutputError(
                f"a doc id string, a Hit or a mapping with 'id' at position {position}",
                found=item,
            )
    return tuple(hits)


def _check_sequence(raw: object) -> None:
    """Raise SearchOutputError unless ``raw`` is a sequence other than a string."""
    if raw is None:
        raise SearchOutputError("a sequence of hits", found="None")
    if inspect.isawaitable(raw):
        if inspect.iscoroutine(raw):
            raw.close()  # never awaited: close it so Python does not warn
        raise SearchOutputError("a sequence of hits, not an awaitable (declare it async def)")
    if isinstance(raw, str | bytes | Mapping) or not isinstance(raw, Sequence):
        raise SearchOutputError("a sequence of hits", found=f"{type(raw).__name__} {raw!r}")


def is_valid_id(value: object) -> bool:
    """Return whether ``value`` is a non-empty string of valid Unicode (no lone surrogate)
    without a NUL character."""
    return isinstance(value, str) and bool(value) and "\0" not in value and _is_unicode(value)


def _is_unicode(text: str) -> bool:
    """Return whether ``text`` can be written as UTF-8 (holds no lone surrogate)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _finite_or_none(score: float | int) -> float | None:
    """Return ``score`` as a float, or None when it is not finite (see the module's policy)."""
    try:
        value = float(score)
    except OverflowError:  # an int beyond any double
        return None
    # NaN is how some engines say "no score"; inf has no place in a mean or a gauge.
    return value if math.isfinite(value) else None


def _checked_hit(hit: Hit, position: int) -> Hit:
    """Return a Hit built by a plug-in, checked as a mapping's would be."""
    if not is_valid_id(hit.id):
        raise SearchOutputError(
            f"a non-empty doc id of valid Unicode without NUL at position {position}", found=hit.id
        )
    if hit.text is not None and not _is_unicode(hit.text):
        raise SearchOutputError(f"a 'text' of valid Unicode at position {position}", found=hit)
    if hit.score is not None and not math.isfinite(hit.score):
        return Hit(hit.id, None, hit.text)
    return hit


def _hit_from_mapping(item: Mapping[Any, Any], position: int) -> Hit:
    """Build a Hit from ``{"id": ..., "score": ..., "text": ...}``."""
    doc = item.get("id")
    if not is_valid_id(doc):
        raise SearchOutputError(
            "a non-empty string 'id' of valid Unicode without NUL in the hit at position"
            f" {position}",
            found=item,
        )
    raw_score = item.get("score")
    score: float | None = None
    if raw_score is not None:
        if isinstance(raw_score, bool) or not isinstance(raw_score, int | float):
            raise SearchOutputError(
                f"a numeric 'score' in the hit at position {position}", found=item
            )
        score = _finite_or_none(raw_score)
    text = item.get("text")
    if text is not None and (not isinstance(text, str) or not _is_unicode(text)):
        raise SearchOutputError(
            f"a string 'text' of valid Unicode in the hit at position {position}", found=item
        )
    return Hit(str(doc), score, text)


def search_stats(search: object) -> dict[str, MetaValue]:
    """Return what ``search.stats()`` reports, or ``{}`` when the plug-in has no ``stats``.

    Values that are not scalars are recorded as their ``str``.
    """
    stats = getattr(search, "stats", None)
    if not callable(stats):
        return {}
    reported = stats()
    if not isinstance(reported, Mapping):
        raise SearchOutputError("stats() to return a mapping", found=reported)
    return {
        str(key): value if value is None or isinstance(value, str | int | float) else str(value)
        for key, value in reported.items()
    }


def has_corpus_fingerprint(search: object) -> bool:
    """Return whether ``search`` has a ``corpus_fingerprint()`` to poll."""
    return callable(getattr(search, "corpus_fingerprint", None))


def corpus_fingerprint(search: object) -> dict[str, MetaValue] | None:
    """Return what ``search.corpus_fingerprint()`` reports, or None when the plug-in has none.

    Keys become strings; values that are not finite scalars are kept as their ``str``, as
    :func:`search_stats` keeps them. Raise SearchOutputError unless it returns a mapping.
    """
    fingerprint = getattr(search, "corpus_fingerprint", None)
    if not callable(fingerprint):
        return None
    reported = fingerprint()
    if not isinstance(reported, Mapping):
        raise SearchOutputError("corpus_fingerprint() to return a mapping", found=reported)
    return {str(key): _scalar(value) for key, value in reported.items()}


def fingerprint_digest(fingerprint: Mapping[str, MetaValue]) -> str:
    """Return the short hex digest of a corpus fingerprint: SHA-256 of its canonical JSON
    (sorted keys, no spaces, UTF-8), cut to :data:`DIGEST_HEX_DIGITS` digits."""
    text = json.dumps(
        {str(key): _scalar(value) for key, value in fingerprint.items()},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:DIGEST_HEX_DIGITS]


def _scalar(value: object) -> MetaValue:
    """Return ``value`` if it is a JSON scalar (a finite number), else its ``str``."""
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    return str(value)


def prepare_search(search: object, queries: Sequence[Query]) -> None:
    """Call ``search.prepare(queries)`` when the plug-in has one."""
    prepare = getattr(search, "prepare", None)
    if callable(prepare):
        prepare(queries)


def close_search(search: object) -> None:
    """Call ``search.close()`` when the plug-in has one."""
    close = getattr(search, "close", None)
    if callable(close):
        close()
