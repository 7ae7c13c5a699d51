"""A JSON Schema (draft 2020-12) of the config file, for editors and CI linters.

Built from the same vocabulary as the loader (:mod:`monitor.config.vocab`, and the plug-in
kinds it reads from the registries). The loader stays the authority: it also checks what a
schema cannot say (a rule's metric is one the suite measures, a cron expression parses,
``evalset`` and ``search`` are given in each suite or in ``defaults``). Wherever a value may
be a ``${VAR}`` reference, a string holding one is allowed.
"""

from __future__ import annotations

import re
from typing import Any

from monitor.config import vocab
from monitor.config.kinds import notifier_kinds, search_kinds
from monitor.config.model import METRIC_CHECKS, Check
from monitor.config.traffic import ONLINE_CHECKS
from monitor.metrics.bands import FAMILIES as BAND_FAMILIES
from monitor.metrics.names import alias_pattern
from monitor.metrics.spec import AVERAGES, MEASURES, UNIT_CUTS, UNIT_PATTERN, Cutoff
from monitor.plugins import ENTRYPOINT, PluginKinds
from monitor.store.location import SCHEMES
from monitor.store.retention import KEEP_REASONS

Schema = dict[str, Any]

_ENV: Schema = {"type": "string", "pattern": r"\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}"}


def config_schema() -> Schema:
    """Return the JSON Schema of a config file (a new dict on every call)."""
    suite = _suite()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:retrieval-monitor:config",
        "title": "retrieval-monitor configuration",
        "description": "Suites of frozen retrieval evaluations, their rules and alert routes.",
        "type": "object",
        "additionalProperties": False,
        "anyOf": [{"required": ["suites"]}, {"required": ["traffic"]}],
        "properties": {
            "version": {"const": 1, "description": "The config format version."},
            "store": _store(),
            "ui": {
                "anyOf": [
                    _object(
                        {"address": _text(), "port": _integer(0, 65535)},
                    ),
                    {"type": "null"},
                ],
                "description": "Serve the web app from the daemon at this address and port.",
            },
            "defaults": {
                "$ref": "#/$defs/suite",
                "description": "Suite keys merged under every suite.",
            },
            "suites": {
                "type": "object",
                "minProperties": 1,
                "propertyNames": {"pattern": _anchor(vocab.SUITE_NAME.pattern)},
                "additionalProperties": {"anyOf": [{"$ref": "#/$defs/suite"}, {"type": "null"}]},
            },
            "traffic": _traffic(suite),
        },
        "$defs": {"suite": suite},
    }


def _anchor(pattern: str) -> str:
    return f"^(?:{pattern})$"


def _env_or(schema: Schema) -> Schema:
    """Return ``schema``, or a string holding a ``${VAR}`` reference."""
    return {"anyOf": [schema, _ENV]}


def _text(pattern: str | None = None, description: str | None = None) -> Schema:
    schema: Schema = {"type": "string", "minLength": 1}
    if pattern is not None:
        schema["pattern"] = _anchor(pattern)
    out = _env_or(schema) if pattern is not None else schema
    if description:
        out["description"] = description
    return out


def _number(
    minimum: float | None = None, maximum: float | None = None, positive: bool = False
) -> Schema:
    schema: Schema = {"type": "number"}
    if positive:
        schema["exclusiveMinimum"] = 0
    elif minimum is not None:
        schema["minimum"] = minimum
    if maximum is not None:
        schema["maximum"] = maximum
    return _env_or(schema)


def _integer(minimum: int | None = None, maximum: int | None = None) -> Schema:
    schema: Schema = {"type": "integer"}
    if minimum is not None:
        schema["minimum"] = minimum
    if maximum is not None:
        schema["maximum"] = maximum
    return _env_or(schema)


def _url(description: str) -> Schema:
    return _text(r"https?://[^\s/]+\S*", description)


def _object(properties: Schema, **extra: Any) -> Schema:
    return {"type": "object", "additionalProperties": False, "properties": properties, **extra}


def _kinds(kinds: PluginKinds) -> Schema:
    plugin = {"type": "string", "pattern": _anchor(ENTRYPOINT.pattern)}
    return {"anyOf": [{"enum": list(kinds.builtin_kinds())}, plugin]}


