"""Frozen eval sets: queries with graded judgments, read from and written to files.

:class:`EvalSet` holds the queries; :meth:`EvalSet.load` and :meth:`EvalSet.save` speak
JSONL, JSON, CSV, YAML and TREC qrels (see :mod:`monitor.evalset.formats`), and
:func:`read_trec_qrels` reads a large qrels file straight into dicts for the metric engine.
"""

from __future__ import annotations

from monitor.evalset.formats import FORMATS, SUFFIXES
from monitor.evalset.model import EvalSet, Relevant
from monitor.evalset.trec import read_trec_qrels

__all__ = ["FORMATS", "SUFFIXES", "EvalSet", "Relevant", "read_trec_qrels"]
