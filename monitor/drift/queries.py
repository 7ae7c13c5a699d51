"""The two samples of queries a drift check reads, and their embeddings.

A sample is the query keys (:func:`monitor.traffic.keys.query_key`) of a window of the
traffic database or of a query file, each with its number of searches and its most frequent
raw text (ties: the smallest), the text that is embedded. By default (``distinct``) each key
counts once, so the check asks whether the *kinds* of queries changed, and a head query
searched ten thousand times weighs what a tail query does; ``searches`` counts each search,
so a change in how often the head is searched counts too. A sample of more than ``max_rows``
is subsampled before it is embedded (seeded): keys without replacement for ``distinct``,
searches without replacement (a multivariate hypergeometric draw) for ``searches``.

A query file holds one query a line, or JSON Lines (``.jsonl``, ``.ndjson``, or a first
line that starts with ``{``) whose objects carry the text in ``query`` or ``text``; blank
lines are skipped, and a line repeated counts as another search of its key.

The windows of a check are read by :mod:`monitor.config.windows`.
"""

from __future__ import annotations

import importlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

import numpy as np
import numpy.typing as npt

from monitor.config.windows import Window
from monitor.drift.check import DriftResult, drift_check, no_data
from monitor.drift.settings import DriftSettings
from monitor.errors import InputError, UsageError
from monitor.traffic.keys import query_key

if TYPE_CHECKING:
    from monitor.embedding.base import Embedder
    from monitor.traffic.engine import Connection

Weighting = Literal["distinct", "searches"]

#: How a sample's keys are counted, as ``--weighting`` names them.
WEIGHTINGS: Final[tuple[Weighting, ...]] = ("distinct", "searches")
#: The command that installs the embedding model a drift check needs.
INSTALL: Final = "pip install 'retrieval-monitor[vector]'"
#: Texts embedded in one call (bounds the embedder's batch).
BATCH: Final = 256
_JSONL_SUFFIXES: Final = (".jsonl", ".ndjson")
_TEXT_FIELDS: Final = ("query", "text")

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class QuerySample:
    """The query keys of a window or file: each key's text and searches, by key."""

    source: str
    texts: tuple[str, ...]
    searches: IntArray

    def __len__(self) -> int:
        return len(self.texts)

    def chosen(self, weighting: Weighting, max_rows: int, rng: np.random.Generator) -> list[str]:
        """Return the texts to embed: a key once (``distinct``) or once a search, capped."""
        if weighting == "distinct":
            picked = np.arange(len(self.texts))
            if len(picked) > max_rows:
                picked = np.sort(rng.choice(len(picked), size=max_rows, replace=False))
            return [self.texts[i] for i in picked.tolist()]
        counts = self.searches
        if int(counts.sum()) > max_rows:
            counts = rng.multivariate_hypergeometric(self.searches, max_rows)
        return [text for text, n in zip(self.texts, counts.tolist(), strict=True) for _ in range(n)]


def _sample(source: str, texts: Sequence[str]) -> QuerySample:
    """Return the sample of the raw ``texts``: their keys, each its most frequent text."""
    by_key: dict[str, Counter[str]] = {}
    for text in texts:
        by_key.setdefault(query_key(text), Counter())[text] += 1
    keys = sorted(key for key in by_key if key)
    return QuerySample(
        source=source,
        texts=tuple(min(by_key[k].items(), key=lambda item: (-item[1], item[0]))[0] for k in keys),
        searches=np.array([sum(by_key[k].values()) for k in keys], dtype=np.int64),
    )


def read_query_file(path: Path) -> QuerySample:
    """Return the queries of ``path`` (one a line, or JSON Lines with ``query``/``text``)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InputError(path, "a query file (one query a line, or JSON Lines)") from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(path, "a readable UTF-8 query file", found=str(error)) from None
    first = next((line for line in lines if line.strip()), "")
    jsonl = path.suffix.lower() in _JSONL_SUFFIXES or first.lstrip().startswith("{")
    texts: list[str] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        texts.append(_json_text(path, number, line) if jsonl else line.strip())
    return _sample(str(path), texts)


def _json_text(path: Path, number: int, line: str) -> str:
    expected = 'a JSON object with a "query" or "text" string'
    try:
        row = json.loads(line)
    except json.JSONDecodeError:
        raise InputError(path, expected, line=number, found=line.strip()) from None
    if isinstance(row, Mapping):
        for field in _TEXT_FIELDS:
            value = row.get(field)
            if isinstance(value, str) and value.strip():
                return value
    raise InputError(path, expected, line=number, found=row)


def window_queries(connection: Connection, span: Window) -> QuerySample:
    """Return the query keys searched in ``span`` (an empty sample when there is none)."""
    from monitor.traffic.errors import NoTrafficError
    from monitor.traffic.sample import population

    try:
        found = population(connection, span)
    except NoTrafficError:  # a window with no search is a sample of 0 queries: no data
        return QuerySample(f"window {span.label}", (), np.zeros(0, dtype=np.int64))
    return QuerySample(f"window {span.label}", found.texts, found.searches)


def embed(embedder: Embedder, texts: Sequence[str]) -> npt.NDArray[np.float32]:
    """Return one embedding per text of ``texts``, each distinct text embedded once."""
    distinct = sorted(set(texts))
    if not distinct:
        return np.zeros((0, embedder.dimension), dtype=np.float32)
    rows = np.vstack(
        [embedder.embed(distinct[i : i + BATCH]) for i in range(0, len(distinct), BATCH)]
    )
    place = {text: i for i, text in enumerate(distinct)}
    return rows[[place[text] for text in texts]]


def open_embedder(kind: str) -> Embedder:
    """Return the embedder of ``kind``, or raise UsageError naming what to install."""
    try:
        module: Any = importlib.import_module("monitor.embedding")
        opener = module.open_embedder
    except (ImportError, AttributeError):
        raise UsageError(f"drift check needs an embedder ({kind}): {INSTALL}") from None
    embedder: Embedder = opener({"kind": kind})
    return embedder


def check_queries(
    reference: QuerySample,
    current: QuerySample,
    embedder: Embedder,
    settings: DriftSettings,
    weighting: Weighting = "distinct",
) -> DriftResult:
    """Return the drift verdict of ``current`` against ``reference``, embedded by ``embedder``.

    Nothing is embedded when a sample has fewer than ``settings.min_queries`` queries.
    """
    if weighting not in WEIGHTINGS:
        raise UsageError(f"weighting: expected one of {', '.join(WEIGHTINGS)}, found {weighting!r}")
    sizes = (
        (len(reference), len(current))
        if weighting == "distinct"
        else (int(reference.searches.sum()), int(current.searches.sum()))
    )
    empty = no_data(sizes, settings)
    if empty is not None:
        return empty
    rng = np.random.default_rng(settings.seed)
    xs = embed(embedder, reference.chosen(weighting, settings.max_rows, rng))
    ys = embed(embedder, current.chosen(weighting, settings.max_rows, rng))
    return drift_check(xs, ys, settings, sizes=sizes)