def _metric_name() -> Schema:
    needs = [m for m, c in MEASURES.items() if c is Cutoff.REQUIRED]
    may = [m for m, c in MEASURES.items() if c is Cutoff.OPTIONAL]
    never = [m for m, c in MEASURES.items() if c is Cutoff.NONE]
    k = "@[1-9][0-9]*"
    pattern = f"(?:{'|'.join(needs)}){k}|(?:{'|'.join(may)})(?:{k})?|(?:{'|'.join(never)})"
    pattern += f"|{alias_pattern()}"  # trec_eval's, ir_measures' and ranx's names
    return {"type": "string", "pattern": _anchor(pattern), "examples": ["recall@5", "ndcg@10"]}


def _store() -> Schema:
    return _object(
        {
            "url": _text(
                f"(?:{'|'.join(re.escape(scheme) for scheme in SCHEMES)})://.*",
                "sqlite:///path/monitor.db or postgresql://user@host/db",
            ),
            "path": _text(description="A SQLite file, relative to the config file's folder."),
            "retention": _retention(),
        },
        # Neither url nor path: the default SQLite file (a store with only a retention).
        **{"not": {"required": ["url", "path"]}},
    )


def _retention() -> Schema:
    return _object(
        {
            "per_query": {
                "oneOf": [
                    _integer(0),
                    _text(r"(?:\d+(?:\.\d+)?[smhd])+", "An age: 30d, 12h, 90m."),
                ],
                "description": "Keep per-query detail of this many latest runs, or this long.",
            },
            "keep": {
                "type": "array",
                "items": {"enum": list(KEEP_REASONS)},
                "description": "Runs whose per-query detail is kept whatever their age.",
            },
        },
        required=["per_query"],
        description="How long runs keep per-query detail; means and figures stay for ever.",
    )


