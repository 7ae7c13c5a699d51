"""A run in one form: the table the runner leaves and every later stage reads.

:class:`RunTable` holds every query's hits, latency and error as columns; :class:`Rankings`
holds rankings of doc ids coded into one dictionary of ids, as the store saves them.
"""

from __future__ import annotations

from monitor.run.rankings import Rankings
from monitor.run.table import RunTable

__all__ = ["Rankings", "RunTable"]
