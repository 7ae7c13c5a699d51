"""A comparison as the store keeps it (``run_comparisons``): one blob of the run codec.

The blob's first array is the comparison's JSON form (:meth:`Comparison.to_dict`) as UTF-8
bytes. A comparison with an overlap with its baseline has its per-query rows follow as
columns (RBO, Jaccard, then the query ids as :func:`~monitor.run.codec.strings`), so a
million compared queries are three arrays, not a million JSON objects, and read back as
:class:`~monitor.compare.overlap.OverlapRows`. Every value reads back as it was: JSON
writes each float as the shortest text that reads back as the same float (NaN as ``NaN``),
and the columns keep the floats' bytes.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np

from monitor.compare.overlap import OverlapRows
from monitor.compare.records import Comparison
from monitor.run import codec

#: The name stored beside each blob; a blob of any other is not read (the comparison is
#: computed again instead).
CODEC = f"comparison-json-1+{codec.CODEC}"


def encode_comparison(comparison: Comparison) -> bytes:
    """Return ``comparison`` as one blob of :data:`CODEC`."""
    doc = comparison.to_dict(lazy_rows=True)
    columns = []
    if comparison.overlap is not None:
        doc["overlap"]["queries"] = []
        rows = comparison.overlap.queries
        columns = [rows.rbos, rows.jaccards, *codec.strings(rows.ids)]
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    return codec.pack([np.frombuffer(text.encode("utf-8"), np.uint8), *columns])


def decode_comparison(blob: bytes) -> Comparison:
    """Return the comparison :func:`encode_comparison` wrote."""
    text, *columns = codec.unpack(blob)
    comparison = Comparison.from_dict(json.loads(text.tobytes().decode("utf-8")))
    if comparison.overlap is None:
        return comparison
    rbos, jaccards, *ids = columns
    rows = OverlapRows(codec.texts_of(ids), rbos, jaccards)
    return replace(comparison, overlap=replace(comparison.overlap, queries=rows))