def _suite() -> Schema:
    return _object(
        {
            "evalset": _evalset(),
            "search": _search(),
            "metrics": _metrics(),
            "k": {
                **_integer(1, 100_000),
                "description": "Search depth; default the largest cutoff, 10 at least.",
            },
            "runner": _object(
                {
                    "concurrency": _integer(1, 1024),
                    "timeout_seconds": _number(positive=True),
                    "retries": _integer(0, 100),
                    "deadline_seconds": {"anyOf": [_number(positive=True), {"type": "null"}]},
                    "error_budget": _number(0, 1),
                    "min_measured": _number(0, 1),
                    "warmup": _integer(0),
                    "max_lock_skips": _integer(0),
                }
            ),
            "schedule": _schedule(),
            "trigger": _trigger(),
            "rules": {"type": ["array", "null"], "items": _rule()},
            "significance": _object(
                {
                    "alpha": _number(positive=True, maximum=0.5),
                    "iterations": _integer(100, 10_000_000),
                    "seed": _integer(0),
                    "persistence": _object(
                        {"breaches": _integer(1), "runs": _integer(1, 1000)},
                        required=["breaches", "runs"],
                    ),
                }
            ),
            "scoring": _object(
                {
                    "relevance_level": _integer(1),
                    "max_docs": {"anyOf": [_integer(1), {"type": "null"}]},
                    "judged_only": {"type": "boolean"},
                    "average": {"enum": list(AVERAGES)},
                }
            ),
            "unit": _text(
                UNIT_PATTERN.pattern,
                "What metrics count: passage, section, document or corpus fields joined by +.",
            ),
            "unit_cut": {"enum": list(UNIT_CUTS)},
            "segments": {
                "type": "array",
                "uniqueItems": True,
                "items": _text(vocab.SEGMENT.pattern),
            },
            "exporters": {"type": "array", "items": _exporter()},
            "notifiers": {"type": "array", "items": _notifier()},
            "labels": {
                "type": "object",
                "propertyNames": {"pattern": _anchor(vocab.LABEL_NAME.pattern)},
                "additionalProperties": {"type": ["string", "integer"]},
            },
            "links": _object({key: _url(f"The {key} URL.") for key in vocab.LINK_KEYS}),
            "pipeline": _text(vocab.TEXT.pattern, "The pipeline measured; default the suite name."),
            "baseline": _object(
                {"bundled_run": _text(vocab.BUNDLED_RUN.pattern, "e.g. larkfield/rerank")},
                required=["bundled_run"],
                description="A seed baseline pinned when the suite has none stored yet.",
            ),
            "invariants": _invariants(),
            "bands": _object(
                {
                    family: _object({key: _number(0, 1) for key in vocab.BAND_KEYS})
                    for family in BAND_FAMILIES
                },
                description="Reading bands per metric family: high above `high`, low below "
                "`low`. A reading aid beside each mean, never an alert.",
            ),
            "drift": _object(
                {
                    "name": _text(vocab.SEGMENT.pattern, "The alert's rule, the gauges' check."),
                    "logs": _text(description="The traffic database (DuckDB) of `logs import`."),
                    "reference": _text(description="START..END, or a length before current."),
                    "current": _text(description="START..END, or a length ending now: 7d."),
                    "alpha": _number(maximum=0.5, positive=True),
                    "permutations": _integer(1, 100_000),
                    "seed": _integer(0),
                    "min_queries": _integer(5),
                    "max_rows": _integer(5, 100_000),
                    "max_auc": _number(0.5, 1),
                    "max_centroid_distance": _number(0, 2),
                    "weighting": {"enum": list(vocab.DRIFT_WEIGHTINGS)},
                    "embedding": _text(description="The embedder kind (default onnx)."),
                    "severity": {"enum": list(vocab.SEVERITIES)},
                },
                required=["logs", "reference", "current"],
                description="A label-free query drift check of two windows of traffic.",
            ),
            "coverage": _object(
                {
                    "max_drop": _number(0, 1),
                    "severity": {"enum": list(vocab.SEVERITIES)},
                    "queue_url": _url("The labeling queue; {suite} and {run_id} filled in."),
                },
                description="When a breach is held as unjudged (labels needed).",
            ),
            "judge": {
                "type": "object",
                "required": ["kind"],
                "description": "A plug-in grading unjudged (query, document) pairs after a run.",
                "properties": {
                    "kind": {"type": "string", "pattern": r"^(python|http|entrypoint:.+)$"},
                    "id": {"type": "string"},
                    "model": {"type": "string"},
                    "prompt": {"type": "string"},
                    "max_per_run": {"type": "integer", "minimum": 0},
                    "max_grade": {"type": "integer", "minimum": 1, "maximum": 100},
                    "min_verified": {"type": "integer", "minimum": 2},
                },
            },
            "alert_labels": {
                "enum": ["human", "all", "calibrated"],
                "description": (
                    "Which labels gate alerts: human labels only, the judge's too, or the "
                    "judge's corrected on the queries people verified."
                ),
            },
            "store": _object(
                {"retention": _retention()},
                description="The suite's own retention; the file's store says where runs go.",
            ),
        }
    )


def _traffic(suite: Schema) -> Schema:
    """Return the schema of ``traffic:``: the database, defaults and the online suites."""
    from monitor.config import online

    metric = {"enum": list(vocab.ONLINE_METRICS)}
    checks: Schema = {check: _number(0) for check in ONLINE_CHECKS}
    rule = _object(
        {"metric": metric, "severity": {"enum": list(vocab.SEVERITIES)}, **checks},
        required=["metric"],
        oneOf=[{"required": [check]} for check in ONLINE_CHECKS],
    )
    props = suite["properties"]
    suite_schema = _object(
        {
            "name": _text(vocab.SUITE_NAME.pattern),
            "schedule": _schedule(),
            "window": _text(r"[1-9][0-9]*[mhdw]", "The window's length: 30m, 24h, 7d, 2w."),
            "applications": {
                "type": "array",
                "maxItems": online.MAX_APPLICATIONS,
                "uniqueItems": True,
                "items": _text(vocab.TEXT.pattern),
            },
            "segment": _text(vocab.SEGMENT.pattern, "A field `logs import --keep-attribute` kept."),
            "max_segment_values": _integer(1, 50),
            "metrics": {"type": "array", "minItems": 1, "uniqueItems": True, "items": metric},
            "rules": {"type": ["array", "null"], "items": rule},
            "baseline": {"enum": list(online.BASELINES)},
            "significance": _object(
                {
                    "over": {"enum": list(online.UNITS)},
                    "resamples": _integer(100, 100_000),
                    "seed": _integer(0),
                    "alpha": _number(positive=True, maximum=0.5),
                }
            ),
            "exporters": props["exporters"],
            "notifiers": props["notifiers"],
            "labels": props["labels"],
            "links": props["links"],
        },
        required=["name", "window"],
    )
    return _object(
        {
            "database": _text(description="The DuckDB file `logs import` writes."),
            "min_distinct_clients": _integer(1),
            "click_action": _text(vocab.TEXT.pattern),
            "online": {"type": ["array", "null"], "items": suite_schema},
            "spark": _object(
                {
                    "master": _text(description="local[N], spark://HOST:PORT, yarn, k8s://URL."),
                    "conf": {
                        "type": "object",
                        "additionalProperties": {"type": ["string", "number"]},
                        "description": "Spark settings, key: value.",
                    },
                },
                description="Spark's master and settings for --engine spark.",
            ),
        },
        required=["database"],
        description="The traffic database and the online suites measured on its logs.",
    )


