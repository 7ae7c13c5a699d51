"""The traffic aggregations, written once as SQL: the one place they live.

Every statement here is plain SQL over the tables below (joins, ``GROUP BY``, ``GROUPING SETS``,
window functions and ``CASE``), with no engine's list or JSON functions: the import
flattens each search's hit list into ``impressions`` so that Spark SQL runs the same text
as DuckDB (``--engine spark``, :mod:`monitor.traffic.spark`, which also holds the one
dialect change: parameters are named ``$name`` here, ``:name`` there). The statements keep
to what the two dialects read alike: no decimal literals (Spark reads ``1.0`` as a
DECIMAL and averages it to five places; a rate is the mean of a 0/1 integer instead),
no ``NULLS FIRST``/``LAST`` defaults relied on (they differ), strings compared byte by byte.

Tables (timestamps are UTC, without a zone):

- ``queries``: one row per search: ``query_id``, ``user_query`` (the raw text),
  ``query_key`` (:func:`monitor.traffic.keys.query_key`), ``ts`` and ``epoch_s`` (the same
  instant in seconds since 1970, for time differences without interval types), ``client_id``,
  ``application``, ``hits`` (how many results it showed).
- ``impressions``: one row per result shown: ``query_id``, ``rank`` (1-based place in
  ``query_response_hit_ids``), ``doc``.
- ``events``: one row per logged event tied to a search: ``action_name``, ``query_id``,
  ``position`` (the event's ``event_attributes.position.ordinal``), ``object_id``, ``ts``.
- ``imported_files``: the SHA-256 of every file imported, so one is never counted twice.
- ``click_grades``: each grade ``judgments from-clicks`` added, by the layer it is in, with
  the counts it came from and its confidence (a layer itself holds only grades).
"""

from __future__ import annotations

from typing import Final

SCHEMA: Final = (
    """CREATE TABLE IF NOT EXISTS queries (
        query_id VARCHAR PRIMARY KEY,
        user_query VARCHAR NOT NULL,
        query_key VARCHAR NOT NULL,
        ts TIMESTAMP NOT NULL,
        epoch_s DOUBLE NOT NULL,
        client_id VARCHAR NOT NULL,
        application VARCHAR NOT NULL,
        hits INTEGER NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS impressions (
        query_id VARCHAR NOT NULL,
        rank INTEGER NOT NULL,
        doc VARCHAR NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS events (
        action_name VARCHAR NOT NULL,
        query_id VARCHAR NOT NULL,
        position INTEGER,
        object_id VARCHAR,
        ts TIMESTAMP NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS imported_files (
        sha256 VARCHAR PRIMARY KEY,
        path VARCHAR NOT NULL,
        kind VARCHAR NOT NULL,
        rows_read BIGINT NOT NULL,
        imported_at TIMESTAMP NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS click_grades (
        layer_id BIGINT NOT NULL,
        suite VARCHAR NOT NULL,
        query_id VARCHAR NOT NULL,
        query_key VARCHAR NOT NULL,
        doc VARCHAR NOT NULL,
        impressions BIGINT NOT NULL,
        clicks BIGINT NOT NULL,
        expected DOUBLE NOT NULL,
        score DOUBLE NOT NULL,
        confidence DOUBLE NOT NULL,
        grade INTEGER NOT NULL
    )""",
)

#: The staged searches to store: those of a key enough distinct clients issued, with a new id.
STAGE_FRESH: Final = """
CREATE OR REPLACE TEMP TABLE fresh AS
SELECT n.* FROM new_queries n
JOIN (
    SELECT query_key FROM new_queries
    GROUP BY query_key HAVING count(DISTINCT client_id) >= $min_clients
) f ON n.query_key = f.query_key
WHERE n.query_id NOT IN (SELECT query_id FROM queries)
"""

#: Store the fresh searches.
INSERT_QUERIES: Final = """
INSERT INTO queries
SELECT query_id, user_query, query_key, ts, epoch_s, client_id, application, hits FROM fresh
"""

#: Store the staged impressions of the fresh searches.
INSERT_IMPRESSIONS: Final = """
INSERT INTO impressions
SELECT query_id, rank, doc FROM new_impressions
WHERE query_id IN (SELECT query_id FROM fresh)
"""

#: Store the staged events whose search is stored (a dropped or unknown search's are not).
INSERT_EVENTS: Final = """
INSERT INTO events
SELECT e.action_name, e.query_id, e.position, e.object_id, e.ts FROM new_events e
WHERE e.query_id IN (SELECT query_id FROM queries)
"""

#: The time span the stored searches cover: (first, last, searches).
SPAN: Final = "SELECT min(ts), max(ts), count(*) FROM queries"

#: The searches in the window with their clicks' ranks: one row per search.
_SEARCHES: Final = """
s AS (
    SELECT query_id, query_key, client_id, application, ts, epoch_s, hits
    FROM queries WHERE ts >= $start AND ts < $end
),
c AS (
    SELECT e.query_id, coalesce(i.rank, e.position) AS rank
    FROM events e
    JOIN s ON e.query_id = s.query_id
    LEFT JOIN impressions i ON i.query_id = e.query_id AND i.doc = e.object_id
    WHERE e.action_name = $click_action
),
paul AS (
    SELECT query_id, sum(power($paul_factor, rank - 1)) AS paul
    FROM (SELECT DISTINCT query_id, rank FROM c WHERE rank IS NOT NULL) d
    GROUP BY query_id
),
per_search AS (
    SELECT s.query_id, s.application, s.hits,
        count(c.query_id) AS clicks, min(c.rank) AS first_rank
    FROM s LEFT JOIN c ON c.query_id = s.query_id
    GROUP BY s.query_id, s.application, s.hits
),
following AS (
    SELECT query_id, query_key, epoch_s,
        lead(query_key) OVER w AS next_key, lead(epoch_s) OVER w AS next_s
    FROM s
    WINDOW w AS (PARTITION BY client_id, application ORDER BY ts, query_id)
),
reformulated AS (
    SELECT query_id,
        CASE WHEN next_s IS NOT NULL AND next_key <> query_key
            AND next_s - epoch_s <= $gap_seconds THEN 1 ELSE 0 END AS reformulated
    FROM following
)"""

