"""The search plug-in point: what a search function is and how one is built from config.

See :mod:`monitor.search.base` for the calling convention and
:mod:`monitor.search.registry` for kinds and entry points.
"""

from __future__ import annotations

from monitor.search.base import (
    AsyncQuerySearchFunction,
    AsyncSearchFunction,
    CorpusFingerprint,
    HitLike,
    Hits,
    QuerySearchFunction,
    Search,
    SearchFunction,
    SearchStats,
    close_search,
    corpus_fingerprint,
    fingerprint_digest,
    has_corpus_fingerprint,
    is_async,
    normalise_hits,
    prepare_search,
    search_stats,
    takes_query,
    wants_query,
)
from monitor.search.registry import (
    ENTRY_POINT_GROUP,
    SearchBuilder,
    build_search,
    known_kinds,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "AsyncQuerySearchFunction",
    "AsyncSearchFunction",
    "CorpusFingerprint",
    "HitLike",
    "Hits",
    "QuerySearchFunction",
    "Search",
    "SearchBuilder",
    "SearchFunction",
    "SearchStats",
    "build_search",
    "close_search",
    "corpus_fingerprint",
    "fingerprint_digest",
    "has_corpus_fingerprint",
    "is_async",
    "known_kinds",
    "normalise_hits",
    "prepare_search",
    "search_stats",
    "takes_query",
    "wants_query",
]