def _invariants() -> Schema:
    severity = {"enum": list(vocab.SEVERITIES)}
    must_include = _object(
        {
            "query": _text(vocab.TEXT.pattern, "The query id, as the eval set has it."),
            "must_include": {
                "anyOf": [
                    _text(vocab.TEXT.pattern),
                    {
                        "type": "array",
                        "minItems": 1,
                        "uniqueItems": True,
                        "items": _text(vocab.TEXT.pattern),
                    },
                ],
                "description": "Doc ids that must be in the current run's top within.",
            },
            "within": {**_integer(1), "description": "The depth; default the suite's k."},
            "severity": severity,
        },
        required=["query", "must_include"],
    )
    no_lost_hits = _object(
        {
            "no_lost_hits": _object(
                {"k": _integer(1)},
                required=["k"],
                description="A query with a relevant hit in the baseline's top k keeps one.",
            ),
            "severity": severity,
        },
        required=["no_lost_hits"],
    )
    return {
        "anyOf": [
            {"type": "array", "items": {"oneOf": [must_include, no_lost_hits]}},
            _object(
                {
                    "path": _text(
                        r".*\.(?:csv|jsonl|CSV|JSONL)", "A CSV or JSONL file of invariants."
                    )
                },
                required=["path"],
            ),
            {"type": "null"},
        ],
        "description": "Exact per-query checks: must-return pairs and policies over the baseline.",
    }


def _evalset() -> Schema:
    return _object(
        {
            "path": _text(description="The eval set file, relative to the config file's folder."),
            "format": _text(vocab.FORMAT.pattern),
            "queries": _text(description="Queries TSV for a TREC qrels file."),
            "bundled": _text(vocab.BUNDLED_SET.pattern, "A bundled eval set, e.g. larkfield."),
            "reference": {
                **_search(),
                "description": "A reference search (e.g. exact kNN) whose top reference_k "
                "results replace the set's judgments.",
            },
            "reference_k": {"type": "integer", "minimum": 1},
            "corpus": _text(
                description="The passages (JSONL, CSV or TSV, gzip accepted): id, text, fields."
            ),
        },
        oneOf=[
            {"required": ["path"], "not": {"required": ["bundled"]}},
            {
                "required": ["bundled"],
                "allOf": [{"not": {"required": [key]}} for key in ("path", "format", "queries")],
            },
        ],
    )


def _search() -> Schema:
    return {
        "type": "object",
        "required": ["kind"],
        "properties": {
            "kind": _kinds(search_kinds()),
            "bundled": _text(vocab.BUNDLED_RUN.pattern, "A bundled run, e.g. larkfield/keyword."),
        },
        "additionalProperties": True,
        "if": {"required": ["bundled"]},
        "then": {"properties": {"kind": {"const": "replay"}}},
        "description": "A search plug-in: kind plus the options the plug-in validates.",
    }


def _metrics() -> Schema:
    return {
        "anyOf": [
            {"type": "array", "minItems": 1, "uniqueItems": True, "items": _metric_name()},
            _object(
                {
                    "measures": {
                        "type": "array",
                        "minItems": 1,
                        "uniqueItems": True,
                        "items": {"enum": sorted(MEASURES)},
                    },
                    "k": {"type": "array", "uniqueItems": True, "items": _integer(1)},
                },
                required=["measures"],
            ),
        ]
    }


