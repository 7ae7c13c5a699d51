"""Sample an eval set's queries from a window of traffic, keeping each one's inclusion odds.

The population is the window's query keys (:func:`monitor.traffic.keys.query_key`), each
with its number of searches (its *frequency*) and its most frequent raw text. A sample holds
exactly ``size`` keys when the window has that many (else all of them), drawn by one of:

- ``topn``: the ``size`` most frequent keys (ties by key). Nothing is random: each chosen
  key's inclusion probability is 1, and a weighted mean over them describes the head only.
- ``random``: a uniform sample without replacement; each key's inclusion probability is
  ``size / keys``.
- ``pps``: probability proportional to frequency, without replacement, by Efraimidis and
  Spirakis's keys (``u ** (1 / frequency)``, the ``size`` largest, ``u`` uniform; the same
  design as successive sampling). Its inclusion probabilities have no closed form; the one
  kept is Rosén's approximation ``1 - exp(-frequency * t)`` with ``t`` such that the
  probabilities sum to ``size`` (within 0.01 of the simulated frequency on small
  populations: ``tests/test_traffic_sample.py``).
- ``stratified``: the keys sorted by frequency (most first) and cut by their share of the
  window's searches into ``head`` (the keys that make the first half of the searches),
  ``torso`` (to 80%) and ``tail`` (the rest); ``size`` split evenly over the strata (a
  stratum with fewer keys gives its share to the others), a uniform sample within each; a
  key's inclusion probability is its stratum's ``chosen / keys``.

Every draw comes from ``numpy.random.default_rng(seed)``: one seed, one sample. A sampled
query's id is ``t`` and the first 16 hex digits of the SHA-256 of its key, the same in every
window, so that two samples can be compared query by query. Its metadata keeps
``traffic_searches`` (its frequency), ``inclusion_probability`` and ``stratum``, from which a
traffic-weighted (Horvitz-Thompson, Hájek form) mean is :func:`weighted_mean`.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from monitor.config.windows import Window
from monitor.errors import UsageError
from monitor.records import MetaValue, Query
from monitor.traffic import sql
from monitor.traffic.engine import Reader, rows
from monitor.traffic.errors import NoTrafficError

#: The sampling methods, as ``--method`` names them.
METHODS: Final = ("topn", "random", "pps", "stratified")
#: The strata of ``stratified``, with the share of the window's searches each ends at.
STRATA: Final = (("head", 0.5), ("torso", 0.8), ("tail", 1.0))

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Population:
    """The query keys of a window: each key, its most frequent text and its searches."""

    keys: tuple[str, ...]
    texts: tuple[str, ...]
    searches: IntArray

    def __len__(self) -> int:
        return len(self.keys)


@dataclass(frozen=True, slots=True)
class Sample:
    """The keys drawn (indices into the population, by frequency then key) and their odds."""

    method: str
    population: Population
    chosen: IntArray
    probabilities: FloatArray
    strata: tuple[str, ...]

    def queries(self) -> list[Query]:
        """Return the sampled queries, most searched first, unjudged, with their odds."""
        pop = self.population
        return [
            Query(
                id=query_id(pop.keys[i]),
                text=pop.texts[i],
                metadata={
                    "traffic_searches": int(pop.searches[i]),
                    "inclusion_probability": float(p),
                    "stratum": stratum,
                },
            )
            for i, p, stratum in zip(
                self.chosen.tolist(), self.probabilities.tolist(), self.strata, strict=True
            )
        ]


def query_id(key: str) -> str:
    """Return the sampled query id of query key ``key``: the same in every window."""
    return "t" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def population(connection: Reader, window: Window) -> Population:
    """Return the query keys searched in ``window``; raise NoTrafficError when there is none."""
    found = rows(connection, sql.POPULATION, {"start": window.start, "end": window.end})
    if not found:
        first, last, searches = connection.execute(sql.SPAN).fetchone()
        raise NoTrafficError(window, first, last, int(searches))
    searches = np.fromiter((int(row["searches"]) for row in found), np.int64, len(found))
    # Most searched first, then by key: the order every method reads.
    order = np.lexsort((np.arange(len(found)), -searches))
    return Population(
        keys=tuple(str(found[i]["query_key"]) for i in order.tolist()),
        texts=tuple(str(found[i]["user_query"]) for i in order.tolist()),
        searches=searches[order],
    )


def draw(pop: Population, method: str, size: int, seed: int) -> Sample:
    """Return a sample of ``size`` keys of ``pop`` (all of them when it has fewer)."""
    if method not in METHODS:
        raise UsageError(f"--method: expected one of {', '.join(METHODS)}, found {method!r}")
    if size < 1:
        raise UsageError(f"--size: expected a positive number of queries, found {size}")
    n = min(size, len(pop))
    rng = np.random.default_rng(seed)
    everyone = np.ones(len(pop), dtype=np.float64)
    if method == "topn":
        chosen = np.arange(n, dtype=np.int64)
        return Sample(method, pop, chosen, everyone[:n], ("all",) * n)
    if method == "random":
        chosen = np.sort(rng.choice(len(pop), size=n, replace=False)).astype(np.int64)
        return Sample(method, pop, chosen, np.full(n, n / len(pop)), ("all",) * n)
    if method == "pps":
        weights = pop.searches.astype(np.float64)
        # Efraimidis-Spirakis: the n largest u ** (1 / w), compared as log(u) / w.
        keys = np.log(rng.random(len(pop))) / weights
        chosen = np.sort(np.argpartition(-keys, n - 1)[:n]).astype(np.int64)
        odds = pps_probabilities(weights, n)
        return Sample(method, pop, chosen, odds[chosen], ("all",) * n)
    return _stratified(pop, n, rng)


def pps_probabilities(weights: FloatArray, size: int) -> FloatArray:
    """Return Rosén's inclusion probabilities of successive sampling of ``size`` by weight.

    ``pi_i = 1 - exp(-w_i t)``, with ``t`` found by bisection such that they sum to ``size``.
    """
    if size >= len(weights):
        return np.ones(len(weights), dtype=np.float64)

    def expected(t: float) -> float:
        return float(-np.expm1(-weights * t).sum())

    low, high = 0.0, 1.0 / float(weights.max())
    while expected(high) < size:
        high *= 2.0
    for _ in range(200):  # to the float's precision
        middle = (low + high) / 2.0
        if middle in (low, high):
            break
        if expected(middle) < size:
            low = middle
        else:
            high = middle
    return np.asarray(-np.expm1(-weights * high), dtype=np.float64)


def strata_of(searches: IntArray) -> list[str]:
    """Return the stratum of each key, given the keys' searches most first."""
    total = float(searches.sum())
    before = (np.cumsum(searches) - searches) / total  # share of searches before each key
    names = []
    for share in before.tolist():
        names.append(next(name for name, end in STRATA if share < end))
    return names


