"""Read a suite's ``bands:`` section: the edges of each metric family's reading bands.

``bands: {recall: {high: 0.85, low: 0.6}}`` moves recall's edges; a family left out keeps
its defaults (:data:`monitor.metrics.bands.DEFAULT_THRESHOLDS`), and so does an edge left
out of a family's entry. Bands are a reading aid beside each mean, never an alert.
"""

from __future__ import annotations

from monitor.config import vocab
from monitor.config.fields import Fields
from monitor.config.nodes import Node
from monitor.metrics.bands import DEFAULT_BANDS, DEFAULT_THRESHOLDS, FAMILIES, Bands, Thresholds


def bands(f: Fields, node: Node | None) -> Bands:
    """Read ``bands``: per family (recall, precision, mrr, ndcg, hit_rate) a mapping of
    ``high`` and ``low``, numbers in 0..1 with ``low`` at most ``high``."""
    if node is None or node.value is None:
        return DEFAULT_BANDS
    families = f.mapping(node, FAMILIES, "a metric family per key: " + ", ".join(FAMILIES))
    chosen: dict[str, Thresholds] = {}
    for family, entry in families.items():
        edges = f.mapping(entry, vocab.BAND_KEYS, "high and low, numbers in 0..1")
        default = DEFAULT_THRESHOLDS[family]
        high = default.high
        if "high" in edges:
            high = f.number(edges["high"], minimum=0.0, maximum=1.0)
        low = default.low
        if "low" in edges:
            low = f.number(edges["low"], minimum=0.0, maximum=1.0)
        if low > high:
            where = edges.get("low") or edges.get("high") or entry
            raise f.error(where, f"low ({low:g}) at most high ({high:g})")
        chosen[family] = Thresholds(low=low, high=high)
    return Bands(chosen)