def _duration(bound: str, description: str) -> Schema:
    """Return a length of time, as ``90s``/``1h30m`` text or seconds, with ``bound`` of 0."""
    return {
        "anyOf": [
            {"type": "number", bound: 0},
            {"type": "string", "pattern": _anchor(vocab.INTERVAL.pattern)},
            _ENV,
        ],
        "description": description,
    }


def _schedule() -> Schema:
    interval = _duration("exclusiveMinimum", "90s, 30m, 1h, 1d, 1h30m or seconds.")
    return _object(
        {
            "cron": _text(r"\S+(?:\s+\S+){4}", '5-field crontab, e.g. "*/15 * * * *".'),
            "interval": interval,
            "timezone": _text(description="IANA time zone for cron, e.g. Europe/Berlin."),
        },
        oneOf=[
            {"required": ["cron"]},
            {"required": ["interval"], "not": {"required": ["timezone"]}},
        ],
    )


def _trigger() -> Schema:
    wait = _duration("minimum", "0, 30s, 5m, 1h or seconds.")
    interval = _schedule()["properties"]["interval"]
    kinds = {"enum": list(vocab.TRIGGER_KINDS)}
    return {
        "anyOf": [
            kinds,
            _object(
                {"kind": kinds, "poll_interval": interval, "settle": wait, "min_interval": wait},
                required=["kind"],
            ),
        ],
        "description": "on_change: also run when the search's corpus_fingerprint() changes.",
    }


def _rule() -> Schema:
    checks: Schema = {}
    for check in Check:
        lo, hi, positive = vocab.THRESHOLDS[check]
        checks[check.value] = _number(lo, hi, positive)
    lo, hi, _ = vocab.THRESHOLDS[Check.JUDGE_AGREEMENT]
    checks[Check.JUDGE_AGREEMENT.value] = _object(
        {
            "min": _number(lo, hi, False),
            "statistic": {"enum": list(vocab.AGREEMENT_STATISTICS)},
            "min_overlap": _integer(1, 1_000_000),
        },
        required=["min"],
    )
    conditions: list[Schema] = []
    for check in Check:
        wanted: Schema = {"required": ["metric"]}
        conditions.append(
            {
                "if": {"required": [check.value]},
                "then": wanted if check in METRIC_CHECKS else {"not": wanted},
            }
        )
    # A floor on the index health figure reads as a metric rule: {metric: ann_recall@10, min}.
    ann_recall = {"type": "string", "pattern": "^ann_recall@[1-9][0-9]*$"}
    metric = {"anyOf": [_metric_name(), ann_recall]}
    return _object(
        {"metric": metric, "severity": {"enum": list(vocab.SEVERITIES)}, **checks},
        oneOf=[{"required": [check.value]} for check in Check],
        allOf=conditions,
    )


def _exporter() -> Schema:
    kinds: dict[str, Schema] = {
        "pushgateway": {
            "url": _url("The Pushgateway, e.g. http://pushgateway:9091."),
            "job": _text(vocab.TEXT.pattern),
        },
        "textfile": {"path": _text(r".*\.prom", "A .prom file for node_exporter.")},
        "http": {"port": _integer(1, 65535), "address": _text(vocab.ADDRESS.pattern)},
    }
    required = {"pushgateway": ["kind", "url"], "textfile": ["kind", "path"], "http": ["kind"]}
    return {
        "oneOf": [
            _object({"kind": {"const": kind}, **props}, required=required[kind])
            for kind, props in kinds.items()
        ]
    }


def _notifier() -> Schema:
    return {
        "type": "object",
        "required": ["kind"],
        "properties": {
            "kind": _kinds(notifier_kinds()),
            "url": _url("Where alerts go; a secret, best given as ${VAR}."),
            "secret_env": _text(vocab.ENV_NAME.pattern, "The variable holding a signing secret."),
        },
        "additionalProperties": True,
        "allOf": [
            {
                "if": {"properties": {"kind": {"enum": list(vocab.NOTIFIERS_NEEDING_URL)}}},
                "then": {"required": ["url"]},
            },
            {
                "if": {"properties": {"kind": {"const": "stdout"}}},
                "then": {"not": {"required": ["url"]}},
            },
        ],
    }
