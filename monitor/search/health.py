"""Index health without labels: a vector kind's ANN answers against its own exact answers.

A vector kind (``pgvector``, ``qdrant``) with the option ``index_health: {k: 10}`` (or
``index_health: true``, k 10) also asks, after a run, the exact search of the same store
(:meth:`exact_search`: pgvector with index scans off, Qdrant ``exact``) for the same query
vectors, in batches, with the embeddings the run already made. An exact answer scans every
vector, so it is asked for a sample of at most ``sample`` (default 500) answered queries:
those whose ids hash lowest, the same queries run after run while the set holds them. Per
query q of the sample, with A its ANN top k and E the exact top k:

    ann_recall@k(q) = |A ∩ E| / min(k, |E|)

a query whose exact answer is empty counts 1 (nothing was missed). The run's figure is the
mean over those queries. The mean top-1 similarity is the run's ``mean_top1_score`` (for a
vector kind the score of the ANN top hit is the similarity) and the index vector count its
``index_size``: both are figures every run already keeps, with their own rules.

The figures go into the run's search stats as ``ann_recall@k`` (the mean), ``ann_recall_k``
and ``ann_recall_queries``, which the store keeps with the run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol

import numpy as np

from monitor.embedding.base import Vectors
from monitor.records import Hit, MetaValue
from monitor.search.options import Options
from monitor.search.vector import QueryVectors

#: The cutoff when ``index_health`` is ``true``.
DEFAULT_K: Final = 10
#: The most queries whose exact answer a run asks for, unless ``sample`` says otherwise.
DEFAULT_SAMPLE: Final = 500
#: Query vectors sent to the exact search per call.
EXACT_BATCH: Final = 256
#: The stats keys the figures go under (the recall's own key is ``ann_recall@k``).
STAT_K: Final = "ann_recall_k"
STAT_QUERIES: Final = "ann_recall_queries"


class VectorSearch(Protocol):
    """What index health needs of a vector kind: its query vectors, its batched search,
    and its exact twin."""

    vectors: QueryVectors

    def search_vectors(self, vectors: Vectors, k: int) -> list[list[Hit]]:
        """Return the ``k`` nearest of each vector."""
        ...

    def exact_search(self) -> VectorSearch:
        """Return the exact search of the same store."""
        ...


@dataclass(frozen=True, slots=True)
class HealthOptions:
    """The ``index_health`` option: the cutoff k and the most queries sampled."""

    k: int = DEFAULT_K
    sample: int = DEFAULT_SAMPLE


@dataclass(frozen=True, slots=True)
class IndexHealth:
    """The ANN recall of one run: its cutoff, mean and the queries it is over."""

    k: int
    ann_recall: float
    queries: int

    @property
    def name(self) -> str:
        """Return the figure's canonical name, ``ann_recall@10``."""
        return ann_recall_name(self.k)

    def stats(self) -> dict[str, MetaValue]:
        """Return the figures as search stats."""
        return {self.name: self.ann_recall, STAT_K: self.k, STAT_QUERIES: self.queries}


def ann_recall_name(k: int) -> str:
    """Return the name of the ANN recall at ``k``: ``ann_recall@10``."""
    return f"ann_recall@{k}"


def ann_recall(ann: Sequence[str], exact: Sequence[str], k: int) -> float:
    """Return |ANN top k ∩ exact top k| / min(k, |exact top k|); 1.0 when exact is empty."""
    truth = set(exact[:k])
    if not truth:
        return 1.0
    return len(truth.intersection(ann[:k])) / min(k, len(truth))


def index_health_option(opts: Options) -> HealthOptions | None:
    """Read ``index_health`` (``true``, or ``{k: N, sample: M}``); None when off."""
    value = opts.raw("index_health")
    if value is None or value is False:
        return None
    if value is True:
        return HealthOptions()
    entries = opts.mapping("index_health")
    unknown = sorted(set(entries) - {"k", "sample"})
    if unknown:
        raise opts.fail(f"index_health.{unknown[0]}", "only k (the cutoff) and sample")
    numbers = []
    for key, default in (("k", DEFAULT_K), ("sample", DEFAULT_SAMPLE)):
        number = entries.get(key, default)
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            raise opts.fail(f"index_health.{key}", "an integer of at least 1", number)
        numbers.append(number)
    return HealthOptions(*numbers)


def sample_rows(ids: Sequence[str], size: int) -> list[int]:
    """Return the rows of the ``size`` ids whose SHA-256 is lowest, in row order: a sample
    that stays the same run after run for the ids that stay."""
    if len(ids) <= size:
        return list(range(len(ids)))
    keys = [hashlib.sha256(query_id.encode("utf-8")).digest() for query_id in ids]
    return sorted(sorted(range(len(ids)), key=keys.__getitem__)[:size])


def measure(
    search: VectorSearch, texts: Sequence[str], answers: Sequence[Sequence[str]], k: int
) -> IndexHealth:
    """Return the mean ANN recall@k of ``answers`` (each text's ANN ids, best first) against
    the exact search of the same store, asked in batches of :data:`EXACT_BATCH`."""
    if len(texts) != len(answers):
        raise ValueError("one answer per query text")
    exact = search.exact_search()
    search.vectors.prepare(texts)  # held already when the run prepared them: no embedding
    recalls: list[float] = []
    for start in range(0, len(texts), EXACT_BATCH):
        batch = texts[start : start + EXACT_BATCH]
        matrix = np.stack([search.vectors.vector(text) for text in batch])
        truths = exact.search_vectors(matrix, k)
        for ann, truth in zip(answers[start : start + EXACT_BATCH], truths, strict=True):
            recalls.append(ann_recall(ann, [hit.id for hit in truth], k))
    mean = float(np.mean(recalls)) if recalls else float("nan")
    return IndexHealth(k=k, ann_recall=mean, queries=len(recalls))
