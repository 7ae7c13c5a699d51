"""Other tools' measure names: trec_eval's, ir_measures' and ranx's, read and printed.

A name written as trec_eval (``P_5``, ``map_cut_10``, ``recip_rank``), ir_measures
(``P@5``, ``AP@10``, ``nDCG@10``, ``Judged@10``) or ranx (``hits@5``, ``r-precision``,
``precision`` without a cutoff) spells it resolves to the canonical name (``precision@5``,
``map@10``, ``mrr``, ...); :func:`monitor.metrics.spec.parse_metric` asks this module when
a name is not canonical, so every place that names a metric accepts them. The tables are also
read backwards to print a metric under another tool's name (``--names``).

Each table maps a pattern, ``{k}`` standing for a cutoff, to a canonical pattern. A name is
matched exactly first, then ignoring case (``ap@10``, ``ndcg_cut_10``). Where two tools give
one spelling different meanings, the exact spelling decides: ``rbp`` is trec_eval's
(persistence 0.9), ``RBP`` is ir_measures' (0.8, the canonical ``rbp_80``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Literal, TypeAlias, get_args

#: The name styles a metric can be printed in.
NameStyle: TypeAlias = Literal["canonical", "trec_eval", "ir_measures"]
NAME_STYLES: tuple[str, ...] = get_args(NameStyle)

#: trec_eval's measure names (as its output prints them) -> canonical names.
TREC_EVAL: Mapping[str, str] = {
    "P_{k}": "precision@{k}",
    "recall_{k}": "recall@{k}",
    "map": "map",
    "map_cut_{k}": "map@{k}",
    "ndcg": "ndcg",
    "ndcg_cut_{k}": "ndcg@{k}",
    "recip_rank": "mrr",
    "Rprec": "r_precision",
    "success_{k}": "hit_rate@{k}",
    "bpref": "bpref",
    "infAP": "infap",
    "num_ret": "num_ret",
    "num_rel": "num_rel",
    "num_rel_ret": "num_rel_ret",
    "set_P": "set_precision",
    "set_recall": "set_recall",
    "set_F": "set_f1",
    "rbp": "rbp",
    # trec_eval's -m spelling of a parameter: P.5, ndcg_cut.10
    "P.{k}": "precision@{k}",
    "recall.{k}": "recall@{k}",
    "map_cut.{k}": "map@{k}",
    "ndcg_cut.{k}": "ndcg@{k}",
    "success.{k}": "hit_rate@{k}",
}

#: ir_measures' names -> canonical names.
IR_MEASURES: Mapping[str, str] = {
    "P@{k}": "precision@{k}",
    "R@{k}": "recall@{k}",
    "AP": "map",
    "AP@{k}": "map@{k}",
    "RR": "mrr",
    "RR@{k}": "mrr@{k}",
    "nDCG": "ndcg",
    "nDCG@{k}": "ndcg@{k}",
    "nDCG(dcg='exp-log2')": "ndcg_burges",
    "nDCG(dcg='exp-log2')@{k}": "ndcg_burges@{k}",
    "Success@{k}": "hit_rate@{k}",
    "Rprec": "r_precision",
    "Bpref": "bpref",
    "infAP": "infap",
    "Judged@{k}": "judged@{k}",
    "ERR@{k}": "err@{k}",
    "ERR": "err",
    "RBP": "rbp_80",
    "RBP@{k}": "rbp_80@{k}",
    "RBP(p=0.5)": "rbp_50",
    "RBP(p=0.5)@{k}": "rbp_50@{k}",
    "RBP(p=0.9)": "rbp",
    "RBP(p=0.9)@{k}": "rbp@{k}",
    "RBP(p=0.95)": "rbp_95",
    "RBP(p=0.95)@{k}": "rbp_95@{k}",
    "RBP(p=0.99)": "rbp_99",
    "RBP(p=0.99)@{k}": "rbp_99@{k}",
    "NumRet": "num_ret",
    "NumRel": "num_rel",
    "NumRelRet": "num_rel_ret",
    "NumRelRet@{k}": "num_rel_ret@{k}",
    "SetP": "set_precision",
    "SetR": "set_recall",
    "SetF": "set_f1",
}

#: ranx's names that are not already canonical -> canonical names.
RANX: Mapping[str, str] = {
    "r-precision": "r_precision",
    "hits@{k}": "num_rel_ret@{k}",
    "hits": "num_rel_ret",
    "precision": "set_precision",
    "recall": "set_recall",
    "f1": "set_f1",
    "rbp.5": "rbp_50",
    "rbp.8": "rbp_80",
    "rbp.9": "rbp",
    "rbp.95": "rbp_95",
    "rbp.99": "rbp_99",
}

_TABLES: Mapping[str, Mapping[str, str]] = {
    "trec_eval": TREC_EVAL,
    "ir_measures": IR_MEASURES,
    "ranx": RANX,
}
_K = r"(?P<k>[1-9]\d*)"


def canonical_name(name: str) -> str | None:
    """Return the canonical name another tool's ``name`` stands for, or None if none does."""
    text = name.strip().replace('"', "'")
    for flags in (0, re.IGNORECASE):
        for pattern, canonical in _patterns():
            match = pattern.fullmatch(text) if not flags else pattern_ci(pattern).fullmatch(text)
            if match is not None:
                k = match.groupdict().get("k")
                return canonical.replace("{k}", k) if k is not None else canonical
    return None


