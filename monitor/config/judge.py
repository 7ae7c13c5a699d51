"""Read a suite's ``judge`` (a plug-in grading label holes), ``alert_labels``, and the
``judge_agreement`` rule on the judge's agreement with people."""

from __future__ import annotations

import re
from collections.abc import Mapping

from monitor.config import vocab
from monitor.config.common import Severity
from monitor.config.fields import Fields, is_secret_key
from monitor.config.model import (
    DEFAULT_MIN_VERIFIED,
    AlertLabels,
    Check,
    JudgeConfig,
    OptionValue,
    RuleConfig,
)
from monitor.config.nodes import Node

#: Keys of ``judge`` read here; every other key is an option of the plug-in.
JUDGE_KEYS = ("kind", "id", "model", "prompt", "max_per_run", "max_grade", "min_verified")
#: Built-in judge kinds (beside ``entrypoint:<name>``).
JUDGE_KINDS = ("python", "http")
#: The views of the judgments ``alert_labels`` may name.
ALERT_LABELS: tuple[AlertLabels, ...] = ("human", "all", "calibrated")
#: The highest top of a judge's grade scale (``max_grade``).
MAX_JUDGE_GRADE = 100
_ENTRYPOINT = re.compile(r"entrypoint:[A-Za-z0-9_.\-]+")
_ID = re.compile(r"[A-Za-z0-9_.\-]{1,100}")


def judge(f: Fields, node: Node | None) -> JudgeConfig | None:
    """Read ``judge``: ``{kind, id?, model?, prompt?, max_per_run?, max_grade?,
    min_verified?, ...options}``."""
    if node is None or node.value is None:
        return None
    if not isinstance(node.value, Mapping):
        raise f.error(node, "a mapping (the judge plug-in: kind and its options)", show=True)
    entries = node.value
    kind_node = f.require(node, entries, "kind")
    expected = f"a judge kind: one of {', '.join(JUDGE_KINDS)}, or entrypoint:<name>"
    kind = f.string(kind_node, expected)
    if kind not in JUDGE_KINDS and not _ENTRYPOINT.fullmatch(kind):
        raise f.error(kind_node, expected, show=True)
    judge_id = kind
    if "id" in entries:
        judge_id = f.string(entries["id"], "a judge id (letters, digits, _.-)", pattern=_ID)
    model = f.string(entries["model"], "a model name") if "model" in entries else ""
    prompt = f.string(entries["prompt"], "a prompt") if "prompt" in entries else ""
    most = 100
    if "max_per_run" in entries:
        most = f.integer(entries["max_per_run"], minimum=0, maximum=1_000_000)
    top = 2
    if "max_grade" in entries:
        top = f.integer(entries["max_grade"], minimum=1, maximum=MAX_JUDGE_GRADE)
    least = DEFAULT_MIN_VERIFIED
    if "min_verified" in entries:
        least = f.integer(entries["min_verified"], minimum=2, maximum=1_000_000)
    options: dict[str, OptionValue] = {
        key: f.options(child, is_secret_key(key))
        for key, child in entries.items()
        if key not in JUDGE_KEYS
    }
    return JudgeConfig(
        kind=kind,
        judge_id=judge_id,
        model=model,
        prompt=prompt,
        max_per_run=most,
        max_grade=top,
        min_verified=least,
        options=options,
        base_dir=f.base_dir,
        origin=f.origin(node),
    )


def alert_labels(f: Fields, node: Node | None) -> AlertLabels:
    """Read ``alert_labels``: which judgments gate alerts, ``human`` (default), ``all`` or
    ``calibrated``."""
    if node is None:
        return "human"
    expected = f"one of {', '.join(ALERT_LABELS)}"
    value = f.string(node, expected)
    for known in ALERT_LABELS:
        if value == known:
            return known
    raise f.error(node, expected, show=True)


def agreement_rule(f: Fields, node: Node, severity: Severity) -> RuleConfig:
    """Read ``judge_agreement: {min, statistic?, min_overlap?}``."""
    entries = f.mapping(node, vocab.AGREEMENT_KEYS, "min, statistic, min_overlap")
    lo, hi, _ = vocab.THRESHOLDS[Check.JUDGE_AGREEMENT]
    floor = f.require(node, entries, "min", " (the agreement below which the rule alerts)")
    statistic = vocab.DEFAULT_AGREEMENT_STATISTIC
    if "statistic" in entries:
        expected = f"an agreement statistic: one of {', '.join(vocab.AGREEMENT_STATISTICS)}"
        statistic = f.string(entries["statistic"], expected)
        if statistic not in vocab.AGREEMENT_STATISTICS:
            raise f.error(entries["statistic"], expected, show=True)
    least = vocab.DEFAULT_MIN_OVERLAP
    if "min_overlap" in entries:
        least = f.integer(entries["min_overlap"], minimum=1, maximum=1_000_000)
    return RuleConfig(
        check=Check.JUDGE_AGREEMENT,
        threshold=f.number(floor, minimum=lo, maximum=hi),
        severity=severity,
        statistic=statistic,
        min_overlap=least,
    )
