"""Online metrics of a window of traffic, overall and per ``application``.

Definitions (a *search* is one logged query; a *click* an event whose ``action_name`` is the
click action, ``click`` by default; a click's rank is the clicked document's 1-based place in
the search's ``query_response_hit_ids``, or its ``event_attributes.position.ordinal`` when
the document is not in that list):

- ``zero_result_rate``: searches that showed no result, over searches.
- ``ctr``: searches with at least one click, over searches.
- ``ctr@k`` (k = 1, 3, 5): searches with a click at rank k or better, over searches.
- ``abandonment``: searches that showed results and got no click, over searches that
  showed results (no data when none did).
- ``mean_first_click_position``: the mean rank of each clicked search's best-ranked click
  (no data when no search was clicked).
- ``reformulation_rate``: searches followed, by the same ``client_id`` in the same
  ``application`` within the reformulation gap (300 s by default), by a search with another
  query key, over searches. The next search is the client's next one in the window: a
  repeat of the same key in between ends the chain.
- ``paulscore``: the mean over searches of ``sum(F ** (rank - 1))`` over the distinct ranks
  clicked in each search (0 for a search without clicks), with the factor ``F`` (0.5 by
  default) as Wikimedia's search metrics define it: a click at rank 1 counts 1, at rank 2
  ``F``, and so on, so the score rewards clicks high in the list. It lies in
  ``[0, 1 / (1 - F))``.

- ``latency_p50``, ``latency_p95``: the 50th and 95th percentile of the
  ``latency_ms`` of the searches that logged one (``query_attributes.latency_ms``), by
  linear interpolation between the two nearest ranks (NumPy's default, Hyndman and Fan's
  type 7); no data when no search logged a latency.

A window without searches is no data (:class:`NoTrafficError`), never a rate of 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from monitor.config import vocab
from monitor.config.windows import Window
from monitor.traffic import sql
from monitor.traffic.engine import Reader, rows
from monitor.traffic.errors import NoTrafficError

#: The metrics by their canonical name, with the SQL column each is read from.
METRICS: Final = {
    "zero_result_rate": "zero_result_rate",
    "ctr": "ctr",
    "ctr@1": "ctr_at_1",
    "ctr@3": "ctr_at_3",
    "ctr@5": "ctr_at_5",
    "abandonment": "abandonment",
    "mean_first_click_position": "mean_first_click_position",
    "reformulation_rate": "reformulation_rate",
    "paulscore": "paulscore",
}

#: The click action and reformulation gap (seconds) used unless told otherwise.
CLICK_ACTION = vocab.CLICK_ACTION
REFORMULATION_GAP = 300.0
#: PaulScore's factor unless told otherwise.
PAULSCORE_FACTOR = 0.5


@dataclass(frozen=True, slots=True)
class OnlineMetrics:
    """The online metrics of one application (``None``: every application) in a window.

    ``values`` maps each name of :data:`METRICS` to its value, ``None`` when it has no data.
    """

    application: str | None
    searches: int
    with_results: int
    values: Mapping[str, float | None]


def online_metrics(
    connection: Reader,
    window: Window,
    *,
    click_action: str = CLICK_ACTION,
    reformulation_gap: float = REFORMULATION_GAP,
    paulscore_factor: float = PAULSCORE_FACTOR,
) -> list[OnlineMetrics]:
    """Return the metrics of ``window``: overall first, then each application by name.

    Raise NoTrafficError (with the span the database holds) when the window has no search.
    """
    found = rows(
        connection,
        sql.ONLINE_METRICS,
        {
            "start": window.start,
            "end": window.end,
            "click_action": click_action,
            "gap_seconds": float(reformulation_gap),
            "paul_factor": float(paulscore_factor),
            "segment": None,
        },
    )
    if not found or not found[0]["searches"]:  # the overall row is there even for no search
        first, last, searches = connection.execute(sql.SPAN).fetchone()
        raise NoTrafficError(window, first, last, int(searches))
    return [
        OnlineMetrics(
            application=None if row["overall"] else str(row["application"]),
            searches=int(row["searches"]),
            with_results=int(row["with_results"]),
            values={
                **{name: _number(row[column]) for name, column in METRICS.items()},
                **{name: _number(row[name]) for name in PERCENTILES},
            },
        )
        for row in found
    ]


def _number(found: object) -> float | None:
    return None if found is None else float(found)  # type: ignore[arg-type]


#: The latency percentiles an online suite may watch, by name: the percentile of the
#: searches' ``latency_ms`` that logged one (see the module's docstring), in milliseconds.
PERCENTILES: Final = vocab.ONLINE_PERCENTILES
#: Every metric an online suite may watch (:data:`METRICS` and :data:`PERCENTILES`).
SUITE_METRICS: Final = vocab.ONLINE_METRICS
#: The metrics for which a lower value is better: their rules watch a rise, not a drop.
LOWER_IS_BETTER: Final = vocab.ONLINE_LOWER_IS_BETTER