def option_hint(name: str) -> str | None:
    """Return how to ask for a measure parameter that is an option here (``P(rel=2)@5``)."""
    text = name.replace(" ", "")
    rel = re.search(r"\(rel=(\d+)\)", text)
    if rel is not None:
        bare = canonical_name(text.replace(rel.group(0), "")) or "the measure"
        return (
            f"a relevance level is an option, not part of a name: ask for {bare} with "
            f"--relevance-level {rel.group(1)} (scoring: {{relevance_level: {rel.group(1)}}})"
        )
    judged = re.search(r"\(judged_only(=True)?\)", text)
    if judged is not None:
        bare = canonical_name(text.replace(judged.group(0), "")) or "the measure"
        return (
            f"judged-only is an option, not part of a name: ask for {bare} with "
            "--judged-only (scoring: {judged_only: true})"
        )
    return None


def display_name(name: str, style: NameStyle) -> str:
    """Return a canonical metric name as ``style`` spells it (the canonical one if it has none)."""
    if style == "canonical":
        return name
    if style not in _TABLES:
        raise ValueError(f"unknown name style {style!r}")
    measure, _, k = name.partition("@")
    for foreign, canonical in _TABLES[style].items():
        if "." in foreign and style == "trec_eval":
            continue  # the -m spelling is read, never printed
        c_measure, _, c_k = canonical.partition("@")
        if c_measure == measure and bool(c_k) == bool(k):
            return foreign.replace("{k}", k)
    return name


def suggest(name: str, canonical: Iterable[str]) -> str | None:
    """Return the known name closest to ``name``: a canonical one first, else another tool's."""
    text = name.strip()
    measure, _, k = text.partition("@")
    at_k = f"@{k}" if k else ""
    close = difflib.get_close_matches(measure.lower(), list(canonical), n=1, cutoff=0.6)
    if close:
        return close[0] + at_k
    cut = re.fullmatch(r"(?P<stem>.+?)(?P<sep>[_.@])(?P<k>[1-9]\d*)", text)
    stem, k = (cut.group("stem"), cut.group("k")) if cut else (text, k)
    foreign: dict[str, str] = {}
    for table in _TABLES.values():
        for pattern in table:
            foreign.setdefault(re.split(r"[_.@]\{k\}", pattern)[0].lower(), pattern)
    close = difflib.get_close_matches(stem.lower(), list(foreign), n=1, cutoff=0.6)
    if not close:
        return None
    pattern = foreign[close[0]]
    return pattern.replace("{k}", k or "10") if "{k}" in pattern else pattern


def alias_pattern() -> str:
    """Return one regular expression (JSON Schema's dialect) matching every alias exactly."""
    special = set(".()[]{}*+?^$|\\")
    out = []
    for table in _TABLES.values():
        for foreign in table:
            escaped = "".join("\\" + c if c in special else c for c in foreign.replace("{k}", "\0"))
            out.append(escaped.replace("\0", "[1-9][0-9]*"))
    return "|".join(out)


@cache
def _patterns() -> tuple[tuple[re.Pattern[str], str], ...]:
    out = []
    for table in _TABLES.values():
        for foreign, canonical in table.items():
            regex = re.escape(foreign).replace(r"\{k\}", _K)
            out.append((re.compile(regex), canonical))
    return tuple(out)


@cache
def pattern_ci(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """Return ``pattern`` ignoring case."""
    return re.compile(pattern.pattern, re.IGNORECASE)
