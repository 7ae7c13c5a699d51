"""Read a suite's ``drift:`` section, its query drift check, in one function."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Literal

from monitor.config import vocab
from monitor.config.fields import Fields
from monitor.config.model import DriftConfig
from monitor.config.nodes import Node
from monitor.config.sections import alert_severity
from monitor.config.windows import parse_span
from monitor.drift.settings import DriftSettings
from monitor.errors import UsageError

#: Any moment serves to check that a window parses: a length is read against it.
_SOME_MOMENT = datetime(2000, 1, 1)
_WINDOW = "START..END (ISO 8601) or a length such as 24h, 7d or 2w"


def drift(f: Fields, node: Node | None) -> DriftConfig | None:
    """Read ``drift``: ``logs``, the ``reference`` and ``current`` windows, how it decides."""
    if node is None or node.value is None:
        return None
    entries = f.mapping(node, vocab.DRIFT_KEYS, "logs, reference, current, alpha, ...")
    hint = " (the traffic database and the two windows it compares)"
    logs = f.path(f.require(node, entries, "logs", hint), "the traffic database (DuckDB)")
    spans = {}
    for key in ("reference", "current"):
        spans[key] = f.string(f.require(node, entries, key, hint), _WINDOW)
        try:
            parse_span(spans[key], key, until=_SOME_MOMENT)
        except UsageError:
            raise f.error(entries[key], _WINDOW, show=True) from None
    readers: dict[str, Callable[[Node], float]] = {
        "alpha": lambda n: f.number(n, positive=True, maximum=0.5),
        "permutations": lambda n: f.integer(n, minimum=1, maximum=100_000),
        "seed": lambda n: f.integer(n, minimum=0),
        "min_queries": lambda n: f.integer(n, minimum=5),
        "max_rows": lambda n: f.integer(n, minimum=5, maximum=100_000),
        "max_auc": lambda n: f.number(n, minimum=0.5, maximum=1.0),
        "max_centroid_distance": lambda n: f.number(n, minimum=0.0, maximum=2.0),
    }
    numbers = {key: read(entries[key]) for key, read in readers.items() if key in entries}
    try:
        settings = DriftSettings(**numbers)  # type: ignore[arg-type]
    except UsageError as error:  # a check across keys: max_rows below min_queries, ...
        raise f.error(node, error.message) from None
    config = DriftConfig(logs, spans["reference"], spans["current"], settings)
    if "name" in entries:
        name = f.string(
            entries["name"], "a rule name (letters, digits, _ . -)", pattern=vocab.SEGMENT
        )
        config = replace(config, name=name)
    if "weighting" in entries:
        weighting = entries["weighting"]
        if weighting.value not in vocab.DRIFT_WEIGHTINGS:
            raise f.error(weighting, " or ".join(vocab.DRIFT_WEIGHTINGS), show=True)
        chosen: Literal["distinct", "searches"] = (
            "searches" if weighting.value == "searches" else "distinct"
        )
        config = replace(config, weighting=chosen)
    if "embedding" in entries:
        config = replace(config, embedding=f.string(entries["embedding"], "an embedder kind"))
    if "severity" in entries:
        config = replace(config, severity=alert_severity(f, entries["severity"]))
    return config
