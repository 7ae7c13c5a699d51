"""The traffic aggregations, written once as SQL: the one place they live.

Every statement here is plain SQL over the tables below (joins, ``GROUP BY``, ``GROUPING SETS``,
window functions and ``CASE``), with no engine's list or JSON functions: the import
flattens each search's hit list into ``impressions`` so that Spark SQL runs the same text
as DuckDB (``--engine spark``, :mod:`monitor.traffic.spark`, which also holds the one
dialect change: parameters are named ``$name`` here, ``:name`` there). The statements keep
to what the two dialects read alike: a double is written ``1E0`` (Spark reads ``1.0`` as a
DECIMAL and averages it to five places), no ``NULLS FIRST``/``LAST`` default is relied on
(they differ), strings compare byte by byte in both.

Tables (timestamps are UTC, without a zone):

- ``queries``: one row per search: ``query_id``, ``user_query`` (the raw text),
  ``query_key`` (:func:`monitor.traffic.keys.query_key`), ``ts`` and ``epoch_s`` (the same
  instant in seconds since 1970, for time differences without interval types), ``client_id``,
  ``application``, ``hits`` (how many results it showed), ``latency_ms`` (the query log's
  ``query_attributes.latency_ms``, NULL when it logs none), and ``attribute_name`` and
  ``attribute``: the query-log field ``logs import --keep-attribute`` kept (its name, and
  its value as text), the one field besides ``application`` an online suite may segment by.
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
        hits INTEGER NOT NULL,
        latency_ms DOUBLE,
        attribute_name VARCHAR,
        attribute VARCHAR
    )""",
    # A database imported before these columns existed gains them, empty.
    "ALTER TABLE queries ADD COLUMN IF NOT EXISTS latency_ms DOUBLE",
    "ALTER TABLE queries ADD COLUMN IF NOT EXISTS attribute_name VARCHAR",
    "ALTER TABLE queries ADD COLUMN IF NOT EXISTS attribute VARCHAR",
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
INSERT INTO queries (query_id, user_query, query_key, ts, epoch_s, client_id, application, hits,
    latency_ms, attribute_name, attribute)
SELECT query_id, user_query, query_key, ts, epoch_s, client_id, application, hits,
    latency_ms, attribute_name, attribute FROM fresh
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
    SELECT query_id, query_key, client_id, application, ts, epoch_s, hits, latency_ms,
        CASE WHEN attribute_name = $segment THEN attribute END AS segment
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
    SELECT s.query_id, s.application, s.client_id, s.segment, s.hits, s.latency_ms,
        count(c.query_id) AS clicks, min(c.rank) AS first_rank
    FROM s LEFT JOIN c ON c.query_id = s.query_id
    GROUP BY s.query_id, s.application, s.client_id, s.segment, s.hits, s.latency_ms
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
),
v AS (
    SELECT p.query_id, p.application, p.client_id, p.segment, p.hits,
        CAST(p.latency_ms AS DOUBLE) AS latency_ms,
        CASE WHEN p.hits = 0 THEN 1E0 ELSE 0E0 END AS zero_result_rate,
        CASE WHEN p.clicks > 0 THEN 1E0 ELSE 0E0 END AS ctr,
        CASE WHEN p.first_rank <= 1 THEN 1E0 ELSE 0E0 END AS ctr_at_1,
        CASE WHEN p.first_rank <= 3 THEN 1E0 ELSE 0E0 END AS ctr_at_3,
        CASE WHEN p.first_rank <= 5 THEN 1E0 ELSE 0E0 END AS ctr_at_5,
        CASE WHEN p.hits > 0 THEN (CASE WHEN p.clicks = 0 THEN 1E0 ELSE 0E0 END) END
            AS abandonment,
        CAST(p.first_rank AS DOUBLE) AS mean_first_click_position,
        CAST(r.reformulated AS DOUBLE) AS reformulation_rate,
        coalesce(paul.paul, 0E0) AS paulscore
    FROM per_search p JOIN reformulated r ON r.query_id = p.query_id
    LEFT JOIN paul ON paul.query_id = p.query_id
)"""

#: Each search of the window with its own value of every online metric (NULL where the
#: metric does not count it: abandonment without results, first-click position without a
#: click): a window's metric is the mean of its column, so these columns define them all.
PER_SEARCH: Final = (
    "WITH"
    + _SEARCHES
    + """
SELECT * FROM v ORDER BY query_id
"""
)

#: The online metrics of the window, per application and (``application`` NULL) overall:
#: the means of :data:`PER_SEARCH`'s columns.
ONLINE_METRICS: Final = (
    "WITH"
    + _SEARCHES
    + """
SELECT
    application,
    grouping(application) AS overall,
    count(*) AS searches,
    sum(CASE WHEN hits > 0 THEN 1 ELSE 0 END) AS with_results,
    avg(zero_result_rate) AS zero_result_rate,
    avg(ctr) AS ctr,
    avg(ctr_at_1) AS ctr_at_1,
    avg(ctr_at_3) AS ctr_at_3,
    avg(ctr_at_5) AS ctr_at_5,
    avg(abandonment) AS abandonment,
    avg(mean_first_click_position) AS mean_first_click_position,
    avg(reformulation_rate) AS reformulation_rate,
    avg(paulscore) AS paulscore,
    percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms) AS latency_p50,
    percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms) AS latency_p95
FROM v
GROUP BY GROUPING SETS ((application), ())
ORDER BY overall DESC, application
"""
)

#: The attribute names the stored searches keep (``logs import --keep-attribute``).
KEPT_ATTRIBUTES: Final = (
    "SELECT DISTINCT attribute_name FROM queries WHERE attribute_name IS NOT NULL "
    "ORDER BY attribute_name"
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

#: The clicks on interleaved searches: each search of the registered view ``served`` (one
#: column, ``query_id``) that the database holds, its session (the client's searches in one
#: application, a new session after a gap of more than $gap_seconds) and one row per click
#: (``object_id`` and ``position`` NULL for a search without one).
INTERLEAVED_CLICKS: Final = """
WITH s AS (
    SELECT q.query_id, q.client_id, q.application, q.ts, q.epoch_s,
        CASE WHEN q.epoch_s - lag(q.epoch_s) OVER w <= $gap_seconds THEN 0 ELSE 1 END AS starts
    FROM queries q JOIN served v ON v.query_id = q.query_id
    WINDOW w AS (PARTITION BY q.client_id, q.application ORDER BY q.ts, q.query_id)
),
numbered AS (
    SELECT query_id, client_id, application,
        sum(starts) OVER (
            PARTITION BY client_id, application ORDER BY ts, query_id ROWS UNBOUNDED PRECEDING
        ) AS session_number
    FROM s
)
SELECT n.query_id, n.client_id, n.application, n.session_number, e.object_id, e.position
FROM numbered n
LEFT JOIN events e ON e.query_id = n.query_id AND e.action_name = $click_action
ORDER BY n.query_id
"""