#: The online metrics of the window, per application and (``application`` NULL) overall.
ONLINE_METRICS: Final = (
    "WITH"
    + _SEARCHES
    + """
SELECT
    p.application,
    grouping(p.application) AS overall,
    count(*) AS searches,
    sum(CASE WHEN p.hits > 0 THEN 1 ELSE 0 END) AS with_results,
    avg(CASE WHEN p.hits = 0 THEN 1 ELSE 0 END) AS zero_result_rate,
    avg(CASE WHEN p.clicks > 0 THEN 1 ELSE 0 END) AS ctr,
    avg(CASE WHEN p.first_rank <= 1 THEN 1 ELSE 0 END) AS ctr_at_1,
    avg(CASE WHEN p.first_rank <= 3 THEN 1 ELSE 0 END) AS ctr_at_3,
    avg(CASE WHEN p.first_rank <= 5 THEN 1 ELSE 0 END) AS ctr_at_5,
    avg(CASE WHEN p.hits > 0 THEN (CASE WHEN p.clicks = 0 THEN 1 ELSE 0 END) END)
        AS abandonment,
    avg(CAST(p.first_rank AS DOUBLE)) AS mean_first_click_position,
    avg(CAST(r.reformulated AS DOUBLE)) AS reformulation_rate,
    avg(coalesce(paul.paul, 0)) AS paulscore
FROM per_search p JOIN reformulated r ON r.query_id = p.query_id
LEFT JOIN paul ON paul.query_id = p.query_id
GROUP BY GROUPING SETS ((p.application), ())
ORDER BY overall DESC, p.application
"""
)

#: Each shown result (rank <= $max_rank) of a search in the window, marked 1 if clicked.
_MARKED: Final = """
shown AS (
    SELECT i.query_id, q.query_key, i.doc, i.rank
    FROM impressions i JOIN queries q ON q.query_id = i.query_id
    WHERE i.rank <= $max_rank AND q.ts >= $start AND q.ts < $end
),
clicked AS (
    SELECT DISTINCT query_id, object_id AS doc FROM events
    WHERE action_name = $click_action AND object_id IS NOT NULL
),
marked AS (
    SELECT shown.query_id, shown.query_key, shown.doc, shown.rank,
        CASE WHEN clicked.doc IS NULL THEN 0 ELSE 1 END AS click
    FROM shown LEFT JOIN clicked
        ON clicked.query_id = shown.query_id AND clicked.doc = shown.doc
)"""

#: COEC per (query key, doc): clicks over the clicks expected at each impression's rank.
COEC: Final = (
    "WITH"
    + _MARKED
    + """,
rank_ctr AS (
    SELECT rank, avg(CAST(click AS DOUBLE)) AS ctr FROM marked GROUP BY rank
),
pairs AS (
    SELECT m.query_key, m.doc, count(*) AS impressions, sum(m.click) AS clicks,
        sum(r.ctr) AS expected
    FROM marked m JOIN rank_ctr r ON r.rank = m.rank
    GROUP BY m.query_key, m.doc
)
SELECT query_key, doc, impressions, clicks, expected,
    (clicks + $prior) / nullif(expected + $prior, 0) AS score,
    expected / nullif(expected + $prior, 0) AS confidence
FROM pairs
WHERE impressions >= $min_impressions
ORDER BY query_key, doc
"""
)

#: Click share per (query key, doc): the pair's share of its query's clicks.
CTR_SHARE: Final = (
    "WITH"
    + _MARKED
    + """,
pairs AS (
    SELECT query_key, doc, count(*) AS impressions, sum(click) AS clicks
    FROM marked GROUP BY query_key, doc
),
totals AS (
    SELECT query_key, sum(clicks) AS query_clicks FROM pairs GROUP BY query_key
)
SELECT p.query_key, p.doc, p.impressions, p.clicks, CAST(t.query_clicks AS DOUBLE) AS expected,
    CAST(p.clicks AS DOUBLE) / t.query_clicks AS score,
    t.query_clicks / (t.query_clicks + $prior) AS confidence
FROM pairs p JOIN totals t ON t.query_key = p.query_key
WHERE p.impressions >= $min_impressions AND t.query_clicks > 0
ORDER BY p.query_key, p.doc
"""
)

#: The query keys searched in the window: each key's searches and its most frequent raw text
#: (ties: the smallest), by key.
POPULATION: Final = """
WITH texts AS (
    SELECT query_key, user_query, count(*) AS n
    FROM queries WHERE ts >= $start AND ts < $end
    GROUP BY query_key, user_query
),
ranked AS (
    SELECT query_key, user_query,
        sum(n) OVER (PARTITION BY query_key) AS searches,
        row_number() OVER (PARTITION BY query_key ORDER BY n DESC, user_query) AS place
    FROM texts
)
SELECT query_key, user_query, searches FROM ranked WHERE place = 1 ORDER BY query_key
"""
