"""Production traffic: query and click logs in, click judgments and online metrics out.

The logs are read by DuckDB's readers and checked in SQL (:mod:`monitor.traffic.fast`), or
row by row (:mod:`monitor.traffic.rows`) for a file with a row those checks do not accept,
grouped by a normalised query key (:mod:`monitor.traffic.keys`) and stored in a DuckDB
database file (:mod:`monitor.traffic.importer`, :mod:`monitor.traffic.engine`); the
aggregations are SQL kept in one module (:mod:`monitor.traffic.sql`) and read by
:mod:`monitor.traffic.clicks` (COEC and click-share grades) and :mod:`monitor.traffic.online`
(zero-result rate, CTR, abandonment, ...). Interleaving: the team-draft merge
(:mod:`monitor.traffic.interleave`), the team log and its clicks (:mod:`monitor.traffic.teams`),
the preference with its interval and sign test (:mod:`monitor.traffic.preference`) and the
offline click-model simulation (:mod:`monitor.traffic.clickmodel`). Nothing here imports
DuckDB until a database is opened.
"""

from __future__ import annotations

from monitor.traffic.keys import query_key

__all__ = ["query_key"]