def _stratified(pop: Population, n: int, rng: np.random.Generator) -> Sample:
    names = strata_of(pop.searches)
    members = {name: [i for i, s in enumerate(names) if s == name] for name, _ in STRATA}
    quotas = _allocate({name: len(keys) for name, keys in members.items()}, n)
    chosen: list[int] = []
    odds: list[float] = []
    strata: list[str] = []
    for name, _ in STRATA:
        keys, quota = members[name], quotas[name]
        if not quota:
            continue
        picked = sorted(rng.choice(len(keys), size=quota, replace=False).tolist())
        chosen.extend(keys[j] for j in picked)
        odds.extend([quota / len(keys)] * quota)
        strata.extend([name] * quota)
    order = np.argsort(np.asarray(chosen), kind="stable")
    return Sample(
        "stratified",
        pop,
        np.asarray(chosen, dtype=np.int64)[order],
        np.asarray(odds, dtype=np.float64)[order],
        tuple(strata[i] for i in order.tolist()),
    )


def _allocate(sizes: Mapping[str, int], n: int) -> dict[str, int]:
    """Split ``n`` evenly over the strata, a full stratum's excess going to the others."""
    quotas = dict.fromkeys(sizes, 0)
    left = n
    while left:
        open_ = [name for name in sizes if quotas[name] < sizes[name]]
        share, extra = divmod(left, len(open_))
        for place, name in enumerate(open_):
            give = min(share + (1 if place < extra else 0), sizes[name] - quotas[name])
            quotas[name] += give
            left -= give
    return quotas


def weighted_mean(
    values: Sequence[float], metadata: Sequence[Mapping[str, MetaValue]]
) -> float | None:
    """Return the traffic-weighted mean of per-query ``values`` of a sampled set, or None.

    Each query weighs its searches over its inclusion probability (the Hájek form of the
    Horvitz-Thompson estimator of the mean per search). A query without both fields, or
    whose value is NaN, is left out; None when none is left.
    """
    total = weight = 0.0
    for value, meta in zip(values, metadata, strict=True):
        searches, odds = meta.get("traffic_searches"), meta.get("inclusion_probability")
        if not isinstance(searches, int | float) or not isinstance(odds, int | float):
            continue
        if odds <= 0 or math.isnan(value):
            continue
        w = float(searches) / float(odds)
        total += w * value
        weight += w
    return total / weight if weight else None
